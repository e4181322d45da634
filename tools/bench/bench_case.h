// A benchmark case, independent of the library under test: the dispatchkit programs
// (dispatch_cases.cpp) and the c10 programs (torch/c10_cases.cpp) both describe their cases
// with it, under the same names, so tools/bench/report can set them side by side.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace benchcase {

struct Case {
  Case(std::string name_, std::function<int64_t(int64_t)> run_, int64_t per_call_result_)
      : name(std::move(name_)), run(std::move(run_)), per_call_result(per_call_result_) {}

  std::string name;
  // Performs n calls and returns a checksum, which must be n * per_call_result.
  std::function<int64_t(int64_t)> run;
  int64_t per_call_result = 0;
  // Further checks of the answer (a gradient, a graph node, a value), run before timing:
  // returns "" when right, else what is wrong. May be empty.
  std::function<std::string()> check = {};
  int64_t batch = 1000;         // calls per timed iteration (Google Benchmark)
  int64_t callgrind_n = 20000;  // calls per measured run under callgrind (0: not measured)
  int threads = 1;              // threads calling at once (case 8)
  // Started by the first thread before the timed loop, stopped after it: returns the function
  // that stops it (case 8: a thread that registers and deregisters kernels meanwhile).
  std::function<std::function<void()>()> background = {};
  // Dispatcher calls one run-call makes (the MLP step: every operator call it dispatches), for
  // ops per second; 0 when not counted.
  int64_t ops_per_call = 0;
};

// Runs the checks of a case: "" when it computes the right answer.
inline std::string verify(const Case& c) {
  const int64_t n = c.batch < 10 ? 3 : 100;
  const int64_t got = c.run(n);
  if (got != n * c.per_call_result) {
    return c.name + ": wrong checksum " + std::to_string(got) + ", expected " + std::to_string(n * c.per_call_result);
  }
  if (c.check) {
    std::string why = c.check();
    if (!why.empty()) return c.name + ": " + why;
  }
  return "";
}

}  // namespace benchcase
