// Computing table slots: one test per precedence rule and consequence of docs/semantics.md
// section 3, fallthrough masks, fallbacks, redispatch and order independence.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <functional>

#include "dispatch_test_util.h"

using namespace dk;
using namespace dk::testing;

namespace {
// A fresh operator `ns::op(Tensor x) -> int` with no kernels.
struct Fixture {
  explicit Fixture(std::string ns_) : ns(std::move(ns_)), def(Library::DEF, ns) { def.def("op(Tensor x) -> int"); }
  UnaryIntOp op() const { return unaryIntOp(ns, "op"); }
  std::string table() const { return op().dumpComputedTable(); }
  std::string ns;
  Library def;
};

int fallback_calls = 0;
// A boxed fallback: drops the arguments and answers 42.
void answerFallback(const OperatorHandle& op, Stack* stack) {
  ++fallback_calls;
  drop(*stack, op.schema().arguments().size());
  stack->push_back(IValue(int64_t{42}));
}

bool tableHas(const std::string& table, const std::string& line) { return table.find(line + "\n") != std::string::npos; }
}  // namespace

TEST_CASE("table: a direct kernel beats every alias") {
  Fixture f("t_direct");
  auto cpu = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(1, "cpu_kernel"));
  auto cea = implAt(f.ns, "op", DispatchKey::CompositeExplicitAutograd, tagKernel(2, "explicit_kernel"));
  auto cia = implAt(f.ns, "op", DispatchKey::CompositeImplicitAutograd, tagKernel(3, "implicit_kernel"));
  auto t = f.table();
  CHECK(tableHas(t, "CPU: cpu_kernel [kernel]"));
  CHECK(tableHas(t, "CUDA: explicit_kernel [default backend kernel]"));
  CHECK(f.op().call(cpuTensor()) == 1);
  CHECK(f.op().call(cudaTensor()) == 2);
}

TEST_CASE("table: CompositeExplicitAutogradNonFunctional beats CompositeExplicitAutograd, but not on Sparse") {
  Fixture f("t_nonfunctional");
  auto cea = implAt(f.ns, "op", DispatchKey::CompositeExplicitAutograd, tagKernel(2, "explicit_kernel"));
  auto nf = implAt(f.ns, "op", DispatchKey::CompositeExplicitAutogradNonFunctional, tagKernel(4, "nonfunctional_kernel"));
  auto t = f.table();
  CHECK(tableHas(t, "CPU: nonfunctional_kernel [default backend kernel]"));
  CHECK(tableHas(t, "QuantizedCUDA: nonfunctional_kernel [default backend kernel]"));
  CHECK(tableHas(t, "SparseCPU: explicit_kernel [default backend kernel]"));
  CHECK(tableHas(t, "Undefined: nonfunctional_kernel [default backend kernel]"));
  CHECK(f.op().call(cpuTensor()) == 4);
  CHECK(f.op().call(sparseCpuTensor()) == 2);
}

TEST_CASE("table: CompositeExplicitAutograd never fills an autograd slot") {
  Fixture f("t_cea_autograd");
  auto cea = implAt(f.ns, "op", DispatchKey::CompositeExplicitAutograd, tagKernel(2, "explicit_kernel"));
  auto t = f.table();
  CHECK(tableHas(t, "AutogradCPU: fallthrough autograd_fallback (default) [backend fallback]"));
  CHECK(tableHas(t, "Undefined: explicit_kernel [default backend kernel]"));
  CHECK(t.find("AutogradCPU: explicit_kernel") == std::string::npos);
  CHECK(f.op().call(cpuTensor()) == 2);  // through the autograd fallback to the CPU slot
}

TEST_CASE("table: CPU + CompositeImplicitAutograd: AutogradCPU falls back, AutogradCUDA takes the math kernel") {
  Fixture f("t_cia");
  auto cia = implAt(f.ns, "op", DispatchKey::CompositeImplicitAutograd, tagKernel(3, "implicit_kernel"));
  auto cpu = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(1, "cpu_kernel"));
  auto t = f.table();
  CHECK(tableHas(t, "AutogradCPU: fallthrough autograd_fallback (default) [backend fallback]"));
  CHECK(tableHas(t, "AutogradCUDA: implicit_kernel [math kernel]"));
  CHECK(tableHas(t, "CUDA: implicit_kernel [math kernel]"));
  CHECK(tableHas(t, "Functionalize: implicit_kernel [math kernel]"));
  CHECK(tableHas(t, "Undefined: implicit_kernel [math kernel]"));
  // Only an autograd key looks for its backend's kernel: QuantizedCPU and SparseCPU take the
  // math kernel although CPU has a kernel, as in c10.
  CHECK(tableHas(t, "QuantizedCPU: implicit_kernel [math kernel]"));
  CHECK(tableHas(t, "SparseCPU: implicit_kernel [math kernel]"));
  CHECK(f.op().call(cpuTensor()) == 1);
  CHECK(f.op().call(cudaTensor()) == 3);
}

