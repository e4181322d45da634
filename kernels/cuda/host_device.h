// kernels/cuda/host_device.h: DK_HOST_DEVICE marks the inline functions that the host plans a
// launch with and the device code then follows (reduce_plan.h, softmax_plan.h): __host__
// __device__ under nvcc, plain inline functions elsewhere, so that tests replay them on the CPU.
#pragma once

#if defined(__CUDACC__)
#define DK_HOST_DEVICE __host__ __device__
#else
#define DK_HOST_DEVICE
#endif
