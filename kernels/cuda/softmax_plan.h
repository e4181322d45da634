// kernels/cuda/softmax_plan.h: how _softmax and _log_softmax map onto blocks and threads (Note
// [CUDA softmax plans]). Plain C++17 without CUDA headers: softmax.cu plans each launch with
// planSoftmax and assigns work only through the inline functions below, and
// tests/test_softmax_plan.cpp replays those same functions on the CPU, where no GPU is needed.
//
// Note [CUDA softmax plans]
// The input is seen as [outer, dim_size, inner]: outer * inner lines along the softmax dim, each
// needing its max, the sum of exp(x - max), then its outputs. One block of 256 threads per line
// for every shape (the first CUDA kernel) left most threads idle on short lines ([1e6, 10]: 10
// of 256), used a single SM for one long line ([1, 1e8]), and made every load uncoalesced when
// inner > 1 (threads striding by `inner`). planSoftmax picks by shape instead:
//  - WarpPerRow (inner == 1, dim_size <= 1024): a group of `group_width` lanes per row (a power
//    of two up to a warp: 16 lanes for rows of 10, so 10 of every 16 threads work), several rows
//    per block. Each lane keeps its `values_per_lane` elements in registers: the row is read from
//    memory once, and the max and the sum combine through warp shuffles.
//  - BlockPerRow (inner == 1, longer rows): a block per row, neighbouring threads on neighbouring
//    elements (16-byte vector loads when every row starts aligned), one online pass for (max,
//    sum), block-combined through warp shuffles, then the write pass.
//  - SplitRow (inner == 1, fewer rows than SMs, rows long enough to share): each row cut into
//    `chunks` pieces of `chunk_size`, one block each. A first kernel writes each chunk's (max,
//    sum) to a workspace; in a second, every block first combines its row's pairs, all blocks of
//    a row in the same fixed order (so they agree to the bit, and the result does not depend on
//    scheduling), then writes its chunk.
//  - Columns (inner > 1): neighbouring threads (x) take neighbouring inner positions, so for
//    each step along dim a warp reads 32 consecutive elements. Each thread runs the online pass
//    down its column, then writes it. When the outer * inner columns would leave the device
//    idle, the block's y threads split dim (combined in shared memory, in order), and where the
//    blocks are still too few, grid.y splits dim into chunks through the workspace as SplitRow
//    does ([65536, 1024] along dim 0 on 132 SMs: 32 column blocks x 33 chunks).
// The online pass keeps (m, s) = (max so far, sum of exp(x - m)) and rescales s when m grows;
// partial pairs combine as (max(m1, m2), s1 exp(m1 - m) + s2 exp(m2 - m)). exp(a - b) is taken
// as 1 when a == b, so -inf elements ahead of the first finite one add 1 to s (rescaled to 0 by
// the first finite max) instead of NaN. A line whose max is not finite (NaN, +inf, or every
// element -inf) gets s = NaN and so writes NaN everywhere, as the three-pass form (max, then
// sum(exp(x - max)), then outputs) does: there x - max is NaN for some element and so is the
// sum. Accumulation is in float, double for Double inputs.
#pragma once

#include <cmath>
#include <cstdint>

#include "host_device.h"

