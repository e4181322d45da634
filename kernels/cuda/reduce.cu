// Device code of the reductions: sum, mean, max and min with indices, argmax, argmin
// (kernels/cuda/launch.h).
// One block per output element: its threads stride over the reduced elements, then combine
// in shared memory. Accumulation runs in the dtype's accumulate type (kernel_helpers.h).
#include "kernel_helpers.h"

namespace dk::cuda::launch {

namespace {

using namespace device;

// The input offset of output o's first element, and of reduced element r from there.
__device__ __forceinline__ int64_t keptOffset(const ReduceGeometry& g, int64_t o) {
  int64_t offset = 0;
  for (int d = g.kept_ndim - 1; d >= 0; --d) {
    offset += (o % g.kept_sizes[d]) * g.kept_strides[d];
    o /= g.kept_sizes[d];
  }
  return offset;
}
__device__ __forceinline__ int64_t reducedOffset(const ReduceGeometry& g, int64_t r) {
  int64_t offset = 0;
  for (int d = g.reduced_ndim - 1; d >= 0; --d) {
    offset += (r % g.reduced_sizes[d]) * g.reduced_strides[d];
    r /= g.reduced_sizes[d];
  }
  return offset;
}

template <class T>
__global__ void sumKernel(ReduceGeometry g, T* out, const T* in, bool mean) {
  using A = acc_t<T>;
  __shared__ A shared[kBlockSize];
  for (int64_t o = blockIdx.x; o < g.num_outputs; o += gridDim.x) {
    const T* base = in + keptOffset(g, o);
    A partial = A(0);
    for (int64_t r = threadIdx.x; r < g.reduce_numel; r += blockDim.x) partial = A(partial + load(base + reducedOffset(g, r)));
    A total = blockReduce(partial, [](A x, A y) { return A(x + y); }, shared);
    if (threadIdx.x == 0) {
      if constexpr (std::is_floating_point_v<A>) {
        if (mean) total = total / static_cast<A>(g.reduce_numel);
      }
      store(out + o, total);
    }
  }
}

// A candidate maximum: its value and index; index -1 means "none yet".
template <class A>
struct Candidate {
  A value;
  int64_t index;
};

// Whether (v, vi) beats (c, ci): NaN beats numbers, larger (kMax) or smaller beats the other,
// and among equals (NaNs included) the lower index wins.
template <bool kMax, class A>
__device__ __forceinline__ bool beats(A v, int64_t vi, A c, int64_t ci) {
  if (ci < 0) return vi >= 0;
  if (vi < 0) return false;
  bool v_nan = isNan(v), c_nan = isNan(c);
  if (v_nan || c_nan) return v_nan && (!c_nan || vi < ci);
  if (kMax ? v > c : v < c) return true;
  return v == c && vi < ci;
}

template <bool kMax, class T>
__global__ void extremumKernel(ReduceGeometry g, T* out, int64_t* indices, const T* in) {
  using A = acc_t<T>;
  __shared__ A shared_values[kBlockSize];
  __shared__ int64_t shared_indices[kBlockSize];
  for (int64_t o = blockIdx.x; o < g.num_outputs; o += gridDim.x) {
    const T* base = in + keptOffset(g, o);
    Candidate<A> best{A(0), -1};
    for (int64_t r = threadIdx.x; r < g.reduce_numel; r += blockDim.x) {
      A v = load(base + reducedOffset(g, r));
      if (beats<kMax>(v, r, best.value, best.index)) best = Candidate<A>{v, r};
    }
    shared_values[threadIdx.x] = best.value;
    shared_indices[threadIdx.x] = best.index;
    __syncthreads();
    for (unsigned half_width = blockDim.x / 2; half_width > 0; half_width /= 2) {
      if (threadIdx.x < half_width) {
        unsigned other = threadIdx.x + half_width;
        if (beats<kMax>(shared_values[other], shared_indices[other], shared_values[threadIdx.x], shared_indices[threadIdx.x])) {
          shared_values[threadIdx.x] = shared_values[other];
          shared_indices[threadIdx.x] = shared_indices[other];
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (out != nullptr) store(out + o, shared_values[0]);
      indices[o] = shared_indices[0];
    }
    __syncthreads();
  }
}

}  // namespace

void reduce(ReduceOp op, Dtype dtype, const ReduceGeometry& g, void* out, int64_t* indices, const void* in) {
  if (g.num_outputs == 0) return;
  unsigned blocks = static_cast<unsigned>(g.num_outputs < kMaxBlocks ? g.num_outputs : kMaxBlocks);
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Mean:
        sumKernel<T><<<blocks, kBlockSize>>>(g, static_cast<T*>(out), static_cast<const T*>(in), op == ReduceOp::Mean);
        break;
      case ReduceOp::Max:
      case ReduceOp::ArgMax:  // indices only: no values written
        extremumKernel<true, T><<<blocks, kBlockSize>>>(g, op == ReduceOp::Max ? static_cast<T*>(out) : nullptr,
                                                        indices, static_cast<const T*>(in));
        break;
      case ReduceOp::Min:
      case ReduceOp::ArgMin:
        extremumKernel<false, T><<<blocks, kBlockSize>>>(g, op == ReduceOp::Min ? static_cast<T*>(out) : nullptr,
                                                         indices, static_cast<const T*>(in));
        break;
    }
  });
  DK_CUDA_CHECK_LAUNCH("reduce");
}

}  // namespace dk::cuda::launch
