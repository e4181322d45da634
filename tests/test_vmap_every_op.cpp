// vmap of every operator against a loop (Note [vmap]): for each functional operator of the dk
// namespace, arguments are made from its schema (tensors of a few trial shapes, defaults for the
// rest); where one example's call works, the operator under vmap, with random in_dims per
// tensor argument, must equal stacking its per-example results. The batching rules, the
// pointwise family, decompositions and the for-loop fallback are all exercised this way.
#include <catch2/catch.hpp>

#include <cctype>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dk/dk.h"
#include "dk/func/batched_tensor.h"
#include "dk/func/vmap.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;
using dk::func::BatchDim;

namespace {

// How the tensor arguments of one trial are shaped, and the integer dim arguments chosen.
struct Trial {
  std::vector<int64_t> shape;  // every tensor argument's example shape
  int64_t int_value;           // an int argument without a default
};

const std::vector<Trial> kTrials = {{{3, 3}, 1}, {{4}, 0}, {{2, 3, 4}, 1}, {{2, 3, 3}, 1}, {{3, 3}, 0}, {{}, 0}};

// Where a tensor argument is: its stack position, and its index when it is in a tensor list.
struct Slot {
  size_t pos;
  int elem = -1;
};

Tensor getSlot(const Stack& stack, const Slot& slot) {
  const IValue& v = stack[slot.pos];
  return slot.elem < 0 ? v.toTensor() : v.toListElements()[static_cast<size_t>(slot.elem)].toTensor();
}

void setSlot(Stack& stack, const Slot& slot, Tensor t) {
  IValue& v = stack[slot.pos];
  if (slot.elem < 0) {
    v = IValue(std::move(t));
    return;
  }
  std::vector<IValue> elements = v.toListElements();
  elements[static_cast<size_t>(slot.elem)] = IValue(std::move(t));
  v = IValue::makeList(v.listElementType(), std::move(elements));
}

bool isIndexName(const std::string& name) {
  return name == "index" || name == "indices" || name == "target";
}

// A schema default as an IValue ("None", "True", "1", "0.5", "[0,1]", "\"mean\"", memory
// formats); nullopt when the text is not one of these.
std::optional<IValue> parseNumbers(const Argument& a);

std::optional<IValue> parseDefault(const Argument& a) {
  try {
    return parseNumbers(a);
  } catch (const std::exception&) {  // std::stoll / std::stod on a text that is not a number
    return std::nullopt;
  }
}

std::optional<IValue> parseNumbers(const Argument& a) {
  const std::string& text = *a.default_value;
  if (text == "Mean") return IValue(static_cast<int64_t>(1));  // at::Reduction::Mean
  if (text == "None") return IValue();
  if (text == "True" || text == "False") return IValue(text == "True");
  if (text == "contiguous_format") return IValue(MemoryFormat::Contiguous);
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'')) return IValue(text.substr(1, text.size() - 2));
  const TypeKind kind = a.type.kind() == TypeKind::Optional ? a.type.element().kind() : a.type.kind();
  if (kind == TypeKind::List) {
    std::vector<IValue> elements;
    std::string inner = text.substr(1, text.size() - 2);
    std::stringstream in(inner);
    for (std::string item; std::getline(in, item, ',');) elements.emplace_back(static_cast<int64_t>(std::stoll(item)));
    if (text.front() != '[') {  // int[2] stride=1: the one value repeated
      elements.assign(static_cast<size_t>(a.type.fixedSize().value_or(1)), IValue(static_cast<int64_t>(std::stoll(text))));
    }
    return IValue::makeList(Type::base(TypeKind::Int), std::move(elements));
  }
  if (kind == TypeKind::Float) return IValue(std::stod(text));
  if (kind == TypeKind::Int || kind == TypeKind::SymInt) return IValue(static_cast<int64_t>(std::stoll(text)));
  if (kind == TypeKind::Scalar) {
    if (text.find_first_of(".e") != std::string::npos) return IValue(std::stod(text));
    return IValue(static_cast<int64_t>(std::stoll(text)));
  }
  return std::nullopt;
}

