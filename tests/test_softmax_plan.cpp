// How the CUDA softmax spreads over blocks and threads (Note [CUDA softmax plans] in
// kernels/cuda/softmax_plan.h), checked on the CPU: no GPU needed. The plans for the issue's
// shapes must use the layout meant for them and keep threads busy; every plan must stay within
// CUDA's launch limits. The kernels assign work only through softmax_plan.h's inline functions
// and compute only through its softmax_math; replaying each kernel's loops here with those same
// functions, for every block and thread, must write each output exactly once, with the values
// of the three-pass form (max, sum of exp(x - max), outputs), NaN and infinities included.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda/softmax_plan.h"

namespace {

namespace L = dk::cuda::launch;
namespace M = dk::cuda::launch::softmax_math;
using L::SoftmaxPlan;
using L::SoftmaxStrategy;

constexpr int kH100Sms = 132;

// ---------------------------------------------------------------- plan invariants

void checkLimits(const SoftmaxPlan& p, bool allow_split) {
  INFO("outer " << p.outer << " dim " << p.dim_size << " inner " << p.inner);
  if (p.outer == 0 || p.dim_size == 0 || p.inner == 0) {
    CHECK(p.strategy == SoftmaxStrategy::Empty);
    CHECK(L::planWorkspaceBytes(p, 4) == 0);
    return;
  }
  REQUIRE(p.strategy != SoftmaxStrategy::Empty);
  const int64_t threads = int64_t(p.block_x) * p.block_y;
  CHECK(threads <= 1024);
  CHECK(threads % 32 == 0);
  CHECK(p.block_x % 32 == 0);
  CHECK(p.grid_x >= 1);
  CHECK(p.grid_x <= 2147483647);
  CHECK(p.grid_y >= 1);
  CHECK(p.grid_y <= 65535);
  // Chunks: non-empty, in order, covering [0, dim_size).
  CHECK(p.chunks >= 1);
  CHECK(L::chunkBegin(p, 0) == 0);
  CHECK(L::chunkEnd(p, p.chunks - 1) == p.dim_size);
  CHECK(L::chunkBegin(p, p.chunks - 1) < p.dim_size);
  if (!allow_split) CHECK(p.chunks == 1);
  CHECK(L::planWorkspaceBytes(p, 4) == (p.chunks > 1 ? L::softmaxLines(p) * p.chunks * 8 : 0));
  CHECK(L::planWorkspaceBytes(p, 8) == (p.chunks > 1 ? L::softmaxLines(p) * p.chunks * 16 : 0));
  switch (p.strategy) {
    case SoftmaxStrategy::WarpPerRow:
      CHECK(p.inner == 1);
      CHECK(p.block_y == 1);
      CHECK(p.chunks == 1);
      CHECK((p.group_width & (p.group_width - 1)) == 0);
      CHECK(p.group_width <= 32);
      CHECK((p.values_per_lane & (p.values_per_lane - 1)) == 0);
      CHECK(p.values_per_lane <= L::kWarpRowMaxValues);
      CHECK(int64_t(p.group_width) * p.values_per_lane >= p.dim_size);  // the row fits the registers
      CHECK((p.values_per_lane == 1 || p.group_width == 32));          // softmax.cu relies on it
      CHECK(p.block_x % p.group_width == 0);
      // Every row reached: the grid's first rows, then grid-stride steps.
      CHECK((p.grid_x * L::rowsPerBlock(p) >= p.outer || p.grid_x == L::kSoftmaxMaxGridX));
      break;
    case SoftmaxStrategy::BlockPerRow:
    case SoftmaxStrategy::SplitRow:
      CHECK(p.inner == 1);
      CHECK(p.block_y == 1);
      CHECK(p.grid_y == 1);
      CHECK((p.block_x & (p.block_x - 1)) == 0);
      CHECK((p.strategy == SoftmaxStrategy::SplitRow) == (p.chunks > 1));
      if (p.chunks > 1) CHECK(p.chunk_size % L::kChunkAlign == 0);  // aligned chunks for vector loads
      CHECK((p.grid_x >= L::rowItems(p) || p.grid_x == L::kSoftmaxMaxGridX));
      break;
    case SoftmaxStrategy::Columns:
      CHECK(p.inner > 1);
      CHECK(p.grid_y == p.chunks);
      CHECK((p.block_y & (p.block_y - 1)) == 0);
      CHECK(threads <= L::kColumnsThreads);
      CHECK((p.grid_x * p.block_x >= L::softmaxLines(p) || p.grid_x == L::kSoftmaxMaxGridX));
      break;
    case SoftmaxStrategy::Empty:
      break;
  }
}

// ---------------------------------------------------------------- replaying the kernels

// What a replayed launch wrote: values, and how many times each element was written.
template <class A>
struct Written {
  std::vector<A> out;
  std::vector<int> writes;
  int64_t out_of_range = 0;
  explicit Written(size_t n) : out(n, A(0)), writes(n, 0) {}
  void write(int64_t index, A value) {
    if (index < 0 || index >= static_cast<int64_t>(out.size())) {
      ++out_of_range;
      return;
    }
    out[static_cast<size_t>(index)] = value;
    ++writes[static_cast<size_t>(index)];
  }
};

// __shfl_xor_sync over each lane of one group: lane l combines with lane l ^ offset.
template <class A, class Op>
void butterfly(std::vector<A>& lanes, Op op) {
  for (size_t offset = lanes.size() / 2; offset > 0; offset /= 2) {
    std::vector<A> before = lanes;
    for (size_t l = 0; l < lanes.size(); ++l) lanes[l] = op(before[l], before[l ^ offset]);
  }
}

// softmax.cu's warpCombine: a __shfl_down_sync tree, lane 0's result (a lane past the end gets
// its own value back).
template <class A>
M::Stat<A> warpTree(std::vector<M::Stat<A>> lanes) {
  REQUIRE(lanes.size() == 32);
  for (size_t offset = 16; offset > 0; offset /= 2) {
    std::vector<M::Stat<A>> before = lanes;
    for (size_t l = 0; l < 32; ++l) lanes[l] = M::combine(before[l], l + offset < 32 ? before[l + offset] : before[l]);
  }
  return lanes[0];
}
// softmax.cu's blockCombine over a one-dimensional block.
template <class A>
M::Stat<A> blockTree(const std::vector<M::Stat<A>>& threads) {
  REQUIRE(threads.size() % 32 == 0);
  size_t warps = threads.size() / 32;
  std::vector<M::Stat<A>> firsts(32, M::emptyStat<A>());
  for (size_t w = 0; w < warps; ++w) {
    firsts[w] = warpTree(std::vector<M::Stat<A>>(threads.begin() + 32 * w, threads.begin() + 32 * (w + 1)));
  }
  return warpTree(firsts);
}

// warpRowKernel, block by block, group by group.
template <class A>
void replayWarpRows(const SoftmaxPlan& p, const std::vector<A>& in, Written<A>& w, bool take_log) {
  const int values = p.values_per_lane;
  const int width = values > 1 ? L::kSoftmaxWarp : p.group_width;
  const int64_t rows = p.outer, rows_per_block = L::rowsPerBlock(p);
  const int dim = static_cast<int>(p.dim_size);
  for (int64_t block = 0; block < p.grid_x; ++block) {
    for (int64_t first = block * rows_per_block; first < rows; first += p.grid_x * rows_per_block) {
      for (int group = 0; group < p.block_x / width; ++group) {
        const int64_t row = first + group;
        const int length = row < rows ? dim : 0;
        std::vector<std::vector<A>> v(static_cast<size_t>(width), std::vector<A>(static_cast<size_t>(values)));
        std::vector<A> row_max(static_cast<size_t>(width), A(-INFINITY));
        for (int lane = 0; lane < width; ++lane) {
          for (int k = 0; k < values; ++k) {
            int j = L::warpRowElement(width, lane, k);
            A& x = v[size_t(lane)][size_t(k)];
            x = j < length ? in[static_cast<size_t>(row * dim + j)] : A(-INFINITY);
            row_max[size_t(lane)] = M::maxNan(row_max[size_t(lane)], x);
          }
        }
        butterfly(row_max, [](A a, A b) { return M::maxNan(a, b); });
        std::vector<A> sum(static_cast<size_t>(width), A(0));
        for (int lane = 0; lane < width; ++lane) {
          for (int k = 0; k < values; ++k) {
            if (L::warpRowElement(width, lane, k) >= length) continue;
            A& x = v[size_t(lane)][size_t(k)];
            A shifted = x - row_max[size_t(lane)];
            A e = M::expOf(shifted);
            sum[size_t(lane)] += e;
            x = take_log ? shifted : e;
          }
        }
        butterfly(sum, [](A a, A b) { return a + b; });
        for (int lane = 0; lane < width; ++lane) {
          A s = sum[size_t(lane)];
          A scale = take_log ? M::logOf(s) : A(1) / s;
          for (int k = 0; k < values; ++k) {
            int j = L::warpRowElement(width, lane, k);
            A x = v[size_t(lane)][size_t(k)];
            if (j < length) w.write(row * dim + j, take_log ? x - scale : x * scale);
          }
        }
      }
    }
  }
}

enum class Phase { Whole, Stats, Write };

std::vector<Phase> phasesOf(const SoftmaxPlan& p) {
  if (p.chunks == 1) return {Phase::Whole};
  return {Phase::Stats, Phase::Write};
}

// rowKernel with `pack` elements per load.
template <class A>
void replayRows(const SoftmaxPlan& p, int pack, const std::vector<A>& in, Written<A>& w, bool take_log) {
  std::vector<M::Stat<A>> stats(static_cast<size_t>(L::softmaxLines(p) * p.chunks), M::emptyStat<A>());
  const int64_t threads = p.block_x;
  for (Phase phase : phasesOf(p)) {
    for (int64_t block = 0; block < p.grid_x; ++block) {
      for (int64_t item = block; item < L::rowItems(p); item += p.grid_x) {
        const int64_t row = item / p.chunks, chunk = item % p.chunks;
        REQUIRE(L::chunkBegin(p, chunk) % pack == 0);
        REQUIRE(L::chunkEnd(p, chunk) % pack == 0);
        const int64_t first = L::chunkBegin(p, chunk) / pack, end = L::chunkEnd(p, chunk) / pack;
        const int64_t base = row * p.dim_size;
        std::vector<M::Stat<A>> mine(static_cast<size_t>(threads), M::emptyStat<A>());
        for (int64_t t = 0; t < threads; ++t) {
          M::Stat<A>& s = mine[size_t(t)];
          if (phase == Phase::Write) {
            for (int64_t c = t; c < p.chunks; c += threads) s = M::combine(s, stats[size_t(L::statIndex(p, row, c))]);
          } else {
            for (int64_t k = first + t; k < end; k += threads) {
              for (int e = 0; e < pack; ++e) M::accumulate(s, in[size_t(base + k * pack + e)]);
            }
          }
        }
        const M::Stat<A> line = blockTree(mine);
        if (phase == Phase::Stats) {
          stats[size_t(L::statIndex(p, row, chunk))] = line;
          continue;
        }
        const M::LineScale<A> scale = M::lineScale(line, take_log);
        for (int64_t t = 0; t < threads; ++t) {
          for (int64_t k = first + t; k < end; k += threads) {
            for (int e = 0; e < pack; ++e) {
              int64_t index = base + k * pack + e;
              w.write(index, M::softmaxOf(in[size_t(index)], scale, take_log));
            }
          }
        }
      }
    }
  }
}

// columnsKernel: every (chunk, block) of the grid, thread (x, y) of the block.
template <class A>
void replayColumns(const SoftmaxPlan& p, const std::vector<A>& in, Written<A>& w, bool take_log) {
  std::vector<M::Stat<A>> stats(static_cast<size_t>(L::softmaxLines(p) * p.chunks), M::emptyStat<A>());
  const int64_t columns = L::softmaxLines(p), bx = p.block_x, by = p.block_y;
  for (Phase phase : phasesOf(p)) {
    for (int64_t chunk = 0; chunk < p.grid_y; ++chunk) {
      const int64_t end = L::chunkEnd(p, chunk);
      for (int64_t block = 0; block < p.grid_x; ++block) {
        for (int64_t first = block * bx; first < columns; first += p.grid_x * bx) {
          for (int64_t tx = 0; tx < bx; ++tx) {
            const int64_t column = first + tx;
            if (column >= columns) continue;  // such threads only join the block's barriers
            const int64_t base = L::columnOffset(p, column);
            std::vector<M::Stat<A>> mine(static_cast<size_t>(by), M::emptyStat<A>());
            for (int64_t ty = 0; ty < by; ++ty) {
              M::Stat<A>& s = mine[size_t(ty)];
              if (phase == Phase::Write) {
                for (int64_t c = ty; c < p.chunks; c += by) s = M::combine(s, stats[size_t(L::statIndex(p, column, c))]);
              } else {
                for (int64_t j = L::chunkBegin(p, chunk) + ty; j < end; j += by) {
                  M::accumulate(s, in[size_t(base + j * p.inner)]);
                }
              }
            }
            M::Stat<A> line = mine[0];
            for (int64_t y = 1; y < by; ++y) line = M::combine(line, mine[size_t(y)]);
            if (phase == Phase::Stats) {
              stats[size_t(L::statIndex(p, column, chunk))] = line;
              continue;
            }
            const M::LineScale<A> scale = M::lineScale(line, take_log);
            for (int64_t ty = 0; ty < by; ++ty) {
              for (int64_t j = L::chunkBegin(p, chunk) + ty; j < end; j += by) {
                int64_t index = base + j * p.inner;
                w.write(index, M::softmaxOf(in[size_t(index)], scale, take_log));
              }
            }
          }
        }
      }
    }
  }
}

template <class A>
Written<A> replay(const SoftmaxPlan& p, int pack, const std::vector<A>& in, bool take_log) {
  Written<A> w(in.size());
  switch (p.strategy) {
    case SoftmaxStrategy::Empty: break;
    case SoftmaxStrategy::WarpPerRow: replayWarpRows(p, in, w, take_log); break;
    case SoftmaxStrategy::BlockPerRow:
    case SoftmaxStrategy::SplitRow: replayRows(p, pack, in, w, take_log); break;
    case SoftmaxStrategy::Columns: replayColumns(p, in, w, take_log); break;
  }
  return w;
}

// ---------------------------------------------------------------- the three-pass reference

template <class A>
std::vector<A> threePass(const std::vector<A>& in, int64_t outer, int64_t dim, int64_t inner, bool take_log) {
  std::vector<A> out(in.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * dim + j) * inner + i); };
      A max = A(-INFINITY);
      for (int64_t j = 0; j < dim; ++j) max = (in[at(j)] > max || std::isnan(in[at(j)])) ? in[at(j)] : max;
      A sum = 0;
      for (int64_t j = 0; j < dim; ++j) sum += std::exp(in[at(j)] - max);
      for (int64_t j = 0; j < dim; ++j) {
        A shifted = in[at(j)] - max;
        out[at(j)] = take_log ? shifted - std::log(sum) : std::exp(shifted) * (A(1) / sum);
      }
    }
  }
  return out;
}

