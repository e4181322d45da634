// How the CUDA reductions spread over blocks and threads (Note [CUDA reduction plans] in
// kernels/cuda/reduce_plan.h), and the order elementwise loops walk memory in (Note [CUDA
// elementwise loops]), checked on the CPU: no GPU needed. The kernel assigns work only
// through reduce_plan.h's inline functions; replaying them here for every block, split and
// thread must visit each input element of each output exactly once, in both passes, with the
// index max and argmax report, and the plans for the shapes must fill the device and
// load memory in order.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "cuda/loop_geometry.h"
#include "cuda/reduce_plan.h"

namespace {

using dk::cuda::launch::ReduceGeometry;
using dk::cuda::launch::ReducePlan;
using dk::cuda::launch::ReducePlanOptions;
namespace L = dk::cuda::launch;

// A strided input: sizes and strides per dim, and which dims are reduced.
struct Input {
  std::vector<int64_t> sizes, strides;
  std::vector<bool> reduced;
};

ReduceGeometry geometryOf(const Input& in) {
  ReduceGeometry g;
  g.num_outputs = 1;
  g.reduce_numel = 1;
  for (size_t d = 0; d < in.sizes.size(); ++d) {
    if (in.reduced[d]) {
      g.reduced_sizes[g.reduced_ndim] = in.sizes[d];
      g.reduced_strides[g.reduced_ndim++] = in.strides[d];
      g.reduce_numel *= in.sizes[d];
    } else {
      g.kept_sizes[g.kept_ndim] = in.sizes[d];
      g.kept_strides[g.kept_ndim++] = in.strides[d];
      g.num_outputs *= in.sizes[d];
    }
  }
  return g;
}

// One element as the kernel sees it: output, input offset, and the index max would report.
struct Visit {
  int64_t output, offset, index;
  bool operator<(const Visit& o) const {
    return std::tie(output, offset, index) < std::tie(o.output, o.offset, o.index);
  }
  bool operator==(const Visit& o) const { return output == o.output && offset == o.offset && index == o.index; }
};

// Replays reduceKernel's assignment (reduce.cu: foldThreadShare and the output lanes) for
// every block, split and thread of p. `split_of` receives, per visit, the split that loaded it.
std::vector<Visit> replay(const ReducePlan& p, std::vector<int64_t>* split_of = nullptr) {
  REQUIRE(L::blockThreads(p) <= L::kReduceBlockThreads);
  REQUIRE((p.threads_per_output & (p.threads_per_output - 1)) == 0);
  REQUIRE((p.outputs_per_block & (p.outputs_per_block - 1)) == 0);
  REQUIRE(p.splits >= 1);
  REQUIRE(p.splits <= L::kMaxSplits);
  std::vector<Visit> visits;
  bool lanes_invert = true;  // threadOf undoes outputLane and reductionLane
  for (int64_t block = 0; block < p.blocks; ++block) {
    for (int64_t split = 0; split < p.splits; ++split) {
      for (int32_t t = 0; t < L::blockThreads(p); ++t) {
        int32_t output_lane = L::outputLane(p, t), lane = L::reductionLane(p, t);
        lanes_invert = lanes_invert && L::threadOf(p, output_lane, lane) == t;
        int64_t o = block * p.outputs_per_block + output_lane;
        if (o >= p.g.num_outputs) continue;
        int64_t base = L::keptOffset(p.g, o);
        for (int64_t v = L::firstVector(p, split, lane); v < L::vectorsPerOutput(p); v += L::vectorStep(p)) {
          for (int32_t j = 0; j < p.vector; ++j) {
            if (p.vector == 1) {
              visits.push_back({o, base + L::reducedOffset(p.g, v), v});
            } else {
              visits.push_back({o, base + v * p.vector + j, v * p.vector + j});
            }
            if (split_of) split_of->push_back(split);
          }
        }
      }
    }
  }
  CHECK(lanes_invert);
  return visits;
}

// What every output must visit: each logical reduced element once, indexed row-major.
std::vector<Visit> expected(const ReduceGeometry& g) {
  std::vector<Visit> visits;
  for (int64_t o = 0; o < g.num_outputs; ++o) {
    for (int64_t r = 0; r < g.reduce_numel; ++r) {
      visits.push_back({o, L::keptOffset(g, o) + L::reducedOffset(g, r), r});
    }
  }
  return visits;
}

// Checks both passes of g's plan: the first visits what `expected` lists (indices too unless
// the plan may reorder), and a split plan's second pass visits each output's partials once.
ReducePlan checkPlan(const ReduceGeometry& g, const ReducePlanOptions& options) {
  ReducePlan p = L::planReduce(g, options);
  CHECK(p.g.num_outputs == g.num_outputs);
  CHECK(p.g.reduce_numel == g.reduce_numel);
  std::vector<int64_t> split_of;
  std::vector<Visit> got = replay(p, &split_of);
  std::vector<Visit> want = expected(g);
  if (options.reorder_reduced) {
    for (Visit& v : got) v.index = 0;
    for (Visit& v : want) v.index = 0;
  }
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  CHECK(got == want);
  if (p.splits > 1) {
    ReducePlan second = L::planSecondPass(p);
    CHECK(second.splits == 1);
    std::vector<Visit> partials = replay(second);
    std::vector<Visit> want_partials;
    for (int64_t o = 0; o < g.num_outputs; ++o) {
      for (int64_t s = 0; s < p.splits; ++s) want_partials.push_back({o, s * g.num_outputs + o, s});
    }
    std::sort(partials.begin(), partials.end());
    CHECK(partials == want_partials);
    CHECK(L::reduceWorkspaceBytes(p, true) == 16 * p.splits * g.num_outputs);
  }
  return p;
}

// Dense row-major strides for `sizes`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

// The most elements one thread of plan p adds in one pass.
int64_t elementsPerThread(const ReducePlan& p) {
  int64_t loads = L::vectorsPerOutput(p);
  return (loads + L::vectorStep(p) - 1) / L::vectorStep(p) * p.vector;
}

ReduceGeometry shapeGeometry(std::vector<int64_t> sizes, std::vector<bool> reduced) {
  Input in{sizes, contiguousStrides(sizes), std::move(reduced)};
  return geometryOf(in);
}

ReducePlanOptions onH200(bool sum) {
  ReducePlanOptions options;
  options.element_size = 4;
  options.address = 256;  // allocations are 256-byte aligned
  options.num_sms = 132;
  options.reorder_reduced = sum;
  return options;
}

}  // namespace

