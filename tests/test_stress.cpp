// Concurrency stress, bounded in time (DK_STRESS_SECONDS, default 5): caller threads call one
// operator unboxed (typed handle) and boxed, on CPU tensors and on PrivateUse1 tensors (which
// only a backend fallback serves), some of them inside dispatch modes they push and pop, while
// other threads register and deregister kernels, backend fallbacks and whole libraries, and
// add and remove observers. Built and run under TSan by tools/test.
//
// What is checked:
//   - every call reaches a kernel that was registered at some moment during the call
//     (Note [Kernel reclamation]): registrations and deregistrations are stamped with a global
//     epoch, callers read the epoch before and after each call;
//   - no call is lost or doubled: per-kernel counters add up to the calls made;
//   - every mode-wrapped call went through the mode once; every observed entry has its exit.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dispatch_test_util.h"
#include "dk/dispatch/dispatch_mode.h"

using namespace dk;
using namespace dk::testing;

namespace {

double stressSeconds() {
  const char* env = std::getenv("DK_STRESS_SECONDS");
  return env ? std::atof(env) : 5.0;
}

constexpr int64_t kBase = 1, kOverride = 2, kFallback = 3;
constexpr uint64_t kAlive = ~uint64_t{0};  // valid_to of a registration not undone yet
constexpr size_t kMaxRegistrations = size_t{1} << 18;

// The clock of registrations: stamped before a registration starts and after a
// deregistration ends; callers read it before and after each call.
std::atomic<uint64_t> epoch{1};

// Where each registration of a kernel (override kernels, fallbacks) was valid, in epochs.
struct Registrations {
  std::vector<std::atomic<uint64_t>> from = std::vector<std::atomic<uint64_t>>(kMaxRegistrations);
  std::vector<std::atomic<uint64_t>> to = std::vector<std::atomic<uint64_t>>(kMaxRegistrations);
  std::atomic<size_t> count{0};  // registrations started; the newest is count - 1

  // Stamps registration `n`'s start (call before registering).
  void started(size_t n) {
    to[n].store(kAlive);
    from[n].store(++epoch);
    count.store(n + 1);
  }
  // Stamps its end (call after deregistering).
  void ended(size_t n) { to[n].store(++epoch); }
  bool full() const { return count.load() >= kMaxRegistrations; }

  // Registration n was valid at some moment of a call that ran within epochs [s, e].
  bool validDuring(size_t n, uint64_t s, uint64_t e) const { return from[n].load() <= e && to[n].load() >= s; }
  // Some registration was valid during [s, e], given `n`, the count read after the call and
  // before e: registrations never overlap, so if any was, the newest of those n was.
  bool anyValidDuring(size_t n, uint64_t s, uint64_t e) const { return n > 0 && validDuring(n - 1, s, e); }
};

Registrations override_regs, fallback_regs;

// Per-kernel counters: every call ends in exactly one leaf kernel or one missing-kernel error.
std::atomic<int64_t> base_calls{0}, override_calls{0}, fallback_calls{0};
std::atomic<int64_t> autograd_calls{0}, mode_calls{0}, observer_enters{0}, observer_exits{0}, observer_failures{0};

// The override kernel registration a call reached (set by the kernel, read by the caller).
thread_local size_t reached_override = 0;

void fallbackKernel(const OperatorHandle& op, Stack* stack) {
  fallback_calls.fetch_add(1, std::memory_order_relaxed);
  drop(*stack, op.schema().arguments().size());
  stack->emplace_back(kFallback);
}

class CountingMode : public DispatchMode {
 public:
  void dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) override {
    mode_calls.fetch_add(1, std::memory_order_relaxed);
    op.callBoxed(stack);
  }
};

struct CallerTotals {
  std::atomic<int64_t> cpu_calls{0}, pu1_calls{0}, missing{0}, in_mode{0}, failures{0};
};

}  // namespace

