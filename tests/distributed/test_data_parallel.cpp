// dk::distributed::DataParallel on the ranks tools/dkrun starts (2 and 4): training the demo's
// MLP (tools/showcase/train.cpp, here in float64) on each rank's shard of every batch gives the
// parameters that training one process on the whole batch gives, step after step; with no_sync
// (gradient accumulation over two micro-batches) too. And the overlap: a bucket's all_reduce
// starts on the group's worker thread before backward has finished.
#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener below
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dk/dk.h"
#include "dk/distributed/data_parallel.h"
#include "dk/distributed/distributed.h"
#include "world_listener.h"
#include "dk/layers/profiler.h"

using namespace dk;
namespace dist = dk::distributed;

namespace {

using dk::test::WorldListener;
CATCH_REGISTER_LISTENER(WorldListener)

int rank() { return dist::get_rank(); }
int world() { return dist::get_world_size(); }

Tensor parameter(Generator& gen, std::vector<int64_t> sizes) {
  Tensor p = dk::mul(dk::randn(sizes, gen, kDouble), Scalar(0.5));
  p.requires_grad_();
  return p;
}

// The demo's MLP (linear, relu, linear), in float64: 2 -> 16 -> 2.
struct Mlp {
  Tensor w1, b1, w2, b2;
  explicit Mlp(uint64_t seed) {
    Generator gen(seed);
    w1 = parameter(gen, {16, 2});
    b1 = parameter(gen, {16});
    w2 = parameter(gen, {2, 16});
    b2 = parameter(gen, {2});
  }
  Tensor forward(const Tensor& x) const { return dk::linear(dk::relu(dk::linear(x, w1, b1)), w2, b2); }
  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2}; }
};

// Batch `step` (micro-batch `micro`): 4 rows per rank, the same on every rank.
struct Batch {
  Tensor x, y;
};
Batch batch(int step, int micro) {
  Generator gen(1000 + 10 * static_cast<uint64_t>(step) + static_cast<uint64_t>(micro));
  int64_t n = 4 * world();
  Tensor x = dk::randn({n, 2}, gen, kDouble);
  Tensor product = dk::mul(dk::select(x, 1, 0), dk::select(x, 1, 1));  // XOR-like labels, as the demo's
  Tensor y = dk::gt(product, dk::zeros_like(product)).to(kLong);
  return {x, y};
}
Batch shard(const Batch& b) {
  return {dk::narrow(b.x, 0, 4 * rank(), 4).contiguous(), dk::narrow(b.y, 0, 4 * rank(), 4).contiguous()};
}

void sgdStep(const std::vector<Tensor>& params, double lr) {
  NoGradGuard no_grad;
  for (const Tensor& p : params) {
    p.sub_(p.grad(), lr);
    p.mutable_grad() = Tensor();
  }
}

double maxDifference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    Tensor d = dk::abs(dk::sub(a[i], b[i])).contiguous();
    for (int64_t k = 0; k < d.numel(); ++k) worst = std::max(worst, d.data_ptr<double>()[k]);
  }
  return worst;
}

// Trains `steps` steps both ways (micro-batches per step: 1, or 2 with no_sync on the first) and
// returns the largest difference between the parameters after each step.
double trainBothWays(int steps, int micro_batches, int64_t bucket_cap_bytes) {
  Mlp reference(7);          // one process, the whole batch
  Mlp replica(7 + rank());   // this rank's replica: DataParallel copies rank 0's values into it
  dist::DataParallel::Options options;
  options.bucket_cap_bytes = bucket_cap_bytes;
  dist::DataParallel ddp(replica.parameters(), options);
  double worst = 0;
  for (int step = 0; step < steps; ++step) {
    for (int micro = 0; micro < micro_batches; ++micro) {
      Batch full = batch(step, micro);
      dk::cross_entropy_loss(reference.forward(full.x), full.y).backward();
      Batch mine = shard(full);
      if (micro + 1 < micro_batches) {
        auto no_sync = ddp.no_sync();
        dk::cross_entropy_loss(replica.forward(mine.x), mine.y).backward();
      } else {
        dk::cross_entropy_loss(replica.forward(mine.x), mine.y).backward();
      }
    }
    sgdStep(reference.parameters(), 0.1);
    sgdStep(replica.parameters(), 0.1);
    worst = std::max(worst, maxDifference(reference.parameters(), replica.parameters()));
  }
  return worst;
}

}  // namespace

