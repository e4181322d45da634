// Runs one dispatch case a given number of times, for instruction counting under
// `valgrind --tool=callgrind` (tools/bench --callgrind). Usage: dk-bench-callgrind CASE N.
// Exit code 1 if the case computes a wrong answer.
#include <cstdlib>
#include <iostream>

#include "dispatch_cases.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: dk-bench-callgrind CASE N   (cases:";
    for (const auto& c : dk::bench::allCases()) std::cerr << " " << c.name;
    std::cerr << ")\n";
    return 2;
  }
  const std::string name = argv[1];
  const int64_t n = std::atoll(argv[2]);
  for (const auto& c : dk::bench::allCases()) {
    if (c.name != name) continue;
    c.run(10);  // warm up: first-call initialisation is not part of the per-call cost
    int64_t result = c.run(n);
    if (result != n * c.per_call_result) {
      std::cerr << name << ": wrong answer " << result << "\n";
      return 1;
    }
    return 0;
  }
  std::cerr << "unknown case " << name << "\n";
  return 2;
}
