// Autocast state and casting helpers (Note [Autocast] in dk/layers/autocast.h).
#include "dk/layers/autocast.h"

#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/type_promotion.h"

namespace dk {

namespace {
constinit thread_local ScalarType tls_cpu_dtype = ScalarType::BFloat16;
constinit thread_local ScalarType tls_cuda_dtype = ScalarType::Half;

ScalarType& dtypeSlot(DeviceType d) { return d == DeviceType::CUDA ? tls_cuda_dtype : tls_cpu_dtype; }
}  // namespace

namespace autocast {

DispatchKey autocastKeyFor(DeviceType device_type) {
  DK_CHECK(device_type == DeviceType::CPU || device_type == DeviceType::CUDA,
           "autocast is available for cpu and cuda, not ", toString(device_type));
  return device_type == DeviceType::CUDA ? DispatchKey::AutocastCUDA : DispatchKey::AutocastCPU;
}

bool is_enabled(DeviceType device_type) { return tls_is_dispatch_key_included(autocastKeyFor(device_type)); }

ScalarType get_autocast_dtype(DeviceType device_type) { return dtypeSlot(device_type); }

namespace {

// What autocast converts: a floating tensor on the key's device type; float64 is left alone, as
// in PyTorch (a double computation was asked for explicitly).
bool eligible(const Tensor& t, DeviceType device_type) {
  return t.defined() && t.device().type == device_type && isFloatingType(t.dtype()) && t.dtype() != ScalarType::Double;
}

}  // namespace

Tensor cast(ScalarType to, const Tensor& t, DeviceType device_type) {
  if (!eligible(t, device_type) || t.dtype() == to) return t;
  return t.to(to);
}

std::optional<Tensor> cast(ScalarType to, const std::optional<Tensor>& t, DeviceType device_type) {
  if (!t) return std::nullopt;
  return cast(to, *t, device_type);
}

std::vector<Tensor> cast(ScalarType to, ArrayRef<Tensor> ts, DeviceType device_type) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(cast(to, t, device_type));
  return out;
}

std::optional<ScalarType> set_opt_dtype(ScalarType to, const std::optional<ScalarType>& dtype, const Tensor& first,
                                        DeviceType device_type) {
  if (dtype) return dtype;
  return eligible(first, device_type) ? std::optional<ScalarType>(to) : std::nullopt;
}

ScalarType promote_type(ScalarType to, DeviceType device_type, const Tensor& t) {
  return eligible(t, device_type) ? promoteTypes(to, t.dtype()) : to;
}

ScalarType promote_type(ScalarType to, DeviceType device_type, const std::optional<Tensor>& t) {
  return t ? promote_type(to, device_type, *t) : to;
}

ScalarType promote_type(ScalarType to, DeviceType device_type, ArrayRef<Tensor> ts) {
  for (const Tensor& t : ts) to = promote_type(to, device_type, t);
  return to;
}

}  // namespace autocast

AutocastGuard::AutocastGuard(DeviceType device_type, ScalarType dtype)
    : device_type_(device_type),
      previous_dtype_(dtypeSlot(device_type)) {
  DK_CHECK(isFloatingType(dtype), "AutocastGuard: the autocast dtype must be a floating type, got ", dtype);
  DispatchKeySet key(autocast::autocastKeyFor(device_type));
  change_ = detail::KeySetChange::apply(key, {}, {}, key);
  dtypeSlot(device_type) = dtype;
}

AutocastGuard::~AutocastGuard() {
  dtypeSlot(device_type_) = previous_dtype_;
  change_.undo();
}

}  // namespace dk
