// dk/testing/opcheck.cpp: see Note [opcheck] in dk/testing/opcheck.h.
#include "dk/testing/opcheck.h"

#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <type_traits>
#include <utility>

#include "dk/core/generator.h"
#include "dk/core/grad_mode.h"
#include "dk/dispatch/dispatch_mode.h"
#include "dk/dispatch/function_schema.h"
#include "dk/generated/AutogradFunctions.h"
#include "dk/generated/Operators.h"
#include "dk/generated/ops/_to_copy.h"
#include "dk/generated/ops/clone.h"
#include "dk/tensor/allocator.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/testing/gradcheck.h"
#include "dk/util/error.h"

namespace dk::testing {

namespace {

constexpr const char* kOk = "ok";

// ---------------------------------------------------------------- walking the arguments

// A tensor of a stack, with where it came from: "self", "tensors[1]", "output 0".
struct Found {
  Tensor tensor;
  std::string where;
  const Argument* argument = nullptr;  // the schema argument or return it belongs to
};

void collect(const IValue& v, const std::string& where, const Argument* argument, std::vector<Found>& out) {
  if (v.isTensor()) {
    Tensor t = v.toTensor();
    if (t.defined()) out.push_back({t, where, argument});
  } else if (v.isList() || v.isTuple()) {
    const auto& elements = v.isList() ? v.toListElements() : v.toTupleElements();
    for (size_t i = 0; i < elements.size(); ++i)
      collect(elements[i], where + "[" + std::to_string(i) + "]", argument, out);
  }
}

std::vector<Found> tensorsOf(const Stack& values, const std::vector<Argument>& schema_args, const char* unnamed) {
  std::vector<Found> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const Argument* a = i < schema_args.size() ? &schema_args[i] : nullptr;
    std::string where = a && !a->name.empty() ? a->name : std::string(unnamed) + " " + std::to_string(i);
    collect(values[i], where, a, out);
  }
  return out;
}

// `v` with every tensor replaced by f(tensor).
IValue mapTensors(const IValue& v, const std::function<Tensor(const Tensor&)>& f) {
  if (v.isTensor()) {
    Tensor t = v.toTensor();
    return t.defined() ? IValue(f(t)) : v;
  }
  if (v.isList()) {
    std::vector<IValue> elements;
    for (const IValue& e : v.toListElements()) elements.push_back(mapTensors(e, f));
    return IValue::makeList(v.listElementType(), std::move(elements));
  }
  if (v.isTuple()) {
    std::vector<IValue> elements;
    for (const IValue& e : v.toTupleElements()) elements.push_back(mapTensors(e, f));
    return IValue::makeTuple(std::move(elements));
  }
  return v;
}

Stack mapStack(const Stack& args, const std::function<Tensor(const Tensor&)>& f) {
  Stack out;
  out.reserve(args.size());
  for (const IValue& v : args) out.push_back(mapTensors(v, f));
  return out;
}

// Fresh copies of the arguments' tensors (same values, dtypes and devices, no history), so that
// each check starts from the caller's values and none writes the caller's tensors.
Stack freshCopies(const Stack& args) {
  NoGradGuard no_grad;
  return mapStack(args, [](const Tensor& t) { return dk::clone(t).detach(); });
}

// The bytes of t's elements in row-major order (a contiguous copy's memory; CPU tensors: the
// checks run on CPU).
std::string bytesOf(const Tensor& t) {
  NoGradGuard no_grad;
  Tensor c = t.detach().contiguous();
  if (c.numel() == 0 || c.data_ptr() == nullptr) return {};
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

std::string typeName(ScalarType t) { return std::string(toString(t)); }

std::string sizesString(IntArrayRef sizes) {
  std::ostringstream out;
  out << sizes;
  return out.str();
}

// The operator under check; every call of a random operator starts from the same seed, so that
// the checks compare the same random values.
struct CallContext {
  const OperatorHandle& op;
  bool random = false;
  void seed() const {
    if (random) manual_seed(0x6f70636865636bULL);
  }
};

Stack callBoxed(const CallContext& ctx, Stack args) {
  ctx.seed();
  ctx.op.callBoxed(&args);
  return args;
}

// ---------------------------------------------------------------- the schema check

bool sharesAliasSet(const Argument* a, const Argument* b) {
  if (!a || !b || !a->alias_info || !b->alias_info) return false;
  for (const std::string& x : a->alias_info->before_set)
    for (const std::string& y : b->alias_info->before_set)
      if (x == y || x == "*" || y == "*") return true;
  return false;
}

bool isWritten(const Argument* a) { return a && a->alias_info && a->alias_info->is_write; }

bool sameStorage(const Tensor& a, const Tensor& b) {
  return a.has_storage() && b.has_storage() && a.storage().nbytes() > 0 &&
         a.storage().unsafeGetStorageImpl() == b.storage().unsafeGetStorageImpl();
}

// Snapshots the tensor arguments on `stack`, runs the call (`run` leaves the returns on the
// stack), and says what the schema did not allow: "" when nothing.
std::string callAndCompareWithSchema(const FunctionSchema& schema, Stack* stack, const std::function<void()>& run) {
  std::vector<Found> inputs = tensorsOf(*stack, schema.arguments(), "argument");
  struct Snapshot {
    std::string bytes;
    int64_t version;
    std::vector<int64_t> sizes, strides;
  };
  std::vector<Snapshot> before;
  for (const Found& f : inputs)
    before.push_back({bytesOf(f.tensor), f.tensor._version(), f.tensor.sizes().vec(), f.tensor.strides().vec()});
  run();
  std::vector<Found> outputs = tensorsOf(*stack, schema.returns(), "output");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Found& f = inputs[i];
    if (isWritten(f.argument)) continue;
    const bool changed = bytesOf(f.tensor) != before[i].bytes || f.tensor._version() != before[i].version;
    const bool reshaped = f.tensor.sizes().vec() != before[i].sizes || f.tensor.strides().vec() != before[i].strides;
    if (changed || reshaped)
      return "argument '" + f.where + "' is not defined as mutable but was " +
             (reshaped ? "resized or restrided" : "mutated") + " (a kernel that writes it needs Tensor(a!) " +
             (f.argument ? f.argument->name : f.where) + " in the schema)";
  }
  for (const Found& out : outputs)
    for (const Found& in : inputs)
      if (sameStorage(out.tensor, in.tensor) && !sharesAliasSet(out.argument, in.argument))
        return out.where + " aliases argument '" + in.where +
               "' (they share storage) but the schema does not say so (annotate both with one alias set, " +
               "e.g. Tensor(a) " + (in.argument ? in.argument->name : in.where) + " -> Tensor(a))";
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (sameStorage(outputs[i].tensor, outputs[j].tensor) && !sharesAliasSet(outputs[i].argument, outputs[j].argument))
        return outputs[i].where + " and " + outputs[j].where +
               " share storage but the schema gives them no common alias set";
  return {};
}

// Note [opcheck's schema mode]
// The mode checks the operator's call where it reaches the mode: below autograd, as the
// kernels see it (modes pop themselves while their handler runs, so the kernels' inner calls
// go past it). An operator whose autograd kernel computes with other operators instead of
// redispatching itself never reaches the mode; its call is checked from outside.
class SchemaCheckMode : public DispatchMode {
 public:
  explicit SchemaCheckMode(const OperatorHandle& op) : op_(op) {}

