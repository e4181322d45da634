// Observers at operator entry and exit, and the profiler built on them.
#include <catch2/catch.hpp>

#include <thread>

#include "dispatch_test_util.h"
#include "dk/layers/profiler.h"

using namespace dk;
using namespace dk::testing;

namespace {
struct Seen {
  std::string op;
  std::string key;
  std::string kind;
  int depth;
  bool threw;
  size_t inputs;
  size_t outputs;
};

struct Fixture {
  Fixture() : def(Library::DEF, "t_obs") {
    def.def("op(Tensor x) -> int");
    def.impl("op", DispatchKey::CPU, [](const Tensor& x) -> int64_t { return x.dim(); });
    def.impl("op", DispatchKey::Autograd, CppFunction([](DispatchKeySet ks, const Tensor& x) -> int64_t {
               static auto op = unaryIntOp("t_obs", "op");
               return op.redispatch(ks & after_autograd_keyset, x) + 100;
             }));
    def.def("fails(Tensor x) -> int");
    def.impl("fails", DispatchKey::CPU, [](const Tensor&) -> int64_t { throw Error("kernel failed"); });
  }
  Library def;
};
}  // namespace

TEST_CASE("observers: entry and exit callbacks see name, key set, nesting and boxed values") {
  Fixture f;
  std::vector<Seen> entered, exited;
  Observer observer;
  observer.needs_inputs = true;
  observer.needs_outputs = true;
  observer.on_enter = [&](const ObservedCall& c) {
    entered.push_back({c.op.operator_name().toString(), std::string(toString(c.key_set.highestPriorityTypeId())),
                       std::string(toString(c.kind)), c.depth, c.threw, c.inputs ? c.inputs->size() : 0, 0});
  };
  observer.on_exit = [&](const ObservedCall& c) {
    exited.push_back({c.op.operator_name().toString(), "", std::string(toString(c.kind)), c.depth, c.threw,
                      c.inputs ? c.inputs->size() : 0, c.outputs ? c.outputs->size() : 0});
    if (c.outputs) CHECK(c.outputs->at(0).toInt() == (c.depth == 0 ? 102 : 2));
  };
  {
    ScopedObserver scoped(observer);
    CHECK(unaryIntOp("t_obs", "op").call(make_tensor({2, 2})) == 102);
  }
  REQUIRE(entered.size() == 2);
  CHECK(entered[0].key == "AutogradCPU");
  CHECK(entered[0].kind == "call");
  CHECK(entered[0].depth == 0);
  CHECK(entered[0].inputs == 1);
  CHECK(entered[1].key == "CPU");
  CHECK(entered[1].kind == "redispatch");
  CHECK(entered[1].depth == 1);
  REQUIRE(exited.size() == 2);
  CHECK(exited[0].depth == 1);  // the inner call returns first
  CHECK(exited[1].outputs == 1);
  // Removed: nothing more is seen, and the slow path is off again.
  unaryIntOp("t_obs", "op").call(make_tensor({2}));
  CHECK(entered.size() == 2);
  CHECK_FALSE(detail::dispatchSlowPathEnabled());
}

TEST_CASE("observers: every operator follows the slow-path flag, including ones defined while it is on") {
  // Note [Per-operator slow-path flag]: each entry keeps its own copy of the flag.
  Fixture f;
  int seen = 0;
  Observer observer;
  observer.on_enter = [&](const ObservedCall&) { ++seen; };
  {
    ScopedObserver scoped(observer);
    Library late(Library::DEF, "t_obs_late");  // defined after the observer was registered
    late.def("op(Tensor x) -> int");
    late.impl("op", DispatchKey::CPU, [](const Tensor& x) -> int64_t { return x.dim(); });
    CHECK(unaryIntOp("t_obs_late", "op").call(make_tensor({2})) == 1);
    CHECK(seen == 1);
    CHECK(unaryIntOp("t_obs", "op").call(make_tensor({2})) == 101);
    CHECK(seen == 3);  // the call and its redispatch
    CHECK(Dispatcher::singleton().findSchemaOrThrow("t_obs_late::op", "").entry().slowPathEnabled());
  }
  // Off again for both, and for an operator defined after the observer went away.
  Library later(Library::DEF, "t_obs_later");
  later.def("op(Tensor x) -> int");
  later.impl("op", DispatchKey::CPU, [](const Tensor& x) -> int64_t { return x.dim(); });
  CHECK(unaryIntOp("t_obs_later", "op").call(make_tensor({2})) == 1);
  CHECK(unaryIntOp("t_obs", "op").call(make_tensor({2})) == 101);
  CHECK(seen == 3);
  CHECK_FALSE(Dispatcher::singleton().findSchemaOrThrow("t_obs::op", "").entry().slowPathEnabled());
  CHECK_FALSE(Dispatcher::singleton().findSchemaOrThrow("t_obs_later::op", "").entry().slowPathEnabled());
}