Tensor exampleTensor(const std::string& name, const std::vector<int64_t>& shape, std::mt19937& gen) {
  const int64_t numel = computeNumel(shape);
  Values v(static_cast<size_t>(numel));
  if (name == "condition" || name == "mask") {
    std::bernoulli_distribution coin(0.5);
    for (double& x : v) x = coin(gen) ? 1 : 0;
    return make(v, shape, kBool);
  }
  if (isIndexName(name)) {
    const int64_t bound = shape.empty() ? 1 : std::max<int64_t>(1, shape.back() - 1);
    std::uniform_int_distribution<int64_t> dist(0, bound - 1);
    for (double& x : v) x = static_cast<double>(dist(gen));
    return make(v, shape, kLong);
  }
  std::uniform_real_distribution<double> dist(0.25, 2.0);  // positive: log, sqrt, pow are defined
  for (double& x : v) x = dist(gen);
  return make(v, shape, kDouble);
}

// One example's arguments, or nullopt when the schema has an argument this test cannot make.
// tensor_slots gets the stack positions of the tensor arguments.
std::optional<Stack> exampleArgs(const FunctionSchema& schema, const Trial& trial, std::mt19937& gen,
                                 std::vector<Slot>* tensor_slots) {
  Stack stack;
  tensor_slots->clear();
  for (const Argument& a : schema.arguments()) {
    const TypeKind kind = a.type.kind();
    if (kind == TypeKind::Tensor) {
      tensor_slots->push_back(Slot{stack.size()});
      stack.emplace_back(exampleTensor(a.name, trial.shape, gen));
      continue;
    }
    if (kind == TypeKind::List && a.type.element().kind() == TypeKind::Tensor) {
      // Two tensors of the example shape (cat, stack): each one a tensor argument of its own.
      tensor_slots->push_back(Slot{stack.size(), 0});
      tensor_slots->push_back(Slot{stack.size(), 1});
      std::vector<IValue> two{IValue(exampleTensor(a.name, trial.shape, gen)),
                              IValue(exampleTensor(a.name, trial.shape, gen))};
      stack.push_back(IValue::makeList(a.type.element(), std::move(two)));
      continue;
    }
    if (kind == TypeKind::List && !a.default_value &&
        (a.type.element().kind() == TypeKind::Int || a.type.element().kind() == TypeKind::SymInt)) {
      // A permutation for `dims` (reversed), else the example shape itself (view, reshape,
      // expand, repeat, normalized_shape).
      std::vector<IValue> values;
      const auto rank = static_cast<int64_t>(trial.shape.size());
      if (a.name == "dims") {
        for (int64_t d = rank - 1; d >= 0; --d) values.emplace_back(d);
      } else {
        for (int64_t d : trial.shape) values.emplace_back(d);
      }
      stack.push_back(IValue::makeList(a.type.element(), std::move(values)));
      continue;
    }
    if (a.default_value) {
      std::optional<IValue> v = parseDefault(a);
      if (!v) return std::nullopt;
      stack.push_back(std::move(*v));
      continue;
    }
    switch (kind) {
      case TypeKind::Int:
      case TypeKind::SymInt:
        stack.emplace_back(trial.int_value);
        break;
      case TypeKind::Float:
        stack.emplace_back(0.5);
        break;
      case TypeKind::Scalar:
        stack.emplace_back(0.5);
        break;
      case TypeKind::Bool:
        stack.emplace_back(false);
        break;
      case TypeKind::Optional:
        stack.emplace_back();
        break;
      case TypeKind::ScalarType:
        stack.emplace_back(ScalarType::Float);
        break;
      default:
        return std::nullopt;  // lists, tensor lists, strings without a default: not made here
    }
  }
  return stack;
}

// The tensors a call returned (a tensor list flattened); nullopt when a return is not a tensor.
std::optional<std::vector<Tensor>> tensorResults(const FunctionSchema& schema, Stack& stack) {
  std::vector<Tensor> out;
  const size_t n = schema.returns().size();
  for (size_t i = stack.size() - n; i < stack.size(); ++i) {
    const IValue& v = stack[i];
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else if (v.isList()) {
      for (const IValue& e : v.toListElements()) out.push_back(e.toTensor());
    } else {
      return std::nullopt;
    }
  }
  return out;
}

