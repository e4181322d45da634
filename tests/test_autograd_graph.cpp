// Autograd graph behaviour through the real generated operators (the autograd kernels that the
// generator emits from schemas/derivatives.yaml), where tests/test_autograd_engine.cpp uses
// hand-written nodes: grad_fn names, accumulation, retain_graph, shared subgraphs,
// autograd::grad, hooks, no-grad and inference mode, views, in-place operations on views
// (CopySlices), version counters, and every user-facing error, asserted by its text.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "dk/autograd/autograd.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/generated/ops/_softmax.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/addmm.h"
#include "dk/generated/ops/argmax.h"
#include "dk/generated/ops/clone.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/eq.h"
#include "dk/generated/ops/exp.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/gelu.h"
#include "dk/generated/ops/gt.h"
#include "dk/generated/ops/lt.h"
#include "dk/generated/ops/max.h"
#include "dk/generated/ops/mean.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/permute.h"
#include "dk/generated/ops/pow.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/select.h"
#include "dk/generated/ops/sin.h"
#include "dk/generated/ops/slice.h"
#include "dk/generated/ops/squeeze.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/t.h"
#include "dk/generated/ops/transpose.h"
#include "dk/generated/ops/unbind.h"
#include "dk/generated/ops/unsqueeze.h"
#include "dk/generated/ops/where.h"
#include "dk/generated/ops/zero.h"
#include "dk/generated/ops/zeros.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/util/error.h"
#include "dk/testing/gradcheck.h"

using namespace dk;
using dk::testing::double_tensor;
using dk::testing::to_doubles;

namespace {

// A float64 leaf that requires grad.
Tensor leaf(const std::vector<int64_t>& sizes, const std::vector<double>& values) {
  Tensor t = double_tensor(sizes, values);
  t.requires_grad_();
  return t;
}

Tensor constant(const std::vector<int64_t>& sizes, const std::vector<double>& values) {
  return double_tensor(sizes, values);
}

std::string nameOf(const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : std::string("(no grad_fn)"); }

// Element-wise comparison with a message listing both vectors.
void checkValues(const Tensor& t, const std::vector<double>& expected, double tol = 1e-12) {
  REQUIRE(t.defined());
  std::vector<double> got = to_doubles(t);
  INFO("got " << ::Catch::Detail::stringify(got) << ", expected " << ::Catch::Detail::stringify(expected));
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - expected[i]) <= tol * (1 + std::fabs(expected[i])));
}

}  // namespace

// ===================================================================== recording

TEST_CASE("operators record PyTorch-named grad_fns when an input requires grad") {
  Tensor x = leaf({2, 2}, {1, 2, 3, 4});
  Tensor w = leaf({2, 2}, {0.5, -1, 2, 0.25});
  CHECK(nameOf(dk::mul(x, w)) == "MulBackward0");
  CHECK(nameOf(dk::add(x, w)) == "AddBackward0");
  CHECK(nameOf(dk::sum(x)) == "SumBackward0");
  CHECK(nameOf(dk::mm(x, w)) == "MmBackward0");
  CHECK(nameOf(dk::sub(x, w)) == "SubBackward0");
  CHECK(nameOf(dk::div(x, w)) == "DivBackward0");
  CHECK(nameOf(dk::exp(x)) == "ExpBackward0");
  CHECK(nameOf(dk::relu(x)) == "ReluBackward0");
  CHECK(nameOf(dk::addmm(x, x, w)) == "AddmmBackward0");
  CHECK(nameOf(dk::clone(x)) == "CloneBackward0");
  CHECK(nameOf(x.view({4})) == "ViewBackward0");
  CHECK(nameOf(dk::t(x)) == "TBackward0");
  CHECK(nameOf(dk::transpose(x, 0, 1)) == "TransposeBackward0");
  CHECK(nameOf(dk::select(x, 0, 1)) == "SelectBackward0");
  CHECK(nameOf(dk::_softmax(x, 1, false)) == "SoftmaxBackward0");
  // The Scalar overloads are composites over the Tensor ones.
  CHECK(nameOf(dk::add(x, Scalar(2.0))) == "AddBackward0");
  CHECK(nameOf(dk::mul(x, Scalar(2.0))) == "MulBackward0");

  // The result is a non-leaf that requires grad; its node leads back to the inputs.
  Tensor y = dk::mul(x, w);
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
  REQUIRE(y.grad_fn());
  REQUIRE(y.grad_fn()->num_outputs() == 2);
  CHECK(y.grad_fn()->next_edge(0).function->name() == "AccumulateGrad");
  CHECK(y.grad_fn()->next_edge(1).function->name() == "AccumulateGrad");

  // An input that does not require grad has no edge; with none requiring grad, no history.
  Tensor c = constant({2, 2}, {1, 1, 1, 1});
  Tensor z = dk::mul(x, c);
  REQUIRE(z.grad_fn());
  CHECK(z.grad_fn()->next_edge(0).is_valid());
  CHECK_FALSE(z.grad_fn()->next_edge(1).is_valid());
  Tensor none = dk::mul(c, c);
  CHECK_FALSE(none.requires_grad());
  CHECK_FALSE(none.grad_fn());
  CHECK(none.is_leaf());

  // max.dim: the values are differentiable, the indices are not.
  auto [values, indices] = dk::max(x, 1);
  CHECK(values.requires_grad());
  CHECK(nameOf(values) == "MaxBackward0");
  CHECK_FALSE(indices.requires_grad());
}

