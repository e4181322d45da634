// Device code of the copies and fills: dtype-converting strided copy, fill with a bit
// pattern, arange (kernels/cuda/launch.h).
#include "kernel_helpers.h"

namespace dk::cuda::launch {

namespace {

using namespace device;

template <class Dst, class Src>
__global__ void copyKernel(Geometry g, Dst* dst, const Src* src) {
  DK_CUDA_KERNEL_LOOP(i, g.numel) {
    Offsets<2> off(g, i);
    dst[off.at[0]] = convert<Dst>(src[off.at[1]]);
  }
}

// Fills with a raw element: the host converted the value to the destination dtype.
template <class Bits>
__global__ void fillKernel(Geometry g, Bits* dst, Bits value) {
  DK_CUDA_KERNEL_LOOP(i, g.numel) {
    Offsets<1> off(g, i);
    dst[off.at[0]] = value;
  }
}

// A: what start + step * i is computed in (the CPU kernel's accumulate type).
template <class T, class A>
__global__ void arangeKernel(T* out, int64_t n, A start, A step) {
  DK_CUDA_KERNEL_LOOP(i, n) { store(out + i, start + step * static_cast<A>(i)); }
}

}  // namespace

void copy(const Geometry& g, void* dst, Dtype dst_dtype, const void* src, Dtype src_dtype) {
  if (g.numel == 0) return;
  dispatch(dst_dtype, [&](auto dst_tag) {
    using Dst = decltype(dst_tag);
    dispatch(src_dtype, [&](auto src_tag) {
      using Src = decltype(src_tag);
      copyKernel<Dst, Src><<<blocksFor(g.numel), kBlockSize>>>(g, static_cast<Dst*>(dst), static_cast<const Src*>(src));
    });
  });
  DK_CUDA_CHECK_LAUNCH("copy");
}

void fill(const Geometry& g, void* dst, int element_size, uint64_t bits) {
  if (g.numel == 0) return;
  unsigned blocks = blocksFor(g.numel);
  switch (element_size) {
    case 1: fillKernel<<<blocks, kBlockSize>>>(g, static_cast<uint8_t*>(dst), static_cast<uint8_t>(bits)); break;
    case 2: fillKernel<<<blocks, kBlockSize>>>(g, static_cast<uint16_t*>(dst), static_cast<uint16_t>(bits)); break;
    case 4: fillKernel<<<blocks, kBlockSize>>>(g, static_cast<uint32_t*>(dst), static_cast<uint32_t>(bits)); break;
    default: fillKernel<<<blocks, kBlockSize>>>(g, static_cast<uint64_t*>(dst), bits); break;
  }
  DK_CUDA_CHECK_LAUNCH("fill");
}

void arange(Dtype dtype, void* out, int64_t n, ScalarArg start, ScalarArg step) {
  if (n == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!kIsBool<T>) {
      // Floating dtypes compute in double, integral ones in int64, as the CPU kernel does.
      using A = std::conditional_t<kIsFloating<T>, double, int64_t>;
      arangeKernel<T, A><<<blocksFor(n), kBlockSize>>>(static_cast<T*>(out), n, scalarAs<A>(start), scalarAs<A>(step));
    }
  });
  DK_CUDA_CHECK_LAUNCH("arange");
}

}  // namespace dk::cuda::launch
