// Device code of index_select, gather, scatter_add, cumsum, sort and topk (kernels/cuda/launch.h).
// Picking and scattering run one thread per index element over a Geometry whose operand for
// the indexed tensor has stride 0 along the indexed dim (it gives the start of the line) plus
// that dim's own stride; cumsum runs one thread per line; sort and topk rank every element of a
// line against the others, one thread per element.
#include "kernel_helpers.h"

namespace dk::cuda::launch {

namespace {

using namespace device;

template <class Index>
__global__ void checkIndicesKernel(Geometry g, const Index* index, int64_t size, int64_t* error) {
  DK_CUDA_KERNEL_LOOP(e, g.numel) {
    Offsets<1> o(g, e);
    auto i = static_cast<int64_t>(index[o.at[0]]);
    if (i < 0 || i >= size) reportError(error, i);
  }
}

// Operands: 0 out, 1 the source line starts, 2 index. out = source[line + index * stride].
template <class T, class Index>
__global__ void pickKernel(Geometry g, T* out, const T* src, int64_t src_dim_stride, const Index* index) {
  DK_CUDA_KERNEL_LOOP(e, g.numel) {
    Offsets<3> o(g, e);
    out[o.at[0]] = src[o.at[1] + static_cast<int64_t>(index[o.at[2]]) * src_dim_stride];
  }
}

// Adds v to *p atomically. 8-, 16- and 32-bit types without a native atomicAdd go through a
// compare-and-swap of the aligned 32-bit word holding them.
template <class T>
__device__ void atomicAddValue(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
                std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    static_assert(sizeof(T) <= 2, "every wider type has a native atomicAdd");
    auto address = reinterpret_cast<uintptr_t>(p);
    auto* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(address & 3) * 8;
    const unsigned mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      T current;
      auto bits = static_cast<unsigned>((assumed & mask) >> shift);
      memcpy(&current, &bits, sizeof(T));
      T sum;
      if constexpr (kIsBool<T>) sum = current || v;
      else sum = static_cast<T>(static_cast<acc_t<T>>(current) + static_cast<acc_t<T>>(v));
      unsigned sum_bits = 0;
      memcpy(&sum_bits, &sum, sizeof(T));
      old = atomicCAS(word, assumed, (assumed & ~mask) | ((sum_bits << shift) & mask));
    } while (assumed != old);
  }
}

// Operands: 0 the out line starts, 1 index, 2 src. out[line + index * stride] += src.
template <class T>
__global__ void scatterAddKernel(Geometry g, T* out, int64_t out_dim_stride, const int64_t* index, const T* src) {
  DK_CUDA_KERNEL_LOOP(e, g.numel) {
    Offsets<3> o(g, e);
    atomicAddValue(out + o.at[0] + index[o.at[1]] * out_dim_stride, src[o.at[2]]);
  }
}

// Contiguous [outer, n, inner]: one thread per (outer, inner) line.
template <class T>
__global__ void cumsumKernel(T* out, const T* in, int64_t outer, int64_t n, int64_t inner) {
  using Sum = std::conditional_t<kIsFloating<T>, double, int64_t>;
  DK_CUDA_KERNEL_LOOP(line, outer * inner) {
    const int64_t base = (line / inner) * n * inner + line % inner;
    Sum sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = base + j * inner;
      if constexpr (std::is_integral_v<Sum>)
        sum = static_cast<Sum>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(convert<int64_t>(in[at])));
      else
        sum += convert<double>(in[at]);
      out[at] = convert<T>(sum);
    }
  }
}

// Whether the element at position a comes before the one at b: NaN above every number,
// `descending` reversing the order, equal values in position order.
template <class T>
__device__ __forceinline__ bool before(T x, int64_t a, T y, int64_t b, bool descending) {
  auto u = convert<acc_t<T>>(x), v = convert<acc_t<T>>(y);
  bool u_nan = isNan(u), v_nan = isNan(v);
  if (u_nan || v_nan) {
    if (u_nan && v_nan) return a < b;
    return descending ? u_nan : v_nan;
  }
  if (u == v) return a < b;
  return descending ? u > v : u < v;
}

// Contiguous in [outer, n, inner], out [outer, k, inner]: each element's rank in its line; the
// first k ranks are written.
template <class T>
__global__ void rankKernel(T* values, int64_t* indices, const T* in, int64_t outer, int64_t n, int64_t inner,
                           int64_t k, bool descending) {
  DK_CUDA_KERNEL_LOOP(e, outer * n * inner) {
    const int64_t o = e / (n * inner), i = e % inner, a = (e / inner) % n;
    const T* line = in + o * n * inner + i;
    const T x = line[a * inner];
    int64_t rank = 0;
    for (int64_t b = 0; b < n; ++b)
      if (b != a && before(line[b * inner], b, x, a, descending)) ++rank;
    if (rank < k) {
      const int64_t at = o * k * inner + rank * inner + i;
      values[at] = x;
      indices[at] = a;
    }
  }
}

}  // namespace

void checkIndices(Dtype index_dtype, const Geometry& g, const void* index, int64_t size, int64_t* error) {
  if (g.numel == 0) return;
  if (index_dtype == Dtype::Int)
    checkIndicesKernel<<<blocksFor(g.numel), kBlockSize>>>(g, static_cast<const int32_t*>(index), size, error);
  else
    checkIndicesKernel<<<blocksFor(g.numel), kBlockSize>>>(g, static_cast<const int64_t*>(index), size, error);
  DK_CUDA_CHECK_LAUNCH("index check");
}

void pick(Dtype dtype, Dtype index_dtype, const Geometry& g, void* out, const void* src, int64_t src_dim_stride,
          const void* index) {
  if (g.numel == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (index_dtype == Dtype::Int)
      pickKernel<<<blocksFor(g.numel), kBlockSize>>>(g, static_cast<T*>(out), static_cast<const T*>(src),
                                                     src_dim_stride, static_cast<const int32_t*>(index));
    else
      pickKernel<<<blocksFor(g.numel), kBlockSize>>>(g, static_cast<T*>(out), static_cast<const T*>(src),
                                                     src_dim_stride, static_cast<const int64_t*>(index));
  });
  DK_CUDA_CHECK_LAUNCH("index_select/gather");
}

void scatterAdd(Dtype dtype, const Geometry& g, void* out, int64_t out_dim_stride, const int64_t* index,
                const void* src) {
  if (g.numel == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    scatterAddKernel<<<blocksFor(g.numel), kBlockSize>>>(g, static_cast<T*>(out), out_dim_stride, index,
                                                         static_cast<const T*>(src));
  });
  DK_CUDA_CHECK_LAUNCH("scatter_add");
}

void cumsum(Dtype dtype, void* out, const void* in, int64_t outer, int64_t n, int64_t inner) {
  if (outer * n * inner == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    cumsumKernel<<<blocksFor(outer * inner), kBlockSize>>>(static_cast<T*>(out), static_cast<const T*>(in), outer,
                                                           n, inner);
  });
  DK_CUDA_CHECK_LAUNCH("cumsum");
}

void rank(Dtype dtype, void* values, int64_t* indices, const void* in, int64_t outer, int64_t n, int64_t inner,
          int64_t k, bool descending) {
  if (outer * k * inner == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    rankKernel<<<blocksFor(outer * n * inner), kBlockSize>>>(static_cast<T*>(values), indices,
                                                             static_cast<const T*>(in), outer, n, inner, k,
                                                             descending);
  });
  DK_CUDA_CHECK_LAUNCH("sort/topk");
}

}  // namespace dk::cuda::launch
