// Intra-op parallelism (Note [Intra-op parallelism]): parallel_for's chunks, nesting,
// exceptions, the thread count, callers racing for the pool; and the kernels that split their
// work give the same values on one thread and on several. Also built and run under TSan.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <string>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include "dk/core/parallel.h"
#include "dk/dk.h"
#include "dk/util/error.h"

using namespace dk;

namespace {

// Sets the thread count for a scope, then restores it.
struct ThreadCount {
  int previous;
  explicit ThreadCount(int n) : previous(get_num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(previous); }
};

std::vector<float> valuesOf(const Tensor& t) {
  Tensor c = t.contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

}  // namespace

TEST_CASE("parallel: parallel_for covers the range once, in chunks of at least the grain", "[parallel]") {
  ThreadCount threads(4);
  const int64_t n = 100003;
  std::vector<std::atomic<int>> hits(n);
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::set<int> thread_nums;
  std::atomic<int> outside_region{0};  // Catch2's assertions are for the test's own thread only
  parallel_for(0, n, 1000, [&](int64_t b, int64_t e) {
    if (!in_parallel_region()) outside_region.fetch_add(1);
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    std::lock_guard<std::mutex> lock(m);
    chunks.emplace_back(b, e);
    thread_nums.insert(get_thread_num());
  });
  CHECK(outside_region.load() == 0);
  for (int64_t i = 0; i < n; ++i) REQUIRE(hits[static_cast<size_t>(i)].load() == 1);
  CHECK(chunks.size() == 4);
  for (auto [b, e] : chunks) CHECK(e - b >= 1000);
  CHECK(thread_nums.count(0) == 1);  // the caller runs a chunk
  CHECK(!in_parallel_region());
  CHECK(get_thread_num() == 0);
}

TEST_CASE("parallel: small ranges, one thread and nested calls run on the caller", "[parallel]") {
  ThreadCount threads(3);
  int calls = 0;
  parallel_for(5, 5 + kGrainSize, kGrainSize, [&](int64_t b, int64_t e) {
    ++calls;
    CHECK(b == 5);
    CHECK(e == 5 + kGrainSize);
    CHECK(!in_parallel_region());
  });
  CHECK(calls == 1);
  parallel_for(3, 3, 1, [&](int64_t, int64_t) { ++calls; });  // empty: not called
  CHECK(calls == 1);
  std::atomic<int> inner_calls{0}, inner_wrong{0};
  parallel_for(0, 3000, 1000, [&](int64_t, int64_t) {
    const int me = get_thread_num();
    parallel_for(0, 100000, 1, [&](int64_t b, int64_t e) {
      if (b != 0 || e != 100000 || get_thread_num() != me) inner_wrong.fetch_add(1);
      inner_calls.fetch_add(1);
    });
  });
  CHECK(inner_calls.load() == 3);  // one whole inner range per outer chunk, on the chunk's thread
  CHECK(inner_wrong.load() == 0);
  {
    ThreadCount one(1);
    int chunks = 0;
    parallel_for(0, 1000000, 1, [&](int64_t b, int64_t e) {
      ++chunks;
      CHECK(e - b == 1000000);
    });
    CHECK(chunks == 1);
  }
}

TEST_CASE("parallel: an exception in any chunk reaches the caller, and the pool goes on", "[parallel]") {
  ThreadCount threads(2);
  for (int64_t failing : {int64_t{0}, int64_t{9999}}) {  // the caller's chunk, then a worker's
    CHECK_THROWS_WITH(parallel_for(0, 10000, 100,
                                   [&](int64_t b, int64_t e) {
                                     if (b <= failing && failing < e) throw std::runtime_error("chunk failed");
                                   }),
                      "chunk failed");
  }
  std::atomic<int64_t> sum{0};
  parallel_for(0, 10000, 100, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
  CHECK(sum.load() == 10000);
}

TEST_CASE("parallel: the thread count", "[parallel]") {
  const int before = get_num_threads();
  CHECK(before >= 1);
  {
    ThreadCount threads(3);
    CHECK(get_num_threads() == 3);
  }
  CHECK(get_num_threads() == before);
  CHECK_THROWS_WITH(set_num_threads(0), "Expected positive number of threads");
  CHECK_THROWS_WITH(set_num_threads(-2), "Expected positive number of threads");
  CHECK(get_num_threads() == before);
  ThreadCount two(2);
  std::atomic<int> refused{0};
  parallel_for(0, 4, 1, [&](int64_t, int64_t) {
    try {
      set_num_threads(1);
    } catch (const Error& e) {
      if (std::string(e.what()).find("set_num_threads cannot be called inside a parallel region") != std::string::npos)
        refused.fetch_add(1);
    }
  });
  CHECK(refused.load() == 2);  // both chunks, the caller's and the worker's
  CHECK(get_num_threads() == 2);
}

TEST_CASE("parallel: threads calling parallel_for at once each get every element done", "[parallel]") {
  ThreadCount threads(2);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        std::vector<int> seen(20000, 0);
        parallel_for(0, 20000, 100, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)] += 1;
        });
        if (std::any_of(seen.begin(), seen.end(), [](int v) { return v != 1; })) wrong.fetch_add(1);
      }
    });
  }
  for (auto& t : callers) t.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("parallel: kernels give the same values on one thread and on several", "[parallel]") {
  // Sizes past the grain; a transposed input so chunks start in the middle of runs.
  Tensor x = dk::randn({300, 517});
  Tensor y = dk::randn({517, 300});
  auto compute = [&] {
    std::vector<std::vector<float>> results;
    results.push_back(valuesOf(dk::exp(x)));
    results.push_back(valuesOf(dk::add(x, dk::t(y))));
    results.push_back(valuesOf(dk::mul(dk::t(y), 3)));
    results.push_back(valuesOf(dk::sigmoid(dk::t(y))));
    results.push_back(valuesOf(dk::softmax(x, 1)));
    results.push_back(valuesOf(dk::softmax(x, 0)));
    results.push_back(valuesOf(dk::log_softmax(x, 1)));
    results.push_back(valuesOf(dk::mm(x, y)));
    return results;
  };
  std::vector<std::vector<float>> one, several;
  {
    ThreadCount threads(1);
    one = compute();
  }
  {
    ThreadCount threads(3);
    several = compute();
  }
  REQUIRE(one.size() == several.size());
  for (size_t i = 0; i + 1 < one.size(); ++i) {
    INFO("result " << i);
    CHECK(one[i] == several[i]);  // elementwise and per line: the split does not change a value
  }
  // The matrix product's sums may be grouped differently by BLAS's threads.
  const std::vector<float>& a = one.back();
  const std::vector<float>& b = several.back();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(std::abs(a[i] - b[i]) <= 1e-3f * (1 + std::abs(a[i])));
}

TEST_CASE("parallel: a forked child runs regions on a fresh pool, the parent on its own", "[parallel]") {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer does not support starting threads in the child of a multithreaded process
  // (it ends the child), so this case runs in the other builds only.
  return;
#else
  ThreadCount threads(4);
  auto sumOfRange = [] {
    std::atomic<int64_t> sum{0};
    parallel_for(0, 100000, 1000, [&](int64_t b, int64_t e) {
      int64_t s = 0;
      for (int64_t i = b; i < e; ++i) s += i;
      sum.fetch_add(s);
    });
    return sum.load();
  };
  const int64_t want = int64_t{100000} * 99999 / 2;
  REQUIRE(sumOfRange() == want);  // the workers are running now
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(60);  // a child stuck waiting on the parent's workers dies instead of hanging
    const bool ok = sumOfRange() == want && sumOfRange() == want && get_num_threads() == 4;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  pid_t done = 0;
  for (int waited_ms = 0; waited_ms < 90000 && done == 0; waited_ms += 10) {
    done = waitpid(pid, &status, WNOHANG);
    if (done == 0) usleep(10000);
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL("the forked child did not finish its parallel regions");
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(sumOfRange() == want);  // the parent's pool goes on
#endif
}
