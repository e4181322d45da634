// Tensor's autograd members (declared in dk/tensor/tensor.h; Note [Autograd metadata]).
#include "dk/autograd/autograd_meta.h"
#include "dk/autograd/engine.h"
#include "dk/autograd/history.h"
#include "dk/autograd/node.h"
#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"

namespace dk {

using autograd::AutogradMeta;
using autograd::get_autograd_meta;
using autograd::materialize_autograd_meta;

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  DK_CHECK(defined(), "requires_grad_: the tensor is undefined");
  AutogradMeta* meta = get_autograd_meta(*this);
  if (meta != nullptr && !meta->is_leaf()) {
    // A non-leaf requires grad through its grad_fn: asking for that again changes nothing.
    DK_CHECK(requires_grad, "you can only change requires_grad flags of leaf variables.");
    return *this;
  }
  if (requires_grad) {
    DK_CHECK(autograd::is_differentiable_type(dtype()), "only Tensors of floating point dtype can require gradients");
    DK_CHECK(!is_inference() || InferenceMode::is_enabled(),
             "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
    materialize_autograd_meta(*this).requires_grad_ = true;
  } else if (meta != nullptr) {
    meta->requires_grad_ = false;
  }
  return *this;
}

namespace {
// Out of line, so the common case (no metadata) needs no stack frame: every autograd kernel
// asks this of each input.
__attribute__((noinline)) bool requiresGradWithMeta(const Tensor& t, const AutogradMeta& meta) {
  if (meta.requires_grad_ || autograd::current_grad_fn(t) != nullptr) return true;
  // A view without history of its own (made under NoGradGuard or InferenceMode) requires grad
  // when its base does, as in PyTorch (Note [View creation meta]).
  return meta.is_view_ && Tensor(t.unsafeGetTensorImpl()->base()).requires_grad();
}
}  // namespace

bool Tensor::requires_grad() const {
  const AutogradMeta* meta = get_autograd_meta(*this);
  return meta != nullptr && requiresGradWithMeta(*this, *meta);
}

const Tensor& Tensor::grad() const {
  static const Tensor no_grad;
  AutogradMeta* meta = get_autograd_meta(*this);
  if (meta == nullptr) return no_grad;
  return meta->retained_grad_ ? meta->retained_grad_->grad : meta->grad_;
}

Tensor& Tensor::mutable_grad() const {
  AutogradMeta& meta = materialize_autograd_meta(*this);
  return meta.retained_grad_ ? meta.retained_grad_->grad : meta.grad_;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const { return autograd::current_grad_fn(*this); }

bool Tensor::is_leaf() const { return autograd::current_grad_fn(*this) == nullptr; }

uint32_t Tensor::output_nr() const {
  AutogradMeta* meta = get_autograd_meta(*this);
  return meta != nullptr ? meta->output_nr_ : 0;
}

void Tensor::retain_grad() const {
  DK_CHECK(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  autograd::current_grad_fn(*this);  // a view's grad_fn rebuilt first, if stale
  AutogradMeta& meta = *get_autograd_meta(*this);
  if (meta.is_leaf() || meta.retained_grad_) return;  // a leaf keeps its grad anyway
  meta.retained_grad_ = std::make_shared<autograd::RetainedGrad>();
  meta.grad_fn_->set_retains_grad_hook(meta.output_nr_, meta.retained_grad_);
}

bool Tensor::retains_grad() const {
  AutogradMeta* meta = get_autograd_meta(*this);
  return meta != nullptr && meta->retains_grad();
}

unsigned Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  DK_CHECK(requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
  autograd::current_grad_fn(*this);  // a view's grad_fn rebuilt first, if stale
  AutogradMeta& meta = *get_autograd_meta(*this);
  if (!meta.hooks_) {
    meta.hooks_ = std::make_shared<autograd::TensorHookList>(meta.is_leaf() ? 0 : meta.output_nr_);
    if (!meta.is_leaf()) meta.grad_fn_->add_tensor_pre_hook(meta.hooks_);
  }
  meta.hooks_->hooks.push_back(std::move(hook));
  return static_cast<unsigned>(meta.hooks_->hooks.size() - 1);
}

void Tensor::remove_hook(unsigned handle) const {
  AutogradMeta* meta = get_autograd_meta(*this);
  DK_CHECK(meta != nullptr && meta->hooks_ && handle < meta->hooks_->hooks.size(),
           "Invalid index, no hook at position ", handle);
  meta->hooks_->hooks[handle] = nullptr;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      std::optional<ArrayRef<Tensor>> inputs) const {
  if (inputs) {
    autograd::backward({*this}, {gradient}, retain_graph, create_graph,
                       autograd::variable_list(inputs->begin(), inputs->end()));
  } else {
    autograd::backward({*this}, {gradient}, retain_graph, create_graph);
  }
}

}  // namespace dk