TEST_CASE("observers: boxed calls, sequence numbers, and kernels that raise") {
  Fixture f;
  std::vector<uint64_t> sequence;
  std::vector<bool> threw;
  Observer observer;
  observer.needs_outputs = true;
  observer.on_enter = [&](const ObservedCall& c) { sequence.push_back(c.sequence_nr); };
  observer.on_exit = [&](const ObservedCall& c) { threw.push_back(c.threw); };
  ScopedObserver scoped(observer);
  Stack stack{IValue(make_tensor({3}))};
  Dispatcher::singleton().findSchemaOrThrow("t_obs::op", "").callBoxed(&stack);
  CHECK(stack.at(0).toInt() == 101);
  auto fails = unaryIntOp("t_obs", "fails");
  CHECK_THROWS_WITH(fails.call(make_tensor({1})), "kernel failed");
  REQUIRE(sequence.size() == 3);
  CHECK(sequence[0] < sequence[1]);
  CHECK(sequence[1] < sequence[2]);
  CHECK(threw == std::vector<bool>{false, false, true});
}

TEST_CASE("observers: thread-local observers see only their thread; global ones see all") {
  Fixture f;
  std::atomic<int> local_calls{0}, global_calls{0};
  Observer local;
  local.on_enter = [&](const ObservedCall&) { ++local_calls; };
  Observer global;
  global.on_enter = [&](const ObservedCall& c) {
    if (c.depth == 0) ++global_calls;
  };
  ScopedObserver l(local, /*thread_local_only=*/true);
  ScopedObserver g(global);
  auto op = unaryIntOp("t_obs", "op");
  std::thread([&] { op.call(make_tensor({1})); }).join();
  CHECK(local_calls.load() == 0);
  CHECK(global_calls.load() == 1);
  op.call(make_tensor({1}));
  CHECK(local_calls.load() == 2);  // the call and its redispatch
  CHECK(global_calls.load() == 2);
}

TEST_CASE("profiler: a per-operator table and a Chrome trace with nested ranges") {
  Fixture f;
  auto op = unaryIntOp("t_obs", "op");
  profiler::Profiler prof;
  for (int i = 0; i < 5; ++i) op.call(make_tensor({2}));
  prof.stop();
  op.call(make_tensor({2}));  // after stop: not recorded
  auto stats = prof.stats();
  REQUIRE(stats.count("t_obs::op") == 1);
  CHECK(stats["t_obs::op"].calls == 10);  // 5 calls + 5 redispatches
  auto events = prof.events();
  REQUIRE(events.size() == 10);
  CHECK(events[0].depth == 1);  // inner range completes first
  CHECK(events[0].key == "CPU");
  CHECK(events[1].depth == 0);
  CHECK(events[1].key == "AutogradCPU");
  CHECK(events[1].start_ns <= events[0].start_ns);
  CHECK(events[1].start_ns + events[1].duration_ns >= events[0].start_ns + events[0].duration_ns);
  std::string table = prof.table();
  INFO(table);
  CHECK(table.rfind("Operator      Calls    Total (us)    Avg (us)     Share\n", 0) == 0);
  CHECK(table.find("\nt_obs::op        10 ") != std::string::npos);
  std::string trace = prof.chromeTrace();
  CHECK(trace.rfind("{\"traceEvents\": [\n  {\"name\": \"t_obs::op\", \"cat\": \"operator\", \"ph\": \"X\", \"ts\": ", 0) == 0);
  CHECK(trace.find("\"args\": {\"key\": \"AutogradCPU\", \"kind\": \"call\"") != std::string::npos);
  CHECK(trace.find("\"args\": {\"key\": \"CPU\", \"kind\": \"redispatch\"") != std::string::npos);
  CHECK(trace.substr(trace.size() - 29) == "\n], \"displayTimeUnit\": \"ns\"}\n");
}
