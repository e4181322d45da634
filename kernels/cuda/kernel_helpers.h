// kernels/cuda/kernel_helpers.h: device-side building blocks shared by the .cu files (and
// included by them only: it needs nvcc). The C++ type of each dtype, loads and stores through
// the accumulate type, dtype conversions, offsets from a Geometry, launch sizes and the
// dtype switch. Note [CUDA launch interface] in launch.h says why no dk/ header appears here.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "launch.h"

namespace dk::cuda::device {

using launch::Dtype;
using launch::Geometry;
using launch::ScalarArg;

// ---------------------------------------------------------------- types

using half = __half;
using bfloat16 = __nv_bfloat16;

template <class T>
inline constexpr bool kIsReducedFloat = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
template <class T>
inline constexpr bool kIsFloating = kIsReducedFloat<T> || std::is_floating_point_v<T>;
template <class T>
inline constexpr bool kIsBool = std::is_same_v<T, bool>;

// What arithmetic on T runs in: float for the 16-bit floats (as the CPU kernels do, Note
// [16-bit float arithmetic] in dk/util/half.h), int64 for the integral dtypes (wrapping back on the
// store gives the same result as T's own arithmetic), T otherwise.
template <class T>
struct AccType {
  using type = std::conditional_t<kIsReducedFloat<T>, float,
                                  std::conditional_t<std::is_integral_v<T> && !kIsBool<T>, int64_t, T>>;
};
template <class T>
using acc_t = typename AccType<T>::type;

// Conversion between any two of the ten element types, through float for 16-bit floats and
// with bool meaning "nonzero".
template <class To, class From>
__device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, half>) {
    return convert<To>(__half2float(v));
  } else if constexpr (std::is_same_v<From, bfloat16>) {
    return convert<To>(__bfloat162float(v));
  } else if constexpr (std::is_same_v<To, half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (kIsBool<To>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    // As the CPU kernels convert (x86's instructions, without C++'s undefined cases): truncate
    // through int32 for types up to 32 bits, then wrap (-1.5 -> 255 for uint8, where a direct
    // device conversion would saturate to 0); out of range or NaN gives the most negative int32
    // (or int64).
    double d = static_cast<double>(v);
    if constexpr (sizeof(To) <= 4) {
      int32_t i = d > -2147483649.0 && d < 2147483648.0 ? static_cast<int32_t>(d) : INT32_MIN;
      return static_cast<To>(i);
    } else {
      int64_t i = d >= -9223372036854775808.0 && d < 9223372036854775808.0 ? static_cast<int64_t>(d) : INT64_MIN;
      return static_cast<To>(i);
    }
  } else {
    return static_cast<To>(v);
  }
}

template <class T>
__device__ __forceinline__ acc_t<T> load(const T* p) {
  return convert<acc_t<T>>(*p);
}
template <class T, class V>
__device__ __forceinline__ void store(T* p, V v) {
  *p = convert<T>(v);
}

// A ScalarArg as the value T's kernels compute with: converted to T first for integral T (as
// PyTorch's Scalar::to<T>: clamp(uint8 tensor, min=-1) uses 255), to the accumulate type for
// floating T.
template <class T>
__host__ __device__ __forceinline__ acc_t<T> scalarAs(ScalarArg s) {
  using A = acc_t<T>;
  if constexpr (kIsBool<A>) {
    return s.i != 0;
  } else if constexpr (std::is_floating_point_v<A>) {
    return static_cast<A>(s.f);
  } else {
    return static_cast<A>(static_cast<T>(s.i));
  }
}

template <class T>
__device__ __forceinline__ bool isNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// ---------------------------------------------------------------- geometry

// Offsets (in elements) of the N operands of element `linear` of g, computed in Index (int32_t
// when every offset of g fits: 32-bit division costs a fraction of 64-bit's).
template <class Index, int N>
struct IndexedOffsets {
  Index at[N];
  __device__ __forceinline__ IndexedOffsets(const Geometry& g, Index linear) {
    if (g.ndim == 1) {  // the common case after merging: no division at all
#pragma unroll
      for (int k = 0; k < N; ++k) at[k] = linear * static_cast<Index>(g.strides[k][0]);
      return;
    }
#pragma unroll
    for (int k = 0; k < N; ++k) at[k] = 0;
    for (int d = g.ndim - 1; d >= 0; --d) {
      Index size = static_cast<Index>(g.sizes[d]);
      Index index = linear % size;
      linear /= size;
#pragma unroll
      for (int k = 0; k < N; ++k) at[k] += index * static_cast<Index>(g.strides[k][d]);
    }
  }
};
template <int N>
using Offsets = IndexedOffsets<int64_t, N>;

