// grad, vjp and jacrev (Note [grad transform]) and their composition with vmap on the dynamic
// layer stack (Note [Dynamic layer stack]): gradients against closed forms and finite
// differences, per-example gradients against a loop, Jacobians against known ones, and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dispatch_test_util.h"
#include "dk/dk.h"
#include "dk/func/dynamic_layer.h"
#include "dk/func/grad.h"
#include "dk/func/vmap.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;
using dk::func::TensorsFn;

namespace {

Tensor randomTensor(const std::vector<int64_t>& sizes, uint32_t seed) { return uniformDoubles(sizes, seed, -1, 1); }

void checkClose(const Tensor& actual, const Tensor& expected, double tol = 1e-10) {
  REQUIRE(actual.defined());
  REQUIRE(actual.sizes() == expected.sizes());
  CHECK(func::maybeWrapper(actual) == nullptr);
  const Values a = read(actual);
  const Values e = read(expected);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(e[i]).margin(tol).epsilon(tol));
}

// A two-layer perceptron's squared error for one example: in = {w1, b1, w2, b2, x, y}.
std::vector<Tensor> mlpLoss(const std::vector<Tensor>& in) {
  const Tensor hidden = dk::relu(dk::add(dk::matmul(in[4], in[0]), in[1]));
  const Tensor out = dk::add(dk::matmul(hidden, in[2]), in[3]);
  const Tensor diff = dk::sub(out, in[5]);
  return {dk::sum(dk::mul(diff, diff))};
}

}  // namespace

TEST_CASE("grad: the gradient of a function of one tensor, and of several with argnums and aux") {
  const Tensor x = randomTensor({4}, 1);
  auto cube_sum = func::grad([](const Tensor& t) { return dk::sum(dk::mul(dk::mul(t, t), t)); });
  checkClose(cube_sum(x), dk::mul(dk::mul(x, x), 3.0));
  CHECK(func::dynamicLayerStack().empty());

  const Tensor a = randomTensor({3}, 2);
  const Tensor b = randomTensor({3}, 3);
  TensorsFn dot = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{dk::sum(dk::mul(in[0], in[1])), dk::mul(in[0], 2.0)};
  };
  std::vector<Tensor> g = func::grad(dot, {1, 0}, /*has_aux=*/true)({a, b});
  REQUIRE(g.size() == 3);
  checkClose(g[0], a);  // d/db
  checkClose(g[1], b);  // d/da
  checkClose(g[2], dk::mul(a, 2.0));  // the aux output, unwrapped
  // An input the output does not depend on gets zeros.
  TensorsFn first = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{dk::sum(in[0])}; };
  checkClose(func::grad(first, {1})({a, b})[0], dk::zeros_like(b));
  // The inputs are not changed and get no history.
  CHECK_FALSE(a.requires_grad());
}

TEST_CASE("grad: grad(grad(f)) is the second derivative, checked against finite differences") {
  // f(x) = sum(sin(x) * x): f' = cos(x) x + sin(x), f'' = 2 cos(x) - x sin(x).
  auto f = [](const Tensor& t) { return dk::sum(dk::mul(dk::sin(t), t)); };
  auto df = func::grad(std::function<Tensor(const Tensor&)>(f));
  auto d2f = func::grad([&](const Tensor& t) { return dk::sum(df(t)); });
  const Tensor x = randomTensor({5}, 4);
  checkClose(df(x), dk::add(dk::mul(dk::cos(x), x), dk::sin(x)));
  checkClose(d2f(x), dk::sub(dk::mul(dk::cos(x), 2.0), dk::mul(x, dk::sin(x))));
  // Central differences of f' (each element's f' depends on that element only).
  const double h = 1e-5;
  const Tensor fd = dk::div(dk::sub(df(dk::add(x, h)), df(dk::sub(x, h))), 2 * h);
  checkClose(d2f(x), fd, 1e-7);
  CHECK(func::dynamicLayerStack().empty());
}

