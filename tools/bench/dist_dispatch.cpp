// dk-bench-collective-dispatch: what dispatch adds to a collective. In one process (a world of
// one rank on a FileStore, so the transport does next to nothing), per call:
//   direct    ProcessGroup::allReduce(...)->wait()     (no dispatcher; on the caller's thread)
//   operator  dk::distributed::all_reduce(t)           (the c10d::all_reduce_ operator)
//   add       dk::add(a, b) on one-element tensors      (one ordinary operator call, for scale)
// The argument check is off (it is a no-op with one rank anyway). Prints "<case>,<ns per call>"
// (median of --reps runs); tools/bench/notes.md quotes the figures.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dk/dk.h"
#include "dk/distributed/distributed.h"

namespace dist = dk::distributed;
using Clock = std::chrono::steady_clock;

template <class F>
double nsPerCall(int reps, int n, F&& f) {
  std::vector<double> runs;
  for (int r = 0; r < reps; ++r) {
    auto start = Clock::now();
    for (int i = 0; i < n; ++i) f();
    runs.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / n);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

int main(int argc, char** argv) {
  int reps = 7, n = 20000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
  }
  std::string folder = std::filesystem::temp_directory_path() / ("dk-bench-dispatch-" + std::to_string(::getpid()));
  dist::init_process_group("gloo", 0, 1, std::make_shared<dist::FileStore>(folder));
  auto group = dist::default_group();
  group->setCheckArguments(false);
  dk::Tensor t = dk::ones({1});
  dk::Tensor a = dk::ones({1}), b = dk::ones({1});
  // As the operator's kernel does for a synchronous call: on this thread (Note [Collectives on the
  // caller's thread]), so that the two differ by the dispatch alone.
  double direct = nsPerCall(reps, n, [&] {
    dist::RunOnCallerThread on_caller;
    group->allReduce("c10d::all_reduce_", t, dist::ReduceOp::SUM)->wait();
  });
  double op = nsPerCall(reps, n, [&] { dist::all_reduce(t); });
  double add = nsPerCall(reps, n, [&] { (void)dk::add(a, b); });
  std::printf("direct,%.0f\noperator,%.0f\nadd,%.0f\ndispatch_added,%.0f\n", direct, op, add, op - direct);
  dist::destroy_process_group();
  std::filesystem::remove_all(folder);
  return 0;
}
