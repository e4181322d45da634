// Deregistered kernels are freed once no call can still be running them (Note [Kernel
// reclamation]), and never while one is. Built and run under ASan (a kernel freed under a
// running call is a heap-use-after-free there) and TSan (a free not ordered after the call's
// last access is a race) by tools/test.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dispatch_test_util.h"
#include "dk/dispatch/kernel_reclamation.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/relu_ops.h"
#include "dk/generated/ops/t.h"
#include "dk/dispatch/tensor_factories.h"

using namespace dk;
using namespace dk::testing;

// A small quarantine under ASan, so that resident memory shows what the program keeps, not
// what ASan holds back to catch use-after-free (ASAN_OPTIONS from the environment still apply).
extern "C" const char* __asan_default_options() { return "quarantine_size_mb=16"; }

namespace {

// Captured by kernels: counts how many copies of a kernel's state are alive.
std::atomic<int64_t> live_tokens{0};
struct Token {
  Token() { live_tokens.fetch_add(1); }
  ~Token() { live_tokens.fetch_sub(1); }
  int64_t value = 42;
};

// The kernel of `op(Tensor x) -> int` capturing a fresh Token.
CppFunction tokenKernel() {
  auto token = std::make_shared<Token>();
  return CppFunction([token](const Tensor&) -> int64_t { return token->value; });
}

uint64_t callDepth() { return detail::tls_dispatch_keys.call_depth; }

// Frees every retired kernel (no other thread is inside a call in these tests when it runs).
void reclaimAll() { REQUIRE(Dispatcher::singleton().reclaimRetiredKernels() == 0); }

int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

int64_t envOr(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : fallback;
}

}  // namespace

TEST_CASE("reclamation: a deregistered kernel's captured state is freed") {
  Library def(Library::DEF, "t_reclaim");
  def.def("op(Tensor x) -> int");
  reclaimAll();
  const int64_t before = live_tokens.load();
  int64_t most_alive = 0;
  for (int i = 0; i < 1000; ++i) {
    Library lib(Library::IMPL, "t_reclaim", DispatchKey::CPU);
    lib.impl("op", tokenKernel());
    CHECK(unaryIntOp("t_reclaim", "op").call(cpuTensor()) == 42);
    most_alive = std::max(most_alive, live_tokens.load() - before);
  }
  // Freed in batches as deregistrations go on, without being asked: never all 1000 kept.
  CHECK(most_alive <= 64);
  CHECK(Dispatcher::singleton().retiredKernelCount() <= 64);
  reclaimAll();
  CHECK(live_tokens.load() == before);
  CHECK(Dispatcher::singleton().retiredKernelCount() == 0);
}

TEST_CASE("reclamation: backend fallbacks are retired and freed too") {
  reclaimAll();
  for (int i = 0; i < 10; ++i) {
    Library lib(Library::IMPL, "_", DispatchKey::PrivateUse2);
    lib.fallback(CppFunction::makeFallthrough());
  }
  CHECK(Dispatcher::singleton().retiredKernelCount() == 10);
  reclaimAll();
}

