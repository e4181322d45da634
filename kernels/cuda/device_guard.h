// kernels/cuda/device_guard.h: dk::cuda::DeviceGuard, which makes a CUDA device current for a
// scope; and the current device and device count.
//
// Note [CUDA device guard]
// CUDA kernels run on the calling thread's current device. The generated CUDA wrappers
// (Register CUDA, Note [Generated device check] in dk/generated/DeviceCheck.h) hold a
// DeviceGuard set to the device of the first tensor argument, or to a factory's device
// argument, so a kernel's launches and allocations land on that device. A guard given no
// device, a non-CUDA device or a CUDA device without an index (the current one) does nothing;
// otherwise it switches the current device if needed and switches back when it dies.
#pragma once

#include <optional>

#include "dk/core/core_types.h"

namespace dk::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(std::optional<Device> device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  // The device that was current before the guard switched, or -1 when it did not switch.
  int original_device() const { return original_; }

 private:
  int original_ = -1;
};

// The calling thread's current CUDA device (cudaGetDevice).
int currentDevice();
// CUDA devices this process can use; 0 when there are none or the driver is unusable.
int deviceCount();
// `device` with its index filled in (the current device) when it is a CUDA device without one.
Device resolveDevice(Device device);

}  // namespace dk::cuda
