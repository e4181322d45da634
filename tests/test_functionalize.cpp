// Functionalization (Note [Functionalization]): programs with in-place updates, out= calls and
// writes through views give the eager results functionalized, the operators below the layer
// (recorded by a GraphRecorder) neither write nor alias, inputs written are updated, and the
// transform composes with autograd, grad and vmap. Errors name the operator.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "dk/dk.h"
#include "dk/func/dynamic_layer.h"
#include "dk/func/functionalize.h"
#include "dk/func/grad.h"
#include "dk/func/make_graph.h"
#include "dk/func/vmap.h"
#include "dk/layers/modes.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;
using dk::func::TensorsFn;

DK_LIBRARY(t_functionalize, m) {
  m.def("bump_(Tensor(a!) self) -> Tensor(a!)");
  m.def("same(Tensor(a) self) -> Tensor(a)");
}
DK_LIBRARY_IMPL(t_functionalize, CompositeExplicitAutograd, m) {
  m.impl("bump_", [](const Tensor& self) -> Tensor { return self.add_(1.0); });
  m.impl("same", [](const Tensor& self) -> Tensor { return self; });
}

namespace {

Tensor randomTensor(const std::vector<int64_t>& sizes, uint32_t seed) { return uniformDoubles(sizes, seed, -1, 1); }

void checkSame(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.defined());
  REQUIRE(actual.sizes() == expected.sizes());
  CHECK(func::maybeFunctional(actual) == nullptr);
  const Values a = read(actual);
  const Values e = read(expected);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(e[i]).margin(1e-12));
}

// Writes through views of views, a multi-output view, out= and in-place calls, and reads of
// aliases after the writes.
std::vector<Tensor> program(const std::vector<Tensor>& in) {
  Tensor y = dk::clone(in[0]);                    // [4, 6]
  Tensor row = dk::select(y, 0, 1);               // a view of y
  row.mul_(2.0);                             // written through the view
  Tensor flat = y.view({24});
  Tensor middle = dk::slice(flat, 0, 3, 9);       // a view of a view
  middle.add_(in[1].view({6}));
  Tensor yt = dk::transpose(y, 0, 1);             // [6, 4]: sees both writes
  std::vector<Tensor> parts = dk::split(y, 2, 1);  // three [4, 2] views
  dk::zero_(parts[1]);
  Tensor squares = dk::empty({4, 6});
  dk::mul_out(squares, y, y);                     // out=
  Tensor cols = dk::unbind(yt, 0)[5];             // [4]
  dk::fill_(dk::unsqueeze(cols, 0), 3.0);          // written through unsqueeze of unbind of transpose
  return {y, row, middle, yt, squares, dk::exp(cols), dk::sum(y)};
}

// No node of the graph writes an argument or returns a view.
void checkPure(const std::vector<GraphRecorder::Node>& nodes) {
  for (const GraphRecorder::Node& node : nodes) {
    INFO(node.op);
    REQUIRE(node.handle.has_value());
    const FunctionSchema& schema = node.handle->schema();
    for (const Argument& a : schema.arguments()) CHECK_FALSE((a.alias_info && a.alias_info->is_write));
    for (const Argument& r : schema.returns()) CHECK_FALSE(r.alias_info.has_value());
  }
}

}  // namespace

TEST_CASE("functionalize: a program with in-place updates, out= and writes through views gives the eager results") {
  const std::vector<Tensor> inputs{randomTensor({4, 6}, 1), randomTensor({2, 3}, 2)};
  const std::vector<Tensor> eager = program(inputs);
  const std::vector<Tensor> pure = func::functionalize(program)(inputs);
  REQUIRE(pure.size() == eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    INFO("output " << i);
    checkSame(pure[i], eager[i]);
  }
  CHECK(func::dynamicLayerStack().empty());
}

TEST_CASE("functionalize: the operators below the layer neither write nor alias") {
  const std::vector<Tensor> inputs{randomTensor({4, 6}, 3), randomTensor({2, 3}, 4)};
  auto recorder = std::make_shared<GraphRecorder>();
  std::vector<Tensor> pure;
  {
    DispatchModeGuard guard(recorder);
    pure = func::functionalize(program)(inputs);
  }
  const std::vector<GraphRecorder::Node> nodes = recorder->nodes();
  REQUIRE(nodes.size() > 10);
  checkPure(nodes);
  std::vector<std::string> names;
  for (const GraphRecorder::Node& node : nodes) names.push_back(node.op);
  // The writes became their functional forms and the view writes scatters.
  auto has = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) != names.end(); };
  CHECK(has("dk::select_copy"));
  CHECK(has("dk::select_scatter"));
  CHECK(has("dk::slice_scatter"));
  CHECK(has("dk::mul"));
  CHECK(has("dk::zero"));
  CHECK(has("dk::fill"));
  // The same values as eager with the recorder on.
  const std::vector<Tensor> eager = program(inputs);
  for (size_t i = 0; i < eager.size(); ++i) checkSame(pure[i], eager[i]);
}

