// dk-bench-allreduce: all_reduce of float32 tensors from 1 KiB to 64 MiB on the ranks tools/dkrun
// starts (tools/bench/dist_allreduce.py runs it beside PyTorch's c10d Gloo, c10d-bench-allreduce,
// and writes results/allreduce_vs_c10d.csv). Rank 0 prints one CSV line per case:
//   <variant>,<bytes>,<seconds per all_reduce (median of the repetitions)>
// Variants: "dk" (dk::distributed::all_reduce: the c10d operator through the dispatcher, with the
// argument check), "dk_nocheck" (the same on a group without the argument check), "dk_direct"
// (ProcessGroup::allReduce without the dispatcher: what dispatch adds is dk_nocheck - dk_direct).
// Every case first checks its result (the sum over the ranks).
//
// Usage: dk-bench-allreduce [--reps N] [--only BYTES]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dk/dk.h"
#include "dk/distributed/distributed.h"

namespace dist = dk::distributed;
using Clock = std::chrono::steady_clock;

namespace {

int iterationsFor(int64_t bytes) {
  if (bytes <= (64 << 10)) return 2000;
  if (bytes <= (1 << 20)) return 200;
  if (bytes <= (8 << 20)) return 30;
  return 8;
}

template <class F>
double secondsPerCall(int iterations, F&& call) {
  for (int i = 0; i < std::max(1, iterations / 10); ++i) call();  // warm up
  dist::barrier();
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) call();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  // Every rank reports the slowest rank's time (the collective's time).
  dk::Tensor t = dk::full({1}, seconds, dk::kDouble);
  dist::all_reduce(t, dist::ReduceOp::MAX);
  return t.data_ptr<double>()[0];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 3;
  int64_t only = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = std::atoll(argv[++i]);
  }
  dist::init_process_group("gloo");
  int rank = dist::get_rank(), world = dist::get_world_size();
  auto unchecked_world = dist::new_group({});  // every rank, without the argument check
  unchecked_world->setCheckArguments(false);
  for (int64_t bytes = 1 << 10; bytes <= (int64_t{64} << 20); bytes *= 4) {
    if (only && bytes != only) continue;
    int64_t n = bytes / 4;
    dk::Tensor t = dk::full({n}, static_cast<double>(rank + 1), dk::kFloat);
    dist::all_reduce(t);
    float expected = static_cast<float>(world * (world + 1) / 2);
    for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 97)) {
      if (t.data_ptr<float>()[i] != expected) {
        std::fprintf(stderr, "dk-bench-allreduce: wrong sum at %lld bytes\n", static_cast<long long>(bytes));
        return 1;
      }
    }
    int iterations = iterationsFor(bytes);
    for (int rep = 0; rep < reps; ++rep) {
      double dk_s = secondsPerCall(iterations, [&] { dist::all_reduce(t); });
      double nocheck_s = secondsPerCall(iterations, [&] { dist::all_reduce(t, dist::ReduceOp::SUM, unchecked_world); });
      double direct_s = secondsPerCall(iterations, [&] {
        unchecked_world->allReduce("c10d::all_reduce_", t, dist::ReduceOp::SUM)->wait();
      });
      if (rank == 0) {
        std::printf("dk,%lld,%.9g\n", static_cast<long long>(bytes), dk_s);
        std::printf("dk_nocheck,%lld,%.9g\n", static_cast<long long>(bytes), nocheck_s);
        std::printf("dk_direct,%lld,%.9g\n", static_cast<long long>(bytes), direct_s);
        std::fflush(stdout);
      }
    }
  }
  dist::destroy_process_group();
  return 0;
}
