// dk/autograd/autograd_meta.h: what autograd keeps on a tensor, in TensorImpl's autograd slot.
//
// Note [Autograd metadata]
// A tensor that never took part in autograd has no metadata (the slot is null): it does not
// require grad, is a leaf, and has no grad. The metadata is made on first need
// (requires_grad_, set_history, retain_grad, mutable_grad) and lives as long as the TensorImpl.
//
// - A *leaf* has no grad_fn. It requires grad when its flag says so; gradients reaching it
//   are accumulated into `grad` by its AccumulateGrad node, which the metadata references
//   weakly (the node holds the tensor; the graph holds the node), so the node lives exactly as
//   long as some graph reaches the leaf.
// - A *non-leaf* is output `output_nr` of `grad_fn`, and requires grad because of it. Its
//   gradient flows through the graph without being stored, unless retain_grad() was called;
//   then the retained gradient lives in a slot shared with the grad_fn (Note [Tensor hooks]).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "dk/core/grad_mode.h"
#include "dk/tensor/tensor.h"

namespace dk::autograd {

class Node;

// A tensor hook: sees the gradient of the tensor it is registered on and returns a
// replacement, or an undefined tensor to leave the gradient unchanged.
using TensorHook = std::function<Tensor(const Tensor&)>;

// Note [Tensor hooks]
// Hooks are keyed by the node input the tensor's gradient arrives at: (grad_fn, output_nr)
// for a non-leaf, (its AccumulateGrad, 0) for a leaf. The list of a non-leaf is shared by the
// tensor's metadata (to register more hooks) and by its grad_fn (to run them), so the hooks run
// even when the tensor itself is gone, as in PyTorch. A leaf's list is read by its
// AccumulateGrad through the tensor it holds. The engine runs a node's hooks on the gradients
// it received, before the node runs and before autograd::grad captures them; hooks run in
// registration order and only on defined gradients; a hook that returns a tensor replaces the
// gradient, which must keep its device, dtype and sizes ("hook '0' has changed the type of
// value (was CPUDoubleType got CPUFloatType)", "... the size of value"); the retain_grad hook runs after them and
// so stores the hooked gradient. An in-place change of a non-leaf (rebase_history) leaves the
// hooks registered so far on the old grad_fn (they are about the old value) and moves the
// retain_grad hook to the new one.
struct TensorHookList {
  explicit TensorHookList(uint32_t input_nr) : input_nr(input_nr) {}
  uint32_t input_nr;
  // Removed hooks are left empty, so the index register_hook returned stays valid.
  std::vector<TensorHook> hooks;

  // Runs the hooks on `grad` (defined), in order.
  Tensor run(Tensor grad) const;
};

// Where the gradient of a non-leaf that retains its grad is stored: shared by the tensor's
// metadata and (weakly) by the retain_grad hook on its grad_fn.
struct RetainedGrad {
  Tensor grad;
};

// Note [View creation meta]
// How a view was made decides whether autograd may later record an in-place change of it:
// - Default: in grad mode by an operator returning one view; an in-place change is recorded
//   (CopySlices on its base).
// - MultiOutputNode: by an operator returning several views (split, unbind); their shared
//   backward cannot be rewritten, so an in-place change while recording is refused.
// - NoGradMode / InferenceMode: under NoGradGuard or InferenceMode, so the view has no history
//   of its own; an in-place change of it in grad mode, when it requires grad through its base,
//   would silently bypass the base's history, so it is refused (check_inplace, with PyTorch's
//   messages). Doing both the view and the in-place change inside, or both outside, is fine.
enum class CreationMeta : uint8_t { Default, MultiOutputNode, NoGradMode, InferenceMode };

class AutogradMeta final : public AutogradMetaInterface {
 public:
  // Leaf: accumulated by AccumulateGrad. Non-leaf: see retained_grad_.
  Tensor grad_;
  std::shared_ptr<Node> grad_fn_;
  // Leaves only, and weak (Note [Autograd metadata]); made by grad_accumulator().
  std::weak_ptr<Node> grad_accumulator_;
  // Null until the first register_hook (Note [Tensor hooks]).
  std::shared_ptr<TensorHookList> hooks_;
  // Non-leaves only, set by retain_grad().
  std::shared_ptr<RetainedGrad> retained_grad_;
  uint32_t output_nr_ = 0;
  // The leaf flag; a non-leaf requires grad through its grad_fn whatever this says.
  bool requires_grad_ = false;
  // Views (Note [Views and in-place] in dk/autograd/history.h), set by as_view: the tensor is
  // a view of TensorImpl::base() for autograd; how it was made (Note [View creation meta]);
  // the version counter's value when grad_fn_ was last set.
  bool is_view_ = false;
  CreationMeta creation_meta_ = CreationMeta::Default;
  uint32_t attr_version_ = 0;
  // Guards grad_accumulator_ creation and the accumulation into grad_.
  std::mutex mutex_;

  bool requires_grad() const { return requires_grad_ || grad_fn_ != nullptr; }
  bool is_leaf() const { return grad_fn_ == nullptr; }
  bool retains_grad() const { return retained_grad_ != nullptr; }
};

// The tensor's metadata, or null when it has none (Note [Autograd metadata]).
inline AutogradMeta* get_autograd_meta(const Tensor& t) {
  return static_cast<AutogradMeta*>(t.unsafeGetTensorImpl()->autograd_meta());
}
// The tensor's metadata, made if missing. `t` must be defined:
// "autograd: cannot attach autograd metadata to an undefined tensor".
AutogradMeta& materialize_autograd_meta(const Tensor& t);

// True for the dtypes that can require gradients (the floating point ones).
bool is_differentiable_type(ScalarType dtype);

}  // namespace dk::autograd