  void dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) override {
    if (!(op == op_) || seen_) {
      op.callBoxed(stack);
      return;
    }
    seen_ = true;
    problem_ = callAndCompareWithSchema(op.schema(), stack, [&] { op.callBoxed(stack); });
  }

  bool seen() const { return seen_; }
  const std::string& problem() const { return problem_; }

 private:
  OperatorHandle op_;
  bool seen_ = false;
  std::string problem_;
};

std::string checkSchema(const CallContext& ctx, const Stack& args) {
  auto mode = std::make_shared<SchemaCheckMode>(ctx.op);
  {
    DispatchModeGuard guard(mode);
    callBoxed(ctx, freshCopies(args));
  }
  std::string problem = mode->problem();
  if (!mode->seen()) {
    Stack stack = freshCopies(args);
    problem = callAndCompareWithSchema(ctx.op.schema(), &stack, [&] {
      ctx.seed();
      ctx.op.callBoxed(&stack);
    });
  }
  return problem.empty() ? kOk : problem;
}

// ---------------------------------------------------------------- the meta check

// The tensor a view or in-place result stands for: its base when it is a view, else itself.
const TensorImpl* aliasRoot(const Tensor& t) { return t.is_view() ? t.base().unsafeGetTensorImpl() : t.unsafeGetTensorImpl(); }

