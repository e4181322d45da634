// Dispatch modes (the Python key) and the modes that ship with the library.
#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "dispatch_test_util.h"
#include "dk/layers/modes.h"
#include "dk/tensor/empty_tensor.h"

using namespace dk;
using namespace dk::testing;

namespace {
Tensor mm_meta(const Tensor& a, const Tensor& b) { return make_tensor({a.sizes()[0], b.sizes()[1]}); }
Tensor relu_meta(const Tensor& a) { return make_tensor(a.sizes()); }
}  // namespace

DK_LIBRARY(t_mode, m) {
  m.def("mm(Tensor a, Tensor b) -> Tensor");
  m.def("relu(Tensor a) -> Tensor");
  m.def("mlp(Tensor x, Tensor w1, Tensor w2) -> Tensor");
  m.def("alloc(int n) -> Tensor");
  m.def("same(Tensor x) -> Tensor");
}
DK_LIBRARY_IMPL(t_mode, CompositeExplicitAutograd, m) {
  m.impl("alloc", [](int64_t n) -> Tensor { return detail::empty_contiguous({n}, ScalarType::Float, Device(DeviceType::CPU)); });
  m.impl("same", [](const Tensor& x) -> Tensor { return x; });
}
DK_LIBRARY_IMPL(t_mode, CPU, m) {
  m.impl("mm", DK_FN(mm_meta));
  m.impl("relu", DK_FN(relu_meta));
}
DK_LIBRARY_IMPL(t_mode, CompositeImplicitAutograd, m) {
  m.impl("mlp", [](const Tensor& x, const Tensor& w1, const Tensor& w2) -> Tensor {
    static auto mm = Dispatcher::singleton().findSchemaOrThrow("t_mode::mm", "").typed<Tensor(const Tensor&, const Tensor&)>();
    static auto relu = Dispatcher::singleton().findSchemaOrThrow("t_mode::relu", "").typed<Tensor(const Tensor&)>();
    return mm.call(relu.call(mm.call(x, w1)), w2);
  });
}

namespace {
using MM = TypedOperatorHandle<Tensor(const Tensor&, const Tensor&)>;
MM mmOp() { return Dispatcher::singleton().findSchemaOrThrow("t_mode::mm", "").typed<Tensor(const Tensor&, const Tensor&)>(); }
auto mlpOp() {
  return Dispatcher::singleton()
      .findSchemaOrThrow("t_mode::mlp", "")
      .typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
}

// Records the order in which modes see calls, then forwards.
struct Tagging : DispatchMode {
  Tagging(std::string name, std::vector<std::string>* log) : name(std::move(name)), log(log) {}
  void dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) override {
    log->push_back(name + ":" + op.operator_name().toString());
    op.callBoxed(stack);
  }
  std::string name;
  std::vector<std::string>* log;
};

struct Raising : DispatchMode {
  void dispatch(const OperatorHandle& op, DispatchKeySet, Stack*) override {
    throw Error("mode refused " + op.operator_name().toString());
  }
};

// Replaces every mm result by a 1x1 tensor, skipping the kernels entirely.
struct Replacing : DispatchMode {
  void dispatch(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) override {
    if (op.operator_name().name == "t_mode::mm") {
      drop(*stack, 2);
      stack->push_back(IValue(make_tensor({1, 1})));
      return;
    }
    op.redispatchBoxed(ks, stack);
  }
};
}  // namespace

TEST_CASE("modes: a pushed mode sees every call and adds the Python key only while pushed") {
  std::vector<std::string> log;
  CHECK_FALSE(tls_is_dispatch_key_included(DispatchKey::Python));
  {
    DispatchModeGuard guard(std::make_shared<Tagging>("a", &log));
    CHECK(tls_is_dispatch_key_included(DispatchKey::Python));
    Tensor y = mmOp().call(make_tensor({2, 3}), make_tensor({3, 4}));
    CHECK(y.sizes() == std::vector<int64_t>{2, 4});
  }
  CHECK_FALSE(tls_is_dispatch_key_included(DispatchKey::Python));
  CHECK(log == std::vector<std::string>{"a:t_mode::mm"});
  mmOp().call(make_tensor({2, 3}), make_tensor({3, 4}));
  CHECK(log.size() == 1);
}

