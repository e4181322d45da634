// Device code of _softmax and _log_softmax (kernels/cuda/launch.h) over the [outer, dim_size,
// inner] view of a contiguous input: a layout picked by shape (Note [CUDA softmax plans] in
// softmax_plan.h), accumulation in float (double for Double inputs), outputs exp(x - max) *
// (1 / sum) or (x - max) - log(sum) in the CPU kernels' order of operations.
#include "kernel_helpers.h"
#include "softmax_plan.h"

namespace dk::cuda::launch {

namespace {

using namespace device;
using namespace softmax_math;

// What softmax of In accumulates in.
template <class In>
using softmax_acc_t = std::conditional_t<std::is_same_v<In, double>, double, float>;

// ---------------------------------------------------------------- warp and block combines

constexpr unsigned kFullMask = 0xffffffffu;

// Combines `value` with op over each aligned group of `width` lanes (a power of two <= 32) by
// butterfly shuffles; every lane of the group gets the result. Every lane of the warp must call
// it. Each step gives both lanes of a pair op(a, b) and op(b, a): the same sum to the bit, the
// same max but for which of +0 and -0 (or of two NaNs) it keeps, which no output tells apart
// beyond the sign of a zero.
template <class A, class Op>
__device__ __forceinline__ A groupReduce(A value, Op op, int width) {
  for (int offset = width / 2; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(kFullMask, value, offset));
  return value;
}

// The warp's Stats combined into lane 0 (a tree in a fixed order; other lanes get partial
// results). Every lane of the warp must call it.
template <class A>
__device__ __forceinline__ Stat<A> warpCombine(Stat<A> s) {
  for (int offset = kSoftmaxWarp / 2; offset > 0; offset /= 2) {
    Stat<A> other{__shfl_down_sync(kFullMask, s.max, offset), __shfl_down_sync(kFullMask, s.sum, offset)};
    s = combine(s, other);
  }
  return s;
}

// The block's Stats combined (one-dimensional block, a multiple of 32 threads up to 1024);
// every thread gets the result. `shared` holds kSoftmaxWarp + 1 Stats; the call may follow
// another on the same `shared` without a barrier between them.
template <class A>
__device__ Stat<A> blockCombine(Stat<A> s, Stat<A>* shared) {
  const int lane = threadIdx.x % kSoftmaxWarp, warp = threadIdx.x / kSoftmaxWarp;
  const int warps = blockDim.x / kSoftmaxWarp;
  s = warpCombine(s);
  if (lane == 0) shared[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = warpCombine(lane < warps ? shared[lane] : emptyStat<A>());
    // The result goes to its own slot: a second call's writes of shared[warp] cannot reach it
    // before every thread read it, since they follow that call's first barrier.
    if (lane == 0) shared[kSoftmaxWarp] = s;
  }
  __syncthreads();
  return shared[kSoftmaxWarp];
}

// ---------------------------------------------------------------- loads

// Elements per 16-byte vector of In, or 1 without vectors.
template <class In, bool kVec>
inline constexpr int kPackOf = kVec ? int(16 / sizeof(In)) : 1;

// Calls f(x) for each element, converted to A, of the packs first, first + step, ... below
// `end` (pack indices) of `src`, in that order. Loads kUnroll packs before using any, so that a
// thread keeps several loads in flight.
template <class A, int kN, class In, class F>
__device__ __forceinline__ void forEachLoaded(const Pack<In, kN>* __restrict__ src, int64_t first, int64_t end,
                                              int64_t step, F f) {
  constexpr int kUnroll = kN > 1 ? 2 : 4;
  for (int64_t k = first; k < end; k += kUnroll * step) {
    Pack<In, kN> loaded[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (k + u * step < end) loaded[u] = src[k + u * step];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (k + u * step < end) {
#pragma unroll
        for (int e = 0; e < kN; ++e) f(convert<A>(loaded[u].v[e]));
      }
    }
  }
}

// ---------------------------------------------------------------- WarpPerRow

// Rows of dim_size <= group_width * kValues (inner == 1): a group of lanes per row, the row in
// registers, two shuffled combines (max, then sum), one read and one write of memory.
template <class In, class Out, int kValues>
__global__ void __launch_bounds__(kWarpRowThreads)
    warpRowKernel(Out* __restrict__ out, const In* __restrict__ in, SoftmaxPlan p, bool take_log) {
  using A = softmax_acc_t<In>;
  // More than one value per lane only when the group is a whole warp: a constant then.
  const int width = kValues > 1 ? kSoftmaxWarp : p.group_width;
  const int group = threadIdx.x / width, lane = threadIdx.x % width;
  const int64_t rows = p.outer, rows_per_block = rowsPerBlock(p);
  const int dim = static_cast<int>(p.dim_size);
  // The loop bound is the block's, so every lane of a warp takes every shuffle; a group past
  // the last row has no elements (`length` 0), computes on -inf and stores nothing.
  for (int64_t first = blockIdx.x * rows_per_block; first < rows; first += gridDim.x * rows_per_block) {
    const int64_t row = first + group;
    const int length = row < rows ? dim : 0;
    const In* src = in + (row < rows ? row : 0) * dim;
    A v[kValues];
    A row_max = A(-INFINITY);
#pragma unroll
    for (int k = 0; k < kValues; ++k) {
      const int j = warpRowElement(width, lane, k);
      v[k] = j < length ? convert<A>(src[j]) : A(-INFINITY);
      row_max = maxNan(row_max, v[k]);
    }
    row_max = groupReduce(row_max, [](A a, A b) { return maxNan(a, b); }, width);
    // The three-pass form from registers: a max that is not finite gives NaN through x - max.
    A sum = A(0);
#pragma unroll
    for (int k = 0; k < kValues; ++k) {
      if (warpRowElement(width, lane, k) < length) {
        const A shifted = v[k] - row_max;
        const A e = expOf(shifted);
        sum += e;
        v[k] = take_log ? shifted : e;
      }
    }
    sum = groupReduce(sum, [](A a, A b) { return a + b; }, width);
    const A scale = take_log ? logOf(sum) : A(1) / sum;
    Out* dst = out + (row < rows ? row : 0) * dim;
#pragma unroll
    for (int k = 0; k < kValues; ++k) {
      const int j = warpRowElement(width, lane, k);
      if (j < length) dst[j] = convert<Out>(take_log ? v[k] - scale : v[k] * scale);
    }
  }
}

// ---------------------------------------------------------------- BlockPerRow and SplitRow

// What a launch of the row or column kernel does: the whole line (no split), or one of the two
// kernels of a split: each chunk's Stat into the workspace, then the outputs.
enum class Phase : int8_t { Whole, Stats, Write };

// Rows (inner == 1) of one block per chunk (one chunk per row without a split): threads on
// neighbouring elements, kPackOf<In, kVec> elements per load (kVec: rows and chunks aligned to
// 16 bytes, dim_size a multiple of the pack; checked by the launcher).
template <class In, class Out, bool kVec>
__global__ void __launch_bounds__(kRowMaxThreads)
    rowKernel(Out* __restrict__ out, const In* __restrict__ in, SoftmaxPlan p, Phase phase,
              Stat<softmax_acc_t<In>>* __restrict__ stats, bool take_log) {
  using A = softmax_acc_t<In>;
  constexpr int kN = kPackOf<In, kVec>;
  __shared__ Stat<A> shared[kSoftmaxWarp + 1];
  const int64_t items = rowItems(p);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t row = item / p.chunks, chunk = item % p.chunks;
    const int64_t first = chunkBegin(p, chunk) / kN + threadIdx.x, end = chunkEnd(p, chunk) / kN;
    const auto* src = reinterpret_cast<const Pack<In, kN>*>(in + row * p.dim_size);
    Stat<A> line = emptyStat<A>();
    if (phase == Phase::Write) {
      // The row's chunks, combined in the same order by each of its blocks.
      for (int64_t c = threadIdx.x; c < p.chunks; c += blockDim.x) line = combine(line, stats[statIndex(p, row, c)]);
    } else {
      forEachLoaded<A>(src, first, end, blockDim.x, [&](A x) { accumulate(line, x); });
    }
    line = blockCombine(line, shared);
    if (phase == Phase::Stats) {
      if (threadIdx.x == 0) stats[statIndex(p, row, chunk)] = line;
      continue;
    }
    const LineScale<A> scale = lineScale(line, take_log);
    auto* dst = reinterpret_cast<Pack<Out, kN>*>(out + row * p.dim_size);
    constexpr int kUnroll = kN > 1 ? 2 : 4;
    for (int64_t k = first; k < end; k += kUnroll * blockDim.x) {
      Pack<In, kN> loaded[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (k + u * blockDim.x < end) loaded[u] = src[k + u * blockDim.x];
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (k + u * blockDim.x < end) {
          Pack<Out, kN> result;
#pragma unroll
          for (int e = 0; e < kN; ++e) result.v[e] = convert<Out>(softmaxOf(convert<A>(loaded[u].v[e]), scale, take_log));
          dst[k + u * blockDim.x] = result;
        }
      }
    }
  }
}

// ---------------------------------------------------------------- Columns

// inner > 1: thread x of a block on column (outer, inner position) blockIdx.x * blockDim.x + x
// (grid-stride), threads y splitting the block's chunk of dim (chunk blockIdx.y); their Stats
// combine through `shared` in y order.
template <class In, class Out>
__global__ void __launch_bounds__(kColumnsThreads)
    columnsKernel(Out* __restrict__ out, const In* __restrict__ in, SoftmaxPlan p, Phase phase,
                  Stat<softmax_acc_t<In>>* __restrict__ stats, bool take_log) {
  using A = softmax_acc_t<In>;
  __shared__ Stat<A> shared[kColumnsThreads];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t columns = softmaxLines(p), inner = p.inner;
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunkBegin(p, chunk) + ty, end = chunkEnd(p, chunk), step = blockDim.y;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x; first < columns;
       first += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t column = first + tx;
    const bool valid = column < columns;
    const In* src = in + (valid ? columnOffset(p, column) : 0);
    Stat<A> line = emptyStat<A>();
    if (valid) {
      if (phase == Phase::Write) {
        for (int64_t c = ty; c < p.chunks; c += step) line = combine(line, stats[statIndex(p, column, c)]);
      } else {
        // Loads first, as forEachLoaded: consecutive tx read consecutive addresses.
        constexpr int kUnroll = 4;
        for (int64_t j = begin; j < end; j += kUnroll * step) {
          A loaded[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            if (j + u * step < end) loaded[u] = convert<A>(src[(j + u * step) * inner]);
          }
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            if (j + u * step < end) accumulate(line, loaded[u]);
          }
        }
      }
    }
    if (blockDim.y > 1) {
      // Combined by the y == 0 thread of each column, in y order, for all of them.
      shared[ty * blockDim.x + tx] = line;
      __syncthreads();
      if (ty == 0) {
        for (unsigned y = 1; y < blockDim.y; ++y) line = combine(line, shared[y * blockDim.x + tx]);
        shared[tx] = line;
      }
      __syncthreads();
      line = shared[tx];
      __syncthreads();  // the next column block writes shared again
    }
    if (phase == Phase::Stats) {
      if (ty == 0 && valid) stats[statIndex(p, column, chunk)] = line;
      continue;
    }
    if (valid) {
      const LineScale<A> scale = lineScale(line, take_log);
      Out* dst = out + columnOffset(p, column);
      for (int64_t j = begin; j < end; j += step) {
        dst[j * inner] = convert<Out>(softmaxOf(convert<A>(src[j * inner]), scale, take_log));
      }
    }
  }
}

