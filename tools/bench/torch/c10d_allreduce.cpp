// c10d-bench-allreduce: the c10d side of tools/bench/dist_allreduce.py: PyTorch 1.13.1's
// ProcessGroupGloo (Debian's libtorch) doing what dk-bench-allreduce does, on the ranks
// tools/dkrun starts, with the same sizes, iteration counts and output ("c10d,<bytes>,<seconds>").
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using Clock = std::chrono::steady_clock;

namespace {

int iterationsFor(int64_t bytes) {
  if (bytes <= (64 << 10)) return 2000;
  if (bytes <= (1 << 20)) return 200;
  if (bytes <= (8 << 20)) return 30;
  return 8;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 3;
  int64_t only = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = std::atoll(argv[++i]);
  }
  int rank = std::atoi(std::getenv("RANK"));
  int world = std::atoi(std::getenv("WORLD_SIZE"));
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(std::atoi(std::getenv("MASTER_PORT")));
  store_options.isServer = rank == 0;
  store_options.numWorkers = world;
  auto store = c10::make_intrusive<c10d::TCPStore>(std::getenv("MASTER_ADDR"), store_options);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, options);
  auto all_reduce = [&](at::Tensor& t, c10d::ReduceOp op = c10d::ReduceOp::SUM) {
    std::vector<at::Tensor> tensors{t};
    c10d::AllreduceOptions opts;
    opts.reduceOp = op;
    pg->allreduce(tensors, opts)->wait();
  };
  auto seconds_per_call = [&](int iterations, at::Tensor& t) {
    for (int i = 0; i < std::max(1, iterations / 10); ++i) all_reduce(t);
    pg->barrier()->wait();
    auto start = Clock::now();
    for (int i = 0; i < iterations; ++i) all_reduce(t);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
    at::Tensor s = at::full({1}, seconds, at::kDouble);
    all_reduce(s, c10d::ReduceOp::MAX);
    return s.item<double>();
  };
  for (int64_t bytes = 1 << 10; bytes <= (int64_t{64} << 20); bytes *= 4) {
    if (only && bytes != only) continue;
    int64_t n = bytes / 4;
    at::Tensor t = at::full({n}, static_cast<double>(rank + 1), at::kFloat);
    all_reduce(t);
    if (t[0].item<float>() != static_cast<float>(world * (world + 1) / 2)) {
      std::fprintf(stderr, "c10d-bench-allreduce: wrong sum at %lld bytes\n", static_cast<long long>(bytes));
      return 1;
    }
    for (int rep = 0; rep < reps; ++rep) {
      double s = seconds_per_call(iterationsFor(bytes), t);
      if (rank == 0) {
        std::printf("c10d,%lld,%.9g\n", static_cast<long long>(bytes), s);
        std::fflush(stdout);
      }
    }
  }
  pg->barrier()->wait();
  return 0;
}
