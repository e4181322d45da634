// kernels/cuda/cuda_error.h: turning failed CUDA runtime and cuBLAS calls into dk::Error.
#pragma once

#include <cuda_runtime_api.h>

namespace dk::cuda {

// Raises dk::Error "CUDA error: <cudaGetErrorString(code)> (<what> at <file>:<line>)", after
// clearing the error so that later calls do not see it again.
[[noreturn]] void throwCudaError(cudaError_t code, const char* what, const char* file, int line);

}  // namespace dk::cuda

// DK_CUDA_CHECK(cudaMalloc(&p, n)): raises dk::Error when the call does not return cudaSuccess.
#define DK_CUDA_CHECK(expr)                                                                       \
  do {                                                                                            \
    cudaError_t dk_cuda_status_ = (expr);                                                         \
    if (__builtin_expect(dk_cuda_status_ != cudaSuccess, 0))                                      \
      ::dk::cuda::throwCudaError(dk_cuda_status_, #expr, __FILE__, __LINE__);                     \
  } while (0)
