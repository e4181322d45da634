// Batching rules shared by families of operators (Note [Pointwise batching rule]).
#include "dk/func/batching_rules.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "dk/func/batched_tensor.h"
#include "dk/func/dynamic_layer.h"
#include "dk/func/lazy_operator.h"
#include "dk/generated/ops/clone_ops.h"
#include "dk/func/vmap.h"
#include "dk/tensor/tensor_geometry.h"

namespace dk::func {

namespace {

bool hasTensorList(const IValue* args, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (args[i].isList()) return true;
  return false;
}

}  // namespace

Tensor padAfterBatch(Tensor value, int64_t logical_rank, int64_t rank) {
  for (int64_t d = logical_rank; d < rank; ++d) value = value.unsqueeze(1);
  return value;
}

int64_t highestBatchLevel(const IValue* args, size_t n) {
  int64_t level = 0;
  auto see = [&](const IValue& v) {
    if (!v.isTensor()) return;
    if (const BatchedTensorImpl* b = maybeBatched(v.toTensor())) level = std::max(level, b->level());
  };
  for (size_t i = 0; i < n; ++i) {
    see(args[i]);
    if (args[i].isList())
      for (const IValue& e : args[i].toListElements()) see(e);
  }
  return level;
}

bool isInplaceSchema(const FunctionSchema& schema) {
  const auto& args = schema.arguments();
  const auto& rets = schema.returns();
  return !args.empty() && args[0].alias_info && args[0].alias_info->is_write && !args[0].kwarg_only &&
         rets.size() == 1 && rets[0].alias_info && rets[0].alias_info->is_write;
}

void pointwiseBatchingRule(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments().size();
  DK_CHECK(stack->size() >= n, "vmap pointwise rule for ", op.operator_name(), ": ", n,
           " arguments expected, the stack has ", stack->size());
  const size_t base = stack->size() - n;
  const IValue* args = stack->data() + base;
  const int64_t level = highestBatchLevel(args, n);
  bool run_loop = level == 0 || hasTensorList(args, n);
  for (const Argument& r : schema.returns()) run_loop = run_loop || r.type.kind() != TypeKind::Tensor;
  const bool inplace = isInplaceSchema(schema);
  if (!inplace && schema.is_mutable()) run_loop = true;  // out= forms: the fallback says why it cannot
  // The arguments' logical ranks and dtypes: a batched 0-dim argument among several dtypes would
  // promote as a dimensioned tensor once physical.
  int64_t rank = 0;
  bool batched_scalar = false;
  bool mixed_dtypes = false;
  std::optional<ScalarType> dtype;
  for (size_t i = 0; i < n && !run_loop; ++i) {
    if (!args[i].isTensor()) continue;
    const Tensor t = args[i].toTensor();
    if (!t.defined()) continue;
    rank = std::max(rank, t.dim());
    if (batchedAt(t, level) != nullptr && t.dim() == 0) batched_scalar = true;
    if (dtype && *dtype != t.dtype()) mixed_dtypes = true;
    dtype = t.dtype();
  }
  if (batched_scalar && mixed_dtypes) run_loop = true;
  if (run_loop) {
    forLoopBatchingFallback(op, ks, stack);
    return;
  }
  if (inplace && batchedAt(args[0].toTensor(), level) == nullptr) {
    // The fallback gives functorch's error for a mapped argument written into an unmapped self.
    forLoopBatchingFallback(op, ks, stack);
    return;
  }
  Stack physical;
  physical.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const BatchedTensorImpl* b = args[i].isTensor() ? batchedAt(args[i].toTensor(), level) : nullptr;
    if (b == nullptr) {
      physical.push_back(args[i]);
      continue;
    }
    // In place, self keeps its own rank: the operator cannot grow it, and says so.
    const int64_t target = inplace && i == 0 ? args[i].toTensor().dim() : rank;
    physical.push_back(IValue(padAfterBatch(valueWithBdimFirst(*b), args[i].toTensor().dim(), target)));
  }
  IValue self = inplace ? args[0] : IValue();
  if (isRandomOperator(op)) {  // the physical call is below vmap (Note [vmap randomness])
    ExcludeDispatchKeyGuard below_vmap_mode(DispatchKey::FuncTorchVmapMode);
    op.callBoxed(&physical);
  } else {
    op.callBoxed(&physical);
  }
  stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  if (inplace) {
    stack->push_back(std::move(self));  // written through its value
    return;
  }
  for (IValue& r : physical) stack->push_back(IValue(makeBatched(std::move(r).toTensor(), 0, level)));
}