// ---------------------------------------------------------------- launching

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class In, class Out, int kValues>
void launchWarpRows(const SoftmaxPlan& p, Out* out, const In* in, bool take_log, const char* op) {
  warpRowKernel<In, Out, kValues><<<static_cast<unsigned>(p.grid_x), p.block_x>>>(out, in, p, take_log);
  DK_CUDA_CHECK_LAUNCH(op);
}

template <class In, class Out, bool kVec>
void launchRows(const SoftmaxPlan& p, Out* out, const In* in, Stat<softmax_acc_t<In>>* stats, bool take_log,
                const char* op) {
  const dim3 grid(static_cast<unsigned>(p.grid_x)), block(p.block_x);
  if (p.chunks == 1) {
    rowKernel<In, Out, kVec><<<grid, block>>>(out, in, p, Phase::Whole, nullptr, take_log);
    DK_CUDA_CHECK_LAUNCH(op);
    return;
  }
  rowKernel<In, Out, kVec><<<grid, block>>>(out, in, p, Phase::Stats, stats, take_log);
  DK_CUDA_CHECK_LAUNCH(op);
  rowKernel<In, Out, kVec><<<grid, block>>>(out, in, p, Phase::Write, stats, take_log);
  DK_CUDA_CHECK_LAUNCH(op);
}

