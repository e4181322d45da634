// kernels/cuda/reduce_plan.h: how a CUDA reduction maps onto blocks and threads (Note [CUDA
// reduction plans]). Plain C++17 without CUDA headers: the host code plans, the device code
// (reduce.cu) follows the plan through the inline functions below, and tests/test_cuda_plans.cpp
// replays those same functions on the CPU, where no GPU is needed to check them.
//
// Note [CUDA reduction plans]
// A reduction's input dims split into kept dims (one output element per position) and reduced
// dims. planReduce first collapses them: size-1 dims go, a sum's reduced dims are ordered by
// stride (a sum may add in any order; max and argmax keep the row-major order their indices
// count in), and neighbours that step through memory as one dim are merged. Then it picks, from
// which side of the input is contiguous:
//  - lanes on the reduction (the innermost reduced dim has the smaller stride: sum(x, -1),
//    x.sum()): each output gets `threads_per_output` neighbouring threads that read neighbouring
//    elements, loaded `vector` at a time (up to 16 bytes) when the rows are contiguous and
//    aligned; short rows give many outputs per block ([1e7, 8] -> one thread per row of 8, a
//    warp reading 1 KiB straight), long rows the whole block.
//  - lanes on the outputs (the innermost kept dim has the smaller stride: sum(x, 0) on a
//    contiguous [65536, 1024]): neighbouring threads take neighbouring outputs, so every load
//    of a warp is one 128-byte line, and the block's other threads split the reduced rows.
// Few blocks for a long reduction (x.sum() on 1e9 elements: one output) would leave SMs idle:
// `splits` blocks then share each output, each writing a partial result to a workspace, and a
// second pass (planned with the same rules, never split again) combines each output's partials
// in a fixed order, so the result is deterministic. Splitting also bounds the elements one
// thread adds to kMaxElementsPerThread, over four accumulators: a float partial sum then never
// reaches 2^24 additions of 1, where adding 1 stops changing it (ones(5e9).sum() stays exact).
#pragma once

#include <cstdint>

#include "host_device.h"