TEST_CASE("stress: calls, registrations, fallbacks, libraries, modes and observers all at once") {
  Library def(Library::DEF, "t_stress");
  def.def("op(Tensor x) -> int");
  Library base(Library::IMPL, "t_stress", DispatchKey::CPU);
  base.impl("op", [](const Tensor&) -> int64_t {
    base_calls.fetch_add(1, std::memory_order_relaxed);
    return kBase;
  });
  const UnaryIntOp op = unaryIntOp("t_stress", "op");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(stressSeconds());
  std::atomic<bool> stop{false};
  CallerTotals totals;
  std::atomic<int64_t> library_rounds{0}, observer_rounds{0};

  // Calls until stopped. `boxed`: every other call boxed; `modes`: every fourth call inside
  // one or two pushed CountingModes; `observe`: a thread-local observer now and then.
  auto caller = [&](bool boxed, bool modes, bool observe) {
    const Tensor cpu = cpuTensor();
    const Tensor pu1 = make_tensor({1}, ScalarType::Float, Device(DeviceType::PrivateUse1));
    auto mode = std::make_shared<CountingMode>();
    int64_t cpu_calls = 0, pu1_calls = 0, missing = 0, in_mode = 0, failures = 0;
    for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      const bool on_pu1 = i % 3 == 2;
      std::unique_ptr<DispatchModeGuard> outer, inner;
      std::unique_ptr<ScopedObserver> local_observer;
      if (modes && i % 4 == 0) {
        outer = std::make_unique<DispatchModeGuard>(mode);
        if (i % 8 == 0) inner = std::make_unique<DispatchModeGuard>(mode);
        in_mode += inner ? 2 : 1;
      }
      if (observe && i % 16 == 0) {
        Observer obs;
        obs.on_enter = [](const ObservedCall&) { observer_enters.fetch_add(1, std::memory_order_relaxed); };
        obs.on_exit = [](const ObservedCall&) { observer_exits.fetch_add(1, std::memory_order_relaxed); };
        local_observer = std::make_unique<ScopedObserver>(std::move(obs), /*thread_local_only=*/true);
      }
      reached_override = kMaxRegistrations;
      const uint64_t s = epoch.load();
      int64_t r = 0;
      bool raised_missing = false;
      try {
        if (boxed && i % 2 == 0) {
          Stack stack{IValue(on_pu1 ? pu1 : cpu)};
          op.callBoxed(&stack);
          r = stack.at(0).toInt();
        } else {
          r = op.call(on_pu1 ? pu1 : cpu);
        }
      } catch (const NotImplementedError&) {
        raised_missing = true;
      }
      const size_t fallbacks_started = fallback_regs.count.load();
      const uint64_t e = epoch.load();
      if (modes && currentDispatchModes().empty() == static_cast<bool>(outer)) ++failures;
      if (on_pu1) {
        ++pu1_calls;
        if (raised_missing) {
          ++missing;
        } else if (r != kFallback || !fallback_regs.anyValidDuring(fallbacks_started, s, e)) {
          ++failures;
        }
      } else {
        ++cpu_calls;
        if (raised_missing || (r != kBase && r != kOverride)) {
          ++failures;
        } else if (r == kOverride &&
                   (reached_override >= kMaxRegistrations || !override_regs.validDuring(reached_override, s, e))) {
          ++failures;  // an override kernel that was not registered at any moment of the call
        }
      }
    }
    totals.cpu_calls += cpu_calls;
    totals.pu1_calls += pu1_calls;
    totals.missing += missing;
    totals.in_mode += in_mode;
    totals.failures += failures;
  };

  // Registers and deregisters a newer CPU kernel (it wins while registered) and an Autograd
  // kernel that redispatches below itself.
  auto kernel_registrar = [&] {
    const UnaryIntOp handle = op;
    for (size_t n = 0; !stop.load() && !override_regs.full(); ++n) {
      override_regs.started(n);
      {
        Library cpu(Library::IMPL, "t_stress", DispatchKey::CPU);
        cpu.impl("op", CppFunction([n](const Tensor&) -> int64_t {
                         override_calls.fetch_add(1, std::memory_order_relaxed);
                         reached_override = n;
                         return kOverride;
                       }).debug("override"));
        Library ag(Library::IMPL, "t_stress", DispatchKey::Autograd);
        ag.impl("op", CppFunction([handle](DispatchKeySet ks, const Tensor& x) -> int64_t {
                        autograd_calls.fetch_add(1, std::memory_order_relaxed);
                        return handle.redispatch(ks & after_autograd_keyset, x);
                      }).debug("autograd"));
        std::this_thread::yield();
      }
      override_regs.ended(n);
      std::this_thread::yield();
    }
  };

  // Registers and deregisters the PrivateUse1 backend fallback.
  auto fallback_registrar = [&] {
    for (size_t n = 0; !stop.load() && !fallback_regs.full(); ++n) {
      fallback_regs.started(n);
      {
        Library fb(Library::IMPL, "_", DispatchKey::PrivateUse1);
        fb.fallback(CppFunction::makeFromBoxedFunction<&fallbackKernel>().debug("stress fallback"));
        std::this_thread::yield();
      }
      fallback_regs.ended(n);
      std::this_thread::yield();
    }
  };

  // Whole libraries: a new namespace with an operator and its kernel, and a fragment adding an
  // operator to t_stress, each called and then destroyed; the callers' operator stays findable.
  auto library_churn = [&] {
    const Tensor cpu = cpuTensor();
    for (int round = 0; !stop.load(); ++round) {
      const std::string ns = "t_stress_lib" + std::to_string(round % 64);
      {
        Library lib(Library::DEF, ns);
        lib.def("f(Tensor x) -> int");
        Library impl(Library::IMPL, ns, DispatchKey::CPU);
        impl.impl("f", [](const Tensor&) -> int64_t { return 40; });
        Library fragment(Library::FRAGMENT, "t_stress");
        fragment.def("extra" + std::to_string(round % 8) + "(Tensor x) -> int",
                     [](const Tensor&) -> int64_t { return 41; });
        if (unaryIntOp(ns, "f").call(cpu) != 40) totals.failures++;
        Stack stack{IValue(cpu)};
        Dispatcher::singleton().findSchemaOrThrow("t_stress::extra" + std::to_string(round % 8), "").callBoxed(&stack);
        if (stack.at(0).toInt() != 41) totals.failures++;
      }
      if (!Dispatcher::singleton().findSchema(OperatorName{"t_stress::op", ""})) totals.failures++;
      library_rounds++;
      std::this_thread::yield();
    }
  };

  // Global observers come and go; some want the boxed inputs and outputs.
  auto observer_churn = [&] {
    for (int round = 0; !stop.load(); ++round) {
      Observer obs;
      obs.on_enter = [](const ObservedCall& c) {
        observer_enters.fetch_add(1, std::memory_order_relaxed);
        if (c.inputs && c.inputs->empty()) observer_failures++;  // every operator here takes a tensor
      };
      obs.on_exit = [](const ObservedCall&) { observer_exits.fetch_add(1, std::memory_order_relaxed); };
      obs.needs_inputs = round % 2 == 0;
      obs.needs_outputs = round % 3 == 0;
      {
        ScopedObserver scoped(std::move(obs));
        std::this_thread::yield();
      }
      observer_rounds++;
      std::this_thread::yield();
    }
  };

  std::vector<std::thread> threads;
  threads.emplace_back(kernel_registrar);
  threads.emplace_back(fallback_registrar);
  threads.emplace_back(library_churn);
  threads.emplace_back(observer_churn);
  threads.emplace_back(caller, false, false, false);  // unboxed
  threads.emplace_back(caller, true, false, true);    // boxed and unboxed, thread-local observers
  threads.emplace_back(caller, true, true, false);    // both, with modes
  while (std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop.store(true);
  for (std::thread& t : threads) t.join();

  INFO("cpu calls " << totals.cpu_calls.load() << ", privateuse1 calls " << totals.pu1_calls.load()
                    << " (missing kernel " << totals.missing.load() << "), override registrations "
                    << override_regs.count.load() << ", fallback registrations " << fallback_regs.count.load()
                    << ", library rounds " << library_rounds.load() << ", observer rounds "
                    << observer_rounds.load() << ", retired kernels "
                    << Dispatcher::singleton().retiredKernelCount());
  std::cout << "stress: " << stressSeconds() << " s, " << totals.cpu_calls.load() + totals.pu1_calls.load()
            << " calls, " << override_regs.count.load() << " kernel and " << fallback_regs.count.load()
            << " fallback registrations, " << library_rounds.load() << " library rounds, " << observer_rounds.load()
            << " observer rounds\n";
  CHECK(totals.failures.load() == 0);
  CHECK(observer_failures.load() == 0);
  // No call lost, none doubled: each reached one leaf kernel or raised the missing-kernel error.
  CHECK(base_calls.load() + override_calls.load() == totals.cpu_calls.load());
  CHECK(fallback_calls.load() + totals.missing.load() == totals.pu1_calls.load());
  // Each pushed mode saw its call exactly once.
  CHECK(mode_calls.load() == totals.in_mode.load());
  // Every observed entry has its exit (an observer removed mid-call still sees the exit).
  CHECK(observer_enters.load() == observer_exits.load());
  // Every thread made progress.
  CHECK(totals.cpu_calls.load() > 0);
  CHECK(totals.pu1_calls.load() > 0);
  CHECK(override_regs.count.load() > 0);
  CHECK(fallback_regs.count.load() > 0);
  CHECK(library_rounds.load() > 0);
  CHECK(observer_rounds.load() > 0);
  // Afterwards the table is back to the base kernel, and PrivateUse1 has no kernel again.
  CHECK(op.call(cpuTensor()) == kBase);
  CHECK_THROWS_AS(op.call(make_tensor({1}, ScalarType::Float, Device(DeviceType::PrivateUse1))), NotImplementedError);
  CHECK(op.dumpComputedTable().find("override") == std::string::npos);
  CHECK(Dispatcher::singleton().getRegistrationsForDispatchKey(DispatchKey::PrivateUse1).empty());
}