TEST_CASE("grad: vmap(grad(loss)) gives per-example gradients equal to a loop of grad") {
  const int64_t batch = 6, in = 3, hidden = 5, out = 2;
  const Tensor w1 = randomTensor({in, hidden}, 10);
  const Tensor b1 = randomTensor({hidden}, 11);
  const Tensor w2 = randomTensor({hidden, out}, 12);
  const Tensor b2 = randomTensor({out}, 13);
  const Tensor xs = randomTensor({batch, in}, 14);
  const Tensor ys = randomTensor({batch, out}, 15);
  const bool warned = func::setVmapFallbackWarningEnabled(false);
  TensorsFn per_example_grad = func::grad(mlpLoss, {0, 1, 2, 3});
  std::vector<Tensor> per_sample = func::vmap(per_example_grad, {std::nullopt, std::nullopt, std::nullopt,
                                                                 std::nullopt, 0, 0})({w1, b1, w2, b2, xs, ys});
  func::setVmapFallbackWarningEnabled(warned);
  REQUIRE(per_sample.size() == 4);
  for (int64_t e = 0; e < batch; ++e) {
    std::vector<Tensor> g = per_example_grad({w1, b1, w2, b2, xs.select(0, e), ys.select(0, e)});
    for (size_t k = 0; k < 4; ++k) checkClose(per_sample[k].select(0, e), g[k]);
  }
  // The per-example gradients sum to the whole batch's gradient (grad of the summed loss).
  TensorsFn batch_loss = [](const std::vector<Tensor>& v) {
    const Tensor h = dk::relu(dk::add(dk::matmul(v[4], v[0]), v[1]));
    const Tensor d = dk::sub(dk::add(dk::matmul(h, v[2]), v[3]), v[5]);
    return std::vector<Tensor>{dk::sum(dk::mul(d, d))};
  };
  std::vector<Tensor> whole = func::grad(batch_loss, {0, 1, 2, 3})({w1, b1, w2, b2, xs, ys});
  for (size_t k = 0; k < 4; ++k) checkClose(dk::sum(per_sample[k], {0}), whole[k]);
  CHECK(func::dynamicLayerStack().empty());
}

TEST_CASE("grad: grad(vmap(f)) differentiates the whole batch") {
  // g(x) = sum over the batch of sum(x_e * x_e * w): d/dw = sum over examples of x_e * x_e.
  const Tensor xs = randomTensor({4, 3}, 20);
  const Tensor w = randomTensor({3}, 21);
  const bool warned = func::setVmapFallbackWarningEnabled(false);  // sum runs once per example
  TensorsFn outer = [&](const std::vector<Tensor>& in) {
    const Tensor& weight = in[0];
    auto per_example = func::vmap([&](const Tensor& x) { return dk::sum(dk::mul(dk::mul(x, x), weight)); });
    return std::vector<Tensor>{dk::sum(per_example(xs))};
  };
  checkClose(func::grad(outer)({w})[0], dk::sum(dk::mul(xs, xs), {0}));
  // And with the batched input differentiated: d/dx_e = 2 x_e w.
  TensorsFn by_x = [&](const std::vector<Tensor>& in) {
    auto per_example = func::vmap([&](const Tensor& x) { return dk::sum(dk::mul(dk::mul(x, x), w)); });
    return std::vector<Tensor>{dk::sum(per_example(in[0]))};
  };
  checkClose(func::grad(by_x)({xs})[0], dk::mul(dk::mul(xs, w), 2.0));
  func::setVmapFallbackWarningEnabled(warned);
}

TEST_CASE("grad: vjp gives the outputs and a reusable vector-Jacobian product") {
  const Tensor x = randomTensor({3}, 30);
  const Tensor y = randomTensor({3}, 31);
  TensorsFn f = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{dk::mul(in[0], in[1]), dk::sin(in[0])};
  };
  func::VjpResult r = func::vjp(f, {x, y});
  REQUIRE(r.outputs.size() == 2);
  checkClose(r.outputs[0], dk::mul(x, y));
  checkClose(r.outputs[1], dk::sin(x));
  const Tensor u = randomTensor({3}, 32);
  const Tensor v = randomTensor({3}, 33);
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> g = r.vjp_fn({u, v});
    REQUIRE(g.size() == 2);
    checkClose(g[0], dk::add(dk::mul(u, y), dk::mul(v, dk::cos(x))));
    checkClose(g[1], dk::mul(u, x));
  }
  CHECK_THROWS_WITH(r.vjp_fn({u}), Catch::Contains("Expected pytree structure of cotangents"));
}

TEST_CASE("grad: jacrev is the Jacobian") {
  const Tensor w = randomTensor({2, 3}, 40);
  const Tensor x = randomTensor({3}, 41);
  const bool warned = func::setVmapFallbackWarningEnabled(false);
  // A linear map's Jacobian is its matrix.
  checkClose(func::jacrev([&](const Tensor& t) { return dk::matmul(w, t); })(x), w);
  // An elementwise function's is diagonal: d sin(x_i) x_i / dx_j = (cos(x_i) x_i + sin(x_i)) [i == j].
  const Tensor j = func::jacrev([](const Tensor& t) { return dk::mul(dk::sin(t), t); })(x);
  // With respect to a matrix: d (W x)_i / d W_kl = [i == k] x_l, shape [2] + [2, 3].
  const Tensor jw = func::jacrev([&](const Tensor& m) { return dk::matmul(m, x); })(w);
  func::setVmapFallbackWarningEnabled(warned);
  REQUIRE(jw.sizes() == std::vector<int64_t>{2, 2, 3});
  const Values jwv = read(jw);
  const Values xs = read(x);
  for (size_t i = 0; i < 2; ++i)
    for (size_t k = 0; k < 2; ++k)
      for (size_t l = 0; l < 3; ++l) CHECK(jwv[(i * 2 + k) * 3 + l] == Approx(i == k ? xs[l] : 0.0).margin(1e-12));
  const Values got = read(j);
  const Values xv = read(x);
  REQUIRE(j.sizes() == std::vector<int64_t>{3, 3});
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 3; ++c)
      CHECK(got[r * 3 + c] == Approx(r == c ? std::cos(xv[r]) * xv[r] + std::sin(xv[r]) : 0.0).margin(1e-12));
  CHECK(func::dynamicLayerStack().empty());
}