TEST_CASE("functionalize: inputs the function writes are updated when it returns") {
  TensorsFn f = [](const std::vector<Tensor>& in) {
    in[0].add_(1.0);
    dk::select(in[1], 0, 0).mul_(10.0);  // through a view of an input
    return std::vector<Tensor>{dk::mul(in[0], 2.0)};
  };
  const Tensor a0 = randomTensor({3}, 5), b0 = randomTensor({2, 2}, 6);
  Tensor a_eager = dk::clone(a0), b_eager = dk::clone(b0);
  const Tensor out_eager = f({a_eager, b_eager})[0];
  Tensor a = dk::clone(a0), b = dk::clone(b0);
  const Tensor out = func::functionalize(f)({a, b})[0];
  checkSame(out, out_eager);
  checkSame(a, a_eager);
  checkSame(b, b_eager);
  // An input the function only reads is not written.
  Tensor c = dk::clone(a0);
  const uint32_t version = c.unsafeGetTensorImpl()->version();
  func::functionalize([](const std::vector<Tensor>& in) { return std::vector<Tensor>{dk::exp(in[0])}; })({c});
  CHECK(c.unsafeGetTensorImpl()->version() == version);
}

namespace {
// Writes through a view, an in-place call and a read: y = x * 1; y[0] *= x[1]; tanh_(y); sum(y * y).
std::vector<Tensor> writesThroughView(const std::vector<Tensor>& in) {
  Tensor y = dk::mul(in[0], 1.0);
  dk::select(y, 0, 0).mul_(in[0].select(0, 1));
  dk::tanh_(y);
  return std::vector<Tensor>{dk::sum(dk::mul(y, y))};
}

Tensor eagerGradient(const Tensor& x) {
  Tensor leaf = dk::clone(x);
  leaf.requires_grad_(true);
  writesThroughView({leaf})[0].backward();
  return leaf.grad();
}
}  // namespace

TEST_CASE("functionalize: autograd below the layer reaches the inputs") {
  const Tensor x = randomTensor({3, 2}, 7);
  Tensor leaf = dk::clone(x);
  leaf.requires_grad_(true);
  func::functionalize(writesThroughView)({leaf})[0].backward();
  checkSame(leaf.grad(), eagerGradient(x));
}

TEST_CASE("functionalize: grad of the functionalized function") {
  const Tensor x = randomTensor({3, 2}, 7);
  checkSame(func::grad(func::functionalize(writesThroughView))({x})[0], eagerGradient(x));
  CHECK(func::dynamicLayerStack().empty());
}

TEST_CASE("functionalize: the functionalized gradient") {
  // In-place calls, no write through a view: CopySlices (the backward of such a write) builds
  // its slice from strides, which a grad wrapper has not, so the transform refuses it.
  TensorsFn in_place = [](const std::vector<Tensor>& in) {
    Tensor y = dk::mul(in[0], 1.0);
    y.mul_(in[0]);
    dk::tanh_(y);
    return std::vector<Tensor>{dk::sum(dk::mul(y, y))};
  };
  const Tensor x = randomTensor({3, 2}, 7);
  Tensor leaf = dk::clone(x);
  leaf.requires_grad_(true);
  in_place({leaf})[0].backward();
  checkSame(func::functionalize(func::grad(in_place))({x})[0], leaf.grad());
  CHECK_THROWS_WITH(func::grad(writesThroughView)({x}), Catch::Contains("grad(functionalize(f))"));
  CHECK(func::dynamicLayerStack().empty());
}

TEST_CASE("functionalize: vmap of it and it of vmap") {
  const Tensor batch = randomTensor({5, 3, 2}, 8);
  std::vector<Tensor> rows;
  for (int64_t i = 0; i < 5; ++i) rows.push_back(writesThroughView({dk::select(batch, 0, i)})[0]);
  const Tensor expected = dk::stack(rows, 0);
  checkSame(func::vmap(func::functionalize(writesThroughView))({batch})[0], expected);
  checkSame(func::functionalize(func::vmap(writesThroughView))({batch})[0], expected);
  CHECK(func::dynamicLayerStack().empty());
}