namespace dk::cuda::launch {

enum class SoftmaxStrategy : int8_t { Empty, WarpPerRow, BlockPerRow, SplitRow, Columns };

// Lanes of a warp; every block size is a multiple of it.
constexpr int kSoftmaxWarp = 32;
// Longest row WarpPerRow takes: 32 lanes x 32 values in registers.
constexpr int64_t kWarpRowMaxDim = 1024;
constexpr int kWarpRowMaxValues = 32;
// Threads of a WarpPerRow block (4 warps).
constexpr int kWarpRowThreads = 128;
// BlockPerRow blocks: a power of two in [kRowMinThreads, kRowMaxThreads], about 8 elements per
// thread.
constexpr int kRowMinThreads = 128;
constexpr int kRowMaxThreads = 1024;
constexpr int64_t kRowElementsPerThread = 8;
// SplitRow and Columns blocks.
constexpr int kSplitThreads = 256;
constexpr int kColumnsThreads = 256;
// Blocks of 256 threads that fill an SM (2048 resident threads on sm_80 and sm_90).
constexpr int64_t kBlocksPerSm = 8;
// The least a SplitRow chunk holds (16 elements per thread), and chunk sizes round up to a
// multiple of kChunkAlign elements so a chunk of an aligned row starts aligned for any vector.
constexpr int64_t kMinSplitChunk = int64_t(kSplitThreads) * 16;
constexpr int64_t kChunkAlign = 64;
// Columns: the least elements one thread reads along dim in a chunk, the y threads' most.
constexpr int64_t kMinColumnElementsPerThread = 32;
constexpr int kColumnsMaxY = 8;
// Grid-stride kernels cap grid.x here; grid.y (Columns chunks) stops at CUDA's 65535.
constexpr int64_t kSoftmaxMaxGridX = 65535;
constexpr int64_t kSoftmaxMaxGridY = 65535;

struct SoftmaxPlan {
  SoftmaxStrategy strategy = SoftmaxStrategy::Empty;
  int64_t outer = 0, dim_size = 0, inner = 1;
  // The launch: block (block_x, block_y), grid (grid_x, grid_y).
  int32_t block_x = 0, block_y = 1;
  int64_t grid_x = 0, grid_y = 1;
  // WarpPerRow: lanes per row (a power of two <= 32) and elements each lane holds (a power of
  // two <= 32); group_width * values_per_lane >= dim_size.
  int32_t group_width = 1;
  int32_t values_per_lane = 1;
  // SplitRow and Columns: pieces each line's dim is cut into (1: not split; then chunk_size is
  // dim_size). > 1 needs a workspace of lines x chunks (max, sum) pairs.
  int64_t chunks = 1;
  int64_t chunk_size = 0;
};

// ---------------------------------------------------------------- shared with the kernels

DK_HOST_DEVICE inline int64_t softmaxLines(const SoftmaxPlan& p) { return p.outer * p.inner; }
// Chunk c of a line covers [chunkBegin, chunkEnd) along dim.
DK_HOST_DEVICE inline int64_t chunkBegin(const SoftmaxPlan& p, int64_t chunk) { return chunk * p.chunk_size; }
DK_HOST_DEVICE inline int64_t chunkEnd(const SoftmaxPlan& p, int64_t chunk) {
  int64_t end = (chunk + 1) * p.chunk_size;
  return end < p.dim_size ? end : p.dim_size;
}
// Where the (max, sum) pair of chunk `chunk` of line `line` sits in the workspace.
DK_HOST_DEVICE inline int64_t statIndex(const SoftmaxPlan& p, int64_t line, int64_t chunk) {
  return line * p.chunks + chunk;
}
// WarpPerRow: rows per block (group g of block b takes rows b * rowsPerBlock + g, then a grid's
// worth further each step); lane `lane` of a group of `width` lanes holds elements
// lane + k * width, k < values_per_lane.
DK_HOST_DEVICE inline int64_t rowsPerBlock(const SoftmaxPlan& p) { return p.block_x / p.group_width; }
DK_HOST_DEVICE inline int warpRowElement(int width, int lane, int k) { return lane + k * width; }
// SplitRow (and BlockPerRow, one chunk per row): grid-stride item b is chunk b % chunks of row
// b / chunks.
DK_HOST_DEVICE inline int64_t rowItems(const SoftmaxPlan& p) { return p.outer * p.chunks; }
// Columns: the offset of element j = 0 of column `column` (o * dim_size * inner + i); element j
// is `inner` further per step.
DK_HOST_DEVICE inline int64_t columnOffset(const SoftmaxPlan& p, int64_t column) {
  return column / p.inner * p.dim_size * p.inner + column % p.inner;
}

// ---------------------------------------------------------------- the online (max, sum)

// The arithmetic of the passes (Note [CUDA softmax plans]), on the accumulate type A (float or
// double): here rather than in softmax.cu so that the test can run it on the CPU.
namespace softmax_math {

template <class A>
DK_HOST_DEVICE inline bool isNan(A v) {
  return v != v;
}
template <class A>
DK_HOST_DEVICE inline bool isFinite(A v) {
  return !isNan(v) && v != A(INFINITY) && v != A(-INFINITY);
}
// The larger of a and b, NaN winning (as the CPU kernel's max).
template <class A>
DK_HOST_DEVICE inline A maxNan(A a, A b) {
  return (a > b || isNan(a)) ? a : b;
}
template <class A>
DK_HOST_DEVICE inline A expOf(A x) {
  if constexpr (sizeof(A) == sizeof(float)) return expf(x); else return exp(x);
}
template <class A>
DK_HOST_DEVICE inline A logOf(A x) {
  if constexpr (sizeof(A) == sizeof(float)) return logf(x); else return log(x);
}

// A line's (or a part's) max and sum of exp(x - max). {-inf, 0}: no element yet. An aggregate,
// so that it can live in __shared__ memory.
template <class A>
struct Stat {
  A max;
  A sum;
};
template <class A>
DK_HOST_DEVICE inline Stat<A> emptyStat() {
  return Stat<A>{A(-INFINITY), A(0)};
}
// exp(a - b) for a <= b, 1 when a == b (-inf == -inf included, where a - b is NaN).
template <class A>
DK_HOST_DEVICE inline A expBelow(A a, A b) {
  return a == b ? A(1) : expOf(a - b);
}
// s with element x added: one exp, two when x is a new max.
template <class A>
DK_HOST_DEVICE inline void accumulate(Stat<A>& s, A x) {
  if (x > s.max || isNan(x)) {
    s.sum = s.sum * expBelow(s.max, x) + A(1);
    s.max = x;
  } else {
    s.sum += expBelow(x, s.max);
  }
}
template <class A>
DK_HOST_DEVICE inline Stat<A> combine(Stat<A> a, Stat<A> b) {
  A m = maxNan(a.max, b.max);
  return Stat<A>{m, a.sum * expBelow(a.max, m) + b.sum * expBelow(b.max, m)};
}

// What the write pass needs of a line: out = exp(x - max) * scale, or (x - max) - scale for log
// (scale = 1 / sum, log(sum)). A max that is not finite makes every output NaN.
template <class A>
struct LineScale {
  A max;
  A scale;
};
template <class A>
DK_HOST_DEVICE inline LineScale<A> lineScale(Stat<A> s, bool take_log) {
  A sum = isFinite(s.max) ? s.sum : A(NAN);
  return LineScale<A>{s.max, take_log ? logOf(sum) : A(1) / sum};
}
template <class A>
DK_HOST_DEVICE inline A softmaxOf(A x, LineScale<A> line, bool take_log) {
  A shifted = x - line.max;
  return take_log ? shifted - line.scale : expOf(shifted) * line.scale;
}

}  // namespace softmax_math

// ---------------------------------------------------------------- planning (host)

namespace softmax_detail {
inline int64_t clampTo(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }
}  // namespace softmax_detail

// The plan for a contiguous [outer, dim_size, inner] on a device of `num_sms` multiprocessors
// (Note [CUDA softmax plans]). Without `allow_split` (no workspace) chunks stays 1.
inline SoftmaxPlan planSoftmax(int64_t outer, int64_t dim_size, int64_t inner, int num_sms, bool allow_split = true) {
  using namespace softmax_detail;
  SoftmaxPlan p;
  p.outer = outer;
  p.dim_size = dim_size;
  p.inner = inner;
  p.chunk_size = dim_size;
  if (outer <= 0 || dim_size <= 0 || inner <= 0) return p;  // Empty: nothing to launch
  const int64_t sms = num_sms > 0 ? num_sms : 1;
  const int64_t target_blocks = kBlocksPerSm * sms;  // 256-thread blocks that fill the device
  if (inner == 1 && dim_size <= kWarpRowMaxDim) {
    p.strategy = SoftmaxStrategy::WarpPerRow;
    p.group_width = static_cast<int32_t>(nextPowerOfTwo(dim_size < kSoftmaxWarp ? dim_size : kSoftmaxWarp));
    p.values_per_lane = static_cast<int32_t>(nextPowerOfTwo(ceilDiv(dim_size, p.group_width)));
    p.block_x = kWarpRowThreads;
    p.grid_x = clampTo(ceilDiv(outer, rowsPerBlock(p)), 1, kSoftmaxMaxGridX);
    return p;
  }
  if (inner == 1) {
    const int64_t rows = outer;
    int64_t chunks = 1;
    if (allow_split && rows < sms) {
      int64_t wanted = ceilDiv(target_blocks, rows);
      int64_t most = dim_size / kMinSplitChunk;
      chunks = wanted < most ? wanted : most;
    }
    if (chunks >= 2) {
      p.strategy = SoftmaxStrategy::SplitRow;
      p.chunk_size = ceilDiv(ceilDiv(dim_size, chunks), kChunkAlign) * kChunkAlign;
      p.chunks = ceilDiv(dim_size, p.chunk_size);  // no empty chunk
      p.block_x = kSplitThreads;
      p.grid_x = clampTo(rowItems(p), 1, kSoftmaxMaxGridX);
      return p;
    }
    p.strategy = SoftmaxStrategy::BlockPerRow;
    p.block_x = static_cast<int32_t>(
        clampTo(nextPowerOfTwo(ceilDiv(dim_size, kRowElementsPerThread)), kRowMinThreads, kRowMaxThreads));
    p.grid_x = clampTo(rows, 1, kSoftmaxMaxGridX);
    return p;
  }
  p.strategy = SoftmaxStrategy::Columns;
  const int64_t columns = outer * inner;
  if (columns >= target_blocks * kColumnsThreads) {
    // Columns enough for every thread: one thread per column, the whole of dim each.
    p.block_x = kColumnsThreads;
    p.block_y = 1;
    p.grid_x = clampTo(ceilDiv(columns, p.block_x), 1, kSoftmaxMaxGridX);
    return p;
  }
  // A warp's width of columns per block, y threads splitting dim (as many as dim has, up to
  // kColumnsMaxY), then chunks along grid.y until the device fills.
  p.block_x = kSoftmaxWarp;
  p.block_y = static_cast<int32_t>(nextPowerOfTwo(dim_size < kColumnsMaxY ? dim_size : kColumnsMaxY));
  p.grid_x = clampTo(ceilDiv(columns, p.block_x), 1, kSoftmaxMaxGridX);
  if (allow_split && p.grid_x < target_blocks) {
    int64_t wanted = ceilDiv(target_blocks, p.grid_x);
    int64_t most = dim_size / (p.block_y * kMinColumnElementsPerThread);
    int64_t chunks = clampTo(wanted < most ? wanted : most, 1, kSoftmaxMaxGridY);
    if (chunks >= 2) {
      p.chunk_size = ceilDiv(dim_size, chunks);
      p.chunks = ceilDiv(dim_size, p.chunk_size);  // no empty chunk
      p.grid_y = p.chunks;
    }
  }
  return p;
}

// Workspace bytes for p's (max, sum) pairs, each two accumulate values of `accumulate_size`
// bytes (4: float, 8: double); 0 when p does not split.
inline int64_t planWorkspaceBytes(const SoftmaxPlan& p, int accumulate_size) {
  if (p.chunks <= 1) return 0;
  return softmaxLines(p) * p.chunks * 2 * accumulate_size;
}

}  // namespace dk::cuda::launch