TEST_CASE("table: a CompositeExplicitAutograd kernel keeps the math kernel out of the autograd slots") {
  Fixture f("t_cia_cea");
  auto cia = implAt(f.ns, "op", DispatchKey::CompositeImplicitAutograd, tagKernel(3, "implicit_kernel"));
  auto cea = implAt(f.ns, "op", DispatchKey::CompositeExplicitAutograd, tagKernel(2, "explicit_kernel"));
  auto t = f.table();
  CHECK(tableHas(t, "AutogradCUDA: fallthrough autograd_fallback (default) [backend fallback]"));
  CHECK(tableHas(t, "CUDA: explicit_kernel [default backend kernel]"));
  CHECK(f.op().call(cudaTensor()) == 2);
}

TEST_CASE("table: a registration at a backend key refreshes that backend's autograd slot") {
  Fixture f("t_refresh");
  auto cia = implAt(f.ns, "op", DispatchKey::CompositeImplicitAutograd, tagKernel(3, "implicit_kernel"));
  CHECK(tableHas(f.table(), "AutogradMeta: implicit_kernel [math kernel]"));
  {
    auto meta = implAt(f.ns, "op", DispatchKey::Meta, tagKernel(5, "meta_kernel"));
    CHECK(tableHas(f.table(), "AutogradMeta: fallthrough autograd_fallback (default) [backend fallback]"));
    CHECK(tableHas(f.table(), "Meta: meta_kernel [kernel]"));
  }
  CHECK(tableHas(f.table(), "AutogradMeta: implicit_kernel [math kernel]"));
}

TEST_CASE("table: CompositeImplicitAutograd with a Sparse kernel makes AutogradOther ambiguous") {
  Fixture f("t_ambiguous");
  auto cia = implAt(f.ns, "op", DispatchKey::CompositeImplicitAutograd, tagKernel(3, "implicit_kernel"));
  auto sparse = implAt(f.ns, "op", DispatchKey::SparseCPU, tagKernel(6, "sparse_kernel"));
  auto t = f.table();
  CHECK(tableHas(t, "AutogradOther: ambiguous_autogradother [ambiguous autogradother]"));
  CHECK(f.op().hasComputedKernelForDispatchKey(DispatchKey::AutogradOther));
  CHECK_THROWS_WITH(f.op().call(sparseCpuTensor()),
                    Catch::Contains("'t_ambiguous::op' has kernels registered to both CompositeImplicitAutograd and a "
                                    "backend mapped to AutogradOther"));
  // Without a Quantized/Sparse kernel the math kernel fills AutogradOther.
  sparse.reset();
  CHECK(tableHas(f.table(), "AutogradOther: implicit_kernel [math kernel]"));
}

TEST_CASE("table: the Autograd alias fills every autograd slot; a direct autograd kernel beats it") {
  Fixture f("t_autograd_alias");
  auto cpu = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(1, "cpu_kernel"));
  auto ag = implAt(f.ns, "op", DispatchKey::Autograd, tagKernel(7, "autograd_kernel"));
  auto agcuda = implAt(f.ns, "op", DispatchKey::AutogradCUDA, tagKernel(8, "autograd_cuda_kernel"));
  auto t = f.table();
  CHECK(tableHas(t, "AutogradCPU: autograd_kernel [autograd kernel]"));
  CHECK(tableHas(t, "AutogradOther: autograd_kernel [autograd kernel]"));
  CHECK(tableHas(t, "AutogradCUDA: autograd_cuda_kernel [kernel]"));
  CHECK(f.op().call(cpuTensor()) == 7);
  CHECK(f.op().call(cudaTensor()) == 8);
  {
    AutoDispatchBelowAutograd below;  // the TLS excluded set skips the autograd slots
    CHECK(f.op().call(cpuTensor()) == 1);
  }
  InferenceMode inference;
  CHECK(f.op().call(cpuTensor()) == 1);  // an inference tensor never reaches autograd
}