// Which input each output aliases (its index in `inputs`, or -1): by storage (Meta tensors have
// a storage of the right size without memory), or on Meta by view base.
std::vector<int> aliasPattern(const std::vector<Found>& outputs, const std::vector<Found>& inputs, bool meta) {
  std::vector<int> pattern;
  for (const Found& out : outputs) {
    int which = -1;
    for (size_t i = 0; i < inputs.size() && which < 0; ++i) {
      const bool alias = sameStorage(out.tensor, inputs[i].tensor) ||
                         (meta && aliasRoot(out.tensor) == aliasRoot(inputs[i].tensor));
      if (alias) which = static_cast<int>(i);
    }
    pattern.push_back(which);
  }
  return pattern;
}

// The layout of `other` (the call on `device`: "Meta", "CUDA") against the CPU call's: sizes,
// dtype, strides of dims longer than 1, storage offset.
std::string compareLayouts(const std::vector<Found>& real, const std::vector<Found>& other, const char* device) {
  const std::string on = std::string(" on ") + device + ", ";
  if (real.size() != other.size())
    return std::string("the ") + device + " call returned " + std::to_string(other.size()) + " tensors, the CPU call " +
           std::to_string(real.size());
  for (size_t i = 0; i < real.size(); ++i) {
    const Tensor& r = real[i].tensor;
    const Tensor& m = other[i].tensor;
    const std::string& where = real[i].where;
    if (r.sizes() != m.sizes()) return where + ": sizes " + sizesString(m.sizes()) + on + sizesString(r.sizes()) + " on CPU";
    if (r.scalar_type() != m.scalar_type())
      return where + ": dtype " + typeName(m.scalar_type()) + on + typeName(r.scalar_type()) + " on CPU";
    if (r.numel() == 0) continue;
    for (int64_t d = 0; d < r.dim(); ++d)
      if (r.size(d) > 1 && r.stride(d) != m.stride(d))
        return where + ": strides " + sizesString(m.strides()) + on + sizesString(r.strides()) + " on CPU";
    if (r.storage_offset() != m.storage_offset())
      return where + ": storage offset " + std::to_string(m.storage_offset()) + on +
             std::to_string(r.storage_offset()) + " on CPU";
  }
  return {};
}

// The values of `other` (a CUDA call's outputs) against the CPU call's: within
// atol + rtol * |cpu| (OpcheckOptions' tolerances: the kernels differ), NaN where NaN.
std::string compareValuesWithin(const std::vector<Found>& real, const std::vector<Found>& other, const char* device,
                                const OpcheckOptions& options) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < real.size(); ++i) {
    std::vector<double> r = to_doubles(dk::_to_copy(real[i].tensor.detach(), kDouble));
    std::vector<double> m = to_doubles(dk::_to_copy(other[i].tensor.detach(), kDouble, std::nullopt, Device(DeviceType::CPU)));
    for (size_t k = 0; k < r.size(); ++k) {
      const bool both_nan = std::isnan(r[k]) && std::isnan(m[k]);
      if (both_nan || r[k] == m[k] || std::fabs(m[k] - r[k]) <= options.atol + options.rtol * std::fabs(r[k])) continue;
      std::ostringstream out;
      out << real[i].where << " element " << index_string(real[i].tensor.sizes().vec(), static_cast<int64_t>(k))
          << " is " << m[k] << " on " << device << ", " << r[k] << " on CPU (more than " << options.atol << " + "
          << options.rtol << " * |CPU value| apart)";
      return out.str();
    }
  }
  return {};
}

