// Behaviours pinned to PyTorch 1.13.1 (each expected value below was printed by PyTorch itself
// on the same inputs): the places where dispatchkit once differed from it. One TEST_CASE per
// behaviour; the operators are called as a user calls them (dk::add, Tensor methods,
// backward()).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dk/dk.h"
#include "kernel_test_util.h"
#include "meta/shape_functions.h"

using namespace dk;
using namespace dk::test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string str(const Tensor& t) {
  std::ostringstream out;
  out << t;
  return out.str();
}

}  // namespace

TEST_CASE("parity: int16 (Short) is a dtype, and uint8 + int8 is int16") {
  Tensor u = make({200, 3}, {2}, kByte);
  Tensor i = make({-100, 4}, {2}, kChar);
  Tensor sum = dk::add(u, i);
  CHECK(sum.scalar_type() == kShort);
  CHECK(sameValues(read(sum), {100, 7}));
  CHECK(elementSize(kShort) == 2);
  CHECK(toString(kShort) == "Short");
  CHECK(dtypeName(kShort) == "int16");
  CHECK(isIntegralType(kShort, /*includeBool=*/false));
  // int16 arithmetic wraps as int16: 30000 * 2 is -5536 in PyTorch.
  CHECK(sameValues(read(dk::mul(make({30000}, {1}, kShort), Scalar(2))), {-5536}));
  // Products past int's range too (computed wrapping, not promoted to int and overflowed).
  CHECK(sameValues(read(dk::mul(make({-1, 30000}, {2}, kShort), make({-2, 30000}, {2}, kShort))), {2, -5888}));
  CHECK(sameValues(read(make({-300}, {1}, kShort).pow(3)), {832}));
  // A sum of int16 is int64, as for every integral dtype.
  Tensor s = make({30000, 30000, 30000}, {3}, kShort).sum();
  CHECK(s.scalar_type() == kLong);
  CHECK(s.item<int64_t>() == 90000);
  // Conversions both ways, printing, factories.
  CHECK(sameValues(read(make({-2.5, 7.9}, {2}, kFloat).to(kShort)), {-2, 7}));
  CHECK(str(dk::tensor({1, -2}, kShort)) == "tensor([ 1, -2], dtype=int16)");
  CHECK(dk::zeros({2}, kShort).scalar_type() == kShort);
  CHECK(dk::arange(0, 3, 1, kShort).scalar_type() == kShort);
  // Comparisons and reductions with int16 inputs.
  CHECK(sameValues(read(dk::gt(make({1, 5}, {2}, kShort), make({3}, {1}, kByte))), {0, 1}));
  CHECK(dk::argmax(make({3, -7, 9, 2}, {4}, kShort)).item<int64_t>() == 2);
}

TEST_CASE("parity: clamp with a NaN bound") {
  Tensor x = make({0.5, 2.0, kNaN, -1.0}, {4});
  // Both bounds, one of them NaN: every element is NaN.
  CHECK(sameValues(read(dk::clamp(x, Scalar(kNaN), Scalar(1.0))), {kNaN, kNaN, kNaN, kNaN}));
  CHECK(sameValues(read(dk::clamp(x, Scalar(0.0), Scalar(kNaN))), {kNaN, kNaN, kNaN, kNaN}));
  // An integer tensor clamped to (NaN, 2) is float32 NaN.
  Tensor ints = dk::clamp(make({1, 2, 3}, {3}, kLong), Scalar(kNaN), Scalar(2));
  CHECK(ints.scalar_type() == kFloat);
  CHECK(sameValues(read(ints), {kNaN, kNaN, kNaN}));
  // One bound, NaN: ignored (std::max(x, NaN) is x); a NaN element stays NaN.
  CHECK(sameValues(read(dk::clamp(x, Scalar(kNaN), std::nullopt)), {0.5, 2.0, kNaN, -1.0}));
  CHECK(sameValues(read(dk::clamp(x, std::nullopt, Scalar(kNaN))), {0.5, 2.0, kNaN, -1.0}));
  // The in-place and out= forms agree.
  Tensor y = make({0.5, 2.0}, {2});
  y.clamp_(Scalar(kNaN), Scalar(1.0));
  CHECK(sameValues(read(y), {kNaN, kNaN}));
  Tensor out = dk::empty({4}, kDouble);
  dk::clamp(x, Scalar(-1.0), Scalar(kNaN), out);
  CHECK(sameValues(read(out), {kNaN, kNaN, kNaN, kNaN}));
}