TEST_CASE("table: a layer redispatches below itself with its key removed") {
  Fixture f("t_redispatch");
  auto op = std::make_shared<std::optional<UnaryIntOp>>();
  auto cpu = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(1, "cpu_kernel"));
  auto ag = implAt(f.ns, "op", DispatchKey::Autograd,
                   CppFunction([op](DispatchKeySet ks, const Tensor& x) -> int64_t {
                     return 100 + (*op)->redispatch(ks & after_autograd_keyset, x);
                   }));
  *op = f.op();
  CHECK(f.op().call(cpuTensor()) == 101);
  // Redispatch takes the caller's key set as it is: no TLS read, no extraction.
  CHECK(f.op().redispatch(DispatchKeySet(DispatchKey::CPU), cudaTensor()) == 1);
  Stack stack{cpuTensor()};
  f.op().callBoxed(&stack);
  CHECK(stack.size() == 1);
  CHECK(stack[0].toInt() == 101);
}

TEST_CASE("table: a missing kernel raises the Could-not-run error with the valid backends") {
  Fixture f("t_missing");
  auto cpu = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(1, "cpu_kernel"));
  auto meta = implAt(f.ns, "op", DispatchKey::Meta, tagKernel(5, "meta_kernel"));
  try {
    f.op().call(cudaTensor());
    FAIL("expected an error");
  } catch (const NotImplementedError& e) {
    std::string msg = e.what();
    CHECK(msg.rfind("Could not run 't_missing::op' with arguments from the 'CUDA' backend. 't_missing::op' is "
                    "only available for these backends: [CPU, Meta].\n\n",
                    0) == 0);
    CHECK(msg.find("CPU: cpu_kernel [kernel]\n") != std::string::npos);  // followed by the table
  }
}

TEST_CASE("table: no tensor arguments and no composite kernel is an error; a composite fills slot 0") {
  Library lib(Library::DEF, "t_notensor");
  lib.def("make(int n) -> int");
  auto op = Dispatcher::singleton().findSchemaOrThrow("t_notensor::make", "").typed<int64_t(int64_t)>();
  CHECK_THROWS_WITH(op.call(3), Catch::StartsWith("There were no tensor arguments to this function (for example, you "
                                                  "passed an empty list of tensors), but no fallback function is "
                                                  "registered for schema t_notensor::make."));
  CHECK_THROWS_AS(op.call(3), NotImplementedError);
  Library impl(Library::IMPL, "t_notensor", DispatchKey::CompositeImplicitAutograd);
  impl.impl("make", [](int64_t n) -> int64_t { return n * 2; });
  CHECK(op.call(3) == 6);
}

TEST_CASE("table: backend fallbacks, registered before and after the operator exists") {
  Fixture before("t_fallback_before");
  auto lib = std::make_unique<Library>(Library::IMPL, "_", DispatchKey::PrivateUse1);
  lib->fallback(CppFunction::makeFromBoxedFunction<&answerFallback>().debug("privateuse1_fallback"));
  Fixture after("t_fallback_after");
  Tensor pu1 = make_tensor({1}, ScalarType::Float, Device(DeviceType::PrivateUse1));
  for (Fixture* f : {&before, &after}) {
    CHECK(tableHas(f->table(), "PrivateUse1: privateuse1_fallback [backend fallback]"));
    CHECK(f->op().call(pu1) == 42);  // boxed fallback called with unboxed arguments
  }
  CHECK(fallback_calls == 2);
  // A native kernel takes precedence over the fallback.
  auto native = implAt(after.ns, "op", DispatchKey::PrivateUse1, tagKernel(9, "native_pu1"));
  CHECK(after.op().call(pu1) == 9);
  CHECK(before.op().call(pu1) == 42);
  lib.reset();
  CHECK_FALSE(before.op().hasComputedKernelForDispatchKey(DispatchKey::PrivateUse1));
  CHECK_THROWS_AS(before.op().call(pu1), NotImplementedError);
  CHECK(after.op().call(pu1) == 9);
}

TEST_CASE("table: a fallthrough at AutogradCPU does not affect AutogradCUDA") {
  Fixture f("t_fallthrough");
  auto cpu = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(1, "cpu_kernel"));
  auto cuda = implAt(f.ns, "op", DispatchKey::CUDA, tagKernel(2, "cuda_kernel"));
  auto ag = implAt(f.ns, "op", DispatchKey::Autograd, tagKernel(7, "autograd_kernel"));
  auto ft = implAt(f.ns, "op", DispatchKey::AutogradCPU, CppFunction::makeFallthrough().debug("skip_autograd_cpu"));
  CHECK(tableHas(f.table(), "AutogradCPU: fallthrough skip_autograd_cpu [kernel]"));
  CHECK(f.op().call(cpuTensor()) == 1);
  CHECK(f.op().call(cudaTensor()) == 7);
  // A tensor with both backends uses the highest one's mask.
  Tensor both = tensorWithKeys(cpuTensor().key_set() | cudaTensor().key_set());
  CHECK(f.op().call(both) == 7);
  ft.reset();
  CHECK(f.op().call(cpuTensor()) == 7);
}