TEST_CASE("reclamation: a kernel running on another thread is not freed under it") {
  Library def(Library::DEF, "t_reclaim_busy");
  def.def("op(Tensor x) -> int");
  std::atomic<bool> entered{false}, release{false};
  auto token = std::make_shared<Token>();
  auto lib = std::make_unique<Library>(Library::IMPL, "t_reclaim_busy", DispatchKey::CPU);
  lib->impl("op", [token = std::move(token), &entered, &release](const Tensor&) -> int64_t {
    entered.store(true);
    while (!release.load()) std::this_thread::yield();
    return token->value;  // reads the captured state after the deregistration
  });
  reclaimAll();
  const int64_t alive = live_tokens.load();
  const bool boxed = GENERATE(false, true);
  std::atomic<int64_t> result{0};
  std::thread caller([&] {
    const OperatorHandle h = Dispatcher::singleton().findSchemaOrThrow("t_reclaim_busy::op", "");
    if (boxed) {
      Stack stack{IValue(cpuTensor())};
      h.callBoxed(stack);
      result.store(stack.back().toInt());
    } else {
      result.store(h.typed<int64_t(const Tensor&)>().call(cpuTensor()));
    }
  });
  while (!entered.load()) std::this_thread::yield();
  lib.reset();  // the running kernel is deregistered and retired
  // The caller is inside a call that began before the retirement: nothing may be freed.
  CHECK(Dispatcher::singleton().reclaimRetiredKernels() == 1);
  CHECK(live_tokens.load() == alive);
  release.store(true);
  caller.join();
  CHECK(result.load() == 42);
  // The caller left its call: the kernel can go.
  reclaimAll();
  CHECK(live_tokens.load() == alive - 1);
}

TEST_CASE("reclamation: a kernel may destroy its own registration while it runs") {
  Library def(Library::DEF, "t_reclaim_self");
  def.def("op(Tensor x) -> int");
  std::unique_ptr<Library> lib = std::make_unique<Library>(Library::IMPL, "t_reclaim_self", DispatchKey::CPU);
  auto token = std::make_shared<Token>();
  lib->impl("op", [token = std::move(token), &lib](const Tensor&) -> int64_t {
    lib.reset();  // retires this very kernel
    CHECK(Dispatcher::singleton().reclaimRetiredKernels() == 1);  // this thread is inside the call
    return token->value;
  });
  reclaimAll();
  const int64_t alive = live_tokens.load();
  CHECK(unaryIntOp("t_reclaim_self", "op").call(cpuTensor()) == 42);
  reclaimAll();
  CHECK(live_tokens.load() == alive - 1);
}

TEST_CASE("reclamation: every call path counts itself in and out, also when the kernel throws") {
  Library def(Library::DEF, "t_reclaim_depth");
  def.def("op(Tensor x) -> int");
  def.def("fails(Tensor x) -> int");
  Library cpu(Library::IMPL, "t_reclaim_depth", DispatchKey::CPU);
  cpu.impl("op", [](const Tensor&) -> int64_t { return static_cast<int64_t>(callDepth()); });
  cpu.impl("fails", [](const Tensor&) -> int64_t { DK_ERROR("kernel failed on purpose"); });
  const uint64_t outside = callDepth();
  CHECK(outside == 0);
  const OperatorHandle h = Dispatcher::singleton().findSchemaOrThrow("t_reclaim_depth::op", "");
  CHECK(h.typed<int64_t(const Tensor&)>().call(cpuTensor()) == 1);
  Stack stack{IValue(cpuTensor())};
  h.callBoxed(stack);
  CHECK(stack.back().toInt() == 1);
  CHECK_THROWS_WITH(unaryIntOp("t_reclaim_depth", "fails").call(cpuTensor()),
                    Catch::Contains("kernel failed on purpose"));
  Stack bad{IValue(cpuTensor())};
  CHECK_THROWS_WITH(Dispatcher::singleton().findSchemaOrThrow("t_reclaim_depth::fails", "").callBoxed(bad),
                    Catch::Contains("kernel failed on purpose"));
  Stack empty;
  CHECK_THROWS(h.callBoxed(empty));  // too few arguments: fails before any kernel runs
  CHECK(callDepth() == outside);
  SECTION("generated operators") {
    // A kernel for dk::relu at a key of its own, so the generated ops::relu::call reaches it.
    uint64_t seen = 0;
    Library layer(Library::IMPL, "dk", DispatchKey::TESTING_ONLY_GenericMode);
    layer.impl("relu", [&seen](DispatchKeySet ks, const Tensor& x) -> Tensor {
      seen = callDepth();
      return ops::relu::redispatch(ks.remove(DispatchKey::TESTING_ONLY_GenericMode), x);
    });
    const Tensor x = ones({2});
    IncludeDispatchKeyGuard include(DispatchKey::TESTING_ONLY_GenericMode);
    relu(x);
    CHECK(seen == 1);
    CHECK(callDepth() == outside);
  }
  SECTION("the slow path (observers, trace)") {
    setDispatchTraceEnabled(true);
    const int64_t depth = h.typed<int64_t(const Tensor&)>().call(cpuTensor());
    setDispatchTraceEnabled(false);
    CHECK(depth == 1);
    CHECK(callDepth() == outside);
  }
}