void alongDimsBatchingRule(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const FunctionSchema& schema = op.schema();
  const auto& arguments = schema.arguments();
  const size_t n = arguments.size();
  DK_CHECK(stack->size() >= n, "vmap along-dims rule for ", op.operator_name(), ": ", n,
           " arguments expected, the stack has ", stack->size());
  const size_t base = stack->size() - n;
  const IValue* args = stack->data() + base;
  const int64_t level = highestBatchLevel(args, n);
  // The one tensor argument (the generator checked there is one), batched at this level.
  const BatchedTensorImpl* self = nullptr;
  int64_t rank = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!args[i].isTensor()) continue;
    rank = args[i].toTensor().dim();
    self = batchedAt(args[i].toTensor(), level);
  }
  bool run_loop = self == nullptr || rank == 0;
  Stack physical(args, args + n);
  for (size_t i = 0; i < n && !run_loop; ++i) {
    IValue& v = physical[i];
    if (v.isTensor()) {
      v = IValue(valueWithBdimFirst(*self));
      continue;
    }
    if (arguments[i].name.rfind("dim", 0) != 0) continue;
    if (v.isInt()) {
      v = IValue(maybe_wrap_dim(v.toInt(), rank) + 1);
    } else if (v.isList() && !v.toListElements().empty()) {
      std::vector<IValue> shifted;
      for (const IValue& d : v.toListElements()) shifted.emplace_back(maybe_wrap_dim(d.toInt(), rank) + 1);
      v = IValue::makeList(v.listElementType(), std::move(shifted));
    } else if (v.isNone() || v.isList()) {
      run_loop = true;  // every dim: the batch dim would be reduced too
    }
  }
  if (run_loop) {
    forLoopBatchingFallback(op, ks, stack);
    return;
  }
  op.callBoxed(&physical);
  stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  for (IValue& r : physical) stack->push_back(IValue(makeBatched(std::move(r).toTensor(), 0, level)));
}

namespace {

struct ViewCopyRule : OperatorKernel {
  explicit ViewCopyRule(const char* view) : view(view) {}
  LazyOperator view;
};

void viewCopyBatched(OperatorKernel* kernel, const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  const OperatorHandle& view = static_cast<ViewCopyRule*>(kernel)->view.get();
  const size_t returns = op.schema().returns().size();
  {
    CallAsFromOutsideLayer fresh;  // the view's call reaches its rule as a call from outside would
    view.callBoxed(stack);
  }
  for (size_t i = stack->size() - returns; i < stack->size(); ++i) {
    mapTensors((*stack)[i], [](const Tensor& t) {
      const BatchedTensorImpl* b = maybeBatched(t);
      if (b == nullptr) return ops::clone::call(t, MemoryFormat::Contiguous);
      return makeBatched(ops::clone::call(valueWithBdimFirst(*b), MemoryFormat::Contiguous), 0, b->level());
    });
  }
}

}  // namespace

CppFunction viewCopyBatchingRule(const char* view) {
  return boxedKernelWith(std::make_shared<ViewCopyRule>(view), &viewCopyBatched,
                         std::string("view copy batching rule (") + view + ")");
}

void randomnessBatchingRule(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const DispatchKeySet below = ks.remove(DispatchKey::FuncTorchVmapMode);
  const std::vector<DynamicLayer>& layers = dynamicLayerStack();
  if (layers.empty() || layers.back().type != TransformType::Vmap) {  // below every vmap
    op.redispatchBoxed(below, stack);
    return;
  }
  // The innermost layer's policy; copied, as the stack changes while the operator runs below.
  const int64_t level = layers.back().level;
  const int64_t batch = layers.back().batch_size;
  const Randomness randomness = layers.back().randomness;
  DK_CHECK(randomness != Randomness::Error, "vmap: called random operation while in randomness error mode. Please "
           "either use the 'same' or 'different' randomness flags on vmap or perform the randomness operation out "
           "of vmap (", op.operator_name(), ")");
  const FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments().size();
  const size_t base = stack->size() - n;
  size_t first_tensor = n;
  bool batched = false;
  for (size_t i = 0; i < n; ++i) {
    const IValue& v = (*stack)[base + i];
    if (!v.isTensor()) continue;
    if (first_tensor == n) first_tensor = i;
    batched = batched || batchedAt(v.toTensor(), level) != nullptr;
  }
  if (first_tensor < n) {
    // An operator on tensors: its randomness comes from the random factories it calls. With
    // Different and no argument of this vmap, its first tensor is repeated over the batch, so
    // that each example draws its own.
    if (randomness == Randomness::Different && !batched) {
      IValue& v = (*stack)[base + first_tensor];
      const Tensor t = v.toTensor();
      std::vector<int64_t> sizes{batch};
      sizes.insert(sizes.end(), t.sizes().begin(), t.sizes().end());
      v = IValue(makeBatched(t.unsqueeze(0).expand(sizes), 0, level));
      op.callBoxed(stack);
      return;
    }
    op.redispatchBoxed(below, stack);
    return;
  }
  // A factory: Same draws once for the whole batch (vmap broadcasts it); Different puts the batch
  // size in front of `size` (the first int[]) and wraps the draw at this level. The layers below
  // then do the same for theirs.
  if (randomness == Randomness::Different) {
    size_t size_arg = n;
    for (size_t i = 0; i < n && size_arg == n; ++i)
      if (schema.arguments()[i].type.kind() == TypeKind::List && (*stack)[base + i].isList()) size_arg = i;
    DK_CHECK(size_arg < n, "vmap: the random operator ", op.operator_name(), " has neither a tensor argument nor a "
             "size; randomness='different' cannot batch it");
    IValue& size = (*stack)[base + size_arg];
    std::vector<IValue> sizes{IValue(batch)};
    for (const IValue& d : size.toListElements()) sizes.push_back(d);
    size = IValue::makeList(size.listElementType(), std::move(sizes));
  }
  callOnLayersBelow(op, stack);
  if (randomness == Randomness::Different) stack->back() = IValue(makeBatched(stack->back().toTensor(), 0, level));
}

}  // namespace dk::func