TEST_CASE("functionalize: clear errors for what it cannot functionalize") {
  const Tensor captured = randomTensor({3}, 9);
  TensorsFn write_captured = [&](const std::vector<Tensor>& in) {
    captured.add_(in[0]);
    return std::vector<Tensor>{in[0]};
  };
  CHECK_THROWS_WITH(func::functionalize(write_captured)({randomTensor({3}, 10)}),
                    Catch::Contains("dk::add_.Tensor writes into its argument 'self', which is not a functional tensor"));
  static auto bump = Dispatcher::singleton().findSchemaOrThrow("t_functionalize::bump_", "").typed<Tensor(const Tensor&)>();
  TensorsFn no_functional_form = [](const std::vector<Tensor>& in) {
    Tensor y = dk::clone(in[0]);
    bump.call(y);
    return std::vector<Tensor>{y};
  };
  CHECK_THROWS_WITH(func::functionalize(no_functional_form)({randomTensor({3}, 11)}),
                    Catch::Contains("cannot functionalize t_functionalize::bump_: it writes its argument 'self' and has "
                                    "no functional form"));
  static auto same = Dispatcher::singleton().findSchemaOrThrow("t_functionalize::same", "").typed<Tensor(const Tensor&)>();
  TensorsFn view_without_copy = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{same.call(in[0])}; };
  CHECK_THROWS_WITH(func::functionalize(view_without_copy)({randomTensor({3}, 23)}),
                    Catch::Contains("cannot functionalize t_functionalize::same: it returns a view of an argument and "
                                    "has no view copy"));
  TensorsFn broadcast_write = [](const std::vector<Tensor>& in) {
    Tensor y = dk::clone(in[0]).expand({2, 3});
    y.add_(1.0);
    return std::vector<Tensor>{y};
  };
  CHECK_THROWS_WITH(func::functionalize(broadcast_write)({randomTensor({3}, 12)}),
                    Catch::Contains("more than one element of the written-to tensor refers to a single memory location"));
  CHECK(func::dynamicLayerStack().empty());
}

TEST_CASE("make_graph: captures a program as pure operators on fake tensors and replays it") {
  const std::vector<Tensor> examples{randomTensor({4, 6}, 13), randomTensor({2, 3}, 14)};
  func::Graph graph = func::make_graph(program, examples);
  checkPure(graph.nodes());
  REQUIRE(graph.outputs().size() == 7);
  const std::string text = graph.str();
  INFO(text);
  CHECK(text.rfind("graph(%in0: Double[4, 6], %in1: Double[2, 3]):\n", 0) == 0);
  CHECK(text.find("dk::select_scatter(") != std::string::npos);
  CHECK(text.find("  return (%") != std::string::npos);
  CHECK(text.find("_(") == std::string::npos);  // no in-place operator
  const std::string dot = graph.dot();
  CHECK(dot.rfind("digraph dk {", 0) == 0);
  CHECK(dot.find("in0 -> n0") != std::string::npos);
  // Replayed on other real tensors of the same shapes: the eager results.
  const std::vector<Tensor> inputs{randomTensor({4, 6}, 15), randomTensor({2, 3}, 16)};
  const std::vector<Tensor> replayed = graph(inputs);
  const std::vector<Tensor> eager = program(inputs);
  REQUIRE(replayed.size() == eager.size());
  for (size_t i = 0; i < eager.size(); ++i) checkSame(replayed[i], eager[i]);
}

TEST_CASE("make_graph: inputs the function writes are written by the replay; captured tensors are refused") {
  TensorsFn step = [](const std::vector<Tensor>& in) {  // an SGD step: w -= 0.1 * g
    in[0].sub_(dk::mul(in[1], 0.1));
    return std::vector<Tensor>{dk::sum(in[0])};
  };
  func::Graph graph = func::make_graph(step, {randomTensor({3}, 17), randomTensor({3}, 18)});
  checkPure(graph.nodes());
  REQUIRE(graph.input_writes().size() == 1);
  CHECK(graph.input_writes()[0].first == 0);
  CHECK(graph.str().find("  %in0 <- %") != std::string::npos);
  Tensor w = randomTensor({3}, 19), g = randomTensor({3}, 20);
  Tensor w_eager = dk::clone(w);
  const Tensor total_eager = step({w_eager, g})[0];
  const Tensor total = graph({w, g})[0];
  checkSame(total, total_eager);
  checkSame(w, w_eager);
  const Tensor captured = randomTensor({3}, 21);
  TensorsFn uses_captured = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{dk::add(in[0], captured)}; };
  CHECK_THROWS_WITH(func::make_graph(uses_captured, {randomTensor({3}, 22)}), Catch::Contains("got a real tensor"));
  CHECK(func::dynamicLayerStack().empty());
}
