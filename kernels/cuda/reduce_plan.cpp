// The host half of Note [CUDA reduction plans] (kernels/cuda/reduce_plan.h): collapsing a
// reduction's dims and choosing its threads, vector width and splits. Compiled into the CUDA
// backend, and into tests/test_cuda_plans.cpp on every build.
#include "reduce_plan.h"

#include <algorithm>
#include <cstdlib>

namespace dk::cuda::launch {

namespace {

// A list of (size, stride) dims, at most kMaxDims of them.
struct Dims {
  int32_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

// Drops size-1 dims (they change no offset), optionally orders the rest by stride, largest
// first (stable), then merges each dim into the previous one when the previous one's stride is
// exactly a whole run of it: row-major numbering over the merged dims is unchanged.
Dims collapse(int32_t ndim, const int64_t* sizes, const int64_t* strides, bool order_by_stride) {
  Dims kept;
  for (int32_t d = 0; d < ndim; ++d) {
    if (sizes[d] == 1) continue;
    kept.sizes[kept.ndim] = sizes[d];
    kept.strides[kept.ndim++] = strides[d];
  }
  if (order_by_stride) {
    for (int32_t i = 1; i < kept.ndim; ++i) {  // insertion sort: stable, at most 25 dims
      for (int32_t j = i; j > 0 && std::llabs(kept.strides[j - 1]) < std::llabs(kept.strides[j]); --j) {
        std::swap(kept.sizes[j - 1], kept.sizes[j]);
        std::swap(kept.strides[j - 1], kept.strides[j]);
      }
    }
  }
  Dims merged;
  for (int32_t d = 0; d < kept.ndim; ++d) {
    if (merged.ndim > 0 && merged.strides[merged.ndim - 1] == kept.strides[d] * kept.sizes[d]) {
      merged.sizes[merged.ndim - 1] *= kept.sizes[d];
      merged.strides[merged.ndim - 1] = kept.strides[d];
    } else {
      merged.sizes[merged.ndim] = kept.sizes[d];
      merged.strides[merged.ndim++] = kept.strides[d];
    }
  }
  return merged;
}

// The smallest power of two >= n, at most `cap` (itself a power of two).
int32_t powerOfTwoAtLeast(int64_t n, int32_t cap) {
  return static_cast<int32_t>(std::min<int64_t>(nextPowerOfTwo(n), cap));
}

// Elements one thread should at least load before more threads (or blocks) are worth adding.
constexpr int64_t kMinLoadsPerThread = 4;
constexpr int64_t kMinElementsPerSplitThread = 32;
// Blocks per SM that keep it streaming (256-thread blocks: half of an SM's 2048 threads).
constexpr int64_t kBlocksPerSm = 4;

}  // namespace

ReducePlan planReduce(const ReduceGeometry& g, const ReducePlanOptions& options) {
  ReducePlan p;
  Dims kept = collapse(g.kept_ndim, g.kept_sizes, g.kept_strides, /*order_by_stride=*/false);
  Dims reduced = collapse(g.reduced_ndim, g.reduced_sizes, g.reduced_strides, options.reorder_reduced);
  p.g.num_outputs = g.num_outputs;
  p.g.reduce_numel = g.reduce_numel;
  p.g.kept_ndim = kept.ndim;
  p.g.reduced_ndim = reduced.ndim;
  std::copy(kept.sizes, kept.sizes + kept.ndim, p.g.kept_sizes);
  std::copy(kept.strides, kept.strides + kept.ndim, p.g.kept_strides);
  std::copy(reduced.sizes, reduced.sizes + reduced.ndim, p.g.reduced_sizes);
  std::copy(reduced.strides, reduced.strides + reduced.ndim, p.g.reduced_strides);

  // Which side is contiguous: lanes go where the innermost stride is smaller.
  if (kept.ndim > 0 && reduced.ndim > 0) {
    p.lanes_on_reduction = std::llabs(reduced.strides[reduced.ndim - 1]) <= std::llabs(kept.strides[kept.ndim - 1]);
  } else {
    p.lanes_on_reduction = reduced.ndim > 0;  // nothing to reduce: a thread per output
  }

  // Vector loads: each output's elements one contiguous run, every run starting aligned.
  if (p.lanes_on_reduction && reduced.ndim == 1 && reduced.strides[0] == 1) {
    // The widest load or none: the kernel is built for those two widths only.
    int32_t width = std::min<int32_t>(options.max_vector, kMaxVectorBytes / std::max(options.element_size, 1));
    bool fits = width > 1 && g.reduce_numel % width == 0 &&
                options.address % (static_cast<uint64_t>(width) * options.element_size) == 0;
    for (int32_t d = 0; fits && d < kept.ndim; ++d) fits = kept.strides[d] % width == 0;
    p.vector = fits ? width : 1;
  }

  const int64_t loads = g.reduce_numel / p.vector;  // per output
  if (p.lanes_on_reduction) {
    p.threads_per_output = powerOfTwoAtLeast(ceilDiv(loads, kMinLoadsPerThread), kReduceBlockThreads);
    p.outputs_per_block = powerOfTwoAtLeast(g.num_outputs, kReduceBlockThreads / p.threads_per_output);
  } else {
    // A warp's worth of outputs, then as many reduction lanes as the rows need, then more
    // outputs for the threads left over.
    p.outputs_per_block = powerOfTwoAtLeast(g.num_outputs, 32);
    p.threads_per_output = powerOfTwoAtLeast(ceilDiv(loads, kMinLoadsPerThread), kReduceBlockThreads / p.outputs_per_block);
    p.outputs_per_block = powerOfTwoAtLeast(g.num_outputs, kReduceBlockThreads / p.threads_per_output);
  }
  p.blocks = ceilDiv(g.num_outputs, p.outputs_per_block);

  if (options.allow_split) {
    int64_t target_blocks = kBlocksPerSm * std::max(options.num_sms, 1);
    int64_t wanted = p.blocks < target_blocks ? ceilDiv(target_blocks, p.blocks) : 1;
    int64_t worth = std::max<int64_t>(1, loads / (p.threads_per_output * kMinElementsPerSplitThread));
    int64_t needed = ceilDiv(g.reduce_numel, p.threads_per_output * kMaxElementsPerThread);
    p.splits = static_cast<int32_t>(std::min(kMaxSplits, std::max(std::min(wanted, worth), needed)));
    if (p.splits < 1) p.splits = 1;
  }
  return p;
}

int64_t reduceWorkspaceBytes(const ReducePlan& plan, bool with_indices) {
  if (plan.splits <= 1) return 0;
  return static_cast<int64_t>(plan.splits) * plan.g.num_outputs * (with_indices ? 16 : 8);
}

ReducePlan planSecondPass(const ReducePlan& plan) {
  ReducePlanOptions options;
  options.element_size = 8;  // the workspace's slots (reduceWorkspaceBytes)
  options.allow_split = false;
  options.max_vector = 1;
  return planReduce(secondPassGeometry(plan), options);
}

ReduceGeometry secondPassGeometry(const ReducePlan& plan) {
  ReduceGeometry g;
  g.num_outputs = plan.g.num_outputs;
  g.reduce_numel = plan.splits;
  g.kept_ndim = 1;
  g.kept_sizes[0] = plan.g.num_outputs;
  g.kept_strides[0] = 1;
  g.reduced_ndim = 1;
  g.reduced_sizes[0] = plan.splits;
  g.reduced_strides[0] = plan.g.num_outputs;
  return g;
}

}  // namespace dk::cuda::launch
