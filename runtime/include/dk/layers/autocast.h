// dk/layers/autocast.h: automatic mixed precision (the AutocastCPU / AutocastCUDA keys).
//
// Note [Autocast]
// The autocast keys are excluded by default. AutocastGuard(device_type, dtype) includes one
// for the thread (and takes it out of the excluded set); every call then reaches its slot.
// Operators with an `autocast:` policy in schemas/native_functions.yaml get a generated kernel
// there (RegisterAutocast.cpp). The policies and lists are PyTorch 1.13.1's, per device type
// (its CPU and CUDA lists differ: softmax on a bfloat16 CPU tensor stays bfloat16). A kernel
// casts the eligible tensor arguments (floating, on that device type, not float64)
//   lower_precision_fp -> to the guard's dtype (mm, bmm, baddbmm, addmm, matmul, linear, conv)
//   fp32               -> to float32 (mse_loss, nll_loss; on CUDA also exp, log, layer_norm, ...)
//   promote            -> to the widest floating dtype among them (cat, stack on CPU;
//                         scatter_add, index_put on CUDA)
// or, with fp32_set_opt_dtype (CUDA: sum, cumsum, softmax, log_softmax), casts nothing and
// passes dtype=float32 when the caller left `dtype` unset and the first argument is eligible;
// then it calls the operator again with the autocast key excluded. Every other operator falls
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

// A floating tensor on `device_type` other than float64 converted to `to`; anything else unchanged.
Tensor cast(ScalarType to, const Tensor& t, DeviceType device_type);
std::optional<Tensor> cast(ScalarType to, const std::optional<Tensor>& t, DeviceType device_type);
std::vector<Tensor> cast(ScalarType to, ArrayRef<Tensor> ts, DeviceType device_type);
template <class T>
const T& cast(ScalarType, const T& value, DeviceType) {  // non-tensor arguments pass through
  return value;
}

// `dtype` when set; else `to` when `first` is a floating tensor on `device_type` other than
// float64 (the policy fp32_set_opt_dtype); else unset.
std::optional<ScalarType> set_opt_dtype(ScalarType to, const std::optional<ScalarType>& dtype, const Tensor& first,
                                        DeviceType device_type);

// The widest floating dtype among `to` and the floating tensors on `device_type` (float64 ignored).
ScalarType promote_type(ScalarType to, DeviceType device_type, const Tensor& t);
ScalarType promote_type(ScalarType to, DeviceType device_type, const std::optional<Tensor>& t);
ScalarType promote_type(ScalarType to, DeviceType device_type, ArrayRef<Tensor> ts);
template <class T>
ScalarType promote_type(ScalarType to, DeviceType, const T&) {
  return to;
}

}  // namespace autocast
}  // namespace dk
