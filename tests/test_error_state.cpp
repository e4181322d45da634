// After every kind of user-facing error (docs/errors.md) the process is as it was: the
// operator registry and each operator's registrations and computed table, the backend
// fallbacks, this thread's included/excluded key sets and mode stack, grad mode, inference
// mode and autocast, and the tensors the failed call was given (values, version, autograd
// history). Each error is also checked for its documented message.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "dk/autograd/autograd.h"
#include "dk/autograd/autograd.h"
#include "dk/dispatch.h"
#include "dk/dispatch.h"
#include "dk/dispatch/dispatch_mode.h"
#include "dk/generated/TensorOperators.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/pow.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/transpose.h"
#include "dk/generated/ops/zeros.h"
#include "dk/layers/autocast.h"
#include "dk/modes.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/dispatch/tensor_factories.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/tensor/tensor_options.h"
#include "dk/tensor/type_promotion.h"
#include "dk/util/error.h"

using namespace dk;
using Catch::Matchers::Contains;

namespace {

void noopBoxed(const OperatorHandle&, Stack*) {}

// What an error must not change.
struct ProcessState {
  std::vector<OperatorName> op_names;
  std::map<std::string, std::string> op_dumps;  // registrations and computed table per operator
  std::map<std::string, std::vector<std::string>> registrations_at;  // per dispatch key
  DispatchKeySet tls_included, tls_excluded;
  size_t mode_depth = 0;
  bool grad_mode = false, inference_mode = false, autocast_cpu = false, trace = false;
  // Not compared: an alias-key fallback that fails part way has published the keys it took
  // first, and retires them (Note [Kernel reclamation]: a racing call may hold them); shown in
  // the failure message only.
  size_t retired_kernels = 0;

  bool operator==(const ProcessState& o) const {
    return op_names == o.op_names && op_dumps == o.op_dumps && registrations_at == o.registrations_at &&
           tls_included == o.tls_included && tls_excluded == o.tls_excluded && mode_depth == o.mode_depth &&
           grad_mode == o.grad_mode && inference_mode == o.inference_mode && autocast_cpu == o.autocast_cpu &&
           trace == o.trace;
  }
};

ProcessState snapshot() {
  ProcessState s;
  Dispatcher& d = Dispatcher::singleton();
  s.op_names = d.getAllOpNames();
  for (const char* name : {"t_state::op", "t_state::make", "dk::add.Tensor", "dk::add_.Tensor", "dk::relu", "dk::pow.Tensor_Scalar"}) {
    const std::string full(name);
    const auto dot = full.find('.');
    OperatorName op{full.substr(0, dot), dot == std::string::npos ? "" : full.substr(dot + 1)};
    if (auto h = d.findOp(op)) s.op_dumps[full] = h->dumpState() + h->dumpComputedTable();
  }
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::PrivateUse1, DispatchKey::PrivateUse2,
                        DispatchKey::AutogradCPU, DispatchKey::AutogradOther, DispatchKey::Functionalize,
                        DispatchKey::CompositeImplicitAutograd, DispatchKey::CompositeExplicitAutograd}) {
    s.registrations_at[std::string(toString(k))] = d.getRegistrationsForDispatchKey(k);
  }
  const LocalDispatchKeySet tls = tls_local_dispatch_key_set();
  s.tls_included = tls.included;
  s.tls_excluded = tls.excluded;
  s.mode_depth = currentDispatchModes().size();
  s.grad_mode = GradMode::is_enabled();
  s.inference_mode = InferenceMode::is_enabled();
  s.autocast_cpu = autocast::is_enabled(DeviceType::CPU);
  s.trace = isDispatchTraceEnabled();
  s.retired_kernels = d.retiredKernelCount();
  return s;
}

// The parts of two states that differ, for the failure message.
std::string difference(const ProcessState& a, const ProcessState& b) {
  std::ostringstream out;
  if (a.op_names != b.op_names) out << "operator names differ (" << a.op_names.size() << " vs " << b.op_names.size() << ")\n";
  for (const auto& [name, dump] : a.op_dumps)
    if (b.op_dumps.count(name) == 0 || b.op_dumps.at(name) != dump) out << "operator " << name << " differs\n";
  for (const auto& [key, regs] : a.registrations_at) {
    if (b.registrations_at.at(key) == regs) continue;
    out << "registrations at " << key << ":";
    for (const auto& r : regs) out << " [" << r << "]";
    out << " ->";
    for (const auto& r : b.registrations_at.at(key)) out << " [" << r << "]";
    out << "\n";
  }
  if (a.tls_included != b.tls_included || a.tls_excluded != b.tls_excluded) out << "TLS key sets differ\n";
  if (a.mode_depth != b.mode_depth) out << "mode stack " << a.mode_depth << " -> " << b.mode_depth << "\n";
  if (a.grad_mode != b.grad_mode || a.inference_mode != b.inference_mode || a.autocast_cpu != b.autocast_cpu ||
      a.trace != b.trace)
    out << "grad/inference/autocast/trace mode differs\n";
  if (a.retired_kernels != b.retired_kernels)
    out << "retired kernels " << a.retired_kernels << " -> " << b.retired_kernels << "\n";
  return out.str();
}

