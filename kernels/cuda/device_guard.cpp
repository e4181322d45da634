// The CUDA device guard and device queries (kernels/cuda/device_guard.h).
#include "device_guard.h"

#include <cuda_runtime_api.h>

#include "cuda_error.h"

namespace dk::cuda {

DeviceGuard::DeviceGuard(std::optional<Device> device) {
  if (!device || device->type != DeviceType::CUDA || device->index < 0) return;
  int current = currentDevice();
  if (current == device->index) return;
  DK_CUDA_CHECK(cudaSetDevice(device->index));
  original_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (original_ >= 0) (void)cudaSetDevice(original_);  // a destructor cannot report a failure
}

int currentDevice() {
  int device = 0;
  DK_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

int deviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

Device resolveDevice(Device device) {
  if (device.type != DeviceType::CUDA || device.index >= 0) return device;
  return Device(DeviceType::CUDA, static_cast<int8_t>(currentDevice()));
}

}  // namespace dk::cuda
