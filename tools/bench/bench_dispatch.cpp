// Google Benchmark timings of the dispatch cases (tools/bench). Each case checks its answer
// once before it is timed.
#include <benchmark/benchmark.h>

#include <iostream>

#include "dispatch_cases.h"

namespace {
void runCase(benchmark::State& state, const dk::bench::Case& c) {
  if (c.run(1000) != 1000 * c.per_call_result) {
    state.SkipWithError(("wrong answer from " + c.name).c_str());
    return;
  }
  constexpr int64_t kBatch = 1000;
  for (auto _ : state) {
    benchmark::DoNotOptimize(c.run(kBatch));
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["ns_per_call"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBatch),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
}  // namespace

int main(int argc, char** argv) {
  for (const dk::bench::Case& c : dk::bench::allCases()) {
    auto* b = benchmark::RegisterBenchmark(c.name.c_str(), [c](benchmark::State& s) { runCase(s, c); });
    if (c.name == "unboxed_typed_call") b->ThreadRange(1, 2);  // case 8: two threads at once
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