// A copy of `t` on `device` with t's sizes, strides and storage offset, over fresh storage of
// t's extent; values copied except on Meta. Dims of stride 0 stay expanded (one element each).
Tensor layoutCopy(const Tensor& t, Device device) {
  NoGradGuard no_grad;
  int64_t extent = t.numel() == 0 ? 0 : 1;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 0) extent += (t.size(d) - 1) * t.stride(d);
  Tensor out = dk::detail::empty_contiguous({t.storage_offset() + extent}, t.scalar_type(), device);
  out.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes().vec(), t.strides().vec());
  out.unsafeGetTensorImpl()->set_storage_offset(t.storage_offset());
  if (device.type == DeviceType::Meta || t.numel() == 0) return out;
  Tensor src = t.detach(), dst = out;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0) {
      src = src.narrow(d, 0, 1);
      dst = dst.narrow(d, 0, 1);
    }
  dst.copy_(src);
  return out;
}

// `args` with every tensor a layoutCopy on `device`; a device argument (a factory's) names it.
Stack argumentsOn(const FunctionSchema& schema, const Stack& args, Device device) {
  Stack out = mapStack(args, [&](const Tensor& t) { return layoutCopy(t, device); });
  for (size_t i = 0; i < out.size() && i < schema.arguments().size(); ++i) {
    const Type& type = schema.arguments()[i].type;
    const bool is_device = type.kind() == TypeKind::Device ||
                           (type.kind() == TypeKind::Optional && type.element().kind() == TypeKind::Device);
    if (is_device) out[i] = IValue(device);
  }
  return out;
}

// The call on copies of the arguments on `device` against the call on CPU copies of the same
// layout: the outputs' layouts, which argument each aliases, and (values_too) their values.
std::string compareWithCpu(const CallContext& ctx, const Stack& args, Device device, bool values_too,
                           const OpcheckOptions& options) {
  const char* name = device.type == DeviceType::Meta ? "Meta" : "CUDA";
  const FunctionSchema& schema = ctx.op.schema();
  Stack real_args = argumentsOn(schema, args, Device(DeviceType::CPU));
  Stack other_args = argumentsOn(schema, args, device);
  std::vector<Found> real_inputs = tensorsOf(real_args, schema.arguments(), "argument");
  std::vector<Found> other_inputs = tensorsOf(other_args, schema.arguments(), "argument");
  Stack real_out = callBoxed(ctx, real_args);
  Stack other_out;
  try {
    other_out = callBoxed(ctx, other_args);
  } catch (const std::exception& e) {
    return std::string("the ") + name + " call raised: " + e.what();
  }
  std::vector<Found> real = tensorsOf(real_out, schema.returns(), "output");
  std::vector<Found> other = tensorsOf(other_out, schema.returns(), "output");
  std::string difference = compareLayouts(real, other, name);
  if (!difference.empty()) return difference;
  const bool meta = device.type == DeviceType::Meta;
  std::vector<int> real_alias = aliasPattern(real, real_inputs, false);
  std::vector<int> other_alias = aliasPattern(other, other_inputs, meta);
  for (size_t i = 0; i < real.size(); ++i)
    if (real_alias[i] != other_alias[i]) {
      auto which = [&](int k) { return k < 0 ? std::string("no argument") : "'" + real_inputs[static_cast<size_t>(k)].where + "'"; };
      return real[i].where + " aliases " + which(other_alias[i]) + " on " + name + " but " + which(real_alias[i]) + " on CPU";
    }
  if (values_too) {
    difference = compareValuesWithin(real, other, name, options);
    if (difference.empty())  // in-place and out= operators: the written arguments too
      difference = compareValuesWithin(real_inputs, other_inputs, name, options);
  }
  return difference;
}