template <class In, class Out>
void launchColumns(const SoftmaxPlan& p, Out* out, const In* in, Stat<softmax_acc_t<In>>* stats, bool take_log,
                   const char* op) {
  const dim3 grid(static_cast<unsigned>(p.grid_x), static_cast<unsigned>(p.grid_y)), block(p.block_x, p.block_y);
  if (p.chunks == 1) {
    columnsKernel<In, Out><<<grid, block>>>(out, in, p, Phase::Whole, nullptr, take_log);
    DK_CUDA_CHECK_LAUNCH(op);
    return;
  }
  columnsKernel<In, Out><<<grid, block>>>(out, in, p, Phase::Stats, stats, take_log);
  DK_CUDA_CHECK_LAUNCH(op);
  columnsKernel<In, Out><<<grid, block>>>(out, in, p, Phase::Write, stats, take_log);
  DK_CUDA_CHECK_LAUNCH(op);
}

template <class In, class Out>
void launchPlan(const SoftmaxPlan& p, Out* out, const In* in, void* workspace, bool take_log, const char* op) {
  auto* stats = static_cast<Stat<softmax_acc_t<In>>*>(workspace);
  switch (p.strategy) {
    case SoftmaxStrategy::Empty:
      return;
    case SoftmaxStrategy::WarpPerRow:
      switch (p.values_per_lane) {
        case 1: launchWarpRows<In, Out, 1>(p, out, in, take_log, op); return;
        case 2: launchWarpRows<In, Out, 2>(p, out, in, take_log, op); return;
        case 4: launchWarpRows<In, Out, 4>(p, out, in, take_log, op); return;
        case 8: launchWarpRows<In, Out, 8>(p, out, in, take_log, op); return;
        case 16: launchWarpRows<In, Out, 16>(p, out, in, take_log, op); return;
        default: launchWarpRows<In, Out, kWarpRowMaxValues>(p, out, in, take_log, op); return;
      }
    case SoftmaxStrategy::BlockPerRow:
    case SoftmaxStrategy::SplitRow:
      // Chunks start at multiples of kChunkAlign elements, so with aligned pointers and whole
      // packs per row every pack is aligned.
      if (aligned16(in) && aligned16(out) && p.dim_size % kPackOf<In, true> == 0) {
        launchRows<In, Out, true>(p, out, in, stats, take_log, op);
      } else {
        launchRows<In, Out, false>(p, out, in, stats, take_log, op);
      }
      return;
    case SoftmaxStrategy::Columns:
      launchColumns<In, Out>(p, out, in, stats, take_log, op);
      return;
  }
}

}  // namespace