TEST_CASE("reclamation: a thread registers on its first call, and the internal key stays hidden") {
  const IntOpWithCpuKernel defined("t_reclaim_reg", 5);
  const UnaryIntOp op = defined.typed();
  CHECK(op.call(cpuTensor()) == 5);  // this thread is registered now
  const size_t threads = detail::registeredThreadCount();
  std::atomic<int> stage{0};
  size_t during = 0;
  LocalDispatchKeySet before_call, after_call;
  const bool exclude_everything = GENERATE(false, true);
  std::thread t([&] {
    // Excluding every key does not keep a thread from registering.
    std::unique_ptr<ExcludeDispatchKeyGuard> guard;
    if (exclude_everything) guard = std::make_unique<ExcludeDispatchKeyGuard>(full_keyset);
    before_call = tls_local_dispatch_key_set();
    int64_t r = exclude_everything ? 5 : op.call(cpuTensor());
    if (exclude_everything) {
      Stack stack{IValue(cpuTensor())};
      try {
        defined.handle().callBoxed(stack);
      } catch (const Error&) {
        // every key excluded: the call finds no kernel, but it went through registration first
      }
    }
    CHECK(r == 5);
    after_call = tls_local_dispatch_key_set();
    during = detail::registeredThreadCount();
    stage.store(1);
    while (stage.load() != 2) std::this_thread::yield();
  });
  while (stage.load() != 1) std::this_thread::yield();
  CHECK(during == threads + 1);
  stage.store(2);
  t.join();
  CHECK(detail::registeredThreadCount() == threads);  // it left when it exited
  CHECK(before_call.included == after_call.included);
  CHECK_FALSE(before_call.included.has(DispatchKey::ThreadRegistration));
  CHECK_FALSE(tls_local_dispatch_key_set().included.has(DispatchKey::ThreadRegistration));
  CHECK_FALSE(tls_local_dispatch_key_set().excluded.has(DispatchKey::ThreadRegistration));
  // Dumps do not show the slot; no one can register at the key.
  CHECK(op.dumpComputedTable().find("ThreadRegistration") == std::string::npos);
  CHECK_THROWS_WITH(
      [] {
        Library lib(Library::IMPL, "t_reclaim_reg", DispatchKey::ThreadRegistration);
        lib.impl("op", [](const Tensor&) -> int64_t { return 0; });
      }(),
      Catch::Contains("t_reclaim_reg::op") && Catch::Contains("ThreadRegistration"));
  CHECK_THROWS_WITH(
      [] {
        Library lib(Library::IMPL, "_", DispatchKey::ThreadRegistration);
        lib.fallback(CppFunction::makeFallthrough());
      }(),
      Catch::Contains("ThreadRegistration"));
  CHECK(op.call(cpuTensor()) == 5);
}

TEST_CASE("reclamation: a thread that exited does not hold reclamation back") {
  Library def(Library::DEF, "t_reclaim_exit");
  def.def("op(Tensor x) -> int");
  std::thread([] {
    Library lib(Library::IMPL, "t_reclaim_exit", DispatchKey::CPU);
    lib.impl("op", tokenKernel());
    CHECK(unaryIntOp("t_reclaim_exit", "op").call(cpuTensor()) == 42);
  }).join();
  reclaimAll();
}

