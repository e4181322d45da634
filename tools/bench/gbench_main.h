// The Google Benchmark main shared by dk-bench and c10-bench: one benchmark per case, each
// verified before it is timed and its checksum checked after every timed batch.
//
// Reported per case (tools/bench/report reads them from the CSV): cpu_time and real_time per
// iteration (one iteration = `batch` calls; with threads > 1 real_time is per thread), the
// counter calls_per_iteration, and ops_per_call where the case counts dispatcher calls.
// Aggregates: mean, median, stddev, min, max over --benchmark_repetitions.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>

#include "bench_case.h"

namespace benchcase {

inline void runCase(benchmark::State& state, const Case& c, std::shared_ptr<std::atomic<bool>> failed) {
  // Every run, failed ones too, must have the same counters (the CSV reporter requires it).
  state.counters["calls_per_iteration"] = benchmark::Counter(static_cast<double>(c.batch), benchmark::Counter::kAvgThreads);
  state.counters["ops_per_call"] = benchmark::Counter(static_cast<double>(c.ops_per_call), benchmark::Counter::kAvgThreads);
  std::function<void()> stop;
  if (state.thread_index() == 0) {
    std::string why = verify(c);
    if (!why.empty()) {
      failed->store(true);
      std::cerr << "WRONG ANSWER: " << why << "\n";
    }
    if (c.background) stop = c.background();
  }
  const int64_t expected = c.batch * c.per_call_result;
  bool wrong = false;
  for (auto _ : state) {
    int64_t got = c.run(c.batch);
    benchmark::DoNotOptimize(got);
    wrong |= got != expected;
  }
  if (stop) stop();
  if (wrong || failed->load()) {
    failed->store(true);
    state.SkipWithError(("wrong answer from " + c.name).c_str());
    return;
  }
}

inline int gbenchMain(const std::vector<Case>& cases, int argc, char** argv) {
  auto failed = std::make_shared<std::atomic<bool>>(false);
  for (const Case& c : cases) {
    auto* b = benchmark::RegisterBenchmark(c.name.c_str(), [c, failed](benchmark::State& s) { runCase(s, c, failed); });
    if (c.threads > 1) b->Threads(c.threads)->UseRealTime();
    b->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
    b->ComputeStatistics("max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return failed->load() ? 1 : 0;
}

}  // namespace benchcase