TEST_CASE("modes: nested modes compose in stack order and see a composite's decomposition") {
  std::vector<std::string> log;
  DispatchModeGuard outer(std::make_shared<Tagging>("outer", &log));
  DispatchModeGuard inner(std::make_shared<Tagging>("inner", &log));
  mlpOp().call(make_tensor({2, 3}), make_tensor({3, 4}), make_tensor({4, 5}));
  // The top mode (inner) sees each call first and forwards it to the next (outer). The
  // composite mlp runs at the autograd slot, above Python, as in PyTorch: modes see the
  // operators it decomposes into, not mlp itself.
  CHECK(log == std::vector<std::string>{"inner:t_mode::mm", "outer:t_mode::mm",
                                        "inner:t_mode::relu", "outer:t_mode::relu", "inner:t_mode::mm",
                                        "outer:t_mode::mm"});
  CHECK(currentDispatchModes().size() == 2);
}

TEST_CASE("modes: a mode can answer a call itself; redispatch with its key set skips later modes") {
  std::vector<std::string> log;
  DispatchModeGuard counting(std::make_shared<Tagging>("below", &log));
  DispatchModeGuard replacing(std::make_shared<Replacing>());
  Tensor y = mmOp().call(make_tensor({2, 3}), make_tensor({3, 4}));
  CHECK(y.sizes() == std::vector<int64_t>{1, 1});
  CHECK(log.empty());
}

TEST_CASE("modes: a mode that raises leaves the mode stack as it was") {
  std::vector<std::string> log;
  DispatchModeGuard below(std::make_shared<Tagging>("below", &log));
  {
    DispatchModeGuard raising(std::make_shared<Raising>());
    CHECK_THROWS_WITH(mmOp().call(make_tensor({2, 3}), make_tensor({3, 4})), "mode refused t_mode::mm");
    CHECK(currentDispatchModes().size() == 2);
    CHECK(tls_is_dispatch_key_included(DispatchKey::Python));
  }
  mmOp().call(make_tensor({2, 3}), make_tensor({3, 4}));
  CHECK(log == std::vector<std::string>{"below:t_mode::mm"});
}

namespace {
// Ends its own mode on the first call it sees: destroys the guard that pushed it.
struct SelfEnding : DispatchMode {
  void dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) override {
    ++calls;
    guard->reset();
    op.callBoxed(stack);
  }
  std::unique_ptr<DispatchModeGuard>* guard = nullptr;
  int calls = 0;
};
}  // namespace

TEST_CASE("modes: a handler that destroys its own guard leaves the stack and stops intercepting") {
  std::vector<std::string> log;
  DispatchModeGuard below(std::make_shared<Tagging>("below", &log));
  auto mode = std::make_shared<SelfEnding>();
  auto guard = std::make_unique<DispatchModeGuard>(mode);
  mode->guard = &guard;
  mmOp().call(make_tensor({2, 3}), make_tensor({3, 4}));
  CHECK(mode->calls == 1);
  CHECK(log == std::vector<std::string>{"below:t_mode::mm"});  // the call went on to the next mode
  CHECK(currentDispatchModes().size() == 1);
  mmOp().call(make_tensor({2, 3}), make_tensor({3, 4}));
  CHECK(mode->calls == 1);  // no longer pushed
  CHECK(log.size() == 2);
}

TEST_CASE("modes: the last mode ending itself takes the Python key with it") {
  auto mode = std::make_shared<SelfEnding>();
  auto guard = std::make_unique<DispatchModeGuard>(mode);
  mode->guard = &guard;
  mmOp().call(make_tensor({2, 3}), make_tensor({3, 4}));
  CHECK(currentDispatchModes().empty());
  CHECK_FALSE(tls_is_dispatch_key_included(DispatchKey::Python));
}

TEST_CASE("modes: modes are per thread") {
  auto counter = std::make_shared<OpCounter>();
  DispatchModeGuard guard(counter);
  std::thread([] { mmOp().call(make_tensor({2, 3}), make_tensor({3, 4})); }).join();
  CHECK(counter->total() == 0);
  mmOp().call(make_tensor({2, 3}), make_tensor({3, 4}));
  CHECK(counter->total() == 1);
}

TEST_CASE("modes: OpCounter counts per operator overload") {
  auto counter = std::make_shared<OpCounter>();
  {
    DispatchModeGuard guard(counter);
    for (int i = 0; i < 3; ++i) mlpOp().call(make_tensor({2, 3}), make_tensor({3, 4}), make_tensor({4, 5}));
  }
  CHECK(counter->count("t_mode::mm") == 6);
  CHECK(counter->count("t_mode::relu") == 3);
  CHECK(counter->count("t_mode::mlp") == 0);  // a composite: seen through its decomposition
  CHECK(counter->count("t_mode::nothing") == 0);
  CHECK(counter->total() == 9);
  CHECK(counter->str() == "t_mode::mm: 6\nt_mode::relu: 3\n");
  counter->reset();
  CHECK(counter->total() == 0);
}