TEST_CASE("parity: fill_ of a bool tensor converts any value") {
  CHECK(sameValues(read(dk::zeros({3}, kBool).fill_(2)), {1, 1, 1}));
  CHECK(sameValues(read(dk::zeros({2}, kBool).fill_(-1.5)), {1, 1}));
  CHECK(sameValues(read(dk::zeros({2}, kBool).fill_(kNaN)), {1, 1}));
  CHECK(sameValues(read(dk::ones({2}, kBool).fill_(0.0)), {0, 0}));
  CHECK(sameValues(read(dk::full({2}, 5, kBool)), {1, 1}));
  // Other dtypes still refuse values they cannot hold, in PyTorch's words.
  CHECK_THROWS_WITH(dk::zeros({2}, kByte).fill_(300), "value cannot be converted to type uint8_t without overflow");
  CHECK_THROWS_WITH(dk::zeros({2}, kShort).fill_(-40000),
                    "value cannot be converted to type int16_t without overflow");
  CHECK_THROWS_WITH(dk::zeros({2}, kHalf).fill_(1e10), "value cannot be converted to type at::Half without overflow");
}

TEST_CASE("parity: nll_loss gradient with every target ignored is zero") {
  Tensor input = make({-1.0, -2.0, -0.5, -0.3, -1.2, -2.2}, {2, 3}, kDouble).requires_grad_();
  Tensor target = make({1, 1}, {2}, kLong);
  Tensor loss = dk::nll_loss(input, target, std::nullopt, /*reduction=Mean*/ 1, /*ignore_index=*/1);
  CHECK(std::isnan(loss.item<double>()));  // 0 / 0, on both sides
  loss.backward();
  CHECK(sameValues(read(input.grad()), {0, 0, 0, 0, 0, 0}));
  // One target counted: it gets -1 / 1; the ignored row nothing.
  Tensor input2 = make({-1.0, -2.0, -0.5, -0.3, -1.2, -2.2}, {2, 3}, kDouble).requires_grad_();
  dk::nll_loss(input2, make({1, 0}, {2}, kLong), std::nullopt, 1, 1).backward();
  CHECK(sameValues(read(input2.grad()), {0, 0, 0, -1, 0, 0}));
}

TEST_CASE("parity: maximum and minimum send the gradient to both inputs at a NaN") {
  // PyTorch: grad_self = where(self == other, g / 2, g) zeroed where self loses; so a NaN on
  // either side (no tie, no loser) gives the whole gradient to both inputs.
  for (bool is_max : {true, false}) {
    INFO((is_max ? "maximum" : "minimum"));
    Tensor a = make({kNaN, 1.0, 2.0, 3.0}, {4}, kDouble).requires_grad_();
    Tensor b = make({0.0, kNaN, 2.0, 1.0}, {4}, kDouble).requires_grad_();
    Tensor r = is_max ? dk::maximum(a, b) : dk::minimum(a, b);
    r.sum().backward();
    if (is_max) {
      CHECK(sameValues(read(a.grad()), {1, 1, 0.5, 1}));
      CHECK(sameValues(read(b.grad()), {1, 1, 0.5, 0}));
    } else {
      CHECK(sameValues(read(a.grad()), {1, 1, 0.5, 0}));
      CHECK(sameValues(read(b.grad()), {1, 1, 0.5, 1}));
    }
  }
  // Broadcast: the gradient of the broadcast input is summed back to its shape.
  Tensor a = make({1.0, 5.0, kNaN}, {3}, kDouble).requires_grad_();
  Tensor b = make({2.0}, {1}, kDouble).requires_grad_();
  dk::maximum(a, b).sum().backward();
  CHECK(sameValues(read(a.grad()), {0, 1, 1}));
  CHECK(sameValues(read(b.grad()), {2}));
}

