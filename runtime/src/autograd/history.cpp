// Recording forward calls in the backward graph: gradient edges, grad accumulators, history.
#include "dk/autograd/history.h"

#include <mutex>

#include "dk/autograd/accumulate_grad.h"
#include "dk/error.h"

namespace dk::autograd {

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
  AutogradMeta* meta = t.defined() ? get_autograd_meta(t) : nullptr;
  if (meta == nullptr) return Edge();
  if (meta->grad_fn_) return Edge(meta->grad_fn_, meta->output_nr_);
  return Edge(grad_accumulator(t), 0);
}

void set_history(const Tensor& output, const std::shared_ptr<Node>& node) {
  DK_CHECK(node != nullptr, "set_history: null node");
  uint32_t output_nr = node->add_input_metadata(output);
  if (!output.defined()) return;
  DK_CHECK(is_differentiable_type(output.dtype()), "set_history: an output of dtype ", output.dtype(),
           " cannot require grad (only floating point outputs are differentiable)");
  AutogradMeta& meta = materialize_autograd_meta(output);
  meta.grad_fn_ = node;
  meta.output_nr_ = output_nr;
}

void set_history(const std::vector<Tensor>& outputs, const std::shared_ptr<Node>& node) {
  for (const Tensor& output : outputs) set_history(output, node);
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node) {
  AutogradMeta& meta = materialize_autograd_meta(self);
  std::shared_ptr<RetainedGrad> retained = meta.retained_grad_;
  if (meta.grad_fn_ && retained) meta.grad_fn_->pop_retains_grad_hook(meta.output_nr_);
  // The hooks registered so far stay with the old grad_fn; new ones get a new list.
  meta.hooks_.reset();
  set_history(self, node);
  if (retained) node->set_retains_grad_hook(meta.output_nr_, retained);
}

void check_inplace(const Tensor& self) {
  if (!GradMode::is_enabled()) return;
  AutogradMeta* meta = get_autograd_meta(self);
  DK_CHECK(meta == nullptr || !meta->is_leaf() || !meta->requires_grad_,
           "a leaf Variable that requires grad is being used in an in-place operation.");
}

}  // namespace dk::autograd