// Note [opcheck on CUDA]
// The meta check also runs the call on CUDA when the operator has a kernel for the CUDA slot
// (its own or a composite's) and dk::deviceCount(CUDA) finds a GPU: layouts and aliasing as on
// Meta, values within OpcheckOptions' atol/rtol. Without a GPU only the Meta half runs.
std::string checkMeta(const CallContext& ctx, const Stack& args, const std::string& tags, const OpcheckOptions& options) {
  for (const char* tag : {"data_dependent_output", "dynamic_output_shape"})
    if (tags.find(tag) != std::string::npos)
      return std::string("skipped: tagged ") + tag + " (a Meta kernel cannot know the result)";
  std::string difference = compareWithCpu(ctx, args, Device(DeviceType::Meta), false, options);
  if (difference.empty() && deviceCount(DeviceType::CUDA) > 0 &&
      ctx.op.hasComputedKernelForDispatchKey(DispatchKey::CUDA))
    difference = compareWithCpu(ctx, args, Device(DeviceType::CUDA, 0), true, options);
  return difference.empty() ? kOk : difference;
}

// ---------------------------------------------------------------- boxed against typed

std::string compareValues(const std::vector<Found>& a, const std::vector<Found>& b, const char* a_name,
                          const char* b_name) {
  if (a.size() != b.size())
    return std::string(a_name) + " gave " + std::to_string(a.size()) + " tensors, " + b_name + " " +
           std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor& x = a[i].tensor;
    const Tensor& y = b[i].tensor;
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type() ||
        (x.numel() > 0 && x.strides() != y.strides()))
      return a[i].where + ": " + a_name + " gives " + typeName(x.scalar_type()) + sizesString(x.sizes()) +
             " strides " + sizesString(x.strides()) + ", " + b_name + " " + typeName(y.scalar_type()) +
             sizesString(y.sizes()) + " strides " + sizesString(y.strides());
    if (bytesOf(x) != bytesOf(y)) return a[i].where + ": " + a_name + " and " + b_name + " give different values";
  }
  return {};
}

std::string checkBoxedUnboxed(const CallContext& ctx, const Stack& args, TypedCall typed) {
  if (!typed) return "skipped: no typed entry point (pass OpcheckOptions::typed_call = typedCall<Sig>())";
  const FunctionSchema& schema = ctx.op.schema();
  Stack boxed_args = freshCopies(args), typed_args = freshCopies(args);
  Stack boxed_out = callBoxed(ctx, boxed_args);
  Stack typed_out = typed_args;
  ctx.seed();
  typed(ctx.op, &typed_out);
  std::string difference = compareValues(tensorsOf(boxed_out, schema.returns(), "output"),
                                         tensorsOf(typed_out, schema.returns(), "output"), "callBoxed", "the typed call");
  if (difference.empty())
    difference = compareValues(tensorsOf(boxed_args, schema.arguments(), "argument"),
                               tensorsOf(typed_args, schema.arguments(), "argument"), "callBoxed", "the typed call");
  return difference.empty() ? kOk : difference;
}

// ---------------------------------------------------------------- autograd

bool hasAutogradKernel(const OperatorHandle& op) {
  return op.hasKernelForDispatchKey(DispatchKey::Autograd) || op.hasKernelForDispatchKey(DispatchKey::AutogradCPU) ||
         op.hasKernelForDispatchKey(DispatchKey::CompositeImplicitAutograd);
}