// Normal values, and special lines: line 0 has a NaN, line 1 a +inf, line 2 only -inf, line 3
// -inf in its first half (ahead of any finite value, the online pass's hard case), line 4 a large
// value (exp would overflow without the max).
template <class A>
std::vector<A> inputFor(const SoftmaxPlan& p, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal(0.0, 3.0);
  std::vector<A> in(static_cast<size_t>(p.outer * p.dim_size * p.inner));
  for (A& x : in) x = static_cast<A>(normal(gen));
  const int64_t lines = L::softmaxLines(p);
  auto element = [&](int64_t line, int64_t j) -> A& { return in[size_t(L::columnOffset(p, line) + j * p.inner)]; };
  const int64_t mid = p.dim_size / 2;
  if (lines > 0) element(0, mid) = A(NAN);
  if (lines > 1) element(1, mid) = A(INFINITY);
  if (lines > 2) {
    for (int64_t j = 0; j < p.dim_size; ++j) element(2, j) = A(-INFINITY);
  }
  if (lines > 3) {
    for (int64_t j = 0; j < mid; ++j) element(3, j) = A(-INFINITY);
  }
  if (lines > 4) element(4, p.dim_size - 1) = A(200);
  return in;
}

template <class A>
void checkReplay(SoftmaxPlan p, uint32_t seed) {
  INFO("strategy " << int(p.strategy) << " outer " << p.outer << " dim " << p.dim_size << " inner " << p.inner
                   << " grid " << p.grid_x << "x" << p.grid_y << " block " << p.block_x << "x" << p.block_y
                   << " chunks " << p.chunks << (sizeof(A) == 8 ? " double" : " float"));
  const std::vector<A> in = inputFor<A>(p, seed);
  const double tol = sizeof(A) == 8 ? 1e-12 : 2e-5;
  // Loads of one element and, when the rows allow, of a 16-byte vector (rowKernel's kVec).
  std::vector<int> packs = {1};
  const int vector = static_cast<int>(16 / sizeof(A));
  if ((p.strategy == SoftmaxStrategy::BlockPerRow || p.strategy == SoftmaxStrategy::SplitRow) &&
      p.dim_size % vector == 0) {
    packs.push_back(vector);
  }
  for (bool take_log : {false, true}) {
    const std::vector<A> want = threePass(in, p.outer, p.dim_size, p.inner, take_log);
    for (int pack : packs) {
      Written<A> got = replay(p, pack, in, take_log);
      int64_t unwritten = 0, rewritten = 0, wrong = 0;
      for (size_t k = 0; k < in.size(); ++k) {
        unwritten += got.writes[k] == 0;
        rewritten += got.writes[k] > 1;
        A a = got.out[k], b = want[k];
        bool same = std::isnan(a) ? std::isnan(b)
                    : std::isinf(a) || std::isinf(b) ? a == b
                                                     : std::fabs(a - b) <= tol * (1 + std::fabs(b));
        if (!same && wrong++ < 3) UNSCOPED_INFO("element " << k << ": " << a << ", want " << b);
      }
      INFO("log " << take_log << " pack " << pack);
      CHECK(got.out_of_range == 0);
      CHECK(unwritten == 0);
      CHECK(rewritten == 0);
      CHECK(wrong == 0);
    }
  }
}

}  // namespace

