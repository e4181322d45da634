// The dynamic layer stack, its front and back fallbacks, and grad wrappers (Note [Dynamic layer
// stack], Note [Grad wrappers]).
#include "dk/func/dynamic_layer.h"

#include <utility>

#include "dk/dispatch/dispatcher.h"
#include "dk/func/batched_tensor.h"

namespace dk::func {

namespace {

thread_local std::vector<DynamicLayer> tls_layers;

constexpr DispatchKey kFront = DispatchKey::FuncTorchDynamicLayerFrontMode;
constexpr DispatchKey kBack = DispatchKey::FuncTorchDynamicLayerBackMode;

// mapTensors on each stack entry at or above `base`.
template <class F>
void mapTensorArgs(Stack* stack, size_t base, const F& fn) {
  for (size_t i = base; i < stack->size(); ++i) mapTensors((*stack)[i], fn);
}

// Whether pred holds for a tensor argument at or above `base` (or a tensor of a tensor list).
template <class P>
bool anyTensorArg(const Stack& stack, size_t base, const P& pred) {
  for (size_t i = base; i < stack.size(); ++i) {
    const IValue& v = stack[i];
    if (v.isTensor() && pred(v.toTensor())) return true;
    if (v.isList())
      for (const IValue& e : v.toListElements())
        if (e.isTensor() && pred(e.toTensor())) return true;
  }
  return false;
}

// A grad layer handles every call made while it is the innermost (a factory's result is wrapped
// at its level too, as functorch's are); a vmap layer only calls on its batched tensors.
bool participates(const DynamicLayer& layer, const OperatorHandle& op, const Stack& stack, size_t base) {
  if (layer.type != TransformType::Vmap) return true;  // grad and functionalize take every call
  // A random operator (a kernel at FuncTorchVmapMode, Note [vmap randomness]) belongs to the
  // innermost vmap whatever its arguments: its randomness decides what it draws.
  if (isRandomOperator(op)) return true;
  const int64_t level = layer.level;
  return anyTensorArg(stack, base, [level](const Tensor& t) { return batchedAt(t, level) != nullptr; });
}

bool anyLayerOf(TransformType type) {
  for (const DynamicLayer& layer : tls_layers)
    if (layer.type == type) return true;
  return false;
}

// Grad and functionalize layers take every call, through the front key.
bool anyFrontLayer() { return anyLayerOf(TransformType::Grad) || anyLayerOf(TransformType::Functionalize); }

LocalDispatchKeySet currentKeys() {
  return {detail::tls_dispatch_keys.included, detail::tls_dispatch_keys.excluded()};
}

// Takes the innermost layer off the stack for a scope and puts it back on exit (with the key
// sets the scope found restored, when asked to).
class LayerSetAside {
 public:
  LayerSetAside() : layer_(std::move(tls_layers.back())) { tls_layers.pop_back(); }
  ~LayerSetAside() { tls_layers.push_back(std::move(layer_)); }
  LayerSetAside(const LayerSetAside&) = delete;
  LayerSetAside& operator=(const LayerSetAside&) = delete;
  const DynamicLayer& layer() const { return layer_; }

 private:
  DynamicLayer layer_;
};

// The key sets for calls on the layers below the innermost one (which the caller has set aside),
// from the key sets `keys` the layer was called with: the front key stays included only while a
// grad or functionalize layer remains, Functionalize only while a functionalize layer does.
LocalDispatchKeySet keysBelow(LocalDispatchKeySet keys) {
  if (!anyFrontLayer()) keys.included = keys.included.remove(kFront);
  if (!anyLayerOf(TransformType::Functionalize)) keys.included = keys.included.remove(DispatchKey::Functionalize);
  return keys;
}

void callNextLayer(const OperatorHandle& op, Stack* stack, const LocalDispatchKeySet& keys) {
  ThreadKeySetsScope below;
  below.set(keysBelow(keys));
  op.callBoxed(stack);
}

// A grad layer may not write into a tensor it did not wrap: the write would escape its graph.
void checkNoCapturedMutation(const OperatorHandle& op, const Stack& stack, size_t base, int64_t level) {
  const auto& args = op.schema().arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].alias_info || !args[i].alias_info->is_write) continue;
    const Stack one{stack[base + i]};
    const bool captured = anyTensorArg(one, 0, [level](const Tensor& t) { return wrapperAt(t, level) == nullptr; });
    DK_CHECK(!captured, "During a grad (vjp, jacrev, grad, etc) transform, the function provided attempted to call "
             "in-place operation (", op.operator_name(), ") that would mutate a captured Tensor. This is not "
             "supported; please rewrite the function being transformed to explicitly accept the mutated Tensor(s) as "
             "inputs.");
  }
}

