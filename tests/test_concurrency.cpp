// Calls racing registrations: callers on several threads, unboxed and boxed, while other
// threads register and deregister kernels, fallbacks and whole libraries. Every call must
// reach a kernel that was valid at some moment during the call, and no call may be lost.
// Built and run under TSan by tools/test.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "dispatch_test_util.h"

using namespace dk;
using namespace dk::testing;

namespace {
void noopBoxed(const OperatorHandle&, Stack*) {}
}  // namespace

namespace {
int64_t iterations() {
  const char* env = std::getenv("DK_STRESS_CALLS");
  return env ? std::atoll(env) : 1'000'000;
}

std::atomic<int64_t> base_calls{0}, override_calls{0}, autograd_calls{0};
}  // namespace

TEST_CASE("concurrency: callers see only valid kernels while kernels and libraries come and go") {
  Library def(Library::DEF, "t_conc");
  def.def("op(Tensor x) -> int");
  Library base(Library::IMPL, "t_conc", DispatchKey::CPU);
  base.impl("op", [](const Tensor&) -> int64_t {
    base_calls.fetch_add(1, std::memory_order_relaxed);
    return 1;
  });
  const UnaryIntOp op = unaryIntOp("t_conc", "op");
  const int64_t n = iterations();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> bad_results{0}, registrations{0}, libraries{0};

  auto caller = [&](bool boxed) {
    Tensor t = cpuTensor();
    for (int64_t i = 0; i < n; ++i) {
      int64_t r;
      if (boxed && (i % 4 == 0)) {
        Stack stack{IValue(t)};
        op.callBoxed(&stack);
        r = stack.at(0).toInt();
      } else {
        r = op.call(t);
      }
      if (r != 1 && r != 2) bad_results.fetch_add(1, std::memory_order_relaxed);
    }
  };

  // Toggles a newer CPU kernel (returns 2) and an Autograd kernel that redispatches.
  auto kernel_registrar = [&] {
    auto handle = op;
    while (!stop.load()) {
      Library lib(Library::IMPL, "t_conc", DispatchKey::CPU);
      lib.impl("op", CppFunction([](const Tensor&) -> int64_t {
                   override_calls.fetch_add(1, std::memory_order_relaxed);
                   return 2;
                 }).debug("override"));
      Library ag(Library::IMPL, "t_conc", DispatchKey::Autograd);
      ag.impl("op", CppFunction([handle](DispatchKeySet ks, const Tensor& x) -> int64_t {
                  autograd_calls.fetch_add(1, std::memory_order_relaxed);
                  return handle.redispatch(ks & after_autograd_keyset, x);
                }).debug("autograd"));
      registrations.fetch_add(2);
      std::this_thread::yield();
    }
  };

  // Creates and destroys whole libraries (new operators grow the lookup table) and a
  // backend fallback, and looks operators up by name, all without disturbing the callers.
  auto library_churn = [&] {
    int round = 0;
    while (!stop.load()) {
      std::string ns = "t_conc_lib" + std::to_string(round++ % 200);
      {
        Library lib(Library::DEF, ns);
        lib.def("f(Tensor x) -> Tensor");
        lib.def("g(Tensor x, int n) -> Tensor");
        Library fb(Library::IMPL, "_", DispatchKey::PrivateUse2);
        fb.fallback(CppFunction::makeFromBoxedFunction<&noopBoxed>());
        if (!Dispatcher::singleton().findSchema(OperatorName{ns + "::f", ""})) bad_results.fetch_add(1);
      }
      if (!Dispatcher::singleton().findSchema(OperatorName{"t_conc::op", ""})) bad_results.fetch_add(1);
      libraries.fetch_add(1);
      std::this_thread::yield();
    }
  };

  std::thread registrar(kernel_registrar);
  std::thread churn(library_churn);
  std::thread unboxed_caller(caller, false);
  std::thread boxed_caller(caller, true);
  unboxed_caller.join();
  boxed_caller.join();
  stop.store(true);
  registrar.join();
  churn.join();

  CHECK(bad_results.load() == 0);
  // Every call reached exactly one leaf kernel: none lost, none doubled.
  CHECK(base_calls.load() + override_calls.load() == 2 * n);
  CHECK(autograd_calls.load() <= 2 * n);
  CHECK(registrations.load() > 0);
  CHECK(libraries.load() > 0);
  // After the churn the table is back to the single base kernel.
  CHECK(op.call(cpuTensor()) == 1);
  CHECK(op.dumpComputedTable().find("override") == std::string::npos);
  INFO("registrations: " << registrations.load() << ", libraries: " << libraries.load()
                         << ", retired kernels: " << Dispatcher::singleton().retiredKernelCount());
  SUCCEED();
}

TEST_CASE("concurrency: thread-local state is per thread") {
  const IntOpWithCpuKernel defined("t_conc_tls", 1);
  Library ag(Library::IMPL, "t_conc_tls", DispatchKey::Autograd);
  ag.impl("op", [](const Tensor&) -> int64_t { return 7; });
  auto op = defined.typed();
  std::atomic<int64_t> seen_other{0};
  AutoDispatchBelowAutograd below;
  CHECK(op.call(cpuTensor()) == 1);
  std::thread([&] { seen_other = op.call(cpuTensor()); }).join();
  CHECK(seen_other.load() == 7);
}

TEST_CASE("concurrency: threads asking first for a schema built on first use agree on one") {
  // A def from schema data builds its FunctionSchema on first use (Note [Schemas built on
  // first use]); threads racing to be first must all get the same, complete schema.
  using namespace dk::schema_data;
  static constexpr char strings[] = "\0lazy\0self\0n";
  static constexpr ArgumentData args[] = {{.name = 6, .type = {TypeKind::Tensor}}, {.name = 11, .type = {TypeKind::Int}}};
  static constexpr ArgumentData rets[] = {{.type = {TypeKind::Tensor}}};
  static constexpr SchemaData data{.strings = strings, .name = 1, .arguments = args, .returns = rets,
                                   .dispatch_bitmap = 0b10};
  for (int round = 0; round < 20; ++round) {
    Library lib(Library::FRAGMENT, "t_conc_lazy");
    lib.def(data);
    const OperatorHandle op = Dispatcher::singleton().findSchemaOrThrow("t_conc_lazy::lazy", "");
    std::atomic<bool> go{false};
    const FunctionSchema* seen[4] = {};
    std::vector<std::thread> threads;
    for (auto& s : seen)
      threads.emplace_back([&] {
        while (!go.load(std::memory_order_acquire)) {
        }
        s = &op.schema();
      });
    go.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
    for (const FunctionSchema* s : seen) CHECK(s == seen[0]);
    CHECK(seen[0]->str() == "t_conc_lazy::lazy(Tensor self, int n) -> Tensor");
  }
}
