// Device code of the reductions: sum, mean, max and min with indices, argmax, argmin
// (kernels/cuda/launch.h). One kernel follows a ReducePlan (Note [CUDA reduction plans] in
// reduce_plan.h): each thread folds its share of an output's elements into four independent
// accumulators, the block combines its reduction lanes in shared memory, and a split plan's
// partial results are combined by a second launch of the same kernel. Accumulation runs in the
// dtype's accumulate type (kernel_helpers.h).
#include "kernel_helpers.h"

namespace dk::cuda::launch {

namespace {

using namespace device;

// A candidate maximum: its value and index; index -1 means "none yet".
template <class A>
struct Candidate {
  A value;
  int64_t index;
};

// Whether (v, vi) beats (c, ci): NaN beats numbers, larger (kMax) or smaller beats the other,
// and among equals (NaNs included) the lower index wins. A strict total order, so candidates
// combine in any order to the same winner.
template <bool kMax, class A>
__device__ __forceinline__ bool beats(A v, int64_t vi, A c, int64_t ci) {
  if (ci < 0) return vi >= 0;
  if (vi < 0) return false;
  bool v_nan = isNan(v), c_nan = isNan(c);
  if (v_nan || c_nan) return v_nan && (!c_nan || vi < ci);
  if (kMax ? v > c : v < c) return true;
  return v == c && vi < ci;
}

// What a reduction folds: State, its identity, one element (value and index) as a State, and
// the combination of two States.
template <class A>
struct SumReducer {
  using Acc = A;
  using State = A;
  static constexpr bool kHasIndex = false;
  __device__ static State identity() { return A(0); }
  __device__ static State element(A value, int64_t /*index*/) { return value; }
  __device__ static State combine(State a, State b) { return A(a + b); }
  __device__ static A value(State s) { return s; }
  __device__ static int64_t index(State) { return -1; }
};

template <class A, bool kMax>
struct ExtremumReducer {
  using Acc = A;
  using State = Candidate<A>;
  static constexpr bool kHasIndex = true;
  __device__ static State identity() { return State{A(0), -1}; }
  __device__ static State element(A value, int64_t index) { return State{value, index}; }
  __device__ static State combine(State a, State b) { return beats<kMax>(b.value, b.index, a.value, a.index) ? b : a; }
  __device__ static A value(State s) { return s.value; }
  __device__ static int64_t index(State s) { return s.index; }
};

// Where a launch writes: the final outputs (out: values, null for argmax and argmin; indices:
// null for sums), or, for the first pass of a split plan, the partial results laid out
// [splits, num_outputs] (partial_indices null for sums).
template <class Out, class A>
struct ReduceTargets {
  Out* out;
  int64_t* indices;
  A* partial_values;
  int64_t* partial_indices;
  bool mean;            // divide the final value by mean_count (0 / 0 is NaN, as for an empty mean)
  int64_t mean_count;
};

// One output's share for this thread: loads firstVector, + vectorStep, ... (V elements each).
// A first pass reads In = the dtype, each element's index its position r; the second pass reads
// partial results (In = the accumulate type), their indices from `in_indices`.
template <class R, class In, int V>
__device__ __forceinline__ typename R::State foldThreadShare(const ReducePlan& p, const In* in,
                                                             const int64_t* in_indices, int64_t base, int32_t lane) {
  using State = typename R::State;
  using A = typename R::Acc;
  const int64_t loads = vectorsPerOutput(p);
  const int64_t step = vectorStep(p);
  auto loadOne = [&](int64_t v) -> State {
    if constexpr (V == 1) {
      // One reduced dim (most plans, after collapsing) needs no division to find the offset.
      int64_t offset = base + (p.g.reduced_ndim == 1 ? v * p.g.reduced_strides[0] : reducedOffset(p.g, v));
      return R::element(convert<A>(in[offset]), in_indices != nullptr ? in_indices[offset] : v);
    } else {
      // Contiguous, aligned runs (the plan checked): element r of the output at base + r.
      Pack<In, V> pack = *reinterpret_cast<const Pack<In, V>*>(in + base + v * V);
      State s = R::element(convert<A>(pack.v[0]), v * V);
#pragma unroll
      for (int j = 1; j < V; ++j) s = R::combine(s, R::element(convert<A>(pack.v[j]), v * V + j));
      return s;
    }
  };
  // Four accumulators: four loads in flight per thread, and each float partial sum a quarter
  // as long (Note [CUDA reduction plans]).
  State acc[4] = {R::identity(), R::identity(), R::identity(), R::identity()};
  int64_t v = firstVector(p, blockIdx.y, lane);
  for (; v + 3 * step < loads; v += 4 * step) {
#pragma unroll
    for (int k = 0; k < 4; ++k) acc[k] = R::combine(acc[k], loadOne(v + k * step));
  }
  for (; v < loads; v += step) acc[0] = R::combine(acc[0], loadOne(v));
  return R::combine(R::combine(acc[0], acc[1]), R::combine(acc[2], acc[3]));
}

template <class R, class In, class Out, int V>
__global__ void __launch_bounds__(kReduceBlockThreads)
    reduceKernel(ReducePlan p, const In* in, const int64_t* in_indices, ReduceTargets<Out, typename R::Acc> to) {
  using State = typename R::State;
  using A = typename R::Acc;
  __shared__ State shared[kReduceBlockThreads];
  const int32_t t = static_cast<int32_t>(threadIdx.x);
  const int32_t output_lane = outputLane(p, t);
  const int32_t lane = reductionLane(p, t);
  const int64_t o = static_cast<int64_t>(blockIdx.x) * p.outputs_per_block + output_lane;
  const bool active = o < p.g.num_outputs;  // the last block may have spare output lanes

  State acc = R::identity();
  if (active) acc = foldThreadShare<R, In, V>(p, in, in_indices, keptOffset(p.g, o), lane);
  // Tree over the reduction lanes of each output (every thread reaches every barrier).
  shared[t] = acc;
  __syncthreads();
  for (int32_t width = p.threads_per_output / 2; width > 0; width /= 2) {
    if (lane < width) shared[t] = R::combine(shared[t], shared[threadOf(p, output_lane, lane + width)]);
    __syncthreads();
  }
  if (!active || lane != 0) return;
  State result = shared[t];
  if (p.splits > 1) {
    int64_t slot = static_cast<int64_t>(blockIdx.y) * p.g.num_outputs + o;
    to.partial_values[slot] = R::value(result);
    if constexpr (R::kHasIndex) to.partial_indices[slot] = R::index(result);
    return;
  }
  A value = R::value(result);
  if constexpr (std::is_floating_point_v<A>) {
    if (to.mean) value = value / static_cast<A>(to.mean_count);
  }
  if (to.out != nullptr) store(to.out + o, value);
  if constexpr (R::kHasIndex) to.indices[o] = R::index(result);
}

template <class R, class In, class Out, int V>
void launchPlan(const ReducePlan& p, const In* in, const int64_t* in_indices, ReduceTargets<Out, typename R::Acc> to) {
  dim3 grid(static_cast<unsigned>(p.blocks), static_cast<unsigned>(p.splits));
  reduceKernel<R, In, Out, V><<<grid, static_cast<unsigned>(blockThreads(p))>>>(p, in, in_indices, to);
  DK_CUDA_CHECK_LAUNCH("reduce");
}

// Both passes of `plan` for reducer R over T elements.
template <class R, class T>
void run(const ReducePlan& plan, const ReducePlan& second, T* out, int64_t* indices, const T* in, void* workspace,
         bool mean = false) {
  using A = typename R::Acc;
  constexpr int kWidest = kMaxVectorBytes / sizeof(T) < 8 ? static_cast<int>(kMaxVectorBytes / sizeof(T)) : 8;
  ReduceTargets<T, A> final_targets{out, indices, nullptr, nullptr, mean, plan.g.reduce_numel};
  ReduceTargets<T, A> first_targets = final_targets;
  if (plan.splits > 1) {
    // reduceWorkspaceBytes: 8 bytes per partial value, then 8 per partial index.
    first_targets.partial_values = static_cast<A*>(workspace);
    first_targets.partial_indices = reinterpret_cast<int64_t*>(static_cast<char*>(workspace) +
                                                               8 * static_cast<int64_t>(plan.splits) * plan.g.num_outputs);
  }
  if (plan.vector == 1) {
    launchPlan<R, T, T, 1>(plan, in, nullptr, first_targets);
  } else if constexpr (kWidest > 1) {
    launchPlan<R, T, T, kWidest>(plan, in, nullptr, first_targets);
  }
  if (plan.splits > 1) {
    launchPlan<R, A, T, 1>(second, first_targets.partial_values, R::kHasIndex ? first_targets.partial_indices : nullptr,
                           final_targets);
  }
}

}  // namespace

void reduce(ReduceOp op, Dtype dtype, const ReducePlan& plan, const ReducePlan& second, void* out, int64_t* indices,
            const void* in, void* workspace) {
  if (plan.g.num_outputs == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    T* typed_out = static_cast<T*>(out);
    const T* typed_in = static_cast<const T*>(in);
    switch (op) {
      case ReduceOp::Sum:
        run<SumReducer<A>>(plan, second, typed_out, nullptr, typed_in, workspace);
        break;
      case ReduceOp::Mean:
        run<SumReducer<A>>(plan, second, typed_out, nullptr, typed_in, workspace, /*mean=*/true);
        break;
      case ReduceOp::Max:
      case ReduceOp::ArgMax:  // indices only: no values written
        run<ExtremumReducer<A, true>>(plan, second, op == ReduceOp::Max ? typed_out : nullptr, indices, typed_in,
                                      workspace);
        break;
      case ReduceOp::Min:
      case ReduceOp::ArgMin:
        run<ExtremumReducer<A, false>>(plan, second, op == ReduceOp::Min ? typed_out : nullptr, indices, typed_in,
                                       workspace);
        break;
    }
  });
}

}  // namespace dk::cuda::launch
