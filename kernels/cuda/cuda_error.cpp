// CUDA runtime errors as dk::Error (kernels/cuda/cuda_error.h, and launch::throwCudaError for
// the device code, Note [CUDA launch interface] in launch.h).
#include "cuda_error.h"

#include <cstdlib>
#include <string_view>

#include "dk/tensor/dtype_dispatch.h"
#include "dk/util/error.h"
#include "launch.h"

namespace dk::cuda {

void throwCudaError(cudaError_t code, const char* what, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  DK_ERROR("CUDA error: ", cudaGetErrorString(code), " (", what, " at ", file, ":", line, ")");
}

}  // namespace dk::cuda

namespace dk::cuda::launch {

void throwCudaError(int code, const char* what, const char* file, int line) {
  ::dk::cuda::throwCudaError(static_cast<cudaError_t>(code), what, file, line);
}

void throwUnsupportedDtype(const char* op, Dtype dtype) {
  ::dk::detail::throwUnsupportedDtype(op, static_cast<ScalarType>(dtype));
}

bool launchBlocking() {
  static const bool blocking = [] {
    const char* value = std::getenv("DK_CUDA_LAUNCH_BLOCKING");
    return value != nullptr && std::string_view(value) == "1";
  }();
  return blocking;
}

}  // namespace dk::cuda::launch
