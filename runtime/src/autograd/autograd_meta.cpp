// Autograd metadata on tensors (Note [Autograd metadata]) and tensor hook lists (Note [Tensor
// hooks]).
#include "dk/autograd/autograd_meta.h"

#include "dk/util/error.h"

namespace dk::autograd {

AutogradMeta& materialize_autograd_meta(const Tensor& t) {
  DK_CHECK(t.defined(), "autograd: cannot attach autograd metadata to an undefined tensor");
  TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->autograd_meta() == nullptr) impl->set_autograd_meta(std::make_unique<AutogradMeta>());
  return *static_cast<AutogradMeta*>(impl->autograd_meta());
}

bool is_differentiable_type(ScalarType dtype) { return isFloatingType(dtype); }

Tensor TensorHookList::run(Tensor grad) const {
  // Indexing, and calling a copy: a hook may register another hook on the same tensor, which
  // can move the vector's elements.
  for (size_t i = 0; i < hooks.size(); ++i) {
    if (!hooks[i]) continue;  // removed
    TensorHook hook = hooks[i];
    Tensor replaced = hook(grad);
    if (replaced.defined()) grad = std::move(replaced);
  }
  return grad;
}

}  // namespace dk::autograd