TEST_CASE("table: a fallthrough at a non-per-backend key is skipped for every backend") {
  Fixture f("t_fallthrough_tracer");
  auto cpu = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(1, "cpu_kernel"));
  auto tracer = implAt(f.ns, "op", DispatchKey::Tracer, tagKernel(10, "tracer_kernel"));
  IncludeDispatchKeyGuard include_tracer(DispatchKey::Tracer);
  CHECK(f.op().call(cpuTensor()) == 10);
  auto ft = implAt(f.ns, "op", DispatchKey::Tracer, CppFunction::makeFallthrough());
  CHECK(f.op().call(cpuTensor()) == 1);
}

TEST_CASE("table: a fallthrough at any alias key ends: no key set loops through a fallthrough") {
  // Note [Fallthrough terminates]: the composites also fill the Undefined slot (slot 0), so a
  // fallthrough there is reached by calls with nothing below it; it raises instead of
  // redispatching to itself. The Autograd alias covers no backend slot, so its fallthrough
  // leaves the call to find no CPU kernel.
  const std::string loop_error = "fallthrough_kernel was executed for '";
  struct Case {
    DispatchKey alias;
    bool reaches_slot0;
  };
  for (Case c : {Case{DispatchKey::CompositeExplicitAutograd, true}, Case{DispatchKey::CompositeImplicitAutograd, true},
                 Case{DispatchKey::CompositeExplicitAutogradNonFunctional, true}, Case{DispatchKey::Autograd, false}}) {
    INFO(toString(c.alias));
    const std::string ns = "t_ft_alias_" + std::to_string(static_cast<int>(c.alias));
    Library def(Library::DEF, ns);
    def.def("f(Tensor x) -> int");
    def.def("g() -> int");
    auto f = implAt(ns, "f", c.alias, CppFunction::makeFallthrough());
    auto g = implAt(ns, "g", c.alias, CppFunction::makeFallthrough());
    auto fop = Dispatcher::singleton().findSchemaOrThrow(ns + "::f", "");
    auto gop = Dispatcher::singleton().findSchemaOrThrow(ns + "::g", "");
    Tensor requiring_grad = cpuTensor();
    requiring_grad.requires_grad_();
    for (const Tensor& x : {cpuTensor(), cudaTensor(), requiring_grad}) {
      Stack stack{IValue(x)};
      if (c.reaches_slot0) {
        CHECK_THROWS_WITH(fop.callBoxed(&stack), Catch::StartsWith(loop_error + ns + "::f' with no dispatch key left"));
      } else {
        CHECK_THROWS_AS(fop.callBoxed(&stack), NotImplementedError);  // no CPU/CUDA kernel
      }
      CHECK_THROWS_AS(fop.typed<int64_t(const Tensor&)>().call(x), Error);  // the unboxed path too
    }
    Stack empty;
    CHECK_THROWS_AS(gop.callBoxed(&empty), Error);
    // With a real kernel below, a backend key's fallthrough goes on to it.
    auto cpu = implAt(ns, "f", DispatchKey::CPU, tagKernel(5, "cpu_kernel"));
    CHECK(unaryIntOp(ns, "f").call(cpuTensor()) == 5);
  }
}

TEST_CASE("table: a second kernel at a key wins with a warning; removing it restores the first") {
  Fixture f("t_override");
  WarningCapture warnings;
  auto first = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(1, "first_kernel"));
  auto second = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(2, "second_kernel"));
  REQUIRE(warnings.messages.size() == 1);
  CHECK(warnings.messages[0] ==
        "Overriding a previously registered kernel for the same operator and the same dispatch key\n"
        "  operator: t_override::op\n  dispatch key: CPU\n  previous kernel: first_kernel\n"
        "       new kernel: second_kernel");
  CHECK(f.op().call(cpuTensor()) == 2);
  CHECK(f.op().dumpState().find("CPU (inactive): first_kernel") != std::string::npos);
  second.reset();
  CHECK(f.op().call(cpuTensor()) == 1);
  auto third = implAt(f.ns, "op", DispatchKey::CPU, tagKernel(3, "third_kernel"));
  CHECK(warnings.messages.size() == 1);  // the warning is given once per operator and key
  first.reset();  // removing the older one keeps the newest active
  CHECK(f.op().call(cpuTensor()) == 3);
}