TEST_CASE("reclamation: after fork, threads of the parent do not hold the child back") {
  Library def(Library::DEF, "t_reclaim_fork");
  def.def("op(Tensor x) -> int");
  std::atomic<bool> entered{false}, release{false};
  auto lib = std::make_unique<Library>(Library::IMPL, "t_reclaim_fork", DispatchKey::CPU);
  lib->impl("op", [&entered, &release](const Tensor&) -> int64_t {
    entered.store(true);
    while (!release.load()) std::this_thread::yield();
    return 1;
  });
  std::thread caller([] { unaryIntOp("t_reclaim_fork", "op").call(cpuTensor()); });
  while (!entered.load()) std::this_thread::yield();
  lib.reset();
  CHECK(Dispatcher::singleton().reclaimRetiredKernels() == 1);
  const pid_t pid = fork();
  if (pid == 0) {
    // Only this thread exists here; the caller's call is gone with it.
    const bool ok = Dispatcher::singleton().reclaimRetiredKernels() == 0 && detail::registeredThreadCount() == 1;
    _exit(ok ? 0 : 1);
  }
  REQUIRE(pid > 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  release.store(true);
  caller.join();
  reclaimAll();
}

// The test: a million register/deregister cycles (DK_RECLAIM_CYCLES) while other
// threads call keep the retired kernels, and resident memory, bounded.
TEST_CASE("reclamation: register/deregister cycles racing callers keep memory flat") {
  const IntOpWithCpuKernel defined("t_reclaim_flat", 1);
  const UnaryIntOp op = defined.typed();
  const OperatorHandle boxed_op = defined.handle();
  const int64_t cycles = envOr("DK_RECLAIM_CYCLES", 1'000'000);
  reclaimAll();
  const int64_t tokens_before = live_tokens.load();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> calls{0}, bad{0}, most_alive{0};
  auto caller = [&](bool boxed) {
    while (!stop.load(std::memory_order_relaxed)) {
      int64_t r;
      if (boxed) {
        Stack stack{IValue(cpuTensor())};
        boxed_op.callBoxed(stack);
        r = stack.back().toInt();
      } else {
        r = op.call(cpuTensor());
      }
      if (r != 1 && r != 42) bad.fetch_add(1);
      calls.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::thread unboxed_caller(caller, false), boxed_caller(caller, true);
  int64_t rss_warm = 0;
  for (int64_t i = 0; i < cycles; ++i) {
    {
      Library lib(Library::IMPL, "t_reclaim_flat", DispatchKey::CPU);
      lib.impl("op", tokenKernel());
    }
    if ((i & 1023) == 0) {
      int64_t alive = live_tokens.load() - tokens_before;
      if (alive > most_alive.load()) most_alive.store(alive);
    }
    if (i == cycles / 4) rss_warm = residentBytes();
  }
  const int64_t rss_end = residentBytes();
  stop.store(true);
  unboxed_caller.join();
  boxed_caller.join();
  INFO("cycles " << cycles << ", calls " << calls.load() << ", most captured states alive " << most_alive.load()
                 << ", resident after a quarter " << rss_warm << " B, at the end " << rss_end << " B");
  CHECK(bad.load() == 0);
  CHECK(calls.load() > 0);
  // A grace period ends when each caller has been seen outside a call; a caller the scheduler
  // parks inside one (three threads, two cores) holds it open for a time slice, while the
  // retirements pile up behind it. So the bound is what piles up in a few milliseconds, far
  // below one state per cycle.
  CHECK(most_alive.load() <= std::max<int64_t>(20'000, cycles / 20));
  // Three quarters of the cycles add less than 16 MiB (each retired kernel kept forever would
  // add some 300 bytes per cycle: 225 MB over three quarters of a million).
  CHECK(rss_end - rss_warm < 16 * 1024 * 1024);
  reclaimAll();
  CHECK(live_tokens.load() == tokens_before);
}