// Runs `fails`, which must raise a dk::Error whose message contains `message`, and checks the
// process state is the same afterwards.
template <class F>
void failsWithoutSideEffects(F&& fails, const std::string& message) {
  const ProcessState before = snapshot();
  REQUIRE_THROWS_WITH(fails(), Contains(message));
  CHECK_THROWS_AS(fails(), Error);
  const ProcessState after = snapshot();
  INFO(difference(before, after));
  CHECK(after == before);
}

// The values of a float tensor.
std::vector<float> values(const Tensor& t) {
  Tensor c = t.contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

// A fixture operator: t_state::op(Tensor x) -> int with a CPU kernel, t_state::make(int n) ->
// int with none, and a backend fallback at PrivateUse2.
struct Fixture {
  Library def{Library::DEF, "t_state", std::nullopt, "state.cpp", 1};
  Library cpu{Library::IMPL, "t_state", DispatchKey::CPU, "state.cpp", 2};
  Library fallback{Library::IMPL, "_", DispatchKey::PrivateUse2, "state.cpp", 3};
  Fixture() {
    def.def("op(Tensor x) -> int");
    def.def("make(int n) -> int");
    cpu.impl("op", [](const Tensor&) -> int64_t { return 1; });
    fallback.fallback(CppFunction::makeFromBoxedFunction<&noopBoxed>());
  }
};

// A mode that passes every call through (to check a failing call inside a mode).
class PassThroughMode : public DispatchMode {
 public:
  void dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) override { op.callBoxed(stack); }
};

// y = a * b, recorded by hand below autograd (saving both inputs), and s = sum(y): the graph
// of the autograd errors, independent of generated autograd kernels.
class MulBackward final : public autograd::Node {
 public:
  autograd::variable_list apply(autograd::variable_list grads) override {
    const Tensor& g = grads.at(0);
    return {dk::mul(g, other_.unpack()), dk::mul(g, self_.unpack())};
  }
  void release_variables() override {
    self_.reset_data();
    other_.reset_data();
  }
  std::string name() const override { return "MulBackward"; }
  autograd::SavedVariable self_, other_;
};

class SumBackward final : public autograd::Node {
 public:
  explicit SumBackward(std::vector<int64_t> sizes) : sizes_(std::move(sizes)) {}
  autograd::variable_list apply(autograd::variable_list grads) override {
    return {dk::mul(dk::full(sizes_, 1.0, ScalarType::Float), grads.at(0))};
  }
  std::vector<int64_t> sizes_;
};

Tensor recordedMul(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    AutoDispatchBelowADInplaceOrView below;
    out = dk::mul(a, b);
  }
  auto node = std::make_shared<MulBackward>();
  node->set_next_edges(autograd::collect_next_edges(a, b));
  node->self_ = autograd::SavedVariable(a, false);
  node->other_ = autograd::SavedVariable(b, false);
  autograd::set_history(out, node);
  return out;
}

Tensor recordedSum(const Tensor& x) {
  Tensor out;
  {
    AutoDispatchBelowADInplaceOrView below;
    out = dk::sum(x);
  }
  auto node = std::make_shared<SumBackward>(x.sizes());
  node->set_next_edges(autograd::collect_next_edges(x));
  autograd::set_history(out, node);
  return out;
}

}  // namespace