TEST_CASE("parity: factories honour requires_grad in TensorOptions") {
  const TensorOptions grad = TensorOptions().dtype(kDouble).requires_grad(true);
  for (const Tensor& t : {dk::zeros({2}, grad), dk::ones({2}, grad), dk::full({2}, 3.0, grad), dk::empty({2}, grad),
                          dk::rand({2}, grad), dk::randn({2}, grad), dk::arange(0, 2, 1, grad)}) {
    CHECK(t.requires_grad());
    CHECK(t.is_leaf());
    CHECK(t.scalar_type() == kDouble);
  }
  // A leaf made so accumulates its gradient.
  Tensor w = dk::ones({3}, grad);
  dk::mul(w, w).sum().backward();
  CHECK(sameValues(read(w.grad()), {2, 2, 2}));
  CHECK_FALSE(dk::zeros({2}, TensorOptions().requires_grad(false)).requires_grad());
  CHECK_THROWS_WITH(dk::zeros({2}, TensorOptions().dtype(kLong).requires_grad(true)),
                    "Only Tensors of floating point and complex dtype can require gradients");
  std::vector<float> blob = {1, 2};
  CHECK(dk::from_blob(blob.data(), {2}, TensorOptions().requires_grad(true)).requires_grad());
}

TEST_CASE("parity: a tensor hook may not change the gradient's type or size") {
  SECTION("dtype") {
    Tensor x = dk::ones({3}, TensorOptions().dtype(kDouble).requires_grad(true));
    x.register_hook([](const Tensor& g) { return g.to(kFloat); });
    CHECK_THROWS_WITH(dk::mul(x, 2.0).sum().backward(),
                      "hook '0' has changed the type of value (was CPUDoubleType got CPUFloatType)");
  }
  SECTION("size, on a leaf and on a non-leaf; the index is the hook's") {
    Tensor x = dk::ones({3}, TensorOptions().dtype(kDouble).requires_grad(true));
    x.register_hook([](const Tensor& g) { return g; });
    x.register_hook([](const Tensor& g) { return g.sum(); });
    CHECK_THROWS_WITH(dk::mul(x, 2.0).sum().backward(), "hook '1' has changed the size of value");
    Tensor y = dk::ones({2, 2}, TensorOptions().requires_grad(true));
    Tensor h = dk::mul(y, 3.0);
    h.register_hook([](const Tensor& g) { return dk::ones({4}, g.scalar_type()); });
    CHECK_THROWS_WITH(h.sum().backward(), "hook '0' has changed the size of value");
  }
  SECTION("a hook returning a gradient of the same type and size replaces it") {
    Tensor x = dk::ones({2}, TensorOptions().dtype(kDouble).requires_grad(true));
    x.register_hook([](const Tensor& g) { return dk::mul(g, 10.0); });
    dk::mul(x, 2.0).sum().backward();
    CHECK(sameValues(read(x.grad()), {20, 20}));
  }
}

