// The callgrind main shared by dk-bench-callgrind and c10-bench-callgrind.
//
//   PROG [--list] [CASE...]      (all cases with callgrind_n > 0 when none is named)
//
// Each case is verified, then, under valgrind --tool=callgrind --instr-atstart=no, run
// callgrind_n times and 2 * callgrind_n times, each run between a zeroing and a dump of the
// counters named "CASE n" and "CASE 2n" (tools/bench/callgrind_counts.py reads the dumps).
// The difference of the two counts divided by n is the cost of one call: whatever a run costs
// once (the std::function call, the loop set-up, a guard or observer the case installs)
// cancels. Outside valgrind it only verifies. Exit status 1 on a wrong answer.
#pragma once

#include <valgrind/callgrind.h>

#include <algorithm>
#include <iostream>
#include <string>

#include "bench_case.h"

namespace benchcase {

inline int callgrindMain(const std::vector<Case>& cases, int argc, char** argv) {
  std::vector<std::string> wanted(argv + 1, argv + argc);
  if (wanted.size() == 1 && wanted[0] == "--list") {
    for (const Case& c : cases)
      if (c.callgrind_n > 0) std::cout << c.name << "\n";
    return 0;
  }
  bool instrumenting = false;
  int status = 0;
  for (const Case& c : cases) {
    if (wanted.empty() ? c.callgrind_n <= 0 : std::find(wanted.begin(), wanted.end(), c.name) == wanted.end()) continue;
    std::string why = verify(c);  // also the warm-up: first-call initialisation is not per-call cost
    if (!why.empty()) {
      std::cerr << "WRONG ANSWER: " << why << "\n";
      status = 1;
      continue;
    }
    if (!instrumenting) {
      CALLGRIND_START_INSTRUMENTATION;
      instrumenting = true;
    }
    const int64_t n = c.callgrind_n > 0 ? c.callgrind_n : 1000;
    const std::string one = c.name + " n", two = c.name + " 2n";
    CALLGRIND_ZERO_STATS;
    int64_t a = c.run(n);
    CALLGRIND_DUMP_STATS_AT(one.c_str());
    int64_t b = c.run(2 * n);
    CALLGRIND_DUMP_STATS_AT(two.c_str());
    if (a != n * c.per_call_result || b != 2 * n * c.per_call_result) {
      std::cerr << "WRONG ANSWER: " << c.name << " while measured\n";
      status = 1;
      continue;
    }
    std::cout << c.name << " " << n << "\n";  // the n used, for the instructions per call
  }
  return status;
}

}  // namespace benchcase