TEST_CASE("error state: failed registrations change no registry, table or fallback") {
  Fixture f;
  SECTION("duplicate def") {
    Library fragment(Library::FRAGMENT, "t_state");
    failsWithoutSideEffects([&] { fragment.def("op(Tensor x) -> int"); },
                            "with the same name and overload name multiple times");
  }
  SECTION("a second DK_LIBRARY for a namespace") {
    failsWithoutSideEffects([] { Library again(Library::DEF, "t_state"); }, "Only a single DK_LIBRARY");
  }
  SECTION("schema parse error in def") {
    failsWithoutSideEffects([&] { f.def.def("op2(Tensor x"); }, "schema parse error at column 13: expected ',' or ')' but found end of input");
  }
  SECTION("kernel that does not match the schema") {
    Library impl(Library::IMPL, "t_state", DispatchKey::Meta);
    failsWithoutSideEffects([&] { impl.impl("op", [](const Tensor&, double) -> int64_t { return 0; }); },
                            "reason: The number of arguments is different. 1 vs 2.");
  }
  SECTION("kernels with different C++ signatures") {
    Library impl(Library::IMPL, "t_state", DispatchKey::Meta);
    failsWithoutSideEffects([&] { impl.impl("op", [](Tensor) -> int64_t { return 0; }); },
                            "Mismatch in kernel C++ signatures");
  }
  SECTION("duplicate fallback") {
    Library second(Library::IMPL, "_", DispatchKey::PrivateUse2);
    failsWithoutSideEffects([&] { second.fallback(CppFunction::makeFromBoxedFunction<&noopBoxed>()); },
                            "Tried to register multiple backend fallbacks for the same dispatch key PrivateUse2");
  }
  SECTION("alias-key fallback that clashes part way: all or nothing") {
    Library clash(Library::IMPL, "_", DispatchKey::CompositeImplicitAutograd);
    failsWithoutSideEffects([&] { clash.fallback(CppFunction::makeFromBoxedFunction<&noopBoxed>()); },
                            "Tried to register multiple backend fallbacks for the same dispatch key");
  }
  SECTION("bad namespace") {
    failsWithoutSideEffects([] { Library bad(Library::DEF, "bad-name"); }, "'bad-name' is not a valid namespace");
    failsWithoutSideEffects([&] { f.def.def("other::op(Tensor x) -> int"); },
                            "cannot define 'other::op': it belongs to namespace 'other'");
  }
  SECTION("bad key") {
    failsWithoutSideEffects([&] { f.cpu.impl("op", DispatchKey::CUDA, [](const Tensor&) -> int64_t { return 0; }); },
                            "Explicitly provided dispatch key (CUDA) is inconsistent with the dispatch key of the "
                            "enclosing DK_LIBRARY_IMPL block (CPU)");
  }
}