// Whether every element index and operand offset of g fits in int32_t (then IndexedOffsets may
// use int32_t).
inline bool fitsInt32(const Geometry& g) {
  if (g.numel > INT32_MAX) return false;
  for (int k = 0; k < g.num_operands; ++k) {
    int64_t reach = 0;
    for (int d = 0; d < g.ndim; ++d) reach += (g.sizes[d] - 1) * (g.strides[k][d] < 0 ? -g.strides[k][d] : g.strides[k][d]);
    if (reach > INT32_MAX) return false;
  }
  return true;
}

// `V` elements of T moved together: one vector load or store up to 16 bytes (the widest), two
// or more 16-byte accesses beyond (8 floats a softmax writes from 8 halves), so aligned to 16
// bytes at most.
template <class T, int V>
struct alignas(sizeof(T) * V < 16 ? sizeof(T) * V : 16) Pack {
  T v[V];
};

// ---------------------------------------------------------------- block reductions

// Combines every thread's `value` with `op` across the block (blockDim.x a power of two, at most
// kBlockSize); every thread gets the result. `shared` holds blockDim.x values.
template <class A, class Op>
__device__ A blockReduce(A value, Op op, A* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half_width = blockDim.x / 2; half_width > 0; half_width /= 2) {
    if (threadIdx.x < half_width) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + half_width]);
    __syncthreads();
  }
  A result = shared[0];
  __syncthreads();  // shared may be reused right after
  return result;
}

// Records a bad value for the host to report: error[0] = 1, error[1] = value (the first
// thread to get there wins). `error` points at two int64 on the device, zeroed by the host.
__device__ __forceinline__ void reportError(int64_t* error, int64_t value) {
  auto* flag = reinterpret_cast<unsigned long long*>(error);
  if (atomicCAS(flag, 0ull, 1ull) == 0ull) error[1] = value;
}

// ---------------------------------------------------------------- launching

inline constexpr int kBlockSize = 256;
// Grid-stride loops cap the grid here.
inline constexpr int64_t kMaxBlocks = 65535;

inline unsigned blocksFor(int64_t n) {
  int64_t blocks = (n + kBlockSize - 1) / kBlockSize;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Raises the pending launch error, if any; under DK_CUDA_LAUNCH_BLOCKING=1 (launch::launchBlocking)
// first waits for the kernel, so that a fault inside it is raised here.
inline void checkLaunch(const char* what, const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess && launch::launchBlocking()) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) launch::throwCudaError(static_cast<int>(err), what, file, line);
}
#define DK_CUDA_CHECK_LAUNCH(what) ::dk::cuda::device::checkLaunch(what, __FILE__, __LINE__)

#define DK_CUDA_KERNEL_LOOP(i, n)                                                            \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// Calls f(T{}) with T the element type of `dtype` (a value of T only carries the type).
template <class F>
void dispatch(Dtype dtype, F&& f) {
  switch (dtype) {
    case Dtype::Byte: f(uint8_t{}); return;
    case Dtype::Char: f(int8_t{}); return;
    case Dtype::Short: f(int16_t{}); return;
    case Dtype::Int: f(int32_t{}); return;
    case Dtype::Long: f(int64_t{}); return;
    case Dtype::Half: f(half{}); return;
    case Dtype::Float: f(float{}); return;
    case Dtype::Double: f(double{}); return;
    case Dtype::Bool: f(bool{}); return;
    case Dtype::BFloat16: f(bfloat16{}); return;
  }
}

// dispatch over the floating dtypes only; another raises the CPU kernels' error naming the
// operator `op` and the dtype ("max_pool2d: unsupported dtype Long").
template <class F>
void dispatchFloating(const char* op, Dtype dtype, F&& f) {
  switch (dtype) {
    case Dtype::Half: f(half{}); return;
    case Dtype::Float: f(float{}); return;
    case Dtype::Double: f(double{}); return;
    case Dtype::BFloat16: f(bfloat16{}); return;
    default: launch::throwUnsupportedDtype(op, dtype);
  }
}

}  // namespace dk::cuda::device