// Note [Dynamic layer stack]: hands the call to the innermost layer.
void dynamicLayerFront(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const size_t base = stack->size() - op.schema().arguments().size();
  mapTensorArgs(stack, base, unwrapDead);
  if (tls_layers.empty()) {  // only dead wrappers brought the call here
    callNextLayer(op, stack, currentKeys());
    return;
  }
  DynamicLayer& top = tls_layers.back();
  if (!participates(top, op, *stack, base)) {
    const LocalDispatchKeySet keys = currentKeys();
    LayerSetAside aside;
    callNextLayer(op, stack, keys);
    return;
  }
  const int64_t level = top.level;
  // Below the layer's own keys, neither batching nor randomness rules run: calls the layer's
  // kernels make go to the back fallback and so to the layers below.
  DispatchKeySet exclude{kFront, DispatchKey::FuncTorchBatched, DispatchKey::FuncTorchVmapMode};
  DispatchKeySet include(kBack);
  if (top.type == TransformType::Grad) {
    checkNoCapturedMutation(op, *stack, base, level);
    const std::shared_ptr<bool> alive = top.alive;
    mapTensorArgs(stack, base, [&](const Tensor& t) {
      return !t.defined() || wrapperAt(t, level) != nullptr ? t : makeWrapper(t, level, alive);
    });
  } else {
    exclude = exclude | autograd_dispatch_keyset | DispatchKeySet(DispatchKey::ADInplaceOrView);
  }
  // Functionalization's kernels call the layers below themselves (LayersBelowScope): no back key.
  if (top.type == TransformType::Functionalize) include = DispatchKeySet(DispatchKey::Functionalize);
  top.outside = currentKeys();
  const detail::KeySetChange change = detail::KeySetChange::apply(include, {}, exclude, {});
  const size_t index = tls_layers.size() - 1;
  const bool was_active = top.active;
  top.active = true;
  struct Undo {
    const detail::KeySetChange& change;
    size_t index;
    bool was_active;
    ~Undo() {
      change.undo();
      tls_layers[index].active = was_active;
    }
  } undo{change, index, was_active};
  DispatchKeySet next;
  if (top.type != TransformType::Vmap) {
    const OperatorEntry& entry = op.entry();
    next = entry.computeDispatchKeySet(entry.getDispatchKeySetBoxed(*stack));
  } else {
    // The randomness rule at FuncTorchVmapMode or the batching rule at FuncTorchBatched, which
    // the thread's sets now exclude for the calls the rule makes.
    next = ks - (exclude - DispatchKeySet{DispatchKey::FuncTorchBatched, DispatchKey::FuncTorchVmapMode});
  }
  op.redispatchBoxed(next, stack);
}

// Note [Dynamic layer stack]: the innermost layer strips itself and calls the layers below.
void dynamicLayerBack(const OperatorHandle& op, DispatchKeySet /*ks*/, Stack* stack) {
  DK_CHECK(!tls_layers.empty(), "FuncTorchDynamicLayerBackMode reached for ", op.operator_name(),
           " with no transform running");
  const FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments().size();
  const size_t base = stack->size() - n;
  LayerSetAside aside;
  const DynamicLayer& layer = aside.layer();
  if (layer.type != TransformType::Grad) {  // a batching rule unwrapped its arguments
    callNextLayer(op, stack, layer.outside);
    return;
  }
  const int64_t level = layer.level;
  std::vector<IValue> wrapped(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  mapTensorArgs(stack, base, [level](const Tensor& t) { return unwrapAt(t, level); });
  callNextLayer(op, stack, layer.outside);
  const size_t nrets = schema.returns().size();
  const size_t rbase = stack->size() - nrets;
  for (size_t j = 0; j < nrets; ++j) {
    if (std::optional<size_t> i = writtenArgumentOfReturn(schema, j)) {
      (*stack)[rbase + j] = wrapped[*i];  // in place or out=: the wrapper that was written
      continue;
    }
    mapTensors((*stack)[rbase + j], [&](const Tensor& t) { return t.defined() ? makeWrapper(t, level, layer.alive) : t; });
  }
}

[[maybe_unused]] RegistrationHandleRAII* const g_front = new RegistrationHandleRAII(
    Dispatcher::singleton().registerDefaultFallback(kFront, KernelFunction::makeFromBoxedFunction<&dynamicLayerFront>(),
                                                    "dynamic_layer_front (default)"));
[[maybe_unused]] RegistrationHandleRAII* const g_back = new RegistrationHandleRAII(
    Dispatcher::singleton().registerDefaultFallback(kBack, KernelFunction::makeFromBoxedFunction<&dynamicLayerBack>(),
                                                    "dynamic_layer_back (default)"));

}  // namespace

const std::vector<DynamicLayer>& dynamicLayerStack() { return tls_layers; }

bool isRandomOperator(const OperatorHandle& op) {
  const KernelFunction& k = op.entry().lookup(DispatchKeySet(DispatchKey::FuncTorchVmapMode));
  return k.isValid() && !k.isFallthrough();
}

void callOnLayersBelow(const OperatorHandle& op, Stack* stack) {
  DK_CHECK(!tls_layers.empty(), "callOnLayersBelow for ", op.operator_name(), " with no transform running");
  LayersBelowScope below;
  op.callBoxed(stack);
}