TEST_CASE("parity: in-place, out= and copy_ refuse partly overlapping memory") {
  const std::string partial =
      "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory "
      "location. Please clone() the tensor before performing the operation.";
  const std::string internal =
      "unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
      "Please clone() the tensor before performing the operation.";
  auto square = [] { return dk::arange(0, 9, 1, kFloat).reshape({3, 3}); };
  // An input sharing part of the written tensor's memory, or all of it in another layout.
  {
    Tensor x = square();
    CHECK_THROWS_WITH(x.add_(x.t()), partial);
    CHECK(sameValues(read(x), iotaValues(9)));  // nothing written
  }
  {
    Tensor x = square();
    CHECK_THROWS_WITH(x.copy_(x.t()), partial);
  }
  {
    Tensor y = dk::arange(0, 5, 1, kFloat);
    CHECK_THROWS_WITH(y.slice(0, 1, 5).copy_(y.slice(0, 0, 4)), partial);
    CHECK_THROWS_WITH(dk::add(y.slice(0, 0, 4), dk::ones({4}), 1, y.slice(0, 1, 5)), partial);
    CHECK_THROWS_WITH(dk::neg(y.slice(0, 0, 3), y.slice(0, 1, 4)), partial);
    CHECK_THROWS_WITH(dk::eq(y.slice(0, 0, 3), y.slice(0, 1, 4), y.slice(0, 2, 5)), partial);
    CHECK(sameValues(read(y), {0, 1, 2, 3, 4}));
  }
  // An expanded written tensor.
  {
    Tensor z = dk::zeros({3}, kFloat);
    CHECK_THROWS_WITH(z.expand({3, 3}).add_(dk::ones({3, 3})), internal);
    CHECK_THROWS_WITH(dk::add(dk::ones({3, 3}), dk::ones({3, 3}), 1, z.expand({3, 3})), internal);
    // fill_ and zero_ write one value, so PyTorch allows them on an expanded tensor.
    z.expand({3, 3}).fill_(2);
    CHECK(sameValues(read(z), {2, 2, 2}));
    z.expand({3, 3}).zero_();
    CHECK(sameValues(read(z), {0, 0, 0}));
  }
  // What PyTorch allows: the written tensor itself as an input, disjoint parts of one storage.
  {
    Tensor y = dk::arange(0, 4, 1, kFloat);
    CHECK(sameValues(read(dk::add(y, y, 1, y)), {0, 2, 4, 6}));
    CHECK(sameValues(read(y.mul_(y)), {0, 4, 16, 36}));
    CHECK(sameValues(read(dk::exp(dk::zeros({2}), dk::zeros({2}))), {1, 1}));
    Tensor w = dk::arange(0, 6, 1, kFloat);
    w.slice(0, 0, 3).add_(w.slice(0, 3, 6));
    CHECK(sameValues(read(w), {3, 5, 7, 3, 4, 5}));
  }
  // Memory that cannot be ruled on (strided views of one storage): computed as if the input
  // were read whole first.
  {
    Tensor v = dk::arange(0, 6, 1, kFloat);
    Tensor evens = v.slice(0, 0, 6, 2);  // 0 2 4
    Tensor odds = v.slice(0, 1, 6, 2);   // 1 3 5
    CHECK(meta::overlapStatus(evens, odds) == meta::MemOverlap::TooHard);
    odds.copy_(evens);
    CHECK(sameValues(read(v), {0, 0, 2, 2, 4, 4}));
  }
}

TEST_CASE("parity: the memory overlap rule (Note [Memory overlap])") {
  Tensor x = dk::arange(0, 6, 1, kFloat);
  CHECK(meta::overlapStatus(x, x) == meta::MemOverlap::Full);
  CHECK(meta::overlapStatus(x, x.slice(0, 0, 6)) == meta::MemOverlap::Full);
  CHECK(meta::overlapStatus(x, x.slice(0, 1, 6)) == meta::MemOverlap::Partial);
  CHECK(meta::overlapStatus(x.slice(0, 0, 3), x.slice(0, 3, 6)) == meta::MemOverlap::No);
  CHECK(meta::overlapStatus(x, dk::arange(0, 6, 1, kFloat)) == meta::MemOverlap::No);
  CHECK(meta::overlapStatus(x, x.slice(0, 0, 0)) == meta::MemOverlap::No);
  Tensor m = x.reshape({2, 3});
  CHECK(meta::overlapStatus(m, m.t()) == meta::MemOverlap::Partial);  // same memory, other layout
  CHECK(meta::overlapStatus(m, m.slice(1, 0, 3, 2)) == meta::MemOverlap::TooHard);
}

