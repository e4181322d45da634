// dk::testing::opcheck (dk/testing/opcheck.h): correct operators (functional, in-place, out=, a
// view, a random one, a data-dependent one) pass every check; an operator written to fail each
// check is caught by that check, with a message naming the argument or output.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "dk/autograd/autograd.h"
#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/library.h"
#include "dk/generated/ops/clone.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/transpose.h"
#include "dk/tensor/tensor.h"
#include "dk/testing/gradcheck.h"
#include "dk/testing/opcheck.h"
#include "dk/util/error.h"

using namespace dk;
using dk::testing::opcheck;
using dk::testing::OpcheckOptions;
using dk::testing::OpcheckResult;

namespace {

OperatorHandle op(const char* name, const char* overload = "") {
  return Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

Tensor doubles(std::vector<int64_t> sizes, std::vector<double> values) {
  return dk::testing::double_tensor(sizes, values);
}

void requireAllPass(const OpcheckResult& r) {
  INFO(r.toString());
  REQUIRE(r.passed());
  for (const auto& [check, outcome] : r.outcome) CHECK((outcome == "ok" || outcome.rfind("skipped: ", 0) == 0));
}

// ---- operators written to fail one check each (namespace opcheck_test)

// Writes x, whose schema says read-only.
Tensor mutatesInput(const Tensor& x) {
  x.add_(1);
  return dk::clone(x);
}
// Returns x itself; the schema gives no alias annotation.
Tensor returnsInput(const Tensor& x) { return x; }
// A correct CPU kernel whose Meta kernel gets the shape wrong (transposed).
Tensor doubledCpu(const Tensor& x) { return dk::mul(x, 2); }
Tensor doubledWrongMeta(const Tensor& x) {
  return dk::empty({x.size(1), x.size(0)}, x.scalar_type(), std::nullopt, Device(DeviceType::Meta));
}
// Calls other operators from a CPU kernel without an autograd kernel: the calls record.
Tensor recordsGraph(const Tensor& x) { return dk::mul(x, 3); }

// y = 3x with a hand-written derivative: Backward multiplies the gradient by its factor.
template <int factor>
class ScaleBackward final : public autograd::Node {
 public:
  autograd::variable_list apply(autograd::variable_list grads) override { return {dk::mul(grads.at(0), factor)}; }
};
Tensor tripledBelowAutograd(const Tensor& x) { return dk::mul(x, 3); }
template <int derivative>
Tensor tripledAutograd(const Tensor& x) {
  Tensor out;
  {
    AutoDispatchBelowADInplaceOrView below;
    out = dk::mul(x, 3);
  }
  if (autograd::compute_requires_grad(x)) {
    auto node = std::make_shared<ScaleBackward<derivative>>();
    node->set_next_edges(autograd::collect_next_edges(x));
    autograd::set_history(out, node);
  }
  return out;
}
Tensor tripledMeta(const Tensor& x) {
  return dk::empty(x.sizes(), x.scalar_type(), std::nullopt, Device(DeviceType::Meta));
}

// y = x^3 with a hand-written derivative 3 x^2 grad, right to first order either way. The
// detached variant computes x^2 from x.detach(), so its backward records no dependence on x:
// only double backward can tell.
template <bool detached>
class CubeBackward final : public autograd::Node {
 public:
  explicit CubeBackward(Tensor x) : x_(std::move(x)) {}
  autograd::variable_list apply(autograd::variable_list grads) override {
    Tensor x = detached ? x_.detach() : x_;
    return {dk::mul(grads.at(0), dk::mul(dk::mul(x, x), 3))};
  }

 private:
  Tensor x_;
};
Tensor cubedBelowAutograd(const Tensor& x) { return dk::mul(dk::mul(x, x), x); }
template <bool detached>
Tensor cubedAutograd(const Tensor& x) {
  Tensor out;
  {
    AutoDispatchBelowADInplaceOrView below;
    out = dk::mul(dk::mul(x, x), x);
  }
  if (autograd::compute_requires_grad(x)) {
    auto node = std::make_shared<CubeBackward<detached>>(x);
    node->set_next_edges(autograd::collect_next_edges(x));
    autograd::set_history(out, node);
  }
  return out;
}

// A view one element further into x's storage (elements 1.. of a 1-D x). The Meta kernel puts
// the view at offset 1 of the storage, ignoring x's own storage offset: right only for inputs
// that start their storage.
Tensor shiftedView(const Tensor& x) { return x.detach().narrow(0, 1, x.size(0) - 1); }
Tensor shiftedViewWrongMeta(const Tensor& x) {
  Tensor out = shiftedView(x);
  out.unsafeGetTensorImpl()->set_storage_offset(1);
  return out;
}

struct TestOps {
  Library defs{Library::DEF, "opcheck_test"};
  Library cpu{Library::IMPL, "opcheck_test", DispatchKey::CPU};
  Library meta{Library::IMPL, "opcheck_test", DispatchKey::Meta};
  Library autograd{Library::IMPL, "opcheck_test", DispatchKey::Autograd};
  TestOps() {
    defs.def("mutates(Tensor x) -> Tensor");
    cpu.impl("mutates", &mutatesInput);
    defs.def("returns_input(Tensor x) -> Tensor");
    cpu.impl("returns_input", &returnsInput);
    defs.def("doubled(Tensor x) -> Tensor");
    cpu.impl("doubled", &doubledCpu);
    meta.impl("doubled", &doubledWrongMeta);
    defs.def("records(Tensor x) -> Tensor");
    cpu.impl("records", &recordsGraph);
    defs.def("wrong_grad(Tensor x) -> Tensor");
    cpu.impl("wrong_grad", &tripledBelowAutograd);
    meta.impl("wrong_grad", &tripledMeta);
    autograd.impl("wrong_grad", &tripledAutograd<2>);  // says 2: wrong
    defs.def("tripled(Tensor x) -> Tensor");
    cpu.impl("tripled", &tripledBelowAutograd);
    meta.impl("tripled", &tripledMeta);
    autograd.impl("tripled", &tripledAutograd<3>);
    defs.def("cubed(Tensor x) -> Tensor");
    cpu.impl("cubed", &cubedBelowAutograd);
    autograd.impl("cubed", &cubedAutograd<false>);
    defs.def("cubed_once(Tensor x) -> Tensor");
    cpu.impl("cubed_once", &cubedBelowAutograd);
    autograd.impl("cubed_once", &cubedAutograd<true>);
    defs.def("shifted(Tensor(a) x) -> Tensor(a)");
    cpu.impl("shifted", &shiftedView);
    meta.impl("shifted", &shiftedViewWrongMeta);
  }
};

TestOps& testOps() {
  static TestOps ops;
  return ops;
}

OpcheckOptions typed() {
  OpcheckOptions o;
  o.typed_call = dk::testing::typedCall<Tensor(const Tensor&)>();
  return o;
}

Stack matrix() { return {doubles({2, 3}, {1, -2, 3, 0.5, 4, -1})}; }

}  // namespace

TEST_CASE("opcheck: correct operators pass every check") {
  Tensor a = doubles({2, 3}, {1, -2, 3, 0.5, 4, -1});
  Tensor b = doubles({2, 3}, {0.25, 2, -1, 3, 1, 2});
  SECTION("functional") {
    OpcheckResult r = opcheck(op("dk::add", "Tensor"), {a, b, 2.0});
    requireAllPass(r);
    CHECK(r.outcome.at("gradcheck") == "ok");
    CHECK(r.outcome.at("meta") == "ok");
    CHECK(r.outcome.at("boxed_unboxed") == "ok");
    requireAllPass(opcheck(op("dk::mm"), {a, dk::transpose(b, 0, 1)}));
    // derivatives.yaml's formulas are checked twice differentiable by default.
    OpcheckOptions once;
    once.double_backward = false;
    CHECK(opcheck(op("dk::mul", "Tensor"), {a, b}, once).outcome.at("gradcheck") == "ok");
  }
  SECTION("in-place and out=") {
    OpcheckResult inplace = opcheck(op("dk::add_", "Tensor"), {a, b, 1.0});
    requireAllPass(inplace);
    CHECK(inplace.outcome.at("schema") == "ok");
    CHECK(inplace.outcome.at("gradcheck") == "skipped: writes its arguments (gradcheck its functional form)");
    requireAllPass(opcheck(op("dk::add", "out"), {a, b, 1.0, doubles({2, 3}, {0, 0, 0, 0, 0, 0})}));
  }
  SECTION("views") {
    OpcheckResult r = opcheck(op("dk::transpose", "int"), {a, int64_t{0}, int64_t{1}});
    requireAllPass(r);
    CHECK(r.outcome.at("meta") == "ok");
    requireAllPass(opcheck(op("dk::select", "int"), {a, int64_t{1}, int64_t{2}}));
  }
  SECTION("random and data-dependent operators") {
    requireAllPass(opcheck(op("dk::dropout"), {a, 0.5, true}));
    OpcheckResult nonzero = opcheck(op("dk::nonzero"), {a});
    requireAllPass(nonzero);
    CHECK(nonzero.outcome.at("meta") ==
          "skipped: tagged dynamic_output_shape (a Meta kernel cannot know the result)");
  }
  SECTION("an operator defined by a library, with a derivative and a Meta kernel") {
    testOps();
    requireAllPass(opcheck(op("opcheck_test::tripled"), matrix(), typed()));
    CHECK(opcheck(op("opcheck_test::tripled"), matrix()).outcome.at("boxed_unboxed") ==
          "skipped: no typed entry point (pass OpcheckOptions::typed_call = typedCall<Sig>())");
  }
}

TEST_CASE("opcheck: each check catches the operator written to fail it") {
  testOps();
  SECTION("schema: a read-only argument mutated") {
    OpcheckResult r = opcheck(op("opcheck_test::mutates"), matrix(), typed());
    CHECK(r.failed("schema"));
    CHECK_THAT(r.outcome.at("schema"), Catch::Matchers::Equals(
        "argument 'x' is not defined as mutable but was mutated (a kernel that writes it needs Tensor(a!) x in the "
        "schema)"));
  }
  SECTION("schema: an output aliasing an input without annotation") {
    OpcheckResult r = opcheck(op("opcheck_test::returns_input"), matrix(), typed());
    CHECK(r.failed("schema"));
    CHECK(r.outcome.at("schema") ==
          "output 0 aliases argument 'x' (they share storage) but the schema does not say so (annotate both with one "
          "alias set, e.g. Tensor(a) x -> Tensor(a))");
  }
  SECTION("meta: a Meta kernel with the wrong shape") {
    OpcheckResult r = opcheck(op("opcheck_test::doubled"), matrix(), typed());
    CHECK(r.failed("meta"));
    CHECK(r.outcome.at("meta") == "output 0: sizes [3, 2] on Meta, [2, 3] on CPU");
    CHECK_FALSE(r.failed("schema"));
  }
  SECTION("autograd_registration: a backend kernel that records its internals") {
    OpcheckResult r = opcheck(op("opcheck_test::records"), matrix(), typed());
    CHECK(r.failed("autograd_registration"));
    CHECK(r.outcome.at("autograd_registration") ==
          "output 0 requires grad but opcheck_test::records has no autograd kernel: its kernel recorded the autograd "
          "graph of the operators it calls (register it at CompositeImplicitAutograd, or give it a derivative)");
    CHECK(r.outcome.at("gradcheck") == "skipped: no autograd kernel (not differentiable)");
  }
  SECTION("gradcheck: a wrong derivative") {
    OpcheckResult r = opcheck(op("opcheck_test::wrong_grad"), matrix(), typed());
    CHECK(r.failed("gradcheck"));
    CHECK_THAT(r.outcome.at("gradcheck"),
               Catch::Matchers::StartsWith("Jacobian mismatch: 6 entries differ\n  input 0 (Double [2, 3]) element [0, "
                                           "0], output 0 (Double [2, 3]) element [0, 0]: analytical 2, numerical 3 "
                                           "(|diff| 1 > 1e-05 + 0.001 * |numerical|)"));
    CHECK_FALSE(r.failed("meta"));
    CHECK_FALSE(r.failed("autograd_registration"));
  }
  SECTION("gradcheck: a derivative right once but not twice, with double_backward") {
    OpcheckOptions twice = typed();
    twice.checks = {"gradcheck"};
    twice.double_backward = true;
    requireAllPass(opcheck(op("opcheck_test::cubed"), matrix(), twice));
    OpcheckResult r = opcheck(op("opcheck_test::cubed_once"), matrix(), twice);
    CHECK(r.failed("gradcheck"));
    CHECK_THAT(r.outcome.at("gradcheck"),
               Catch::Matchers::StartsWith("double backward: Jacobian mismatch: 6 entries differ\n  input 0 (Double "
                                           "[2, 3]) element [0, 0], output 0 (Double [2, 3]) element [0, 0]: "
                                           "analytical 0, numerical "));
    // An operator defined outside derivatives.yaml is checked once unless the options say twice.
    twice.double_backward.reset();
    CHECK(opcheck(op("opcheck_test::cubed_once"), matrix(), twice).outcome.at("gradcheck") == "ok");
  }
  SECTION("meta: the arguments keep their storage offset") {
    OpcheckOptions meta_only = typed();
    meta_only.checks = {"meta"};
    Tensor storage = doubles({6}, {1, 2, 3, 4, 5, 6});
    CHECK(opcheck(op("opcheck_test::shifted"), {storage}, meta_only).outcome.at("meta") == "ok");
    Tensor tail = storage.narrow(0, 2, 4);  // storage offset 2
    CHECK(opcheck(op("opcheck_test::shifted"), {tail}, meta_only).outcome.at("meta") ==
          "output 0: storage offset 1 on Meta, 3 on CPU");
  }
  SECTION("opcheckOrThrow names the operator and the check") {
    CHECK_THROWS_WITH(dk::testing::opcheckOrThrow(op("opcheck_test::returns_input"), matrix(), typed()),
                      Catch::Matchers::StartsWith("opcheck(opcheck_test::returns_input): schema failed: output 0 "
                                                  "aliases argument 'x'"));
  }
}

TEST_CASE("opcheck: bad use is an error") {
  OpcheckOptions unknown;
  unknown.checks = {"schema", "speed"};
  CHECK_THROWS_WITH(opcheck(op("dk::neg"), matrix(), unknown),
                    "opcheck: unknown check 'speed' (the checks are schema, meta, boxed_unboxed, "
                    "autograd_registration and gradcheck)");
  CHECK_THROWS_WITH(opcheck(op("dk::mm"), {doubles({2, 3}, {1, 2, 3, 4, 5, 6}), doubles({2, 1}, {1, 2})}),
                    Catch::Matchers::StartsWith("opcheck(dk::mm): the call itself raised with these arguments: "));
  OpcheckOptions only_schema;
  only_schema.checks = {"schema"};
  OpcheckResult r = opcheck(op("dk::neg"), matrix(), only_schema);
  CHECK(r.outcome.size() == 1);
  CHECK(r.toString() == "dk::neg  schema: ok\n");
}