TEST_CASE("DataParallel: training on shards equals training on the whole batch (float64)") {
  CHECK(trainBothWays(/*steps=*/6, /*micro_batches=*/1, int64_t{25} << 20) < 1e-12);
  // One bucket per parameter: four all_reduces per step, in bucket order.
  CHECK(trainBothWays(6, 1, 1) < 1e-12);
}

TEST_CASE("DataParallel: no_sync accumulates locally; the next backward averages the sum") {
  CHECK(trainBothWays(/*steps=*/5, /*micro_batches=*/2, int64_t{25} << 20) < 1e-12);
  CHECK(trainBothWays(5, 2, 200) < 1e-12);
}

TEST_CASE("DataParallel: buckets in reverse parameter order, capped by bytes") {
  Mlp model(3);
  dist::DataParallel::Options options;
  options.bucket_cap_bytes = 300;  // b2 (16 bytes) and w2 (256) fit; b1 (128) and w1 (256) do not
  dist::DataParallel ddp(model.parameters(), options);
  CHECK(ddp.bucket_assignment() == std::vector<std::vector<size_t>>{{3, 2}, {1}, {0}});
  CHECK_THROWS_WITH(dist::DataParallel({dk::ones({2})}), Catch::Contains("not a leaf tensor that requires grad"));
}

TEST_CASE("DataParallel: a bucket's all_reduce overlaps the rest of backward in the profiler trace") {
  // A deeper model, so that backward has work left after the first bucket is ready: 6 layers of
  // 256 x 256 on 256 rows (each layer's backward is two 256^3 matrix products).
  Generator gen(11);
  std::vector<Tensor> params;
  for (int layer = 0; layer < 6; ++layer) {
    params.push_back(parameter(gen, {256, 256}));
    params.push_back(parameter(gen, {256}));
  }
  dist::DataParallel::Options options;
  options.bucket_cap_bytes = (256 * 256 + 256) * 8;  // one layer per bucket
  dist::DataParallel ddp(params, options);
  Tensor x = dk::randn({256, 256}, gen, kDouble);
  profiler::Profiler prof;
  Tensor h = x;
  for (int layer = 0; layer < 6; ++layer) h = dk::relu(dk::linear(h, params[2 * layer], params[2 * layer + 1]));
  dk::sum(h).backward();
  prof.stop();
  // The launches (c10d::all_reduce_ calls on this thread, from the gradient hooks) and the
  // communication (on the group's worker thread).
  std::vector<int64_t> launches;
  int64_t first_comm_start = -1;
  int comm_events = 0;
  uint32_t main_thread = 0;
  for (const profiler::Event& e : prof.events()) {
    if (e.name == "dk::sum") main_thread = e.thread;
  }
  for (const profiler::Event& e : prof.events()) {
    if (e.kind == "communication") {
      ++comm_events;
      CHECK(e.thread != main_thread);
      if (first_comm_start < 0 || e.start_ns < first_comm_start) first_comm_start = e.start_ns;
    } else if (e.thread == main_thread && e.name == "c10d::all_reduce_") {
      launches.push_back(e.start_ns);
    }
  }
  std::sort(launches.begin(), launches.end());
  CHECK(comm_events == 6);
  REQUIRE(launches.size() == 6);
  // Backward computes layer by layer after the first launch; the first bucket's communication
  // started before the last bucket (the first layer's gradients) was even launched.
  int compute_between = 0;
  for (const profiler::Event& e : prof.events()) {
    if (e.thread == main_thread && e.name == "dk::mm" && e.start_ns > launches.front() && e.start_ns < launches.back()) {
      ++compute_between;
    }
  }
  INFO("first all_reduce ran from " << first_comm_start << " ns; launches from " << launches.front() << " to "
                                    << launches.back() << " ns");
  CHECK(compute_between > 0);
  CHECK(first_comm_start >= 0);
  CHECK(first_comm_start < launches.back());
}
