// dk/layers/autocast.h: automatic mixed precision (the AutocastCPU / AutocastCUDA keys).
//
// Note [Autocast]
// The autocast keys are excluded by default. AutocastGuard(device_type, dtype) includes one
// for the thread (and takes it out of the excluded set); every call then reaches its slot.
// Operators with an `autocast:` policy in schemas/native_functions.yaml get a generated kernel
// there (RegisterAutocast.cpp) that casts the floating tensor arguments on that device type
//   lower_precision_fp -> the guard's dtype (mm, bmm, addmm, matmul, linear)
//   fp32               -> float32 (softmax, log_softmax, losses, sum, mean)
//   promote            -> the widest floating dtype among them (binary operators)
// and calls the operator again with the autocast key excluded. Every other operator falls
// through (a default fallthrough fallback at both keys).
#pragma once

#include <optional>
#include <vector>

#include "dk/core/core_types.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/tensor.h"
#include "dk/util/array_ref.h"

namespace dk {

class AutocastGuard {
 public:
  AutocastGuard(DeviceType device_type, ScalarType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_type_;
  ScalarType previous_dtype_;
  detail::KeySetChange change_;  // Note [Guards undo only their own change]
};

namespace autocast {

bool is_enabled(DeviceType device_type);
ScalarType get_autocast_dtype(DeviceType device_type);  // BFloat16 on CPU, Half on CUDA by default
DispatchKey autocastKeyFor(DeviceType device_type);     // AutocastCPU or AutocastCUDA

// A floating tensor on `device_type` converted to `to`; anything else unchanged.
Tensor cast(ScalarType to, const Tensor& t, DeviceType device_type);
std::optional<Tensor> cast(ScalarType to, const std::optional<Tensor>& t, DeviceType device_type);
std::vector<Tensor> cast(ScalarType to, ArrayRef<Tensor> ts, DeviceType device_type);
template <class T>
const T& cast(ScalarType, const T& value, DeviceType) {  // non-tensor arguments pass through
  return value;
}

// The widest floating dtype among `to` and the floating tensors on `device_type`.
ScalarType promote_type(ScalarType to, DeviceType device_type, const Tensor& t);
ScalarType promote_type(ScalarType to, DeviceType device_type, const std::optional<Tensor>& t);
ScalarType promote_type(ScalarType to, DeviceType device_type, ArrayRef<Tensor> ts);
template <class T>
ScalarType promote_type(ScalarType to, DeviceType, const T&) {
  return to;
}

}  // namespace autocast
}  // namespace dk
