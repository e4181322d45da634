// libFuzzer target: boxed calls with arbitrary stacks against every operator of the generated
// dk library.
//
// The input picks an operator (from the dispatcher's registry, namespace dk) and decodes into
// a stack: usually one value per schema argument, each either of the schema's type (small
// tensors of any dtype on CPU or Meta, contiguous or not, maybe requiring grad; small ints;
// special doubles) or of a random kind, and sometimes too few or too many values. The call
// must return or raise dk::Error (or a subclass); any other exception, a crash, a leak or a
// sanitizer report is a finding. A call that returns must leave exactly the schema's returns,
// of the schema's types, in place of its arguments; and backward through its outputs that
// require grad must return or raise dk::Error too.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dk/core/generator.h"
#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/ivalue.h"
#include "dk/generated/ops/sum.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"
#include "fuzz_input.h"

using namespace dk;
using dk::fuzz::FuzzInput;

namespace {

std::vector<OperatorHandle>& operators() {
  static std::vector<OperatorHandle> ops;
  return ops;
}

constexpr int kMaxDepth = 3;  // lists nest at most this deep

// An opaque object that is not a Generator (for Generator? arguments).
struct OtherObject : CustomObject {
  std::string typeName() const override { return "OtherObject"; }
};

double specialDouble(FuzzInput& in) {
  static constexpr double values[] = {0.0, 1.0, -1.0, 0.5, 2.5, -3.0, 1e-300, 1e300,
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN()};
  return values[in.pick(std::size(values))];
}

// Ints stay small so factories and views ask for little memory: the sizes, dims and indices
// they stand for are still out of range often enough. A lone int (a dim, an index, a step)
// is sometimes an int64 extreme, to catch overflow; list elements (sizes) never are: a size
// of 2^63 is a request for exabytes, which libFuzzer would report as out-of-memory.
int64_t smallInt(FuzzInput& in, bool extremes) {
  if (extremes && in.pick(16) == 15) {
    return in.flag() ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return in.small(-4, 5);
}

template <class T>
void fillAs(const Tensor& t, FuzzInput& in, bool floating) {
  T* p = static_cast<T*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (floating) {
      p[i] = static_cast<T>(static_cast<float>(specialDouble(in)));
    } else {
      p[i] = static_cast<T>(in.small(-2, 5));
    }
  }
}

void fill(const Tensor& t, FuzzInput& in) {
  switch (t.dtype()) {
    case ScalarType::Byte: return fillAs<uint8_t>(t, in, false);
    case ScalarType::Char: return fillAs<int8_t>(t, in, false);
    case ScalarType::Short: return fillAs<int16_t>(t, in, false);
    case ScalarType::Int: return fillAs<int32_t>(t, in, false);
    case ScalarType::Long: return fillAs<int64_t>(t, in, false);
    case ScalarType::Half: return fillAs<Half>(t, in, true);
    case ScalarType::Float: return fillAs<float>(t, in, true);
    case ScalarType::Double: return fillAs<double>(t, in, true);
    case ScalarType::BFloat16: return fillAs<BFloat16>(t, in, true);
    case ScalarType::Bool: {
      bool* p = static_cast<bool*>(t.data_ptr());
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = in.flag();
      return;
    }
    case ScalarType::Undefined: return;
  }
}

Tensor makeTensor(FuzzInput& in) {
  static constexpr ScalarType dtypes[] = {kFloat, kDouble, kLong, kInt, kBool, kHalf, kBFloat16, kByte, kChar, kShort};
  if (in.pick(16) == 0) return Tensor();  // undefined
  const ScalarType dtype = dtypes[in.pick(std::size(dtypes))];
  const bool meta = in.pick(4) == 0;
  std::vector<int64_t> sizes(static_cast<size_t>(in.small(0, 3)));
  for (int64_t& s : sizes) s = in.small(0, 3);
  Tensor t = detail::empty_contiguous(sizes, dtype, Device(meta ? DeviceType::Meta : DeviceType::CPU));
  if (!meta) fill(t, in);
  const uint8_t how = in.byte();
  if ((how & 1) && t.dim() >= 2) t = t.transpose(0, t.dim() - 1);  // non-contiguous
  if ((how & 2) && isFloatingType(dtype)) t.requires_grad_();
  return t;
}

IValue anyValue(FuzzInput& in, int depth, bool in_list = false);

// A value of schema type `type`, or (one time in eight) of a random kind. (A used-up input
// reads as zeros: those must mean "of the schema type", or decoding would not end.)
IValue valueOf(const Type& type, FuzzInput& in, int depth, bool in_list = false) {
  if (in.pick(8) == 7) return anyValue(in, depth, in_list);
  switch (type.kind()) {
    case TypeKind::Tensor: return makeTensor(in);
    case TypeKind::Int:
    case TypeKind::SymInt: return smallInt(in, /*extremes=*/!in_list);
    case TypeKind::Float: return specialDouble(in);
    case TypeKind::Bool: return in.flag();
    case TypeKind::Scalar: {
      switch (in.pick(3)) {
        case 0: return smallInt(in, /*extremes=*/!in_list);
        case 1: return specialDouble(in);
        default: return in.flag();
      }
    }
    case TypeKind::Str: {
      static const char* strings[] = {"none", "tanh", "mean", "", "\xff"};
      return strings[in.pick(std::size(strings))];
    }
    case TypeKind::ScalarType: return static_cast<ScalarType>(in.pick(kNumScalarTypes + 1));  // Undefined too
    case TypeKind::Layout: return in.flag() ? Layout::Sparse : Layout::Strided;
    case TypeKind::MemoryFormat: return static_cast<MemoryFormat>(in.pick(3));
    case TypeKind::Device: {
      static constexpr DeviceType types[] = {DeviceType::CPU, DeviceType::CUDA, DeviceType::Meta, DeviceType::PrivateUse1};
      return Device(types[in.pick(std::size(types))], static_cast<int8_t>(in.small(-1, 1)));
    }
    case TypeKind::Generator:
      if (in.pick(4) == 0) return IValue(intrusive_ptr<CustomObject>(make_intrusive<OtherObject>()));
      return IValue(intrusive_ptr<CustomObject>(make_intrusive<GeneratorImpl>(in.byte())));
    case TypeKind::Optional:
      if (in.flag()) return IValue();
      return valueOf(type.element(), in, depth, in_list);
    case TypeKind::List: {
      if (depth >= kMaxDepth) return IValue();
      std::vector<IValue> elements(type.fixedSize() && in.flag() ? static_cast<size_t>(*type.fixedSize())
                                                                  : static_cast<size_t>(in.small(0, 4)));
      bool well_typed = true;
      for (IValue& e : elements) {
        e = valueOf(type.element(), in, depth + 1, /*in_list=*/true);
        well_typed = well_typed && e.matchesType(type.element());
      }
      // A list's element type is checked against its elements, so an ill-typed one is Any[].
      return IValue::makeList(well_typed ? type.element() : Type::base(TypeKind::Any), std::move(elements));
    }
    default: return anyValue(in, depth, in_list);
  }
}

IValue anyValue(FuzzInput& in, int depth, bool in_list) {
  static const Type kinds[] = {
      Type::base(TypeKind::Tensor), Type::base(TypeKind::Int),        Type::base(TypeKind::Float),
      Type::base(TypeKind::Bool),   Type::base(TypeKind::Str),        Type::base(TypeKind::ScalarType),
      Type::base(TypeKind::Layout), Type::base(TypeKind::Device),     Type::base(TypeKind::MemoryFormat),
      Type::base(TypeKind::Generator), Type::list(Type::base(TypeKind::Int)),
      Type::list(Type::base(TypeKind::Tensor)), Type::list(Type::optional(Type::base(TypeKind::Tensor))),
      Type::list(Type::base(TypeKind::Float))};
  const size_t choice = in.pick(std::size(kinds) + 2);
  if (choice == std::size(kinds)) return IValue();  // None, e.g. where a tensor is expected
  if (choice == std::size(kinds) + 1) {
    if (depth >= kMaxDepth) return IValue();
    std::vector<IValue> elements(static_cast<size_t>(in.small(0, 2)));
    for (IValue& e : elements) e = anyValue(in, depth + 1, in_list);
    return IValue::makeTuple(std::move(elements));
  }
  // Pick the type, then build a value of it (the nested pick may go astray again, one level
  // deeper).
  if (depth >= kMaxDepth) return IValue();
  return valueOf(kinds[choice], in, depth + 1, in_list);
}

// Inputs skipped on purpose. The findings this target made (bmm/embedding on empty operands,
// slice/split overflow, Scalar::toLong range, in-place on a leaf view, pow_backward for
// INT64_MIN) are fixed, with regression tests; their reproducers stay in the corpus.
bool hitsKnownIssue(const OperatorHandle& op, const Stack& stack) {
  const std::string& name = op.operator_name().name;
  const size_t n = op.schema().arguments().size();
  if (stack.size() < n) return false;
  const IValue* args = stack.data() + (stack.size() - n);
  // Not a bug: arange over a range of 2^62 integers asks the allocator for exabytes, which
  // libFuzzer reports as out-of-memory. (That the allocator answers with std::bad_alloc, not
  // a dk::Error, is noted for runtime/src/tensor/allocator.cpp.)
  if (name == "dk::arange")
    for (size_t i = 0; i < 3 && i < n; ++i)
      if (args[i].isInt() && (args[i].toInt() > (int64_t{1} << 31) || args[i].toInt() < -(int64_t{1} << 31)))
        return true;
  return false;
}

[[noreturn]] void finding(const OperatorHandle& op, const std::string& what) {
  std::fprintf(stderr, "boxed call of %s: %s\n", op.schema().str().c_str(), what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const OperatorName& name : Dispatcher::singleton().getAllOpNames()) {
    if (!name.name.starts_with("dk::")) continue;
    if (auto op = Dispatcher::singleton().findSchema(name)) operators().push_back(*op);
  }
  if (operators().empty()) {
    std::fprintf(stderr, "no dk:: operators registered\n");
    std::abort();
  }
  // Kernels may warn (e.g. a deprecated argument); keep the fuzzer's output readable.
  setWarningHandler([](const std::string&) {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  const OperatorHandle& op = operators()[in.pick(operators().size())];
  const FunctionSchema& schema = op.schema();
  const auto& args = schema.arguments();

  // Usually one value per argument; sometimes fewer or more (values below the arguments are
  // the caller's and must survive the call).
  size_t count = args.size();
  const uint8_t shape = in.byte();
  if ((shape & 7) == 0) count = in.pick(args.size() + 3);
  Stack stack;
  for (size_t i = 0; i < count; ++i) {
    stack.push_back(i < args.size() ? valueOf(args[i].type, in, 0) : anyValue(in, 0));
  }

  // DK_FUZZ_PRINT=1: show each call (to read what a reproducer does).
  static const bool print = std::getenv("DK_FUZZ_PRINT") != nullptr;
  if (print) {
    std::ostringstream out;
    out << schema.str() << "\n  stack:";
    for (const IValue& v : stack) {
      out << " [" << IValue::kindName(v.tagKind());
      if (v.isTensor() && v.toTensor().defined()) {
        const Tensor t = v.toTensor();
        out << " " << t.dtype() << " " << t.device() << " sizes " << t.sizes().size() << "d"
            << (t.requires_grad() ? " requires_grad" : "") << (t.is_view() ? " view" : "");
      } else if (!v.isTensor()) {
        out << " " << v;
      }
      out << "]";
    }
    std::fprintf(stderr, "%s\n", out.str().c_str());
  }
  if (hitsKnownIssue(op, stack)) return 0;
  const size_t before = stack.size();
  try {
    op.callBoxed(&stack);
  } catch (const Error&) {
    return 0;  // the expected outcome for a bad stack
  } catch (const std::exception& e) {
    finding(op, std::string("raised a non-dk::Error exception: ") + e.what());
  } catch (...) {
    finding(op, "raised a non-std::exception");
  }

  if (before < args.size()) finding(op, "returned with fewer values on the stack than the schema has arguments");
  if (!schema.is_varret()) {
    const auto& rets = schema.returns();
    const size_t expected = before - args.size() + rets.size();
    if (stack.size() != expected) {
      finding(op, "left " + std::to_string(stack.size()) + " values on the stack, expected " + std::to_string(expected));
    }
    for (size_t i = 0; i < rets.size(); ++i) {
      const IValue& v = stack[before - args.size() + i];
      if (!v.matchesType(rets[i].type)) {
        finding(op, "return " + std::to_string(i) + " is of kind " + std::string(IValue::kindName(v.tagKind())) +
                        ", expected " + rets[i].type.str());
      }
    }
  }
  // Half the time, run backward through what the call recorded: the generated autograd
  // kernels' nodes must also only ever raise dk::Error.
  if (shape & 8) {
    for (size_t i = before - std::min(before, args.size()); i < stack.size(); ++i) {
      if (!stack[i].isTensor()) continue;
      const Tensor out = stack[i].toTensor();
      if (!out.defined() || !out.requires_grad()) continue;
      try {
        dk::sum(out).backward();
      } catch (const Error&) {
      } catch (const std::exception& e) {
        finding(op, std::string("backward raised a non-dk::Error exception: ") + e.what());
      }
    }
  }
  return 0;
}