TEST_CASE("softmax plans for the issue's shapes") {
  SECTION("[1e6, 10] along the last dim: a warp's part per row, most threads busy") {
    SoftmaxPlan p = L::planSoftmax(1000000, 10, 1, kH100Sms);
    CHECK(p.strategy == SoftmaxStrategy::WarpPerRow);
    CHECK(p.group_width == 16);
    CHECK(p.values_per_lane == 1);
    CHECK(L::rowsPerBlock(p) == 8);
    // Threads holding an element: 10 of 16 (one block per row of 256 threads: 10 of 256).
    double busy = double(p.dim_size) / (p.group_width * p.values_per_lane);
    CHECK(busy > 0.6);
    CHECK(L::planWorkspaceBytes(p, 4) == 0);
  }
  SECTION("[1, 1e8]: one row split across at least as many blocks as SMs") {
    for (int sms : {108, 132, 144}) {
      SoftmaxPlan p = L::planSoftmax(1, 100000000, 1, sms);
      CHECK(p.strategy == SoftmaxStrategy::SplitRow);
      CHECK(p.chunks >= sms);
      CHECK(p.grid_x >= sms);
      CHECK(p.grid_x == p.chunks);
      CHECK(L::planWorkspaceBytes(p, 4) == p.chunks * 8);
      // Without a workspace: one block per row, as before.
      CHECK(L::planSoftmax(1, 100000000, 1, sms, /*allow_split=*/false).strategy == SoftmaxStrategy::BlockPerRow);
    }
  }
  SECTION("[65536, 1024] along dim 0: columns, a warp on 32 neighbouring inner positions") {
    SoftmaxPlan p = L::planSoftmax(1, 65536, 1024, kH100Sms);
    CHECK(p.strategy == SoftmaxStrategy::Columns);
    CHECK(p.block_x % 32 == 0);  // each warp inside one row of 1024: 32 consecutive addresses per step
    CHECK(p.inner % 32 == 0);
    CHECK(p.grid_x == 32);
    // Too few columns for the device: dim split across y threads and chunks of the grid.
    CHECK(p.block_y > 1);
    CHECK(p.grid_x * p.grid_y >= kH100Sms);
    CHECK(p.chunks == p.grid_y);
    CHECK(L::planWorkspaceBytes(p, 4) == 1024 * p.chunks * 8);
  }
  SECTION("[1024, 4096] along the last dim: a block per row") {
    SoftmaxPlan p = L::planSoftmax(1024, 4096, 1, kH100Sms);
    CHECK(p.strategy == SoftmaxStrategy::BlockPerRow);
    CHECK(p.chunks == 1);
    CHECK(p.grid_x == 1024);
    CHECK(p.block_x == 512);
  }
  SECTION("Many columns along dim 0: one thread per column") {
    SoftmaxPlan p = L::planSoftmax(1, 64, 1 << 20, kH100Sms);
    CHECK(p.strategy == SoftmaxStrategy::Columns);
    CHECK(p.block_y == 1);
    CHECK(p.chunks == 1);
  }
  SECTION("Zero-size and one-element lines") {
    for (auto shape : {std::vector<int64_t>{0, 10, 1}, {10, 0, 1}, {10, 0, 5}, {3, 10, 0}, {0, 0, 0}}) {
      SoftmaxPlan p = L::planSoftmax(shape[0], shape[1], shape[2], kH100Sms);
      CHECK(p.strategy == SoftmaxStrategy::Empty);
      CHECK(L::planWorkspaceBytes(p, 8) == 0);
    }
    SoftmaxPlan rows = L::planSoftmax(1000, 1, 1, kH100Sms);  // also a 0-dim input: [1, 1, 1]
    CHECK(rows.strategy == SoftmaxStrategy::WarpPerRow);
    CHECK(rows.group_width == 1);
    CHECK(L::rowsPerBlock(rows) == L::kWarpRowThreads);
    SoftmaxPlan columns = L::planSoftmax(4, 1, 1000, kH100Sms);
    CHECK(columns.strategy == SoftmaxStrategy::Columns);
    CHECK(columns.block_y == 1);
    CHECK(columns.chunks == 1);
  }
}