std::string checkAutogradRegistration(const CallContext& ctx, const Stack& args) {
  if (hasAutogradKernel(ctx.op)) return kOk;
  const FunctionSchema& schema = ctx.op.schema();
  bool any = false;
  // Non-leaf copies that require grad, so that in-place operators may write them.
  Stack grad_args = mapStack(freshCopies(args), [&](const Tensor& t) {
    if (!isFloatingType(t.scalar_type())) return t;
    any = true;
    Tensor leaf = t.detach();
    leaf.requires_grad_(true);
    return dk::clone(leaf);
  });
  if (!any) return "skipped: no floating-point tensor argument";
  std::vector<Found> inputs = tensorsOf(grad_args, schema.arguments(), "argument");
  Stack out = callBoxed(ctx, grad_args);
  for (const Found& o : tensorsOf(out, schema.returns(), "output")) {
    bool is_input = false;
    for (const Found& in : inputs) is_input = is_input || o.tensor.is_same(in.tensor);
    if (!is_input && o.tensor.requires_grad())
      return o.where + " requires grad but " + ctx.op.operator_name().toString() +
             " has no autograd kernel: its kernel recorded the autograd graph of the operators it calls " +
             "(register it at CompositeImplicitAutograd, or give it a derivative)";
  }
  return kOk;
}

// Whether derivatives.yaml's formula for `op` ("dk::mul.Tensor") is twice differentiable: an
// entry without twice_differentiable: False. Operators without an entry: false.
bool yamlSaysTwiceDifferentiable(std::string_view op) {
  if (!op.starts_with("dk::")) return false;
  op.remove_prefix(4);
  for (const autograd::generated::DerivativeEntry& e : autograd::generated::kDerivativeEntries)
    if (e.op == op) return e.twice_differentiable;
  return false;
}

std::string checkGradients(const CallContext& ctx, const Stack& args, const OpcheckOptions& options,
                           bool double_backward) {
  if (ctx.random) return "skipped: random (tagged nondeterministic_seeded)";
  if (!hasAutogradKernel(ctx.op)) return "skipped: no autograd kernel (not differentiable)";
  const FunctionSchema& schema = ctx.op.schema();
  if (schema.is_mutable()) return "skipped: writes its arguments (gradcheck its functional form)";
  // The float64 tensors are gradcheck's inputs, in the order tensorsOf finds them.
  std::vector<Tensor> inputs;
  Stack base = freshCopies(args);
  for (const Found& f : tensorsOf(base, schema.arguments(), "argument"))
    if (f.tensor.scalar_type() == kDouble) inputs.push_back(f.tensor);
  if (inputs.empty()) return "skipped: no float64 tensor argument";
  auto run = [&](const std::vector<Tensor>& in) {
    size_t next = 0;
    Stack call_args = mapStack(base, [&](const Tensor& t) { return t.scalar_type() == kDouble ? in[next++] : t; });
    Stack out = callBoxed(ctx, std::move(call_args));
    std::vector<Tensor> results;
    for (const Found& f : tensorsOf(out, schema.returns(), "output")) results.push_back(f.tensor);
    return results;
  };
  for (Tensor& t : inputs) t.requires_grad_(true);
  // The differentiable outputs are those that require grad when the inputs do (the YAML's
  // output_differentiability leaves max's indices and layer norm's statistics out).
  std::vector<size_t> differentiable;
  std::vector<Tensor> first = run(inputs);
  for (size_t i = 0; i < first.size(); ++i) {
    if (!first[i].requires_grad()) continue;
    if (first[i].scalar_type() != kDouble)
      return "skipped: output " + std::to_string(i) + " is " + typeName(first[i].scalar_type()) +
             " (finite differences need float64)";
    differentiable.push_back(i);
  }
  if (differentiable.empty()) return "skipped: no output requires grad (nothing to differentiate)";
  GradcheckMultiFn fn = [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> all = run(in), picked;
    for (size_t i : differentiable) picked.push_back(all[i]);
    return picked;
  };
  GradcheckOptions gc;
  gc.atol = options.grad_atol;
  gc.rtol = options.grad_rtol;
  GradcheckResult result = gradcheck_multi(fn, inputs, gc);
  if (!result.ok) return result.message;
  if (!double_backward) return kOk;
  result = gradgradcheck_multi(fn, inputs, gc);
  return result.ok ? kOk : result.message;
}