TEST_CASE("modes: GraphRecorder records shapes, dtypes and where inputs came from") {
  auto recorder = std::make_shared<GraphRecorder>();
  {
    DispatchModeGuard guard(recorder);
    mlpOp().call(make_tensor({2, 3}), make_tensor({3, 4}), make_tensor({4, 5}));
  }
  CHECK(recorder->str() ==
        "%0 = t_mode::mm(%in0: Float[2, 3], %in1: Float[3, 4]) -> Float[2, 4]\n"
        "%1 = t_mode::relu(%0: Float[2, 4]) -> Float[2, 4]\n"
        "%2 = t_mode::mm(%1: Float[2, 4], %in2: Float[4, 5]) -> Float[2, 5]\n");
  std::string dot = recorder->dot();
  CHECK(dot.rfind("digraph dk {\n", 0) == 0);
  CHECK(dot.find("  n0 -> n1 [label=\"Float[2, 4]\"];\n") != std::string::npos);
  CHECK(dot.find("  in2 -> n2 [label=\"Float[4, 5]\"];\n") != std::string::npos);
  recorder->clear();
  CHECK(recorder->nodes().empty());
}

TEST_CASE("modes: RankLogger writes one line per call, diffable across ranks") {
  std::string prefix = "/tmp/dk_rank_logger_test_" + std::to_string(::getpid());
  auto run = [&](int rank) {
    auto logger = RankLogger::forRank(prefix, rank, RankLogger::Options{false});
    {
      DispatchModeGuard guard(logger);
      mlpOp().call(make_tensor({2, 3}), make_tensor({3, 4}), make_tensor({4, 5}));
    }
    logger->flush();
    std::ifstream in(logger->path());
    std::stringstream text;
    text << in.rdbuf();
    std::remove(logger->path().c_str());
    return text.str();
  };
  std::string rank0, rank1;
  std::thread t0([&] { rank0 = run(0); }), t1([&] { rank1 = run(1); });
  t0.join();
  t1.join();
  CHECK(rank0 ==
        "0 t_mode::mm(Float[2, 3], Float[3, 4])\n1 t_mode::relu(Float[2, 4])\n2 t_mode::mm(Float[2, 4], Float[4, 5])\n");
  CHECK(rank0 == rank1);
  auto timed = std::make_shared<RankLogger>(prefix + ".timed.log");
  {
    DispatchModeGuard guard(timed);
    mmOp().call(make_tensor({1, 1}), make_tensor({1, 1}));
  }
  timed->flush();
  std::ifstream in(timed->path());
  std::string line;
  std::getline(in, line);
  CHECK(line.rfind("0 t_mode::mm(Float[1, 1], Float[1, 1]) @", 0) == 0);
  CHECK(line.substr(line.size() - 2) == "us");
  std::remove(timed->path().c_str());
  CHECK_THROWS_WITH(RankLogger("/nonexistent-dir/x.log"), "RankLogger: cannot open '/nonexistent-dir/x.log' for writing");
}

TEST_CASE("modes: AllocationTracker reports where live tensors were made") {
  auto tracker = std::make_shared<AllocationTracker>();
  auto alloc = Dispatcher::singleton().findSchemaOrThrow("t_mode::alloc", "").typed<Tensor(int64_t)>();
  auto same = Dispatcher::singleton().findSchemaOrThrow("t_mode::same", "").typed<Tensor(const Tensor&)>();
  Tensor kept;
  {
    DispatchModeGuard guard(tracker);
    Tensor a = alloc.call(4);       // freed at scope exit
    {
      AllocationTracker::Scope scope("layer1");
      kept = alloc.call(6);
    }
    Tensor b = same.call(kept);     // not an allocation: same storage as its input
    CHECK(tracker->alive().size() == 2);
  }
  auto alive = tracker->alive();
  REQUIRE(alive.size() == 1);
  CHECK(alive[0].op == "t_mode::alloc");
  CHECK(alive[0].label == "layer1");
  CHECK(alive[0].nbytes == 24);
  CHECK(tracker->aliveBytes() == 24);
  CHECK(tracker->report() == "t_mode::alloc (call 1, in 'layer1'): Float[6], 24 bytes\n");
  kept = Tensor();
  CHECK(tracker->alive().empty());
  CHECK(tracker->report().empty());
}
