// The c10 side of tools/bench/run --vs-libtorch: cases 1-4, 6 and 7 written against
// PyTorch 1.13.1's c10 dispatcher and ATen (Debian's libtorch-dev), under the same names as
// their dispatchkit counterparts in ../dispatch_cases.cpp, doing the same work.
#pragma once

#include <vector>

#include "bench_case.h"

namespace c10bench {
std::vector<benchcase::Case> allCases();
}  // namespace c10bench
