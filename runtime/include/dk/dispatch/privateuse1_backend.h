// dk/dispatch/privateuse1_backend.h: an example out-of-tree backend on the PrivateUse1 key (device
// "privateuseone", host memory underneath) whose only registration is one boxed fallback.
//
// Note [Fallback backend]
// The fallback copies every PrivateUse1 tensor argument to the CPU (and turns a factory's device
// argument into the CPU), calls the operator again (now on CPU tensors, so the CPU kernels run),
// copies tensor results back to PrivateUse1, and
// writes the results of in-place and out= arguments back into the original tensors. Every
// operator therefore works on the backend without a single per-operator kernel; a native
// kernel registered for one operator (DK_LIBRARY_IMPL(dk, PrivateUse1, m)) takes precedence.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "dk/dispatch/library.h"

namespace dk::privateuse1 {

// Registers the fallback at the Dense key of `device`'s backend (PrivateUse1, or a host-memory
// backend added by the key file, such as XPU in tests/keys/xpu_keys.yaml); it is removed when
// the returned Library is destroyed.
std::unique_ptr<Library> installFallbackBackend(DeviceType device = DeviceType::PrivateUse1);

// How many operator calls the fallback has handled (for tests and demos).
int64_t fallbackCalls();

// Converts between the devices with a real copy (no dispatch on PrivateUse1 involved).
Tensor toCpu(const Tensor& t);
Tensor fromCpu(const Tensor& cpu, DeviceType device = DeviceType::PrivateUse1);

}  // namespace dk::privateuse1
