// Device code of embedding (kernels/cuda/launch.h): one thread per output element gathers
// weight[indices[i], j]; an index outside the table is reported to the host.
#include "kernel_helpers.h"

namespace dk::cuda::launch {

namespace {

using namespace device;

template <class T, class Index>
__global__ void embeddingKernel(T* out, const T* weight, int64_t stride0, int64_t stride1, int64_t num_weights,
                                int64_t dim, const Index* indices, int64_t num_indices, int64_t* error) {
  DK_CUDA_KERNEL_LOOP(e, num_indices * dim) {
    int64_t i = e / dim, j = e % dim;
    auto row = static_cast<int64_t>(indices[i]);
    if (row < 0 || row >= num_weights) {
      reportError(error, row);
      continue;
    }
    out[e] = weight[row * stride0 + j * stride1];
  }
}

}  // namespace

void embedding(Dtype dtype, Dtype index_dtype, void* out, const void* weight, int64_t weight_stride0,
               int64_t weight_stride1, int64_t num_weights, int64_t dim, const void* indices, int64_t num_indices,
               int64_t* error) {
  if (num_indices * dim == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto index_tag) {
      using Index = decltype(index_tag);
      embeddingKernel<<<blocksFor(num_indices * dim), kBlockSize>>>(
          static_cast<T*>(out), static_cast<const T*>(weight), weight_stride0, weight_stride1, num_weights, dim,
          static_cast<const Index*>(indices), num_indices, error);
    };
    if (index_dtype == Dtype::Int) run(int32_t{}); else run(int64_t{});
  });
  DK_CUDA_CHECK_LAUNCH("embedding");
}

}  // namespace dk::cuda::launch
