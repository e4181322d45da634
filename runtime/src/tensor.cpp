// The tensor core: key-set computation, TensorImpl, printing of metadata.
#include "dk/tensor.h"

#include "dk/local_dispatch_key_set.h"

namespace dk {

DispatchKeySet computeTensorKeySet(Device device, bool inference) {
  DispatchKeySet ks = DispatchKeySet(toBackendComponent(device.type)).add(DispatchKey::Dense);
  if (!inference) ks = ks.add(DispatchKey::ADInplaceOrView).add(DispatchKey::AutogradFunctionality);
  return ks;
}

TensorImpl::TensorImpl(DispatchKeySet key_set, ScalarType dtype, Device device, std::vector<int64_t> sizes)
    : key_set_(key_set), dtype_(dtype), device_(device), sizes_(std::move(sizes)) {}

int64_t TensorImpl::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes_) n *= s;
  return n;
}

TensorImpl* TensorImpl::undefined() {
  // Never freed and never refcounted: Tensor skips retain/release for it.
  static TensorImpl* const impl =
      new TensorImpl(DispatchKeySet(), ScalarType::Undefined, Device(DeviceType::CPU), {});
  return impl;
}

Tensor make_tensor(std::vector<int64_t> sizes, ScalarType dtype, Device device) {
  return Tensor(make_intrusive<TensorImpl>(computeTensorKeySet(device, InferenceMode::is_enabled()), dtype,
                                           device, std::move(sizes)));
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  if (!t.defined()) return out << "Tensor(undefined)";
  out << "Tensor(sizes=[";
  for (size_t i = 0; i < t.sizes().size(); ++i) out << (i ? ", " : "") << t.sizes()[i];
  return out << "], dtype=" << t.dtype() << ", device=" << t.device() << ")";
}

}  // namespace dk