bool close(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const Values x = read(a);
  const Values y = read(b);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (std::abs(x[i] - y[i]) > 1e-9 * (1 + std::abs(y[i]))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("vmap: every operator equals a loop over the batch") {
  const bool warned = func::setVmapFallbackWarningEnabled(false);
  std::mt19937 gen(19);
  const int64_t batch = 3;
  std::vector<std::string> covered;
  std::vector<std::string> not_made;
  for (const OperatorName& name : Dispatcher::singleton().getAllOpNames()) {
    if (name.name.rfind("dk::", 0) != 0) continue;
    const OperatorHandle op = Dispatcher::singleton().findSchemaOrThrow(name.name.c_str(), name.overload_name.c_str());
    const FunctionSchema& schema = op.schema();
    if (schema.is_mutable()) continue;  // in-place and out=: test_vmap.cpp tests their rules
    bool done = false;
    for (const Trial& trial : kTrials) {
      if (done) break;
      std::vector<Slot> slots;
      // One example's call must work, for each example of the batch.
      std::vector<Stack> examples;
      bool ok = true;
      for (int64_t e = 0; e < batch && ok; ++e) {
        std::optional<Stack> args = exampleArgs(schema, trial, gen, &slots);
        if (!args || slots.empty()) {
          ok = false;
          break;
        }
        examples.push_back(*args);
        try {
          Stack s = *args;
          op.callBoxed(&s);
          std::optional<std::vector<Tensor>> r = tensorResults(schema, s);
          ok = r.has_value() && !r->empty();
        } catch (const Error&) {
          ok = false;
        }
      }
      if (!ok) continue;
      // The loop's results stacked, and vmap's, with a random in_dim per tensor argument.
      std::vector<BatchDim> in_dims;
      std::vector<Tensor> batched_inputs;
      std::uniform_int_distribution<int> pick(0, 2);
      for (size_t k = 0; k < slots.size(); ++k) {
        std::vector<Tensor> column;
        for (const Stack& ex : examples) column.push_back(getSlot(ex, slots[k]));
        const int choice = k == 0 ? 0 : pick(gen);  // the first is always mapped
        if (choice == 2) {
          in_dims.emplace_back(std::nullopt);
          batched_inputs.push_back(column[0]);
          continue;
        }
        const int64_t dim = choice == 0 ? 0 : -1;
        in_dims.emplace_back(dim);
        batched_inputs.push_back(dk::stack(column, dim));
      }
      // Unmapped arguments change the per-example reference: recompute it with them.
      std::vector<std::vector<Tensor>> reference;
      for (int64_t e = 0; e < batch; ++e) {
        Stack s = examples[static_cast<size_t>(e)];
        for (size_t k = 0; k < slots.size(); ++k)
          if (!in_dims[k]) setSlot(s, slots[k], batched_inputs[k]);
        op.callBoxed(&s);
        reference.push_back(*tensorResults(schema, s));
      }
      Stack templ = examples[0];
      func::TensorsFn f = [&](const std::vector<Tensor>& xs) {
        Stack s = templ;
        for (size_t k = 0; k < slots.size(); ++k) setSlot(s, slots[k], xs[k]);
        op.callBoxed(&s);
        return *tensorResults(schema, s);
      };
      INFO(name.toString() << " with example shape " << IntArrayRef(trial.shape));
      std::vector<Tensor> got;
      try {
        got = func::vmap(f, in_dims, {0})(batched_inputs);
      } catch (const Error& e) {
        const std::string what = e.what();
        if (what.find("randomness error mode") != std::string::npos) {  // random: its own test
          done = true;
          break;
        }
        FAIL_CHECK("vmap threw where the loop did not: " << what.substr(0, what.find('\n')));
        done = true;
        break;
      }
      REQUIRE(got.size() == reference[0].size());
      for (size_t j = 0; j < got.size(); ++j) {
        std::vector<Tensor> column;
        for (const auto& r : reference) column.push_back(r[j]);
        const Tensor expected = dk::stack(column, 0);
        if (name.name.rfind("dk::empty", 0) == 0) {  // uninitialized memory: only the geometry
          CHECK(got[j].sizes() == expected.sizes());
          CHECK(got[j].dtype() == expected.dtype());
          continue;
        }
        CHECK(close(got[j], expected));
      }
      covered.push_back(name.toString());
      done = true;
    }
    if (!done) not_made.push_back(name.toString());
  }
  func::setVmapFallbackWarningEnabled(warned);
  std::ostringstream list;
  for (const std::string& n : not_made) list << " " << n;
  INFO("operators with no example this test can make:" << list.str());
  // The count guards against the harness silently covering less. Not covered (24 at the time of
  // writing): factories with no tensor argument (nothing to map; the random ones have their own
  // test), item (returns a number), and operators whose arguments it cannot make from the schema
  // alone (convolution and pooling shapes, index lists, batch norm's statistics, clamp's bounds).
  CHECK(covered.size() >= 95);
  WARN("vmap checked against a loop for " << covered.size() << " operators; " << not_made.size()
                                          << " have no example here:" << list.str());
}