int64_t softmaxWorkspaceBytes(Dtype in_dtype, int64_t outer, int64_t dim_size, int64_t inner, int num_sms) {
  if (outer * inner == 0 || dim_size == 0) return 0;
  SoftmaxPlan p = planSoftmax(outer, dim_size, inner, num_sms);
  return planWorkspaceBytes(p, in_dtype == Dtype::Double ? 8 : 4);
}

void softmax(bool log, Dtype in_dtype, Dtype out_dtype, void* out, const void* in, int64_t outer, int64_t dim_size,
             int64_t inner, int num_sms, void* workspace) {
  if (outer * inner == 0 || dim_size == 0) return;
  const char* op = log ? "_log_softmax" : "_softmax";
  // Without a workspace the plan does not split (slower on few long lines, same results).
  const SoftmaxPlan p = planSoftmax(outer, dim_size, inner, num_sms, workspace != nullptr);
  dispatchFloating(op, in_dtype, [&](auto tag) {
    using In = decltype(tag);
    const auto* input = static_cast<const In*>(in);
    if constexpr (kIsReducedFloat<In>) {
      if (out_dtype == Dtype::Float) {  // half_to_float
        launchPlan<In, float>(p, static_cast<float*>(out), input, workspace, log, op);
        return;
      }
    }
    if (out_dtype != in_dtype) throwUnsupportedDtype(op, out_dtype);
    launchPlan<In, In>(p, static_cast<In*>(out), input, workspace, log, op);
  });
}

}  // namespace dk::cuda::launch
