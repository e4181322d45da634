// Device code of _softmax and _log_softmax (kernels/cuda/launch.h): one block per row of the
// [outer, dim_size, inner] view, three passes over the row (max, sum of exponentials, write),
// in float (double for Double inputs).
#include "kernel_helpers.h"

namespace dk::cuda::launch {

namespace {

using namespace device;

template <class In, class Out>
__global__ void softmaxKernel(Out* out, const In* in, int64_t rows, int64_t dim_size, int64_t inner, bool take_log) {
  using A = std::conditional_t<std::is_same_v<In, double>, double, float>;
  __shared__ A shared[kBlockSize];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = (row / inner) * dim_size * inner + row % inner;
    A local_max = -INFINITY;
    for (int64_t j = threadIdx.x; j < dim_size; j += blockDim.x) {
      A v = convert<A>(in[base + j * inner]);
      local_max = (v > local_max || isNan(v)) ? v : local_max;
    }
    A row_max = blockReduce(local_max, [](A x, A y) { return (x > y || isNan(x)) ? x : y; }, shared);
    A local_sum = 0;
    for (int64_t j = threadIdx.x; j < dim_size; j += blockDim.x) {
      A v = convert<A>(in[base + j * inner]);
      if constexpr (std::is_same_v<A, float>) local_sum += expf(v - row_max); else local_sum += exp(v - row_max);
    }
    A row_sum = blockReduce(local_sum, [](A x, A y) { return x + y; }, shared);
    A log_sum;
    if constexpr (std::is_same_v<A, float>) log_sum = logf(row_sum); else log_sum = ::log(row_sum);
    for (int64_t j = threadIdx.x; j < dim_size; j += blockDim.x) {
      A shifted = convert<A>(in[base + j * inner]) - row_max;
      A result;
      if (take_log) {
        result = shifted - log_sum;
      } else if constexpr (std::is_same_v<A, float>) {
        result = expf(shifted) / row_sum;
      } else {
        result = exp(shifted) / row_sum;
      }
      out[base + j * inner] = convert<Out>(result);
    }
  }
}

}  // namespace

void softmax(bool log, Dtype in_dtype, Dtype out_dtype, void* out, const void* in, int64_t outer, int64_t dim_size,
             int64_t inner) {
  int64_t rows = outer * inner;
  if (rows == 0 || dim_size == 0) return;
  unsigned blocks = static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
  dispatchFloating(log ? "_log_softmax" : "_softmax", in_dtype, [&](auto tag) {
    using In = decltype(tag);
    if (out_dtype == in_dtype) {
      softmaxKernel<In, In><<<blocks, kBlockSize>>>(static_cast<In*>(out), static_cast<const In*>(in), rows, dim_size,
                                                     inner, log);
    } else {
      softmaxKernel<In, float><<<blocks, kBlockSize>>>(static_cast<float*>(out), static_cast<const In*>(in), rows,
                                                        dim_size, inner, log);
    }
  });
  DK_CUDA_CHECK_LAUNCH("softmax");
}

}  // namespace dk::cuda::launch