TEST_CASE("x.sum() over 1e9 floats spreads over every SM and loads 16 bytes at a time") {
  ReducePlan p = L::planReduce(shapeGeometry({1'000'000'000}, {true}), onH200(true));
  CHECK(p.lanes_on_reduction);
  CHECK(p.vector == 4);
  CHECK(p.threads_per_output == L::kReduceBlockThreads);
  CHECK(p.blocks * p.splits >= 132);
  CHECK(elementsPerThread(p) <= L::kMaxElementsPerThread);
}

TEST_CASE("a float sum of 5e9 ones never asks one thread to add 2^24 of them") {
  // Issue 24, item 2: a thread adding serially in float stops counting at 2^24; the plan caps
  // each thread's share, and each share is split over four accumulators.
  for (int sms : {1, 2, 132}) {
    ReducePlanOptions options = onH200(true);
    options.num_sms = sms;
    ReducePlan p = L::planReduce(shapeGeometry({5'000'000'000}, {true}), options);
    CHECK(elementsPerThread(p) <= L::kMaxElementsPerThread);
    CHECK(elementsPerThread(p) / 4 < (int64_t(1) << 24));
  }
  // One of many outputs, also long: [3, 2^33] summed along its rows.
  ReducePlan rows = L::planReduce(shapeGeometry({3, int64_t(1) << 33}, {false, true}), onH200(true));
  CHECK(elementsPerThread(rows) <= L::kMaxElementsPerThread);
}

TEST_CASE("sum(x, 0) on a contiguous [65536, 1024] puts a warp on 32 neighbouring outputs") {
  ReducePlan p = L::planReduce(shapeGeometry({65536, 1024}, {true, false}), onH200(true));
  CHECK_FALSE(p.lanes_on_reduction);
  CHECK(p.outputs_per_block >= 32);  // a warp's loads: 32 consecutive floats of one row
  CHECK(p.g.kept_strides[p.g.kept_ndim - 1] == 1);
  CHECK(p.blocks * p.splits >= 132);
}

TEST_CASE("sum(x, -1) on [1e7, 8] keeps every thread busy on contiguous rows") {
  ReducePlan p = L::planReduce(shapeGeometry({10'000'000, 8}, {false, true}), onH200(true));
  CHECK(p.lanes_on_reduction);
  CHECK(p.threads_per_output * p.vector <= 8);  // no lane without an element
  CHECK(L::blockThreads(p) == L::kReduceBlockThreads);
  CHECK(p.splits == 1);
  CHECK(p.blocks >= 132);
}

TEST_CASE("collapsing: a transposed sum reads in memory order, max keeps row-major indices") {
  // x: [512, 256] stored transposed (strides 1, 512); sum over both dims is one contiguous run.
  ReduceGeometry g;
  g.num_outputs = 1;
  g.reduce_numel = 512 * 256;
  g.reduced_ndim = 2;
  g.reduced_sizes[0] = 512;
  g.reduced_strides[0] = 1;
  g.reduced_sizes[1] = 256;
  g.reduced_strides[1] = 512;
  ReducePlan sum = checkPlan(g, onH200(true));
  CHECK(sum.g.reduced_ndim == 1);
  CHECK(sum.vector == 4);
  ReducePlan max = checkPlan(g, onH200(false));
  CHECK(max.g.reduced_ndim == 2);  // argmax's index counts over the logical dims
}

TEST_CASE("vector loads only on aligned, whole runs") {
  ReducePlanOptions options = onH200(true);
  CHECK(L::planReduce(shapeGeometry({64, 12}, {false, true}), options).vector == 4);
  CHECK(L::planReduce(shapeGeometry({64, 10}, {false, true}), options).vector == 1);  // rows start unaligned
  options.address = 260;
  CHECK(L::planReduce(shapeGeometry({64, 12}, {false, true}), options).vector == 1);
  options.address = 256;
  options.element_size = 2;
  CHECK(L::planReduce(shapeGeometry({64, 16}, {false, true}), options).vector == 8);
  options.element_size = 8;
  CHECK(L::planReduce(shapeGeometry({64, 16}, {false, true}), options).vector == 2);
}

TEST_CASE("every element once: random layouts, masks and sizes, both passes") {
  std::mt19937_64 rng(24);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int checked = 0, split = 0, outputs_side = 0, vectorized = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    int ndim = static_cast<int>(pick(0, 4));
    std::vector<int64_t> sizes;
    for (int d = 0; d < ndim; ++d) sizes.push_back(pick(0, 9) == 0 ? pick(0, 1) : pick(2, 7));
    // A few long dims, so that some plans split.
    if (ndim > 0 && pick(0, 3) == 0) sizes[static_cast<size_t>(pick(0, ndim - 1))] = pick(500, 5000);
    Input in{sizes, contiguousStrides(sizes), std::vector<bool>(sizes.size())};
    // Permute (a transposed or permuted view), slice (every other element), expand (stride 0).
    std::shuffle(in.strides.begin(), in.strides.end(), rng);
    for (size_t d = 0; d < sizes.size(); ++d) {
      in.reduced[d] = pick(0, 1) == 1;
      if (pick(0, 5) == 0) in.strides[d] *= 2;
      if (pick(0, 7) == 0) in.strides[d] = 0;
    }
    ReduceGeometry g = geometryOf(in);
    if (g.num_outputs == 0) continue;
    if (g.num_outputs * g.reduce_numel > 60'000) continue;
    ReducePlanOptions options;
    options.element_size = static_cast<int>(1 << pick(0, 3));
    options.address = static_cast<uint64_t>(pick(0, 1) == 0 ? 256 : 256 + options.element_size);
    options.num_sms = static_cast<int>(pick(1, 132));
    options.reorder_reduced = pick(0, 1) == 1;
    INFO("trial " << trial);
    ReducePlan p = checkPlan(g, options);
    ++checked;
    split += p.splits > 1;
    outputs_side += !p.lanes_on_reduction;
    vectorized += p.vector > 1;
  }
  // The trials reached every kind of plan.
  CHECK(checked > 500);
  CHECK(split > 10);
  CHECK(outputs_side > 10);
  CHECK(vectorized > 10);
}

TEST_CASE("empty reductions and single elements") {
  // sum over a size-0 dim: one output, nothing to add (the kernel writes 0, mean 0 / 0 = NaN).
  ReducePlan empty = checkPlan(shapeGeometry({4, 0}, {false, true}), onH200(true));
  CHECK(L::vectorsPerOutput(empty) == 0);
  CHECK(empty.splits == 1);
  // nothing reduced (a 0-dim input, or a size-1 dim): a thread per output.
  ReducePlan none = checkPlan(shapeGeometry({300, 1}, {false, true}), onH200(false));
  CHECK(none.threads_per_output == 1);
  CHECK(none.blocks == 2);
  checkPlan(shapeGeometry({}, {}), onH200(true));
}

// ---------------------------------------------------------------- elementwise loops

namespace {

using dk::cuda::launch::Geometry;

// Operand k's offsets of every element of the loop g, as IndexedOffsets computes them
// (kernel_helpers.h): element i decomposed row-major over g's sizes.
std::vector<std::vector<int64_t>> loopOffsets(const Geometry& g) {
  std::vector<std::vector<int64_t>> visits;
  for (int64_t i = 0; i < g.numel; ++i) {
    std::vector<int64_t> at(static_cast<size_t>(g.num_operands), 0);
    int64_t linear = i;
    for (int d = g.ndim - 1; d >= 0; --d) {
      int64_t index = linear % g.sizes[d];
      linear /= g.sizes[d];
      for (int k = 0; k < g.num_operands; ++k) at[static_cast<size_t>(k)] += index * g.strides[k][d];
    }
    visits.push_back(at);
  }
  return visits;
}

// The loop over `sizes` with each operand's strides (operand 0 the output).
Geometry loopOf(const std::vector<int64_t>& sizes, const std::vector<std::vector<int64_t>>& strides) {
  std::vector<const int64_t*> rows;
  for (const auto& row : strides) rows.push_back(row.data());
  Geometry g;
  int ndim = L::buildLoopGeometry(static_cast<int>(sizes.size()), sizes.data(), static_cast<int>(strides.size()),
                                  rows.data(), g);
  REQUIRE(ndim <= L::kMaxDims);
  REQUIRE(ndim == g.ndim);
  return g;
}

// The same tuples of offsets, in logical row-major order over the original dims.
std::vector<std::vector<int64_t>> logicalOffsets(const std::vector<int64_t>& sizes,
                                                 const std::vector<std::vector<int64_t>>& strides) {
  Geometry g;
  g.ndim = static_cast<int32_t>(sizes.size());
  g.num_operands = static_cast<int32_t>(strides.size());
  g.numel = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    g.sizes[d] = sizes[d];
    g.numel *= sizes[d];
    for (size_t k = 0; k < strides.size(); ++k) g.strides[k][d] = strides[k][d];
  }
  return loopOffsets(g);
}

}  // namespace

TEST_CASE("relu(x.t()) on a dense x walks memory in order: one contiguous dim") {
  // out takes the input's layout: both [8192, 8192] with strides (1, 8192).
  Geometry g = loopOf({8192, 8192}, {{1, 8192}, {1, 8192}});
  CHECK(g.ndim == 1);
  CHECK(g.sizes[0] == 8192 * 8192);
  CHECK(g.strides[0][0] == 1);
  CHECK(g.strides[1][0] == 1);
}

TEST_CASE("the output's memory order decides, broadcast inputs follow") {
  // out [64, 32] transposed in memory (strides 1, 64) = a (same layout) + bias [32] broadcast.
  Geometry g = loopOf({64, 32}, {{1, 64}, {1, 64}, {0, 1}});
  REQUIRE(g.ndim == 2);
  CHECK(g.sizes[1] == 64);  // the innermost dim is the output's stride-1 dim
  CHECK(g.strides[0][1] == 1);
  CHECK(g.strides[2][1] == 0);
  // An input broadcast along a dim (stride 0) keeps the output's order and that dim apart.
  Geometry row_major = loopOf({64, 32}, {{32, 1}, {0, 1}, {1, 64}});
  REQUIRE(row_major.ndim == 2);
  CHECK(row_major.sizes[1] == 32);
  CHECK(row_major.strides[0][1] == 1);
  // Size-1 dims vanish; 26 dims that cannot merge are reported, not truncated.
  std::vector<int64_t> sizes(26, 2), strides(26);
  for (size_t d = 0; d < 26; ++d) strides[d] = int64_t(1) << (2 * (25 - d));  // gaps between dims
  std::vector<const int64_t*> rows = {strides.data()};
  Geometry unused;
  CHECK(L::buildLoopGeometry(26, sizes.data(), 1, rows.data(), unused) == 26);
}

TEST_CASE("every loop visits the same offsets as the logical loop, once each") {
  std::mt19937_64 rng(8);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int reordered = 0;
  for (int trial = 0; trial < 500; ++trial) {
    int ndim = static_cast<int>(pick(0, 4));
    int operands = static_cast<int>(pick(1, 4));
    std::vector<int64_t> sizes;
    for (int d = 0; d < ndim; ++d) sizes.push_back(pick(0, 8) == 0 ? 1 : pick(1, 6));
    std::vector<std::vector<int64_t>> strides;
    for (int k = 0; k < operands; ++k) {
      // A dense layout in a random dim order, sometimes sliced or broadcast along a dim.
      std::vector<int64_t> order(static_cast<size_t>(ndim));
      for (int d = 0; d < ndim; ++d) order[static_cast<size_t>(d)] = d;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<int64_t> row(static_cast<size_t>(ndim));
      int64_t stride = 1;
      for (int64_t d : order) {
        row[static_cast<size_t>(d)] = stride;
        stride *= sizes[static_cast<size_t>(d)] * (pick(0, 5) == 0 ? 2 : 1);
      }
      if (k > 0 && ndim > 0 && pick(0, 3) == 0) row[static_cast<size_t>(pick(0, ndim - 1))] = 0;
      strides.push_back(row);
    }
    Geometry g = loopOf(sizes, strides);
    auto got = loopOffsets(g), want = logicalOffsets(sizes, strides);
    reordered += got != want;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    INFO("trial " << trial);
    REQUIRE(got == want);
  }
  CHECK(reordered > 50);  // the trials did reorder loops
}
