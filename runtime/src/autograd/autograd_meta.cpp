// Autograd metadata on tensors (Note [Autograd metadata]) and tensor hook lists (Note [Tensor
// hooks]).
#include "dk/autograd/autograd_meta.h"

#include <string>
#include <string_view>

#include "dk/util/error.h"

namespace dk::autograd {

AutogradMeta& materialize_autograd_meta(const Tensor& t) {
  DK_CHECK(t.defined(), "autograd: cannot attach autograd metadata to an undefined tensor");
  TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->autograd_meta() == nullptr) impl->set_autograd_meta(std::make_unique<AutogradMeta>());
  return *static_cast<AutogradMeta*>(impl->autograd_meta());
}

bool is_differentiable_type(ScalarType dtype) { return isFloatingType(dtype); }

namespace {

// PyTorch's type string of a tensor in hook errors: "CPUFloatType", "CUDADoubleType".
std::string typeString(const Tensor& t) {
  std::string_view backend = toString(toBackendComponent(t.device().type));  // "CPUBit"
  backend.remove_suffix(3);
  return std::string(backend) + std::string(toString(t.scalar_type())) + "Type";
}

// A hook may replace a gradient only with one of the same device, dtype and sizes (the
// engine and the leaf's .grad() rely on it). Errors, PyTorch's: "hook '0' has changed the type
// of value (was CPUDoubleType got CPUFloatType)", "hook '0' has changed the size of value".
void checkHookResult(const Tensor& original, const Tensor& result, size_t index) {
  DK_CHECK(original.device().type == result.device().type && original.scalar_type() == result.scalar_type(),
           "hook '", index, "' has changed the type of value (was ", typeString(original), " got ",
           typeString(result), ")");
  DK_CHECK(original.sizes() == result.sizes(), "hook '", index, "' has changed the size of value");
}

}  // namespace

Tensor TensorHookList::run(Tensor grad) const {
  // Indexing, and calling a copy: a hook may register another hook on the same tensor, which
  // can move the vector's elements.
  for (size_t i = 0; i < hooks.size(); ++i) {
    if (!hooks[i]) continue;  // removed
    TensorHook hook = hooks[i];
    Tensor replaced = hook(grad);
    if (!replaced.defined()) continue;
    checkHookResult(grad, replaced, i);
    grad = std::move(replaced);
  }
  return grad;
}

}  // namespace dk::autograd
