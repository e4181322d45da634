// Recording forward calls in the backward graph: gradient edges, grad accumulators, history,
// and views (Note [Views and in-place] in dk/autograd/history.h).
#include "dk/autograd/history.h"

#include <mutex>

#include "dk/autograd/accumulate_grad.h"
#include "dk/autograd/functions.h"
#include "dk/autograd/views.h"
#include "dk/core/grad_mode.h"
#include "dk/util/error.h"

namespace dk::autograd {

namespace {

// The tensor a view's memory belongs to.
Tensor viewBase(const Tensor& view) { return Tensor(view.unsafeGetTensorImpl()->base()); }

// Gives view `t` a grad_fn made from its base's current history (or leaves it without one
// when the base does not require grad), and marks it current.
void rebuildViewGradFn(const Tensor& t, AutogradMeta& meta) {
  Tensor base = viewBase(t);
  if (base.requires_grad()) {
    auto node = std::make_shared<AsStridedBackward0>(base, t);
    node->set_next_edges({gradient_edge(base)});
    node->add_input_metadata(t);
    meta.grad_fn_ = std::move(node);
    meta.output_nr_ = 0;
  }
  meta.attr_version_ = t.unsafeGetTensorImpl()->version();
}

// set_history for a tensor an in-place call changed, when it is not a view.
void rebaseNonView(const Tensor& self, const std::shared_ptr<Node>& node) {
  AutogradMeta& meta = materialize_autograd_meta(self);
  std::shared_ptr<RetainedGrad> retained = meta.retained_grad_;
  if (meta.grad_fn_ && retained) meta.grad_fn_->pop_retains_grad_hook(meta.output_nr_);
  // The hooks registered so far stay with the old grad_fn; new ones get a new list.
  meta.hooks_.reset();
  set_history(self, node);
  if (retained) node->set_retains_grad_hook(meta.output_nr_, retained);
}

}  // namespace

std::shared_ptr<Node> current_grad_fn(const Tensor& t) {
  AutogradMeta* meta = t.defined() ? get_autograd_meta(t) : nullptr;
  if (meta == nullptr) return nullptr;
  if (meta->is_view_ && meta->attr_version_ != t.unsafeGetTensorImpl()->version()) {
    std::lock_guard<std::mutex> lock(meta->mutex_);
    if (meta->attr_version_ != t.unsafeGetTensorImpl()->version()) rebuildViewGradFn(t, *meta);
  }
  return meta->grad_fn_;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta* meta = get_autograd_meta(leaf);
  if (meta == nullptr || !meta->is_leaf() || !meta->requires_grad_) return nullptr;
  std::lock_guard<std::mutex> lock(meta->mutex_);
  if (std::shared_ptr<Node> existing = meta->grad_accumulator_.lock()) return existing;
  auto made = std::make_shared<AccumulateGrad>(leaf);
  meta->grad_accumulator_ = made;
  return made;
}

Edge gradient_edge(const Tensor& t) {
  std::shared_ptr<Node> grad_fn = current_grad_fn(t);
  if (grad_fn) return Edge(std::move(grad_fn), get_autograd_meta(t)->output_nr_);
  if (!t.defined() || get_autograd_meta(t) == nullptr) return Edge();
  return Edge(grad_accumulator(t), 0);
}

void set_history(const Tensor& output, const std::shared_ptr<Node>& node) {
  DK_CHECK(node != nullptr, "set_history: null node");
  // An output of a dtype that cannot carry gradients (x.to(Long)) keeps its place in the
  // numbering but gets no history: it does not require grad, as in PyTorch.
  if (!output.defined() || !is_differentiable_type(output.dtype())) {
    node->add_input_metadata(Tensor());
    return;
  }
  uint32_t output_nr = node->add_input_metadata(output);
  AutogradMeta& meta = materialize_autograd_meta(output);
  meta.grad_fn_ = node;
  meta.output_nr_ = output_nr;
  if (meta.is_view_) meta.attr_version_ = output.unsafeGetTensorImpl()->version();
}

void set_history(const std::vector<Tensor>& outputs, const std::shared_ptr<Node>& node) {
  for (const Tensor& output : outputs) set_history(output, node);
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node) {
  AutogradMeta* meta = get_autograd_meta(self);
  if (meta == nullptr || !meta->is_view_) {
    rebaseNonView(self, node);
    return;
  }
  // An in-place change of a view changes its base: the base gets the history
  // (Note [Views and in-place]), the view a grad_fn rebuilt from it.
  Tensor base = viewBase(self);
  rebaseNonView(base, std::make_shared<CopySlices>(base, self, node));
  std::lock_guard<std::mutex> lock(meta->mutex_);
  rebuildViewGradFn(self, *meta);
}

namespace {

// PyTorch's refusal of an in-place change of a view whose creation meta forbids it.
void checkViewCreationMeta(const AutogradMeta& meta) {
  if (meta.creation_meta_ == CreationMeta::Default) return;
  const bool has_history = meta.grad_fn_ || meta.creation_meta_ == CreationMeta::MultiOutputNode;
  std::string msg = has_history ? dk::detail::concat("Output ", meta.output_nr_, " of ",
                                                     meta.grad_fn_ ? meta.grad_fn_->name() : std::string("a function"),
                                                     " is a view and is being modified inplace.")
                    : meta.creation_meta_ == CreationMeta::InferenceMode
                        ? std::string("A view was created in inference mode and is being modified inplace in normal "
                                      "mode.")
                        : std::string("A view was created in no_grad mode and is being modified inplace with grad "
                                      "mode enabled.");
  switch (meta.creation_meta_) {
    case CreationMeta::MultiOutputNode:
      msg += " This view is the output of a function that returns multiple views. Such functions do not allow the "
             "output views to be modified inplace. You should replace the inplace operation by an out-of-place one.";
      break;
    case CreationMeta::NoGradMode:
    case CreationMeta::InferenceMode:
      msg += dk::detail::concat(
          " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
          "moving both the view and the inplace either both inside the ",
          meta.creation_meta_ == CreationMeta::NoGradMode ? "no_grad" : "inference_mode",
          " block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
          "tracked).");
      break;
    case CreationMeta::Default: break;
  }
  throw Error(msg);
}

}  // namespace

void check_inplace(const Tensor& self, bool requires_grad) {
  check_version_bump_allowed(self);
  if (!requires_grad || !GradMode::is_enabled()) return;
  AutogradMeta* meta = get_autograd_meta(self);
  if (meta == nullptr) return;
  // In PyTorch's order: the view's creation meta, then a view of a leaf, then a leaf.
  if (meta->is_view_) {
    checkViewCreationMeta(*meta);
    Tensor base = viewBase(self);
    DK_CHECK(!(self.requires_grad() && base.is_leaf() && base.requires_grad()),
             "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  }
  DK_CHECK(!meta->is_leaf() || !meta->requires_grad_,
           "a leaf Variable that requires grad is being used in an in-place operation.");
}

}  // namespace dk::autograd