TEST_CASE("error state: failed calls change no thread state, table or argument") {
  Fixture f;
  const Tensor x = dk::tensor({1.0, 2.0, 3.0});
  const Tensor meta = dk::zeros({3}, TensorOptions().device(kMeta));
  const auto op = Dispatcher::singleton().findSchemaOrThrow("t_state::op", "");
  // Each error, plain and inside scoped thread state (a mode, no-grad, autocast, a guard):
  // the scopes are unwound to exactly what they were.
  const int scope = GENERATE(0, 1);
  std::unique_ptr<DispatchModeGuard> mode;
  std::unique_ptr<NoGradGuard> no_grad;
  std::unique_ptr<AutocastGuard> autocast;
  std::unique_ptr<ExcludeDispatchKeyGuard> exclude;
  if (scope == 1) {
    mode = std::make_unique<DispatchModeGuard>(std::make_shared<PassThroughMode>());
    no_grad = std::make_unique<NoGradGuard>();
    autocast = std::make_unique<AutocastGuard>(kCPU, kBFloat16);
    exclude = std::make_unique<ExcludeDispatchKeyGuard>(DispatchKeySet(DispatchKey::TESTING_ONLY_GenericMode));
  }
  const std::vector<float> x_values = values(x);
  const int64_t x_version = x._version();

  SECTION("missing kernel") {
    const Tensor pu1 = make_tensor({1}, ScalarType::Float, Device(DeviceType::PrivateUse1));
    failsWithoutSideEffects([&] { (void)op.typed<int64_t(const Tensor&)>().call(pu1); },
                            "Could not run 't_state::op' with arguments from the 'PrivateUse1' backend. 't_state::op' "
                            "is only available for these backends: [CPU, PrivateUse2].");
    CHECK_THROWS_AS(op.typed<int64_t(const Tensor&)>().call(pu1), NotImplementedError);
  }
  SECTION("no tensor arguments") {
    const auto make = Dispatcher::singleton().findSchemaOrThrow("t_state::make", "").typed<int64_t(int64_t)>();
    failsWithoutSideEffects([&] { (void)make.call(3); },
                            "There were no tensor arguments to this function (for example, you passed an empty list "
                            "of tensors), but no fallback function is registered for schema t_state::make.");
  }
  SECTION("wrong typed signature") {
    failsWithoutSideEffects([&] { (void)op.typed<double(const Tensor&)>(); },
                            "Tried to access or call an operator with a wrong signature.\n  operator: t_state::op\n");
  }
  SECTION("wrong boxed stack") {
    const auto relu = Dispatcher::singleton().findSchemaOrThrow("dk::relu", "");
    // Too few values: keys come from the tensors among them, the adapter counts them.
    const auto add = Dispatcher::singleton().findSchemaOrThrow("dk::add", "Tensor");
    failsWithoutSideEffects([&] {
      Stack short_stack{IValue(x), IValue(x)};
      add.callBoxed(&short_stack);
    }, "dk::add.Tensor: a boxed call needs 3 arguments on the stack but the stack has 2");
    // Too few values, none of them a tensor: still the arity error, not a missing kernel.
    failsWithoutSideEffects([&] {
      Stack empty;
      relu.callBoxed(&empty);
    }, "dk::relu: a boxed call needs 1 arguments on the stack but the stack has 0");
    // The right count but no tensor among them: no key to dispatch on.
    failsWithoutSideEffects([&] {
      Stack none_only{IValue()};
      relu.callBoxed(&none_only);
    }, "There were no tensor arguments to this function");
    failsWithoutSideEffects([&] {
      Stack none{IValue(x), IValue(), IValue(1)};
      add.callBoxed(&none);
    }, "expected an IValue of kind Tensor but got None");
    failsWithoutSideEffects([&] {
      Stack wrong{IValue(x), IValue(x), IValue("one")};
      add.callBoxed(&wrong);
    }, "expected an IValue of kind Int, Double or Bool (a Scalar) but got String");
  }
  SECTION("device mismatch") {
    failsWithoutSideEffects([&] { (void)dk::add(x, meta); },
                            "dk::add: expected all tensors to be on the same device, but found at least two devices, "
                            "cpu (argument 'self') and meta (argument 'other')");
    failsWithoutSideEffects([&] { x.add_(meta); }, "expected all tensors to be on the same device");
  }
  SECTION("dtype not supported") {
    const Tensor b = dk::tensor({1.0}).to(kBool);
    failsWithoutSideEffects([&] { (void)dk::pow(b, true); }, "pow: unsupported dtype Bool");
  }
  SECTION("shapes that do not broadcast") {
    const Tensor four = dk::tensor({1.0, 2.0, 3.0, 4.0});
    failsWithoutSideEffects([&] { (void)dk::add(x, four); },
                            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0 "
                            "(shapes [3] and [4])");
    failsWithoutSideEffects([&] { x.add_(four); }, "must match the size of tensor b (4)");
  }
  SECTION("bad dim") {
    failsWithoutSideEffects([&] { (void)dk::transpose(x, 0, 3); },
                            "Dimension out of range (expected to be in range of [-1, 0], but got 3)");
    failsWithoutSideEffects([&] { (void)dk::sum(x, std::vector<int64_t>{1}); },
                            "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  }
  // The failed calls (in-place ones included) left their arguments alone.
  CHECK(values(x) == x_values);
  CHECK(x._version() == x_version);
  CHECK(op.typed<int64_t(const Tensor&)>().call(x) == 1);
}

TEST_CASE("error state: autograd errors change no graph, gradient or grad mode") {
  SECTION("in-place on a leaf that requires grad") {
    const Tensor x = dk::tensor({1.0, 2.0}).requires_grad_();
    failsWithoutSideEffects([&] { autograd::check_inplace(x); },
                            "a leaf Variable that requires grad is being used in an in-place operation.");
    CHECK(x.is_leaf());
    CHECK(x.requires_grad());
    CHECK(x.grad_fn() == nullptr);
    CHECK_FALSE(x.grad().defined());
    CHECK(x._version() == 0);
  }
  SECTION("second backward without retain_graph") {
    const Tensor x = dk::tensor({1.0, 2.0}).requires_grad_();
    const Tensor w = dk::tensor({3.0, 4.0});
    const Tensor s = recordedSum(recordedMul(x, w));
    s.backward();
    REQUIRE(values(x.grad()) == std::vector<float>{3, 4});
    const auto grad_fn = s.grad_fn();
    failsWithoutSideEffects([&] { s.backward(); }, "Trying to backward through the graph a second time");
    CHECK(values(x.grad()) == std::vector<float>{3, 4});  // not accumulated again
    CHECK(s.grad_fn() == grad_fn);
  }
  SECTION("a saved tensor modified in place") {
    const Tensor x = dk::tensor({1.0, 2.0}).requires_grad_();
    const Tensor w = dk::tensor({3.0, 4.0});
    const Tensor s = recordedSum(recordedMul(x, w));
    w.unsafeGetTensorImpl()->bump_version();  // as an in-place operation on w would
    failsWithoutSideEffects([&] { s.backward(); },
                            "one of the variables needed for gradient computation has been modified by an inplace "
                            "operation: [Float [2]] is at version 1; expected version 0 instead.");
    CHECK_FALSE(x.grad().defined());
    CHECK(w._version() == 1);
  }
  CHECK(GradMode::is_enabled());
}