TEST_CASE("softmax plans stay within CUDA's launch limits") {
  const std::vector<int64_t> sizes = {0, 1, 2, 3, 7, 10, 31, 32, 33, 100, 513, 1000, 1024, 1025, 4096, 8191, 8192,
                                      65536, 1000000, 100000000, int64_t(1) << 31};
  for (int sms : {1, 2, 108, 132, 144}) {
    for (int64_t outer : sizes) {
      for (int64_t dim : sizes) {
        for (int64_t inner : {int64_t(0), int64_t(1), int64_t(2), int64_t(7), int64_t(32), int64_t(1000),
                              int64_t(65536)}) {
          if (outer * dim > (int64_t(1) << 40) || outer * dim * inner > (int64_t(1) << 44)) continue;
          for (bool allow_split : {true, false}) checkLimits(L::planSoftmax(outer, dim, inner, sms, allow_split), allow_split);
        }
      }
    }
  }
}

TEST_CASE("replayed softmax kernels write every element once, with the three-pass values") {
  struct Shape {
    int64_t outer, dim, inner;
    SoftmaxStrategy strategy;
  };
  const std::vector<Shape> shapes = {
      {1000, 10, 1, SoftmaxStrategy::WarpPerRow},   // 16 lanes per row
      {37, 1, 1, SoftmaxStrategy::WarpPerRow},      // one lane per row
      {9, 33, 1, SoftmaxStrategy::WarpPerRow},      // two values per lane, most padded
      {13, 1024, 1, SoftmaxStrategy::WarpPerRow},   // 32 values per lane
      {7, 700, 1, SoftmaxStrategy::WarpPerRow},
      {300, 1025, 1, SoftmaxStrategy::BlockPerRow},  // dim not a multiple of a vector
      {200, 3000, 1, SoftmaxStrategy::BlockPerRow},
      {3, 20000, 1, SoftmaxStrategy::SplitRow},     // 4 chunks per row, the last shorter
      {1, 100001, 1, SoftmaxStrategy::SplitRow},    // odd length: no vectors
      {5, 50000, 1, SoftmaxStrategy::SplitRow},
      {4, 5, 6, SoftmaxStrategy::Columns},           // the CUDA test's shape, dims 0 and 1
      {1, 4, 30, SoftmaxStrategy::Columns},
      {3, 1, 7, SoftmaxStrategy::Columns},
      {2, 5000, 40, SoftmaxStrategy::Columns},       // few columns, long dim: chunks
      {1, 2048, 512, SoftmaxStrategy::Columns},     // [65536, 1024] along dim 0, scaled down
      {1, 2, 280000, SoftmaxStrategy::Columns},      // one thread per column
  };
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    SoftmaxPlan p = L::planSoftmax(s.outer, s.dim, s.inner, kH100Sms);
    INFO("outer " << s.outer << " dim " << s.dim << " inner " << s.inner);
    REQUIRE(p.strategy == s.strategy);
    checkReplay<float>(p, seed++);
    checkReplay<double>(p, seed++);
    // Grid-stride loops: the kernels cover any grid (grid.x is capped for huge shapes).
    SoftmaxPlan small_grid = p;
    small_grid.grid_x = 3;
    checkReplay<float>(small_grid, seed++);
    // No workspace: the launcher plans without splitting.
    SoftmaxPlan unsplit = L::planSoftmax(s.outer, s.dim, s.inner, kH100Sms, /*allow_split=*/false);
    if (unsplit.chunks != p.chunks) checkReplay<float>(unsplit, seed++);
  }
  // The columns' y split alone (chunks == 1), and chunks of one block of columns on a small device.
  SoftmaxPlan y_only = L::planSoftmax(1, 5000, 40, kH100Sms, /*allow_split=*/false);
  CHECK(y_only.block_y > 1);
  checkReplay<float>(y_only, seed++);
  SoftmaxPlan small_device = L::planSoftmax(2, 3000, 16, 2);
  CHECK(small_device.chunks > 1);
  checkReplay<double>(small_device, seed++);
}