// ---------------------------------------------------------------- lookups

std::string qualifiedName(const OperatorHandle& op) { return op.operator_name().toString(); }

const ops::OperatorInfo* generatedInfo(std::string_view name) {
  for (const ops::OperatorInfo& info : ops::all_operators()) {
    std::string qualified = std::string(info.name) + (*info.overload_name ? std::string(".") + info.overload_name : "");
    if (qualified == name) return &info;
  }
  return nullptr;
}

using TypedCallTable = std::map<std::string, TypedCall, std::less<>>;

template <class Op>
void addTypedCall(TypedCallTable& table) {
  if constexpr (!std::is_same_v<Op, ops::OperatorListEnd>) {
    std::string name = std::string(Op::name) + (*Op::overload_name ? std::string(".") + Op::overload_name : "");
    table.emplace(std::move(name), &detail::callTyped<typename Op::signature>);
  }
}

template <class... Ops>
TypedCallTable typedCallTable(ops::OperatorList<Ops...>) {
  TypedCallTable table;
  (addTypedCall<Ops>(table), ...);
  return table;
}

}  // namespace

TypedCall generatedTypedCall(std::string_view name) {
  static const TypedCallTable table = typedCallTable(ops::AllOperators{});
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

bool OpcheckResult::passed() const {
  for (const auto& [check, outcome] : outcome)
    if (failed(check)) return false;
  return true;
}

bool OpcheckResult::failed(std::string_view check) const {
  auto it = outcome.find(std::string(check));
  return it != outcome.end() && it->second != kOk && it->second.rfind("skipped", 0) != 0;
}

std::string OpcheckResult::toString() const {
  std::ostringstream out;
  for (const auto& [check, text] : outcome) out << op << "  " << check << ": " << text << "\n";
  return out.str();
}

OpcheckResult opcheck(const OperatorHandle& op, const Stack& args, OpcheckOptions options) {
  OpcheckResult result;
  result.op = qualifiedName(op);
  const ops::OperatorInfo* info = generatedInfo(result.op);
  const std::string tags = info ? info->tags : "";
  CallContext ctx{op, tags.find("nondeterministic_seeded") != std::string::npos};
  // The arguments must be valid: every check compares against this call.
  try {
    callBoxed(ctx, freshCopies(args));
  } catch (const std::exception& e) {
    DK_CHECK(false, "opcheck(", result.op, "): the call itself raised with these arguments: ", e.what());
  }
  TypedCall typed = options.typed_call ? options.typed_call : generatedTypedCall(result.op);
  using Check = std::function<std::string()>;
  const std::map<std::string, Check, std::less<>> checks = {
      {"schema", [&] { return checkSchema(ctx, args); }},
      {"meta", [&] { return checkMeta(ctx, args, tags, options); }},
      {"boxed_unboxed", [&] { return checkBoxedUnboxed(ctx, args, typed); }},
      {"autograd_registration", [&] { return checkAutogradRegistration(ctx, args); }},
      {"gradcheck", [&] {
         return checkGradients(ctx, args, options,
                               options.double_backward.value_or(yamlSaysTwiceDifferentiable(result.op)));
       }},
  };
  for (const std::string& name : options.checks)
    DK_CHECK(checks.count(name), "opcheck: unknown check '", name,
             "' (the checks are schema, meta, boxed_unboxed, autograd_registration and gradcheck)");
  for (const std::string& name : options.checks) {
    try {
      result.outcome[name] = checks.find(name)->second();
    } catch (const std::exception& e) {
      result.outcome[name] = std::string("raised: ") + e.what();
    }
  }
  return result;
}

void opcheckOrThrow(const OperatorHandle& op, const Stack& args, OpcheckOptions options) {
  OpcheckResult result = opcheck(op, args, options);
  for (const std::string& check : options.checks)
    DK_CHECK(!result.failed(check), "opcheck(", result.op, "): ", check, " failed: ", result.outcome.at(check));
}

}  // namespace dk::testing