TEST_CASE("table: every registration order gives the same table; every deregistration order the bare one") {
  Fixture f("t_order");
  const std::string bare = f.table();
  struct Reg {
    DispatchKey key;
    int64_t tag;
    const char* debug;
  };
  std::array<Reg, 4> regs = {Reg{DispatchKey::CPU, 1, "cpu_kernel"},
                             Reg{DispatchKey::CompositeExplicitAutograd, 2, "explicit_kernel"},
                             Reg{DispatchKey::CompositeImplicitAutograd, 3, "implicit_kernel"},
                             Reg{DispatchKey::Autograd, 4, "autograd_kernel"}};
  std::array<int, 4> order = {0, 1, 2, 3};
  std::optional<std::string> reference;
  int permutations = 0;
  do {
    std::vector<std::unique_ptr<Library>> libs(4);
    for (int i : order) libs[static_cast<size_t>(i)] = implAt(f.ns, "op", regs[i].key, tagKernel(regs[i].tag, regs[i].debug));
    std::string table = f.table();
    if (!reference) reference = table;
    CHECK(table == *reference);
    CHECK(f.op().call(cpuTensor()) == 4);
    // Deregister in this permutation's order too: all 24 orders are covered over the loop.
    for (int i : order) libs[static_cast<size_t>(i)].reset();
    CHECK(f.table() == bare);
    ++permutations;
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(permutations == 24);
  CHECK(reference->find("AutogradCPU: autograd_kernel [autograd kernel]") != std::string::npos);
  CHECK(reference->find("CUDA: explicit_kernel [default backend kernel]") != std::string::npos);
}

TEST_CASE("table: incremental updates after random registrations equal a full recomputation") {
  // Note [Slots a registration changes]: a kernel at a runtime key recomputes at most three
  // slots, a backend fallback one. After every step of a random walk of registrations and
  // deregistrations (direct kernels, aliases, fallthroughs, fallbacks), the published table
  // and masks must be what recomputing everything gives.
  Fixture f("t_incremental");
  const std::array<DispatchKey, 14> keys = {
      DispatchKey::CPU,          DispatchKey::CUDA,         DispatchKey::AutogradCPU,
      DispatchKey::AutogradCUDA, DispatchKey::SparseCPU,    DispatchKey::QuantizedCPU,
      DispatchKey::AutogradOther, DispatchKey::Tracer,      DispatchKey::PrivateUse1,
      DispatchKey::CompositeImplicitAutograd, DispatchKey::CompositeExplicitAutograd,
      DispatchKey::CompositeExplicitAutogradNonFunctional, DispatchKey::Autograd, DispatchKey::Meta};
  const std::array<DispatchKey, 3> fallback_keys = {DispatchKey::PrivateUse1, DispatchKey::Tracer,
                                                    DispatchKey::QuantizedCPU};
  std::vector<std::unique_ptr<Library>> live;
  std::array<std::unique_ptr<Library>, 3> fallbacks;
  uint64_t state = 12345;
  auto next = [&state](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  int steps = 0;
  int64_t tag = 0;
  for (int i = 0; i < 600; ++i) {
    const uint64_t what = next(10);
    if (what < 5 || live.empty()) {
      DispatchKey k = keys[next(keys.size())];
      ++tag;
      CppFunction fn = next(4) == 0 ? CppFunction::makeFallthrough() : tagKernel(tag, detail::concat("k", tag));
      live.push_back(implAt(f.ns, "op", k, std::move(fn)));
    } else if (what < 9) {
      live.erase(live.begin() + static_cast<ptrdiff_t>(next(live.size())));
    } else {
      const size_t b = next(fallback_keys.size());
      if (fallbacks[b]) {
        fallbacks[b].reset();
      } else {
        fallbacks[b] = std::make_unique<Library>(Library::IMPL, "_", fallback_keys[b]);
        fallbacks[b]->fallback(CppFunction::makeFromBoxedFunction<&answerFallback>().debug("random_fallback"));
      }
    }
    auto stale = Dispatcher::singleton().findStaleDispatchTable(f.op());
    INFO("step " << i);
    REQUIRE_FALSE(stale.has_value());
    ++steps;
  }
  CHECK(steps == 600);
  live.clear();
  for (auto& fb : fallbacks) fb.reset();
  CHECK_FALSE(Dispatcher::singleton().findStaleDispatchTable(f.op()).has_value());
}
