// AccumulateGrad: stores the gradients reaching a leaf (Note [Gradient accumulation]).
#include "dk/autograd/accumulate_grad.h"

#include <cstdint>
#include <limits>
#include <mutex>

#include "dk/autograd/autograd_meta.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/clone.h"
#include "dk/util/error.h"

namespace dk::autograd {

AccumulateGrad::AccumulateGrad(Tensor variable)
    : Node(std::numeric_limits<uint64_t>::max(), {}), variable_(std::move(variable)) {
  add_input_metadata(variable_);
}

variable_list AccumulateGrad::apply(variable_list grads) {
  DK_CHECK(grads.size() == 1, "AccumulateGrad: expected 1 gradient, got ", grads.size());
  if (!grads[0].defined() || !variable_.requires_grad()) return {};
  AutogradMeta& meta = materialize_autograd_meta(variable_);
  std::lock_guard<std::mutex> lock(meta.mutex_);
  accumulate_into(meta.grad_, grads[0]);
  return {};
}

void AccumulateGrad::call_tensor_pre_hooks(variable_list& grads) {
  AutogradMeta* meta = get_autograd_meta(variable_);
  if (meta == nullptr || grads.empty() || !grads[0].defined()) return;
  if (std::shared_ptr<TensorHookList> hooks = meta->hooks_) grads[0] = hooks->run(std::move(grads[0]));
}

namespace {
// A view whose memory no other tensor can reach: its base is held only by this view (as its
// base) and the storage only by the two of them. A transpose of a product made in the backward
// (Note [Gradient accumulation]) is one.
bool ownsItsMemory(const Tensor& view) {
  const TensorImpl* base = view.unsafeGetTensorImpl()->base().get();
  return base != nullptr && base->use_count() == 1 && view.storage().use_count() == 2;
}
}  // namespace

Tensor take_or_copy_gradient(const Tensor& grad) {
  // One reference: the caller's, which it gives up, so no one else can see a later in-place
  // change of the stored grad. A view shares its memory with its base, so it is copied unless
  // it is contiguous and owns that memory alone.
  if (grad.use_count() == 1 && (!grad.is_view() || (grad.is_contiguous() && ownsItsMemory(grad)))) return grad;
  return dk::clone(grad);
}

void accumulate_into(Tensor& slot, const Tensor& incoming) {
  if (!incoming.defined()) return;
  if (!slot.defined()) {
    slot = take_or_copy_gradient(incoming);
  } else {
    slot = dk::add(slot, incoming);
  }
}

}  // namespace dk::autograd
