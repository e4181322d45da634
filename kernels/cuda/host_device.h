// kernels/cuda/host_device.h: DK_HOST_DEVICE marks the inline functions that the host plans a
// launch with and the device code then follows (reduce_plan.h, softmax_plan.h): __host__
// __device__ under nvcc, plain inline functions elsewhere, so that tests replay them on the CPU.
// Also the integer helpers both plans use.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DK_HOST_DEVICE __host__ __device__
#else
#define DK_HOST_DEVICE
#endif

namespace dk::cuda::launch {

// The arithmetic both plans size launches with.
DK_HOST_DEVICE constexpr int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// The smallest power of two >= n (1 for n <= 1).
DK_HOST_DEVICE constexpr int64_t nextPowerOfTwo(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace dk::cuda::launch
