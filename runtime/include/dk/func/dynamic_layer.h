// dk/func/dynamic_layer.h: the thread's stack of running transforms and the grad wrappers
// (Note [Dynamic layer stack], Note [Grad wrappers]).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dk/core/local_dispatch_key_set.h"
#include "dk/dispatch/dispatcher.h"
#include "dk/tensor/tensor.h"

namespace dk::func {

enum class TransformType : uint8_t { Vmap, Grad, Functionalize };

// What a random operator does inside vmap (Note [vmap randomness]): Error, functorch's default,
// refuses it; Same gives every example the same random values; Different gives each its own.
enum class Randomness : uint8_t { Error, Same, Different };

// Sets the thread's included and excluded key sets for a scope (once, with set()) and puts back
// the ones it found when it ends; changes nothing when set() is not called. The layers use it
// for calls nested inside the scope, so no guard's change crosses the restore (Note [Guards undo
// only their own change]).
class ThreadKeySetsScope {
 public:
  ThreadKeySetsScope() = default;
  ~ThreadKeySetsScope();
  ThreadKeySetsScope(const ThreadKeySetsScope&) = delete;
  ThreadKeySetsScope& operator=(const ThreadKeySetsScope&) = delete;
  void set(const LocalDispatchKeySet& keys);

 private:
  bool set_ = false;
  DispatchKeySet included_;
  uint64_t allowed_ = 0;
};

// Note [Dynamic layer stack]
// Transforms compose in the order they are called, not in the order of their keys: in
// vmap(grad(f)) the gradient is taken per example, in grad(vmap(f)) of the whole batch, yet
// FuncTorchBatched outranks the autograd keys in both. So each thread keeps the transforms it is
// inside as a stack of layers, outermost first; a layer's level is its depth (1 for the
// outermost). While a grad layer runs, FuncTorchDynamicLayerFrontMode (the highest functionality
// key) is in the thread's included set, and a grad wrapper carries it in its own key set, so
// calls first reach the front fallback, which hands them to the innermost layer:
//  - a grad layer takes every call (a factory's result is wrapped at its level, as functorch's
//    are): it wraps every other tensor argument as a constant of its level, excludes
//    FuncTorchBatched and redispatches, so the autograd kernel records the operator at this
//    level. Writing into a tensor it did not wrap (a captured one) is refused, as functorch does;
//  - a vmap layer takes the calls on its batched tensors, and random operators (Note [vmap
//    randomness]): it excludes the autograd keys and redispatches to its batching or randomness
//    rule; other calls go through to the next layer (it sets itself aside for the call's
//    duration and calls the operator again).
// Below the layer's own keys, FuncTorchDynamicLayerBackMode (included while a layer is active)
// reaches the back fallback, which sets the layer aside, restores the thread's key sets as they
// were when the front fallback took the call (the autograd kernel's "below autograd" guard
// belongs to this layer, not to the next), unwraps the grad layer's tensors, calls the operator
// again for the layers below, and wraps the results at its level (an in-place result is the
// wrapper written). Each layer so strips itself and redispatches, and the next layer down sees
// ordinary tensors of its own level; below the last grad layer the front key is no longer
// included.
//
// With no grad layer running, calls on batched tensors go straight to their batching rules,
// which is the same order: plain vmap pays nothing for the stack.
struct DynamicLayer {
  TransformType type = TransformType::Vmap;
  int64_t level = 0;
  // A grad layer's: false once the transform has returned, when its wrappers are dead and stand
  // for their value (null for a vmap layer, which makes no wrappers).
  std::shared_ptr<bool> alive;
  // A vmap layer's batch size and randomness.
  int64_t batch_size = 0;
  Randomness randomness = Randomness::Error;
  // The thread's key sets when the front fallback handed a call to this layer (Note [Dynamic
  // layer stack]); meaningful only while the layer handles a call.
  LocalDispatchKeySet outside{};
  // Whether the front fallback has handed this layer a call that is still running.
  bool active = false;
};

// The thread's layers, outermost first.
const std::vector<DynamicLayer>& dynamicLayerStack();

// Pushes a layer for a transform's duration; pops it, and marks its wrappers dead, on exit (also
// when the transform's function throws).
class DynamicLayerScope {
 public:
  // A grad layer; FuncTorchDynamicLayerFrontMode is included while one runs.
  DynamicLayerScope();
  // A vmap layer; FuncTorchVmapMode is included while one runs (Note [vmap randomness]).
  DynamicLayerScope(int64_t batch_size, Randomness randomness);
  // A functionalize layer (Note [Functionalization]); like a grad layer, it takes every call
  // through the front fallback, which hands it to the kernels at Functionalize.
  struct Functionalize {};
  explicit DynamicLayerScope(Functionalize);
  ~DynamicLayerScope();
  DynamicLayerScope(const DynamicLayerScope&) = delete;
  DynamicLayerScope& operator=(const DynamicLayerScope&) = delete;
  int64_t level() const { return level_; }
  const std::shared_ptr<bool>& alive() const { return alive_; }

