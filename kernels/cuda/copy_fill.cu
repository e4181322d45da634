// Device code of the copies and fills: dtype-converting strided copy, fill with a bit
// pattern, arange (kernels/cuda/launch.h).
#include "elementwise.cuh"

namespace dk::cuda::launch {

namespace {

using namespace device;

template <class Dst, class Src>
struct ConvertTo {
  __device__ __forceinline__ Dst operator()(Src v) const { return convert<Dst>(v); }
};

// Fills with a raw element: the host converted the value to the destination dtype, and the
// loop copies it from a value operand.
template <class Bits>
struct SameBits {
  __device__ __forceinline__ Bits operator()(Bits v) const { return v; }
};

template <class Bits>
void launchFill(const Geometry& g, void* dst, uint64_t bits) {
  launchMap(g, static_cast<Bits*>(dst), SameBits<Bits>{}, Operand<Bits>{nullptr, static_cast<Bits>(bits)});
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
      launchMap(g, static_cast<Dst*>(dst), ConvertTo<Dst, Src>{}, Operand<Src>{static_cast<const Src*>(src), Src{}});
    });
  });
  DK_CUDA_CHECK_LAUNCH("copy");
}

void fill(const Geometry& g, void* dst, int element_size, uint64_t bits) {
  if (g.numel == 0) return;
  switch (element_size) {
    case 1: launchFill<uint8_t>(g, dst, bits); break;
    case 2: launchFill<uint16_t>(g, dst, bits); break;
    case 4: launchFill<uint32_t>(g, dst, bits); break;
    default: launchFill<uint64_t>(g, dst, bits); break;
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