TEST_CASE("comparison and argmax results are not differentiable") {
  Tensor x = leaf({3}, {1, 5, 3});
  Tensor y = leaf({3}, {2, 5, 1});
  for (const Tensor& t : {dk::eq(x, y), dk::eq(x, Scalar(5.0)), dk::gt(x, y), dk::lt(x, y), dk::argmax(x)}) {
    CHECK_FALSE(t.requires_grad());
    CHECK_FALSE(t.grad_fn());
  }
  // ... and where's condition stays outside the graph: only the values get gradients.
  Tensor w = dk::where(dk::gt(x, y), x, y);
  w.sum().backward();
  checkValues(x.grad(), {0, 0, 1});
  checkValues(y.grad(), {1, 1, 0});
}

TEST_CASE("double backward through gelu: gelu_backward has a derivative of its own") {
  Tensor x = leaf({3}, {-1, 0.5, 2});
  Tensor g = autograd::grad({dk::gelu(x).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  REQUIRE(g.grad_fn());
  CHECK(g.grad_fn()->name() == "GeluBackwardBackward0");
  Tensor gg = autograd::grad({g.sum()}, {x})[0];
  // gelu''(x) = phi(x) (2 - x^2)
  const double v[] = {-1, 0.5, 2};
  std::vector<double> expected;
  for (double xi : v) expected.push_back(std::exp(-0.5 * xi * xi) / std::sqrt(2 * M_PI) * (2 - xi * xi));
  checkValues(gg, expected);
}

TEST_CASE("only inputs that require grad receive a gradient") {
  Tensor x = leaf({3}, {1, 2, 3});
  Tensor c = constant({3}, {4, 5, 6});
  dk::mul(x, c).sum().backward();
  checkValues(x.grad(), {4, 5, 6});
  CHECK_FALSE(c.grad().defined());
}

// ===================================================================== backward passes

TEST_CASE("gradients accumulate into .grad over two backward passes") {
  Tensor x = leaf({3}, {1, 2, 3});
  dk::mul(x, x).sum().backward();
  checkValues(x.grad(), {2, 4, 6});
  dk::mul(x, x).sum().backward();  // a new graph, same leaf: added to the existing .grad
  checkValues(x.grad(), {4, 8, 12});
  dk::mul(x, Scalar(3.0)).sum().backward();
  checkValues(x.grad(), {7, 11, 15});
  // Resetting .grad starts over.
  x.mutable_grad() = Tensor();
  dk::exp(x).sum().backward();
  checkValues(x.grad(), {std::exp(1.0), std::exp(2.0), std::exp(3.0)});
}

TEST_CASE("retain_graph keeps the saved tensors for a second backward; without it the graph is freed") {
  Tensor x = leaf({3}, {1, 2, 3});
  Tensor y = dk::mul(x, x).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward({}, /*retain_graph=*/true);
  checkValues(x.grad(), {4, 8, 12});
  y.backward();  // frees the graph
  checkValues(x.grad(), {6, 12, 18});
  CHECK_THROWS_WITH(y.backward(), Catch::Contains(autograd::ERR_BACKWARD_TWICE));
  CHECK_THROWS_AS(y.backward(), dk::Error);

  // autograd::grad frees the graph too.
  Tensor z = dk::sin(x).sum();
  auto g = autograd::grad({z}, {x});
  checkValues(g.at(0), {std::cos(1.0), std::cos(2.0), std::cos(3.0)});
  CHECK_THROWS_WITH(autograd::grad({z}, {x}), Catch::Contains(autograd::ERR_BACKWARD_TWICE));
}

TEST_CASE("shared subgraphs: gradients of both paths add up, the shared node runs once") {
  Tensor x = leaf({2}, {0.5, -1.0});
  Tensor a = dk::mul(x, Scalar(2.0));  // used by both branches
  int calls = 0;
  std::vector<double> seen;
  a.register_hook([&](const Tensor& g) {
    ++calls;
    seen = to_doubles(g);
    return Tensor();
  });
  Tensor b = dk::mul(a, a);
  Tensor c = dk::sin(a);
  dk::add(b, c).sum().backward();
  std::vector<double> av = {1.0, -2.0};
  // d/da = 2a + cos(a), summed over both paths before the hook sees it.
  CHECK(calls == 1);
  REQUIRE(seen.size() == 2);
  for (size_t i = 0; i < 2; ++i) CHECK(seen[i] == Approx(2 * av[i] + std::cos(av[i])));
  checkValues(x.grad(), {2 * (2 * av[0] + std::cos(av[0])), 2 * (2 * av[1] + std::cos(av[1]))});

  // The same leaf reached through several paths, one of them long.
  Tensor w = leaf({1}, {3.0});
  Tensor chain = w;
  for (int i = 0; i < 20; ++i) chain = dk::mul(chain, Scalar(1.0));
  dk::add(chain, dk::mul(w, w)).sum().backward();
  checkValues(w.grad(), {1 + 6});
}

TEST_CASE("autograd::grad of a non-leaf returns the gradient and leaves .grad alone") {
  Tensor x = leaf({3}, {1, 2, 3});
  Tensor h = dk::mul(x, Scalar(3.0));
  Tensor z = dk::mul(h, h).sum();
  auto g = autograd::grad({z}, {h}, {}, /*retain_graph=*/true);
  REQUIRE(g.size() == 1);
  checkValues(g[0], {6, 12, 18});  // 2h
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(h.grad().defined());
  // With respect to the leaf and the non-leaf at once.
  auto g2 = autograd::grad({z}, {x, h});
  checkValues(g2.at(0), {18, 36, 54});  // 18x
  checkValues(g2.at(1), {6, 12, 18});
  CHECK_FALSE(x.grad().defined());

  // A weighted, non-scalar output.
  Tensor x2 = leaf({2}, {1, 2});
  Tensor y = dk::mul(x2, x2);
  auto g3 = autograd::grad({y}, {x2}, {constant({2}, {10, 100})});
  checkValues(g3.at(0), {20, 400});

  // create_graph: the gradient is itself differentiable (the formulas are dk operators).
  Tensor x3 = leaf({2}, {1, 2});
  Tensor cube = dk::mul(dk::mul(x3, x3), x3).sum();
  auto first = autograd::grad({cube}, {x3}, {}, std::nullopt, /*create_graph=*/true);
  checkValues(first.at(0), {3, 12});  // 3x^2
  REQUIRE(first.at(0).requires_grad());
  auto second = autograd::grad({first.at(0).sum()}, {x3});
  checkValues(second.at(0), {6, 12});  // 6x
}

TEST_CASE("hooks on leaves and non-leaves; retain_grad") {
  SECTION("a leaf hook changes the gradient before it is accumulated") {
    Tensor x = leaf({2}, {1, 2});
    x.register_hook([](const Tensor& g) { return dk::mul(g, Scalar(2.0)); });
    dk::mul(x, Scalar(3.0)).sum().backward();
    checkValues(x.grad(), {6, 6});
  }
  SECTION("a non-leaf hook changes what flows further back") {
    Tensor x = leaf({2}, {1, 2});
    Tensor h = dk::mul(x, Scalar(1.0));
    h.register_hook([](const Tensor& g) { return dk::add(g, Scalar(1.0)); });
    dk::mul(h, Scalar(2.0)).sum().backward();
    checkValues(x.grad(), {3, 3});
    CHECK_FALSE(h.grad().defined());  // not retained
  }
  SECTION("a hook returning an undefined tensor only observes; removed hooks do not run") {
    Tensor x = leaf({2}, {1, 2});
    Tensor h = dk::mul(x, x);
    int observed = 0, removed_calls = 0;
    h.register_hook([&](const Tensor&) {
      ++observed;
      return Tensor();
    });
    unsigned handle = h.register_hook([&](const Tensor& g) {
      ++removed_calls;
      return dk::mul(g, Scalar(0.0));
    });
    h.remove_hook(handle);
    h.sum().backward();
    CHECK(observed == 1);
    CHECK(removed_calls == 0);
    checkValues(x.grad(), {2, 4});
  }
  SECTION("retain_grad keeps a non-leaf's gradient") {
    Tensor x = leaf({2}, {1, 2});
    Tensor h = dk::mul(x, Scalar(3.0));
    h.retain_grad();
    CHECK(h.retains_grad());
    dk::mul(h, h).sum().backward();
    checkValues(h.grad(), {6, 12});
    checkValues(x.grad(), {18, 36});
  }
}

// ===================================================================== modes

TEST_CASE("NoGradGuard: nothing is recorded, in-place on leaves is allowed") {
  Tensor x = leaf({3}, {1, 2, 3});
  CHECK(GradMode::is_enabled());
  {
    NoGradGuard no_grad;
    CHECK_FALSE(GradMode::is_enabled());
    Tensor y = dk::mul(x, Scalar(2.0));
    CHECK_FALSE(y.requires_grad());
    CHECK_FALSE(y.grad_fn());
    CHECK(y.is_leaf());
    // The SGD update pattern: an in-place change of a leaf that requires grad.
    int64_t v = x._version();
    x.add_(constant({3}, {1, 1, 1}), -0.5);
    CHECK(x._version() == v + 1);
    CHECK_FALSE(x.grad_fn());
    CHECK(x.is_leaf());
    CHECK(x.requires_grad());
  }
  CHECK(GradMode::is_enabled());
  checkValues(x, {0.5, 1.5, 2.5});
  CHECK(nameOf(dk::mul(x, Scalar(2.0))) == "MulBackward0");
}

TEST_CASE("InferenceMode: inference tensors have no history; saving one for backward later is an error") {
  Tensor x = leaf({3}, {1, 2, 3});
  Tensor y;
  {
    InferenceMode guard;
    CHECK(InferenceMode::is_enabled());
    y = dk::mul(x, Scalar(2.0));
    CHECK(y.is_inference());
    CHECK_FALSE(y.requires_grad());
    CHECK_FALSE(y.grad_fn());
  }
  CHECK_FALSE(InferenceMode::is_enabled());
  checkValues(y, {2, 4, 6});
  // mul saves `other` to compute the gradient of `self`: an inference tensor cannot be saved.
  CHECK_THROWS_WITH(dk::mul(x, y), Catch::Contains("Inference tensors cannot be saved for backward"));
  CHECK_THROWS_AS(dk::mul(x, y), dk::Error);
  // add saves nothing, so mixing in an inference tensor is fine.
  Tensor z = dk::add(x, y);
  CHECK(nameOf(z) == "AddBackward0");
  z.sum().backward();
  checkValues(x.grad(), {1, 1, 1});
  // Without any input requiring grad nothing is saved either.
  CHECK_NOTHROW(dk::mul(y, y));
}

// ===================================================================== views

TEST_CASE("gradients flow through views to their base") {
  Tensor x = leaf({2, 3}, {1, 2, 3, 4, 5, 6});
  SECTION("view") {
    Tensor v = x.view({6});
    CHECK(v.is_view());
    CHECK(nameOf(v) == "ViewBackward0");
    dk::mul(v, constant({6}, {0, 1, 2, 3, 4, 5})).sum().backward();
    checkValues(x.grad(), {0, 1, 2, 3, 4, 5});
  }
  SECTION("transpose and t") {
    dk::mul(dk::transpose(x, 0, 1), constant({3, 2}, {1, 2, 3, 4, 5, 6})).sum().backward();
    checkValues(x.grad(), {1, 3, 5, 2, 4, 6});
    x.mutable_grad() = Tensor();
    dk::mul(dk::t(x), constant({3, 2}, {1, 2, 3, 4, 5, 6})).sum().backward();
    checkValues(x.grad(), {1, 3, 5, 2, 4, 6});
  }
  SECTION("select") {
    dk::select(x, 0, 1).sum().backward();
    checkValues(x.grad(), {0, 0, 0, 1, 1, 1});
  }
  SECTION("slice with a step") {
    dk::slice(x, 1, 0, 3, 2).sum().backward();
    checkValues(x.grad(), {1, 0, 1, 1, 0, 1});
  }
  SECTION("expand sums over the expanded dims") {
    Tensor col = leaf({2, 1}, {1, 2});
    dk::mul(col.expand({2, 3}), constant({2, 3}, {1, 2, 3, 4, 5, 6})).sum().backward();
    checkValues(col.grad(), {6, 15});
  }
  SECTION("a chain of views") {
    dk::unsqueeze(dk::select(dk::t(x), 0, 2), 0).sum().backward();
    checkValues(x.grad(), {0, 0, 1, 0, 0, 1});
  }
  SECTION("permute and squeeze") {
    Tensor y = leaf({2, 1, 3}, {1, 2, 3, 4, 5, 6});
    Tensor p = dk::squeeze(dk::permute(y, {2, 1, 0}), 1);  // [3, 2]
    dk::mul(p, constant({3, 2}, {1, 2, 3, 4, 5, 6})).sum().backward();
    checkValues(y.grad(), {1, 3, 5, 2, 4, 6});
  }
}

TEST_CASE("in-place on a view of a non-leaf rebases the base's history through CopySlices") {
  Tensor x = leaf({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor y = x.mul(1.0);
  Tensor v = y.select(0, 1);
  int64_t version = y._version();
  v.mul_(constant({}, {2.0}));
  CHECK(y._version() == version + 1);
  CHECK(v._version() == y._version());
  REQUIRE(v.grad_fn());
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name() == "CopySlices");
  checkValues(y, {1, 2, 3, 8, 10, 12, 7, 8, 9});
  y.sum().backward({}, /*retain_graph=*/true);
  checkValues(x.grad(), {1, 1, 1, 2, 2, 2, 1, 1, 1});

  // The view itself now carries the in-place change in its history.
  x.mutable_grad() = Tensor();
  v.sum().backward();
  checkValues(x.grad(), {0, 0, 0, 2, 2, 2, 0, 0, 0});
}

TEST_CASE("in-place on a view with an operand that requires grad makes the base require grad") {
  Tensor base = dk::full({2, 3}, 2.0, kDouble);
  Tensor w = leaf({3}, {1, 2, 3});
  CHECK_FALSE(base.requires_grad());
  base.select(0, 1).mul_(w);
  CHECK(base.requires_grad());
  CHECK(nameOf(base) == "CopySlices");
  checkValues(base, {2, 2, 2, 2, 4, 6});
  dk::mul(base, base).sum().backward();
  // d/dw of sum((2 w)^2) = 8 w
  checkValues(w.grad(), {8, 16, 24});

  // The same on a plain tensor (no view): it joins the graph.
  Tensor t = dk::full({3}, 2.0, kDouble);
  t.mul_(w);
  CHECK(t.requires_grad());
  CHECK(nameOf(t) == "MulBackward0");
  CHECK_FALSE(t.is_leaf());
}

TEST_CASE("in-place ops on non-leaves rebase their history") {
  Tensor x = leaf({3}, {-1, 2, -3});
  Tensor y = dk::mul(x, Scalar(2.0));
  int64_t version = y._version();
  y.add_(x, 3.0);  // 5x
  CHECK(nameOf(y) == "AddBackward0");
  CHECK(y._version() == version + 1);
  y.relu_();  // relu(5x); relu_ saves its result, so it comes last (see the error test below)
  CHECK(nameOf(y) == "ReluBackward0");
  CHECK(y._version() == version + 2);
  CHECK_FALSE(y.is_leaf());
  y.sum().backward();
  checkValues(x.grad(), {0, 5, 0});
}

// ===================================================================== version counters

TEST_CASE("version counter: bumped by in-place ops, shared by views") {
  Tensor t = dk::zeros({2, 3}, kDouble);
  int64_t v0 = t._version();
  t.add_(constant({3}, {1, 1, 1}));
  CHECK(t._version() == v0 + 1);
  t.mul_(constant({}, {3.0}));
  CHECK(t._version() == v0 + 2);
  t.relu_();
  CHECK(t._version() == v0 + 3);
  dk::zero_(t);
  CHECK(t._version() == v0 + 4);
  t.fill_(1.5);
  CHECK(t._version() == v0 + 5);
  // Functional ops leave it alone.
  Tensor sum = dk::add(t, t);
  CHECK(t._version() == v0 + 5);

  // Views share the counter both ways.
  Tensor v = t.view({6});
  Tensor s = dk::select(t, 0, 1);
  CHECK(v._version() == t._version());
  v.mul_(constant({}, {2.0}));
  CHECK(t._version() == v0 + 6);
  CHECK(s._version() == t._version());
  s.add_(constant({}, {1.0}));
  CHECK(t._version() == v0 + 7);
  CHECK(v._version() == v0 + 7);
  checkValues(t, {3, 3, 3, 4, 4, 4});

  // An out= call bumps the out tensor's version.
  Tensor out = dk::empty({3}, kDouble);
  int64_t vo = out._version();
  dk::add(constant({3}, {1, 2, 3}), constant({3}, {1, 1, 1}), 1, out);
  CHECK(out._version() == vo + 1);
  checkValues(out, {2, 3, 4});
}

// ===================================================================== errors

TEST_CASE("error: in-place on a leaf that requires grad") {
  Tensor x = leaf({3}, {1, -2, 3});
  const char* msg = "a leaf Variable that requires grad is being used in an in-place operation.";
  CHECK_THROWS_WITH(x.add_(constant({3}, {1, 1, 1})), Catch::Contains(msg));
  CHECK_THROWS_WITH(x.mul_(constant({3}, {1, 1, 1})), Catch::Contains(msg));
  CHECK_THROWS_WITH(x.relu_(), Catch::Contains(msg));
  CHECK_THROWS_AS(dk::relu_(x), dk::Error);
  checkValues(x, {1, -2, 3});  // nothing was changed
  // A view of such a leaf refuses too (PyTorch: "a view of a leaf Variable that requires grad ...").
  CHECK_THROWS_WITH(x.select(0, 0).mul_(constant({}, {2.0})),
                    Catch::Contains("leaf Variable that requires grad is being used in an in-place operation"));
}

TEST_CASE("error: a saved tensor modified in place before backward") {
  Tensor x = leaf({3}, {1, 2, 3});
  Tensor a = dk::mul(x, Scalar(2.0));
  Tensor b = dk::sin(a);  // saves a
  a.mul_(constant({}, {3.0}));
  CHECK_THROWS_WITH(b.sum().backward(),
                    Catch::Contains("one of the variables needed for gradient computation has been modified by an "
                                    "inplace operation") &&
                        Catch::Contains("is at version") && Catch::Contains("expected version"));

  // A saved output (exp saves its result) modified in place.
  Tensor e = dk::exp(dk::mul(x, Scalar(1.0)));
  Tensor f = dk::mul(e, Scalar(1.0));
  e.add_(constant({}, {1.0}));
  CHECK_THROWS_WITH(f.sum().backward(), Catch::Contains("modified by an inplace operation"));

  // relu_ saves its result; changing it in place afterwards invalidates that (as in PyTorch).
  Tensor r = dk::mul(x, Scalar(2.0));
  r.relu_();
  r.add_(x, 3.0);
  CHECK_THROWS_WITH(r.sum().backward(), Catch::Contains("modified by an inplace operation") &&
                                            Catch::Contains("which is output 0 of ReluBackward0"));
}

TEST_CASE("error: backward through a graph that was freed") {
  Tensor x = leaf({2}, {1, 2});
  Tensor y = dk::mul(x, x).sum();
  y.backward();
  CHECK_THROWS_WITH(y.backward(), Catch::Contains(autograd::ERR_BACKWARD_TWICE));
}

TEST_CASE("error: a non-scalar output without a gradient") {
  Tensor x = leaf({2}, {1, 2});
  Tensor y = dk::mul(x, Scalar(2.0));
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("grad can be implicitly created only for scalar outputs"));
  y.backward(constant({2}, {1, 10}));
  checkValues(x.grad(), {2, 20});
}

TEST_CASE("error: out= with an input that requires grad") {
  Tensor x = leaf({2, 2}, {1, 2, 3, 4});
  Tensor c = constant({2, 2}, {1, 1, 1, 1});
  Tensor out = dk::empty({2, 2}, kDouble);
  try {
    dk::add(x, c, 1, out);
    FAIL("add.out with an input requiring grad did not throw");
  } catch (const dk::Error& e) {
    std::string what = e.what();
    INFO(what);
    CHECK_THAT(what, Catch::Contains("out="));
    CHECK_THAT(what, Catch::Contains("add"));
  }
  try {
    dk::mm(c, x, out);
    FAIL("mm.out with an input requiring grad did not throw");
  } catch (const dk::Error& e) {
    std::string what = e.what();
    INFO(what);
    CHECK_THAT(what, Catch::Contains("out="));
    CHECK_THAT(what, Catch::Contains("mm"));
  }
  // Without grad mode, or without inputs requiring grad, out= works and records nothing.
  {
    NoGradGuard no_grad;
    CHECK_NOTHROW(dk::add(x, c, 1, out));
  }
  checkValues(out, {2, 3, 4, 5});
  dk::mm(c, c, out);
  CHECK_FALSE(out.requires_grad());
  CHECK_FALSE(out.grad_fn());
  checkValues(out, {2, 2, 2, 2});
}

TEST_CASE("error: backward of a tensor that does not require grad") {
  Tensor c = dk::sum(constant({2}, {1, 2}));
  CHECK_THROWS_WITH(c.backward(), Catch::Contains("does not require grad and does not have a grad_fn"));
}

TEST_CASE("error: in-place on an output of a multi-view operator, or on an inference tensor outside InferenceMode") {
  Tensor x = leaf({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> rows = dk::unbind(dk::mul(x, Scalar(2.0)), 0);
  REQUIRE(nameOf(rows[0]) == "UnbindBackward0");
  CHECK_THROWS_WITH(rows[0].mul_(constant({3}, {1, 1, 1})),
                    "Output 0 of UnbindBackward0 is a view and is being modified inplace. This view is the output of a "
                    "function that returns multiple views. Such functions do not allow the output views to be modified "
                    "inplace. You should replace the inplace operation by an out-of-place one.");
  {
    NoGradGuard no_grad;  // nothing is recorded, so nothing can go wrong
    CHECK_NOTHROW(rows[1].zero_());
  }

  Tensor made_inside;
  {
    InferenceMode guard;
    made_inside = constant({3}, {1, 2, 3});
  }
  CHECK_THROWS_WITH(made_inside.add_(leaf({3}, {1, 1, 1})),
                    "Inplace update to inference tensor outside InferenceMode is not allowed. You can make a clone to "
                    "get a normal tensor before doing inplace update.");
  checkValues(made_inside, {1, 2, 3});  // unchanged
}

TEST_CASE("error: in-place on a view that is itself a leaf requiring grad") {
  // A view of a tensor that does not require grad can be made a leaf of its own; writing into
  // it in place would lose that leaf's gradient, as for any leaf.
  Tensor base = constant({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor view = dk::transpose(base, 0, 1);
  view.requires_grad_();
  CHECK_THROWS_WITH(view.zero_(), "a leaf Variable that requires grad is being used in an in-place operation.");
  checkValues(base, {1, 2, 3, 4, 5, 6});
}

TEST_CASE("pow's derivative for an extreme integer exponent stays defined") {
  Tensor x = leaf({2}, {1.0, 2.0});
  Tensor y = dk::pow(x, Scalar(std::numeric_limits<int64_t>::min()));
  CHECK_NOTHROW(y.sum().backward());
  CHECK(x.grad().defined());
}

TEST_CASE("mean and sum over dim 0 of a 0-dim tensor differentiate to the tensor itself") {
  Tensor x = leaf({}, {3.0});
  Tensor m = dk::mean(x, {0});
  m.backward();
  checkValues(x.grad(), {1.0});
  Tensor s = dk::sum(x, {-1}, /*keepdim=*/true);
  CHECK(autograd::grad({s}, {x})[0].dim() == 0);
}

// ===================================================================== InferenceMode and views (issue 13)

TEST_CASE("InferenceMode: an in-place change of a normal tensor bumps its version, so backward catches it") {
  // Only the autograd keys are excluded in InferenceMode: a normal tensor still reaches
  // ADInplaceOrView, so the saved y is seen to have changed.
  Tensor x = leaf({3}, {1, 2, 3});
  Tensor y = dk::mul(x, Scalar(2.0));
  Tensor z = dk::mul(y, y);
  const int64_t before = y._version();
  {
    InferenceMode guard;
    CHECK_FALSE(tls_is_dispatch_key_excluded(DispatchKey::ADInplaceOrView));
    CHECK_FALSE(tls_is_dispatch_key_included(DispatchKey::ADInplaceOrView));
    y.add_(constant({3}, {1, 1, 1}));
  }
  CHECK(y._version() == before + 1);
  CHECK_THROWS_WITH(dk::sum(z).backward(),
                    Catch::StartsWith("one of the variables needed for gradient computation has been modified by an "
                                      "inplace operation"));
}

TEST_CASE("InferenceMode: a view of a normal tensor made inside shares its base and version counter") {
  Tensor base = constant({2, 2}, {1, 2, 3, 4});
  Tensor v;
  {
    InferenceMode guard;
    v = base.view({4});
    CHECK_FALSE(v.is_inference());
    v.mul_(constant({4}, {2, 2, 2, 2}));  // both inside: allowed, and seen by the base's version counter
  }
  CHECK(v._version() == base._version());
  CHECK(base._version() == 1);
  checkValues(base, {2, 4, 6, 8});
}

TEST_CASE("views made under NoGradGuard or InferenceMode refuse a later in-place change in grad mode") {
  const std::string no_grad_msg =
      "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use "
      "case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the "
      "inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if "
      "you want the inplace to be tracked).";
  const std::string inference_msg =
      "A view was created in inference mode and is being modified inplace in normal mode. Given that this use case "
      "is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the "
      "inplace either both inside the inference_mode block (if you don't want the inplace to be tracked) or both "
      "outside (if you want the inplace to be tracked).";
  SECTION("a view of a leaf, made under NoGradGuard") {
    Tensor x = leaf({2}, {1, 2});
    Tensor v;
    {
      NoGradGuard g;
      v = x.view({2});
    }
    CHECK(v.requires_grad());  // through its base, as in PyTorch
    CHECK_THROWS_WITH(v.mul_(constant({2}, {3, 3})), no_grad_msg);
    checkValues(x, {1, 2});  // the leaf is untouched
  }
  SECTION("a view of a non-leaf, made under NoGradGuard") {
    Tensor x = leaf({2}, {1, 2});
    Tensor y = dk::mul(x, Scalar(2.0));
    Tensor v;
    {
      NoGradGuard g;
      v = y.view({2});
    }
    CHECK_THROWS_WITH(v.mul_(constant({2}, {3, 3})), no_grad_msg);
    // y's history is intact: d(sum y)/dx is 2.
    dk::sum(y).backward();
    checkValues(x.grad(), {2, 2});
  }
  SECTION("a view made under InferenceMode") {
    Tensor x = leaf({2}, {1, 2});
    Tensor v;
    {
      InferenceMode g;
      v = x.view({2});
    }
    CHECK_THROWS_WITH(v.mul_(constant({2}, {3, 3})), inference_msg);
    checkValues(x, {1, 2});
  }
  SECTION("both inside NoGradGuard, or a base that does not require grad: allowed") {
    Tensor x = leaf({2}, {1, 2});
    {
      NoGradGuard g;
      Tensor v = x.view({2});
      v.mul_(constant({2}, {3, 3}));
    }
    checkValues(x, {3, 6});
    Tensor c = constant({2}, {1, 2});
    Tensor w;
    {
      NoGradGuard g;
      w = c.view({2});
    }
    CHECK_FALSE(w.requires_grad());
    w.mul_(constant({2}, {2, 2}));
    checkValues(c, {2, 4});
  }
}

TEST_CASE("every in-place and out= operator refuses an inference tensor outside InferenceMode, changing nothing") {
  const std::string msg =
      "Inplace update to inference tensor outside InferenceMode is not allowed. You can make a clone to get a normal "
      "tensor before doing inplace update.";
  Tensor t, a;
  {
    InferenceMode guard;
    t = constant({3}, {1, 2, 3});
    a = constant({3}, {1, 1, 1});
  }
  REQUIRE(t.is_inference());
  CHECK_THROWS_WITH(t.fill_(Scalar(7.0)), msg);
  CHECK_THROWS_WITH(t.zero_(), msg);
  CHECK_THROWS_WITH(t.relu_(), msg);
  CHECK_THROWS_WITH(t.add_(t), msg);
  CHECK_THROWS_WITH(t.mul_(a), msg);
  CHECK_THROWS_WITH(t.copy_(a), msg);
  CHECK_THROWS_WITH(dk::add(a, a, Scalar(1.0), t), msg);  // add.out
  checkValues(t, {1, 2, 3});
  CHECK(t._version() == 0);
  {
    InferenceMode guard;  // inside, all fine
    t.fill_(Scalar(7.0));
  }
  checkValues(t, {7, 7, 7});
}

TEST_CASE("a backward that fails part way leaves every leaf's .grad as it was") {
  // Note [Accumulation at the end]. The failing hook is on b's branch, which runs after a's
  // AccumulateGrad is ready, so accumulating at once would have written a.grad already.
  Tensor a = leaf({2}, {1, 2});
  Tensor b = leaf({2}, {3, 4});
  Tensor y = dk::mul(b, Scalar(3.0));
  bool refuse = true;
  y.register_hook([&](const Tensor&) -> Tensor {
    if (refuse) throw Error("hook refused");
    return Tensor();
  });
  Tensor s1 = dk::sum(y);
  Tensor loss = dk::add(s1, dk::sum(dk::mul(a, Scalar(2.0))));
  CHECK_THROWS_WITH(loss.backward({}, /*retain_graph=*/true), "hook refused");
  CHECK_FALSE(a.grad().defined());
  CHECK_FALSE(b.grad().defined());
  refuse = false;
  loss.backward({}, /*retain_graph=*/true);
  checkValues(a.grad(), {2, 2});
  checkValues(b.grad(), {3, 3});
  refuse = true;
  CHECK_THROWS_WITH(loss.backward({}, /*retain_graph=*/true), "hook refused");
  checkValues(a.grad(), {2, 2});  // an existing .grad is not changed either
  checkValues(b.grad(), {3, 3});
}