TEST_CASE("grad: errors") {
  const Tensor x = randomTensor({3}, 50);
  CHECK_THROWS_WITH(func::grad([](const Tensor& t) { return dk::mul(t, 2.0); })(x),
                    Catch::Contains("Expected f(*args) to return a scalar Tensor, got tensor with 1 dims"));
  TensorsFn f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{dk::sum(in[0])}; };
  CHECK_THROWS_WITH(func::grad(f, {2})({x}), Catch::Contains("Got argnums=2, but only 1 positional inputs"));
  // Writing into a captured tensor inside grad would escape the gradient: refused.
  Tensor captured = dk::zeros({3}, kDouble);
  CHECK_THROWS_WITH(func::grad([&](const Tensor& t) { return dk::sum(captured.add_(t)); })(x),
                    Catch::Contains("attempted to call in-place operation (dk::add_.Tensor) that would mutate a "
                                    "captured Tensor"));
  CHECK(read(captured) == Values{0, 0, 0});
  CHECK(func::dynamicLayerStack().empty());
  // In-place on the function's own input is fine.
  auto g = func::grad([](const Tensor& t) {
    Tensor u = dk::mul(t, 1.0);
    u.mul_(t);
    return dk::sum(u);
  });
  checkClose(g(x), dk::mul(x, 2.0));
  // So is writing into a tensor made inside the function (a factory's result is wrapped at the
  // grad level, as in functorch).
  auto h = func::grad([](const Tensor& t) {
    Tensor buffer = dk::zeros({3}, kDouble);
    buffer.add_(t);
    return dk::sum(dk::mul(buffer, buffer));
  });
  checkClose(h(x), dk::mul(x, 2.0));
}

TEST_CASE("grad: vmap randomness composes with grad in either order") {
  using func::Randomness;
  const Tensor xs = randomTensor({4, 3}, 60);
  auto rows_distinct = [](const Tensor& t) {
    for (int64_t r = 0; r < t.size(0); ++r)
      for (int64_t q = 0; q < r; ++q)
        if (read(t.select(0, r)) == read(t.select(0, q))) return false;
    return true;
  };
  const bool warned = func::setVmapFallbackWarningEnabled(false);  // sum runs once per example
  // f(x) = sum(x * noise): its gradient is the noise, drawn per example under Different.
  auto noisy = [](const Tensor& x) { return dk::sum(dk::mul(x, dk::rand({3}, kDouble))); };
  const Tensor per_example = func::vmap(func::grad(noisy), 0, 0, Randomness::Different)(xs);
  REQUIRE(per_example.sizes() == std::vector<int64_t>{4, 3});
  CHECK(rows_distinct(per_example));
  for (double v : read(per_example)) CHECK((v >= 0.0 && v < 1.0));
  CHECK(func::maybeWrapper(per_example) == nullptr);
  // Same: one noise for every example.
  const Tensor shared = func::vmap(func::grad(noisy), 0, 0, Randomness::Same)(xs);
  for (int64_t r = 1; r < 4; ++r) CHECK(read(shared.select(0, r)) == read(shared.select(0, 0)));
  // grad outside: d/dx_e of sum_e sum(x_e * noise_e) is noise_e, one per example.
  auto batch_sum = [](const Tensor& x) {
    auto each = [](const Tensor& e) { return dk::mul(e, dk::rand({3}, kDouble)); };
    return dk::sum(func::vmap(each, 0, 0, Randomness::Different)(x));
  };
  const Tensor g = func::grad(std::function<Tensor(const Tensor&)>(batch_sum))(xs);
  REQUIRE(g.sizes() == std::vector<int64_t>{4, 3});
  CHECK(rows_distinct(g));
  // Error, the default, is kept whichever transform is innermost.
  CHECK_THROWS_WITH(func::vmap(func::grad(noisy))(xs), Catch::Contains("randomness error mode"));
  auto batch_sum_error = [](const Tensor& x) {
    auto each = [](const Tensor& e) { return dk::mul(e, dk::rand({3}, kDouble)); };
    return dk::sum(func::vmap(each)(x));
  };
  CHECK_THROWS_WITH(func::grad(std::function<Tensor(const Tensor&)>(batch_sum_error))(xs),
                    Catch::Contains("randomness error mode"));
  func::setVmapFallbackWarningEnabled(warned);
  CHECK(func::dynamicLayerStack().empty());
}