TEST_CASE("online (max, sum) pairs combine as the three-pass form") {
  using S = M::Stat<float>;
  const float inf = INFINITY;
  auto of = [](std::initializer_list<float> xs) {
    S s = M::emptyStat<float>();
    for (float x : xs) M::accumulate(s, x);
    return s;
  };
  // -inf ahead of the first finite element adds nothing once a finite max arrives.
  S s = of({-inf, -inf, 1.0f, 2.0f});
  CHECK(s.max == 2.0f);
  CHECK(s.sum == Approx(1.0 + std::exp(-1.0)));
  CHECK(M::combine(of({-inf}), of({0.0f})).sum == 1.0f);
  CHECK(M::combine(M::emptyStat<float>(), of({0.0f, 0.0f})).sum == 2.0f);
  CHECK(M::combine(of({0.0f, 0.0f}), M::emptyStat<float>()).sum == 2.0f);
  // Order of the parts does not matter (up to rounding).
  S ab = M::combine(of({3.0f, -1.0f}), of({5.0f, 4.0f}));
  S ba = M::combine(of({5.0f, 4.0f}), of({3.0f, -1.0f}));
  CHECK(ab.max == 5.0f);
  CHECK(ab.sum == Approx(ba.sum));
  CHECK(ab.sum == Approx(std::exp(-2.0) + std::exp(-6.0) + 1 + std::exp(-1.0)));
  // NaN wins, wherever it is; a max that is not finite writes NaN everywhere.
  CHECK(std::isnan(of({1.0f, NAN, 2.0f}).max));
  CHECK(std::isnan(M::combine(of({1.0f}), of({NAN})).max));
  CHECK(std::isnan(M::combine(of({NAN}), of({1.0f})).max));
  for (S line : {of({1.0f, NAN}), of({1.0f, inf}), of({-inf, -inf})}) {
    for (bool take_log : {false, true}) {
      M::LineScale<float> scale = M::lineScale(line, take_log);
      CHECK(std::isnan(M::softmaxOf(1.0f, scale, take_log)));
      CHECK(std::isnan(M::softmaxOf(-inf, scale, take_log)));
    }
  }
  // A finite line: softmax 0 for -inf, log_softmax -inf.
  M::LineScale<float> soft = M::lineScale(of({0.0f, -inf}), false), logs = M::lineScale(of({0.0f, -inf}), true);
  CHECK(M::softmaxOf(0.0f, soft, false) == 1.0f);
  CHECK(M::softmaxOf(-inf, soft, false) == 0.0f);
  CHECK(M::softmaxOf(0.0f, logs, true) == 0.0f);
  CHECK(M::softmaxOf(-inf, logs, true) == -inf);
}