TEST_CASE("parity: max(), min(), min.dim and argmin") {
  Tensor x = make({3, 1, 3, 0.5, 7, -2}, {2, 3});
  CHECK(x.max().item<double>() == 7);
  CHECK(x.min().item<double>() == -2);
  CHECK(x.max().dim() == 0);
  auto [values, indices] = dk::min(x, 1);
  CHECK(sameValues(read(values), {1, -2}));
  CHECK(sameValues(read(indices), {1, 2}));
  auto [kept, kept_indices] = x.min(0, /*keepdim=*/true);
  CHECK(kept.sizes() == Sizes{1, 3});
  CHECK(sameValues(read(kept_indices), {1, 0, 1}));
  CHECK(dk::argmin(x).item<int64_t>() == 5);
  CHECK(sameValues(read(dk::argmin(x, 0)), {1, 0, 1}));
  // Ties go to the first index; NaN wins, as in PyTorch.
  CHECK(dk::argmin(make({2, 1, 1}, {3})).item<int64_t>() == 1);
  auto [nan_value, nan_index] = dk::min(make({1, kNaN, 0}, {3}), 0);
  CHECK(std::isnan(nan_value.item<double>()));
  CHECK(nan_index.item<int64_t>() == 1);
  CHECK(std::isnan(make({1, kNaN, 3}, {3}).max().item<double>()));
  // Integer and bool inputs keep their dtype.
  CHECK(make({3, 1, 3}, {3}, kLong).min().scalar_type() == kLong);
  CHECK(make({1, 0}, {2}, kBool).max().item<bool>());
  // The gradient of max() is shared evenly by the elements equal to it.
  Tensor t = make({3, 1, 3}, {3}, kDouble).requires_grad_();
  t.max().backward();
  CHECK(sameValues(read(t.grad()), {0.5, 0, 0.5}));
  Tensor u = make({kNaN, 1, kNaN}, {3}, kDouble).requires_grad_();
  u.min().backward();
  CHECK(sameValues(read(u.grad()), {0.5, 0, 0.5}));
  // Errors, PyTorch's words.
  CHECK_THROWS_WITH(dk::empty({0}).max(),
                    "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                    "with the 'dim' argument.");
  CHECK_THROWS_WITH(dk::min(dk::empty({0, 3}), 0), "min(): Expected reduction dim 0 to have non-zero size.");
  CHECK_THROWS_WITH(dk::argmin(make({1, 0}, {2}, kBool)), "argmin: unsupported dtype Bool");
  // Meta: shapes only.
  Tensor m = dk::empty({4, 5}, TensorOptions().device(kMeta));
  CHECK(std::get<0>(dk::min(m, 1)).sizes() == Sizes{4});
  CHECK(m.max().sizes() == Sizes{});
  CHECK(dk::argmin(m, 0, true).sizes() == Sizes{1, 5});
}

TEST_CASE("parity: detach and squeeze()") {
  Tensor x = dk::ones({3}, TensorOptions().requires_grad(true));
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK_FALSE(d.is_view());  // PyTorch: x.detach()._is_view() is False
  CHECK(d.data_ptr() == x.data_ptr());
  // In-place on the detached tensor is allowed in grad mode, shows in x, and bumps the shared
  // version counter (so a saved x would be caught as modified).
  const auto before = x.unsafeGetTensorImpl()->version_counter()->version();
  d.add_(1);
  CHECK(sameValues(read(x), {2, 2, 2}));
  CHECK(x.unsafeGetTensorImpl()->version_counter()->version() == before + 1);
  Tensor y = dk::mul(x, x);
  Tensor dy = y.detach();
  CHECK(dy.is_leaf());
  CHECK_FALSE(dk::mul(dy, 2.0).requires_grad());
  Tensor saved = dk::ones({2}, TensorOptions().requires_grad(true));
  Tensor product = dk::mul(saved, saved);
  saved.detach().mul_(3);
  CHECK_THROWS_WITH(product.sum().backward(), Catch::Contains("modified by an inplace operation"));
  // squeeze() drops every size-1 dim; its gradient has them back.
  Tensor s = dk::ones({1, 3, 1}, TensorOptions().dtype(kDouble).requires_grad(true));
  Tensor q = s.squeeze();
  CHECK(q.sizes() == Sizes{3});
  CHECK(dk::squeeze(dk::ones({1})).sizes() == Sizes{});
  CHECK(dk::squeeze(dk::ones({2, 3})).sizes() == Sizes{2, 3});
  dk::mul(q, make({1, 2, 3}, {3}, kDouble)).sum().backward();
  CHECK(s.grad().sizes() == Sizes{1, 3, 1});
  CHECK(sameValues(read(s.grad()), {1, 2, 3}));
}

TEST_CASE("parity: narrow, chunk, repeat, masked_fill, var, std, baddbmm") {
  Tensor x = make({0, 1, 2, 3, 4, 5}, {2, 3});
  // narrow: a view; negative start counts from the end.
  Tensor n = x.narrow(1, -2, 2);
  CHECK(sameValues(read(n), {1, 2, 4, 5}));
  CHECK(n.data_ptr() != nullptr);
  CHECK_THROWS_WITH(x.narrow(1, 2, 2), "start (2) + length (2) exceeds dimension size (3).");
  CHECK_THROWS_WITH(x.narrow(1, 0, -1), "start (0) + length (-1) exceeds dimension size (3).");
  CHECK_THROWS_WITH(x.narrow(5, 0, 1), "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
  // chunk: ceil(size / chunks) each, fewer chunks when they run out.
  auto sizesOf = [](const std::vector<Tensor>& ts) {
    std::vector<int64_t> out;
    for (const Tensor& t : ts) out.push_back(t.size(0));
    return out;
  };
  CHECK(sizesOf(dk::arange(0, 5, 1).chunk(3)) == std::vector<int64_t>{2, 2, 1});
  CHECK(sizesOf(dk::arange(0, 5, 1).chunk(4)) == std::vector<int64_t>{2, 2, 1});
  CHECK(sizesOf(dk::empty({0}).chunk(2)) == std::vector<int64_t>{0, 0});
  CHECK_THROWS_WITH(x.chunk(0), "chunk expects `chunks` to be greater than 0, got: 0");
  // repeat: tiles, with leading dims added; always a copy.
  Tensor r = make({1, 2}, {2}, kLong).repeat({2, 2});
  CHECK(r.sizes() == Sizes{2, 4});
  CHECK(sameValues(read(r), {1, 2, 1, 2, 1, 2, 1, 2}));
  CHECK(make({3}, {}, kFloat).repeat({2}).sizes() == Sizes{2});
  Tensor same = x.repeat({1, 1});
  CHECK(same.data_ptr() != x.data_ptr());
  CHECK_THROWS_WITH(x.repeat({2}),
                    "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  // masked_fill keeps self's dtype (2.7 into int64 is 2); the mask broadcasts.
  Tensor m = dk::arange(0, 4, 1).masked_fill(make({1, 0, 1, 0}, {4}, kBool), 2.7);
  CHECK(m.scalar_type() == kLong);
  CHECK(sameValues(read(m), {2, 1, 2, 3}));
  CHECK(sameValues(read(x.masked_fill(make({0, 1, 0}, {3}, kBool), dk::full({}, -1.0))), {0, -1, 2, 3, -1, 5}));
  CHECK_THROWS_WITH(x.masked_fill(make({1, 1, 1, 1, 1, 1}, {2, 3}, kBool), dk::ones({2})),
                    "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).");
  // var and std (PyTorch: var 3.5; var over dim 1 [1, 1]; biased, keepdim [[0.6667], [0.6667]];
  // std over dim 0 2.1213 each; one element: NaN).
  CHECK(x.var().item<double>() == Approx(3.5));
  CHECK(sameValues(read(x.var({1})), {1, 1}, 1e-6));
  Tensor biased = x.var({1}, /*unbiased=*/false, /*keepdim=*/true);
  CHECK(biased.sizes() == Sizes{2, 1});
  CHECK(sameValues(read(biased), {2.0 / 3, 2.0 / 3}, 1e-6));
  CHECK(sameValues(read(x.std({0})), {2.1213203, 2.1213203, 2.1213203}, 1e-6));
  CHECK(std::isnan(make({1}, {1}).var().item<double>()));
  CHECK(make({1, 2}, {2}).std().item<double>() == Approx(0.70710678));
  CHECK_THROWS_WITH(dk::arange(0, 2, 1).var(), "std and var only support floating point and complex dtypes");
  // baddbmm: beta * self + alpha * bmm; beta 0 ignores self's NaNs; self broadcasts.
  Tensor b1 = dk::ones({1, 2, 3}), b2 = dk::ones({1, 3, 2});
  Tensor nan_self = dk::full({1, 2, 2}, kNaN);
  CHECK(sameValues(read(dk::baddbmm(nan_self, b1, b2, 0, 2)), {6, 6, 6, 6}));
  CHECK(sameValues(read(dk::baddbmm(dk::ones({2}), b1, b2)), {4, 4, 4, 4}));
  CHECK(sameValues(read(dk::baddbmm(dk::ones({2}), b1, b2, 0.5, 1)), {3.5, 3.5, 3.5, 3.5}));
}

TEST_CASE("parity: tril, triu and layer_norm") {
  Tensor x = dk::arange(0, 12, 1, kFloat).reshape({3, 4});
  CHECK(sameValues(read(x.tril()), {0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0}));
  CHECK(sameValues(read(x.triu(1)), {0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11}));
  CHECK(sameValues(read(dk::tril(x, -1)), {0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0}));
  CHECK(dk::tril(dk::ones({2, 3, 3}, kLong)).scalar_type() == kLong);
  CHECK(dk::tril(dk::ones({2, 3, 3})).sum().item<double>() == 12);  // batched: the last two dims
  CHECK_THROWS_WITH(dk::ones({3}).tril(), "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
  // PyTorch's printed results.
  Tensor y = make({1, 2, 3, 4, 6, 11}, {2, 3});
  CHECK(sameValues(read(dk::layer_norm(y, {3})), {-1.2247, 0.0, 1.2247, -1.0190, -0.3397, 1.3587}, 1e-4));
  CHECK(sameValues(read(dk::layer_norm(y, {3}, make({1, 2, 3}, {3}), make({0.5, 0, -0.5}, {3}))),
                   {-0.7247, 0.0, 3.1742, -0.5190, -0.6794, 3.5762}, 1e-4));
  CHECK(sameValues(read(dk::layer_norm(y, {2, 3})), {-1.0593, -0.7566, -0.4540, -0.1513, 0.4540, 1.9673}, 1e-4));
  CHECK_THROWS_WITH(dk::layer_norm(dk::ones({2, 4}), {3}),
                    "Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[2, 4]");
}

TEST_CASE("parity: the new composites at the int64 limits (fuzzer findings)") {
  CHECK_THROWS_WITH(dk::chunk(dk::zeros({0}), std::numeric_limits<int64_t>::max()),
                    "chunk: cannot make 9223372036854775807 empty chunks of a tensor of size 0 at dim 0");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  Tensor x = dk::arange(0, 5, 1, kFloat);
  CHECK(x.chunk(kMax).size() == 5);  // one element each
  CHECK(sameValues(read(dk::tril(dk::ones({2, 2}), kMax)), {1, 1, 1, 1}));
  CHECK(sameValues(read(dk::tril(dk::ones({2, 2}), kMin)), {0, 0, 0, 0}));
  CHECK(sameValues(read(dk::triu(dk::ones({2, 2}), kMin)), {1, 1, 1, 1}));
  CHECK(sameValues(read(dk::triu(dk::ones({2, 2}), kMax)), {0, 0, 0, 0}));
  CHECK_THROWS_WITH(dk::ones({2}).repeat({kMax}), "repeat: repeating a dim of size 2 9223372036854775807 times overflows int64");
}