LayersBelowScope::LayersBelowScope() {
  DK_CHECK(!tls_layers.empty(), "LayersBelowScope with no transform running");
  const LocalDispatchKeySet keys = tls_layers.back().active ? tls_layers.back().outside : currentKeys();
  layer_ = std::move(tls_layers.back());
  tls_layers.pop_back();
  keys_.set(keysBelow(keys));
}

LayersBelowScope::~LayersBelowScope() { tls_layers.push_back(std::move(layer_)); }  // keys_ restores after

CallAsFromOutsideLayer::CallAsFromOutsideLayer() {
  if (!tls_layers.empty() && tls_layers.back().active) keys_.set(tls_layers.back().outside);
}

void ThreadKeySetsScope::set(const LocalDispatchKeySet& keys) {
  DK_CHECK(!set_, "ThreadKeySetsScope::set called twice");
  set_ = true;
  included_ = dk::detail::tls_dispatch_keys.included;
  allowed_ = dk::detail::tls_dispatch_keys.allowed;
  dk::detail::tls_dispatch_keys.included = keys.included;
  dk::detail::tls_dispatch_keys.allowed = ~keys.excluded.raw_repr();
}

ThreadKeySetsScope::~ThreadKeySetsScope() {
  if (!set_) return;
  dk::detail::tls_dispatch_keys.included = included_;
  dk::detail::tls_dispatch_keys.allowed = allowed_;
}

DynamicLayerScope::DynamicLayerScope()
    : level_(static_cast<int64_t>(tls_layers.size()) + 1), alive_(std::make_shared<bool>(true)) {
  tls_layers.push_back(DynamicLayer{TransformType::Grad, level_, alive_});
  // Every call reaches the front while a grad layer runs (factories included).
  mode_keys_ = detail::KeySetChange::apply(DispatchKeySet(kFront), {}, {}, {});
}

DynamicLayerScope::DynamicLayerScope(int64_t batch_size, Randomness randomness)
    : level_(static_cast<int64_t>(tls_layers.size()) + 1) {  // no wrappers: no alive flag
  DynamicLayer layer{TransformType::Vmap, level_, alive_};
  layer.batch_size = batch_size;
  layer.randomness = randomness;
  tls_layers.push_back(std::move(layer));
  mode_keys_ = detail::KeySetChange::apply(DispatchKeySet(DispatchKey::FuncTorchVmapMode), {}, {}, {});
}

DynamicLayerScope::DynamicLayerScope(Functionalize) : level_(static_cast<int64_t>(tls_layers.size()) + 1) {
  tls_layers.push_back(DynamicLayer{TransformType::Functionalize, level_, nullptr});
  mode_keys_ = detail::KeySetChange::apply(DispatchKeySet(kFront), {}, {}, {});
}

DynamicLayerScope::~DynamicLayerScope() {
  mode_keys_.undo();
  if (alive_) *alive_ = false;
  // Front and back fallbacks put back what they set aside, also on an exception, so the top is
  // this scope's layer.
  if (!tls_layers.empty() && tls_layers.back().level == level_) tls_layers.pop_back();
}

TensorWrapper::TensorWrapper(Tensor value, int64_t level, std::shared_ptr<bool> alive)
    : TensorImpl(Storage(), value.key_set().remove(DispatchKey::FuncTorchBatched).remove(DispatchKey::Functionalize).add(kFront),
                 value.dtype(),
                 value.device(), std::vector<int64_t>(value.sizes().begin(), value.sizes().end()),
                 std::vector<int64_t>(value.strides().begin(), value.strides().end()), 0),
      value_(std::move(value)),
      level_(level),
      alive_(std::move(alive)) {}

intrusive_ptr<TensorImpl> TensorWrapper::shallow_copy_without_history() const {
  auto copy = make_intrusive<TensorWrapper>(value_, level_, alive_);
  copy->set_version_counter(version_counter());
  return copy;
}

const TensorWrapper* maybeWrapper(const Tensor& t) {
  if (!t.key_set().has(kFront)) return nullptr;
  return dynamic_cast<const TensorWrapper*>(t.unsafeGetTensorImpl());
}

const TensorWrapper* wrapperAt(const Tensor& t, int64_t level) {
  const TensorWrapper* w = maybeWrapper(t);
  return w != nullptr && w->level() == level && w->is_alive() ? w : nullptr;
}

Tensor makeWrapper(Tensor value, int64_t level, std::shared_ptr<bool> alive) {
  DK_CHECK(value.defined(), "grad transform: cannot wrap an undefined tensor");
  return Tensor(make_intrusive<TensorWrapper>(std::move(value), level, std::move(alive)));
}

Tensor unwrapDead(Tensor t) {
  while (const TensorWrapper* w = maybeWrapper(t)) {
    if (w->is_alive()) break;
    t = w->value();
  }
  return t;
}

Tensor unwrapAt(const Tensor& t, int64_t level) {
  const TensorWrapper* w = wrapperAt(t, level);
  return w != nullptr ? w->value() : t;
}

}  // namespace dk::func