 private:
  int64_t level_;
  std::shared_ptr<bool> alive_;
  // FuncTorchVmapMode for a vmap layer, FuncTorchDynamicLayerFrontMode for a grad layer.
  detail::KeySetChange mode_keys_;
};

// Whether `op` is random for vmap: it has a kernel (the randomness rule) at FuncTorchVmapMode
// (Note [vmap randomness]). Fast: one table read.
bool isRandomOperator(const OperatorHandle& op);

// For a rule of the innermost layer (vmap's randomness rule): calls `op` as the layers below it
// see calls, with that layer set aside for the call and the thread's key sets as the front
// fallback found them (when the layer is handling a call).
void callOnLayersBelow(const OperatorHandle& op, Stack* stack);

// For the kernels of a layer that call the layers below it themselves (functionalization's): for
// the scope's life the innermost layer is set aside and the thread's key sets are what the front
// fallback found when it handed the layer its call (the current ones when it did not), less the
// keys of transforms no longer running. callOnLayersBelow is one call in such a scope.
class LayersBelowScope {
 public:
  LayersBelowScope();
  ~LayersBelowScope();
  LayersBelowScope(const LayersBelowScope&) = delete;
  LayersBelowScope& operator=(const LayersBelowScope&) = delete;

 private:
  DynamicLayer layer_;
  ThreadKeySetsScope keys_;
};

// For a decomposition a layer's rule runs (a CompositeImplicitAutograd kernel under vmap): while
// the innermost layer handles a call, sets the thread's key sets back to what the front fallback
// found, so the decomposition's own calls start over at the front and reach this layer's rules;
// does nothing otherwise.
class CallAsFromOutsideLayer {
 public:
  CallAsFromOutsideLayer();
  CallAsFromOutsideLayer(const CallAsFromOutsideLayer&) = delete;
  CallAsFromOutsideLayer& operator=(const CallAsFromOutsideLayer&) = delete;

 private:
  ThreadKeySetsScope keys_;
};

// Note [Grad wrappers]
// Inside a grad transform each tensor of its level is a TensorWrapper: a `value` (a plain
// tensor, a batched tensor of an outer vmap, or a wrapper of an outer grad) with the wrapper's
// own autograd metadata, so each grad level records its own graph. Its sizes, strides, dtype and
// device are the value's; it has no storage. Its key set is the value's without
// FuncTorchBatched and Functionalize, plus FuncTorchDynamicLayerFrontMode, so operators on it reach the front
// fallback (Note [Dynamic layer stack]). Once its transform has returned it is dead: the front
// fallback then replaces it by its value, so a wrapper that escapes (a gradient's graph kept by
// vjp) still computes.
class TensorWrapper : public TensorImpl {
 public:
  TensorWrapper(Tensor value, int64_t level, std::shared_ptr<bool> alive);

  const Tensor& value() const { return value_; }
  int64_t level() const { return level_; }
  bool is_alive() const { return *alive_; }
  const std::shared_ptr<bool>& alive() const { return alive_; }

  intrusive_ptr<TensorImpl> shallow_copy_without_history() const override;

 private:
  Tensor value_;
  int64_t level_;
  std::shared_ptr<bool> alive_;
};

// The wrapper impl of `t`, or null when `t` is not a grad wrapper.
const TensorWrapper* maybeWrapper(const Tensor& t);
// The wrapper impl of `t` when it is a live wrapper of `level`, else null.
const TensorWrapper* wrapperAt(const Tensor& t, int64_t level);
// `value` wrapped for the grad layer of `level` (no autograd history).
Tensor makeWrapper(Tensor value, int64_t level, std::shared_ptr<bool> alive);
// The value of `t` when it is a wrapper of `level`; `t` itself otherwise.
Tensor unwrapAt(const Tensor& t, int64_t level);
// `t` with every dead wrapper around it removed (a dead wrapper stands for its value).
Tensor unwrapDead(Tensor t);

}  // namespace dk::func