namespace dk::cuda::launch {

// Dims an elementwise or reduction geometry may have after collapsing: PyTorch's CUDA limit
// (MAX_DIMS). The geometries travel as kernel parameters (a reduction's is 816 bytes), read in
// loops over ndim, so the limit costs no registers.
constexpr int kMaxDims = 25;

// A reduction: output element o (outputs are contiguous, `num_outputs` of them) reduces the
// `reduce_numel` input elements at base(o) + offset(r), where base decomposes o over
// `kept_sizes` with `kept_strides` and offset decomposes r (row-major) over `reduced_sizes`
// with `reduced_strides`. Strides are in input elements.
struct ReduceGeometry {
  int32_t kept_ndim = 0;
  int32_t reduced_ndim = 0;
  int64_t num_outputs = 0;
  int64_t reduce_numel = 1;
  int64_t kept_sizes[kMaxDims] = {};
  int64_t kept_strides[kMaxDims] = {};
  int64_t reduced_sizes[kMaxDims] = {};
  int64_t reduced_strides[kMaxDims] = {};
};

// Threads per block of every reduction.
constexpr int kReduceBlockThreads = 256;
// The widest vector load, in bytes.
constexpr int kMaxVectorBytes = 16;
// Most elements one thread adds in one pass (Note [CUDA reduction plans]).
constexpr int64_t kMaxElementsPerThread = int64_t(1) << 16;
// The grid's second dimension, which counts splits, stops at 65535 (CUDA's limit).
constexpr int64_t kMaxSplits = 65535;

struct ReducePlan {
  ReduceGeometry g;  // collapsed; outputs still numbered as before collapsing
  // Lanes on the reduction (true) or on the outputs (false).
  bool lanes_on_reduction = true;
  // Powers of two; their product is the block's thread count.
  int32_t threads_per_output = 1;
  int32_t outputs_per_block = 1;
  // Elements per load: 1, or min(max_vector, kMaxVectorBytes / element size) when each output's
  // elements are one contiguous, aligned run (then reduced_ndim == 1 with stride 1, and
  // reduce_numel % vector == 0).
  int32_t vector = 1;
  // Blocks sharing each output (grid.y); > 1 means partial results and a second pass.
  int32_t splits = 1;
  int64_t blocks = 1;  // grid.x: ceil(num_outputs / outputs_per_block)
};

struct ReducePlanOptions {
  int element_size = 4;      // bytes per input element
  uint64_t address = 0;      // the input's data pointer: vector loads need it aligned
  int num_sms = 1;           // the device's multiprocessors: how many blocks fill it
  bool reorder_reduced = false;  // the reduction's result does not depend on its order (sum)
  bool allow_split = true;   // false for a second pass
  int max_vector = 8;        // the widest vector load, in elements
};

// The plan for `g` (Note [CUDA reduction plans]); g.num_outputs > 0.
ReducePlan planReduce(const ReduceGeometry& g, const ReducePlanOptions& options);
// The workspace a split plan's partial results take: 8 bytes per partial value (the widest
// accumulate type), and 8 more for its index when `with_indices` (max, min, argmax, argmin).
int64_t reduceWorkspaceBytes(const ReducePlan& plan, bool with_indices);
// The second pass of a split plan: num_outputs outputs, each combining plan.splits partials laid
// out [splits, num_outputs] in the workspace; planned without splitting or vector loads.
ReduceGeometry secondPassGeometry(const ReducePlan& plan);
ReducePlan planSecondPass(const ReducePlan& plan);

// ---------------------------------------------------------------- followed by the kernel

DK_HOST_DEVICE inline int32_t blockThreads(const ReducePlan& p) { return p.threads_per_output * p.outputs_per_block; }

// Thread t of a block works on output `outputLane` of the block's outputs, in reduction lane
// `reductionLane`; the two are neighbours in t on the side the plan puts its lanes on.
DK_HOST_DEVICE inline int32_t outputLane(const ReducePlan& p, int32_t t) {
  return p.lanes_on_reduction ? t / p.threads_per_output : t % p.outputs_per_block;
}
DK_HOST_DEVICE inline int32_t reductionLane(const ReducePlan& p, int32_t t) {
  return p.lanes_on_reduction ? t % p.threads_per_output : t / p.outputs_per_block;
}
// The thread index holding (output lane, reduction lane): outputLane and reductionLane inverted.
DK_HOST_DEVICE inline int32_t threadOf(const ReducePlan& p, int32_t output_lane, int32_t reduction_lane) {
  return p.lanes_on_reduction ? output_lane * p.threads_per_output + reduction_lane
                              : reduction_lane * p.outputs_per_block + output_lane;
}

// Vector loads per output (each `vector` elements).
DK_HOST_DEVICE inline int64_t vectorsPerOutput(const ReducePlan& p) { return p.g.reduce_numel / p.vector; }
// Reduction lane `lane` of split `split` loads vectors first, first + step, ... below vectorsPerOutput.
DK_HOST_DEVICE inline int64_t firstVector(const ReducePlan& p, int64_t split, int32_t lane) {
  return split * p.threads_per_output + lane;
}
DK_HOST_DEVICE inline int64_t vectorStep(const ReducePlan& p) {
  return static_cast<int64_t>(p.splits) * p.threads_per_output;
}

// The offset of element `index`, counted row-major over `ndim` dims of `sizes`, at `strides`.
DK_HOST_DEVICE inline int64_t offsetOf(int32_t ndim, const int64_t* sizes, const int64_t* strides, int64_t index) {
  int64_t offset = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    offset += (index % sizes[d]) * strides[d];
    index /= sizes[d];
  }
  return offset;
}
// The input offset of output o's first element, and of reduced element r from there.
DK_HOST_DEVICE inline int64_t keptOffset(const ReduceGeometry& g, int64_t o) {
  return offsetOf(g.kept_ndim, g.kept_sizes, g.kept_strides, o);
}
DK_HOST_DEVICE inline int64_t reducedOffset(const ReduceGeometry& g, int64_t r) {
  return offsetOf(g.reduced_ndim, g.reduced_sizes, g.reduced_strides, r);
}

}  // namespace dk::cuda::launch
