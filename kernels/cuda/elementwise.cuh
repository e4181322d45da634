// kernels/cuda/elementwise.cuh: the loops of the elementwise kernels (copies, fills, pointwise
// operators), shared by copy_fill.cu and pointwise.cu. Device code: nvcc only.
//
// Note [CUDA elementwise loops]
// makeGeometry (cuda_utils.cpp) orders a loop's dims by the output's strides before merging
// them, so element i of the loop walks the output's memory in order: relu(x.t()) on a dense x
// is one contiguous run, not 8192 columns. launchMap then picks one of three loops:
//  - contiguous: one dim, stride 1 in every operand read from memory. Each thread moves V
//    neighbouring elements (V: 16 bytes of the widest operand type), as one 16-byte load per
//    operand and one store when every pointer is aligned to it, element by element otherwise;
//  - strided, with offsets in int32_t when every offset fits (fitsInt32), which divides several
//    times faster than int64_t;
//  - strided in int64_t.
// An operand may also be one value passed with the launch (launch::Input without data: a 0-dim
// CPU tensor), read from the kernel's parameters: nothing uploaded, nothing waited for.
#pragma once

#include <cuda/std/tuple>

#include <cstring>
#include <utility>

#include "kernel_helpers.h"

namespace dk::cuda::device {

// An input as a kernel reads it: element at `data[offset]`, or `value` for every element.
template <class T>
struct Operand {
  const T* data;
  T value;
  __device__ __forceinline__ T at(int64_t offset) const { return data != nullptr ? data[offset] : value; }
};

// The kernel's view of a launch::Input of element type T.
template <class T>
Operand<T> operandOf(launch::Input in) {
  Operand<T> operand{static_cast<const T*>(in.data), T{}};
  if (in.data == nullptr) std::memcpy(static_cast<void*>(&operand.value), &in.bits, sizeof(T));
  return operand;
}

template <class... Ts>
constexpr size_t widestOf() {
  size_t widest = 1;
  ((widest = sizeof(Ts) > widest ? sizeof(Ts) : widest), ...);
  return widest;
}

// Elements per thread of the contiguous loop: 16 bytes of the widest operand, at most 8.
template <class Out, class... Ts>
constexpr int kVectorWidth = 16 / widestOf<Out, Ts...>() > 8 ? 8 : static_cast<int>(16 / widestOf<Out, Ts...>());

template <int V, class T>
__device__ __forceinline__ Pack<T, V> loadPack(const Operand<T>& in, int64_t i) {
  if (in.data != nullptr) return *reinterpret_cast<const Pack<T, V>*>(in.data + i);
  Pack<T, V> pack;
#pragma unroll
  for (int j = 0; j < V; ++j) pack.v[j] = in.value;
  return pack;
}

template <int V, class Out, class F, class Packs, size_t... Is>
__device__ __forceinline__ void applyToPacks(Pack<Out, V>& result, const F& f, const Packs& packs,
                                             std::index_sequence<Is...>) {
#pragma unroll
  for (int j = 0; j < V; ++j) result.v[j] = f(::cuda::std::get<Is>(packs).v[j]...);
}

// out[i] = f(in[i]...) for i < n: every operand contiguous (or a value).
template <int V, class Out, class F, class... Ts>
__global__ void contiguousKernel(int64_t n, bool aligned, Out* out, F f, Operand<Ts>... in) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x * V;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V; i < n; i += step) {
    if (aligned && i + V <= n) {
      ::cuda::std::tuple<Pack<Ts, V>...> packs{loadPack<V>(in, i)...};
      Pack<Out, V> result;
      applyToPacks(result, f, packs, std::index_sequence_for<Ts...>{});
      *reinterpret_cast<Pack<Out, V>*>(out + i) = result;
    } else {
      for (int64_t j = i; j < i + V && j < n; ++j) out[j] = f(in.at(j)...);
    }
  }
}

template <class Index, int N, class F, class... Ts, size_t... Is>
__device__ __forceinline__ auto applyAt(const F& f, const IndexedOffsets<Index, N>& off, std::index_sequence<Is...>,
                                        const Operand<Ts>&... in) {
  return f(in.at(off.at[Is + 1])...);
}

// out[offset 0] = f(in[offset k]...) over the geometry (operand 0 the output).
template <class Index, class Out, class F, class... Ts>
__global__ void stridedKernel(Geometry g, Out* out, F f, Operand<Ts>... in) {
  DK_CUDA_KERNEL_LOOP(i, g.numel) {
    IndexedOffsets<Index, 1 + sizeof...(Ts)> off(g, static_cast<Index>(i));
    out[off.at[0]] = applyAt(f, off, std::index_sequence_for<Ts...>{}, in...);
  }
}

// Whether the contiguous loop applies: at most one dim, stride 1 in the output and in every
// input read from memory (`data`: the inputs' pointers, null for values).
inline bool isContiguousLoop(const Geometry& g, const void* const* data, int num_inputs) {
  if (g.ndim == 0) return true;  // one element
  if (g.ndim > 1 || g.strides[0][0] != 1) return false;
  for (int k = 0; k < num_inputs; ++k) {
    if (data[k] != nullptr && g.strides[k + 1][0] != 1) return false;
  }
  return true;
}

// Runs out = f(in...) over g (Note [CUDA elementwise loops]); f maps the inputs' element types
// to Out. The caller checks the launch (DK_CUDA_CHECK_LAUNCH).
template <class Out, class F, class... Ts>
void launchMap(const Geometry& g, Out* out, F f, Operand<Ts>... in) {
  if (g.numel == 0) return;
  constexpr int V = kVectorWidth<Out, Ts...>;
  const void* data[] = {in.data..., nullptr};
  if (isContiguousLoop(g, data, static_cast<int>(sizeof...(Ts)))) {
    // Every pointer on a whole pack: out + i and in + i then are too, for every i multiple of V.
    bool aligned = reinterpret_cast<uintptr_t>(out) % (sizeof(Out) * V) == 0;
    ((aligned = aligned && reinterpret_cast<uintptr_t>(in.data) % (sizeof(Ts) * V) == 0), ...);
    contiguousKernel<V, Out, F, Ts...><<<blocksFor((g.numel + V - 1) / V), kBlockSize>>>(g.numel, aligned, out, f, in...);
  } else if (fitsInt32(g)) {
    stridedKernel<int32_t, Out, F, Ts...><<<blocksFor(g.numel), kBlockSize>>>(g, out, f, in...);
  } else {
    stridedKernel<int64_t, Out, F, Ts...><<<blocksFor(g.numel), kBlockSize>>>(g, out, f, in...);
  }
}

}  // namespace dk::cuda::device
