// The composite kernels (kernels/composite/implicit.cpp and copies.cpp), called through the
// dispatcher: the Scalar overloads of add/sub/mul/div, matmul, linear, reshape, contiguous,
// flatten, stack, the *_like factories, to, clone, _to_copy, softmax/log_softmax with a dtype,
// cross_entropy_loss and dropout. They call other operators, so this binary links the CPU
// kernels too. Results are checked against float64 reference computations written here.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "dk/generated/ops/_to_copy.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/clone.h"
#include "dk/generated/ops/contiguous_ops.h"
#include "dk/generated/ops/cross_entropy_loss.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/dropout.h"
#include "dk/generated/ops/empty_like.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/flatten.h"
#include "dk/generated/ops/linear.h"
#include "dk/generated/ops/log_softmax.h"
#include "dk/generated/ops/matmul.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/ones_like.h"
#include "dk/generated/ops/reshape.h"
#include "dk/generated/ops/slice.h"
#include "dk/generated/ops/softmax.h"
#include "dk/generated/ops/stack.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/t.h"
#include "dk/generated/ops/to_ops.h"
#include "dk/generated/ops/transpose.h"
#include "dk/generated/ops/zeros_like.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

double scalarValue(const Tensor& t) {
  REQUIRE(t.dim() == 0);
  return read(t)[0];
}

Values randomValues(int64_t n, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  Values v(static_cast<size_t>(n));
  for (double& x : v) x = std::uniform_real_distribution<double>(lo, hi)(rng);
  return v;
}

void checkClose(const Values& got, const Values& expected, double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << expected[i]);
    if (std::isnan(expected[i])) CHECK(std::isnan(got[i]));
    else CHECK(std::abs(got[i] - expected[i]) <= atol + rtol * std::abs(expected[i]));
  }
}

// numpy's matmul in double: 1-D operands gain a dim that the result drops, batch dims broadcast.
Values refMatmul(const Tensor& a, const Tensor& b, Sizes* out_sizes) {
  Sizes as = a.sizes(), bs = b.sizes();
  if (a.dim() == 1) as.insert(as.begin(), 1);
  if (b.dim() == 1) bs.push_back(1);
  Sizes batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
  Sizes batch = inferBroadcastShape(batch_a, batch_b);
  int64_t n = as[as.size() - 2], k = as.back(), p = bs.back();
  Values av = read(a), bv = read(b), out;
  // Row-major offset of a broadcast batch index into an operand's batch dims.
  auto batchOffset = [&](const Sizes& own, const Sizes& index) {
    int64_t offset = 0;
    size_t lead = index.size() - own.size();
    for (size_t d = 0; d < own.size(); ++d) offset = offset * own[d] + (own[d] == 1 ? 0 : index[lead + d]);
    return offset;
  };
  int64_t batches = computeNumel(batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    Sizes index(batch.size());
    int64_t rest = bi;
    for (size_t d = batch.size(); d-- > 0;) {
      index[d] = rest % batch[d];
      rest /= batch[d];
    }
    int64_t oa = batchOffset(batch_a, index) * n * k, ob = batchOffset(batch_b, index) * k * p;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < p; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += av[static_cast<size_t>(oa + i * k + q)] * bv[static_cast<size_t>(ob + q * p + j)];
        out.push_back(s);
      }
  }
  *out_sizes = batch;
  if (a.dim() > 1) out_sizes->push_back(n);
  if (b.dim() > 1) out_sizes->push_back(p);
  return out;
}

// log_softmax of each row of a (rows x cols) row-major matrix.
Values refLogSoftmaxRows(const Values& x, int64_t rows, int64_t cols) {
  Values out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, x[static_cast<size_t>(r * cols + c)]);
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[static_cast<size_t>(r * cols + c)] - mx);
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r * cols + c)] = x[static_cast<size_t>(r * cols + c)] - mx - std::log(sum);
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- Scalar overloads

TEST_CASE("cpu-structural: Scalar overloads promote like PyTorch Scalars", "[cpu-structural][composite]") {
  Tensor i = make({1, 2, 3}, {3}, kInt);
  Tensor r = dk::add(i, Scalar(2));
  CHECK(r.dtype() == kInt);  // a Scalar does not widen an int32 tensor
  CHECK(read(r) == Values{3, 4, 5});
  Tensor f = dk::add(i, Scalar(2.5));
  CHECK(f.dtype() == kFloat);  // a floating Scalar gives the default dtype
  CHECK(read(f) == Values{3.5, 4.5, 5.5});
  CHECK(read(dk::add(i, Scalar(2), Scalar(3))) == Values{7, 8, 9});
  CHECK(read(dk::sub(i, Scalar(1))) == Values{0, 1, 2});
  CHECK(read(dk::sub(make({1, 2}, {2}), Scalar(0.5), Scalar(2))) == Values{0, 1});
  CHECK(dk::mul(i, Scalar(2)).dtype() == kInt);
  CHECK(read(dk::mul(i, Scalar(2))) == Values{2, 4, 6});
  Tensor d = dk::div(i, Scalar(2));
  CHECK(d.dtype() == kFloat);  // true division
  CHECK(read(d) == Values{0.5, 1, 1.5});
  CHECK(dk::add(make({1}, {1}, kHalf), Scalar(1.5)).dtype() == kHalf);
  CHECK(dk::mul(make({1}, {1}, kDouble), Scalar(2)).dtype() == kDouble);
  CHECK(dk::add(make({1}, {}, kLong), Scalar(0.5)).dtype() == kFloat);
  CHECK(dk::add(make({1, 0}, {2}, kBool), Scalar(1)).dtype() == kLong);
  // Strided and broadcast inputs go through the binary kernels unchanged.
  CHECK(read(dk::mul(dk::t(iota({2, 2})), Scalar(10))) == Values{0, 20, 10, 30});
}

// ---------------------------------------------------------------- matmul, linear

TEST_CASE("cpu-structural: matmul covers every rank combination", "[cpu-structural][composite]") {
  struct Case {
    Sizes a, b;
  };
  const std::vector<Case> cases = {
      {{3}, {3}},             {{2, 3}, {3}},           {{3}, {3, 4}},       {{2, 3}, {3, 4}},
      {{2, 5, 3}, {3}},       {{2, 5, 3}, {3, 4}},     {{3}, {2, 3, 4}},    {{5, 3}, {2, 3, 4}},
      {{2, 1, 5, 3}, {4, 3, 2}}, {{2, 2, 3}, {2, 3, 1}}, {{1, 2, 3, 4}, {3, 1, 4, 2}}, {{0, 3}, {3, 2}},
      {{2, 0}, {0, 3}},       {{4, 0, 5, 3}, {3, 2}},  {{2, 3, 0}, {0, 2}},
  };
  for (ScalarType dtype : {kFloat, kDouble, kLong}) {
    for (const Case& c : cases) {
      INFO("dtype " << dtype << ", a " << IntArrayRef(c.a) << ", b " << IntArrayRef(c.b));
      Tensor a = make(randomValues(computeNumel(c.a), 11, -3, 3), c.a, dtype);
      Tensor b = make(randomValues(computeNumel(c.b), 12, -3, 3), c.b, dtype);
      Sizes expected_sizes;
      Values expected = refMatmul(a, b, &expected_sizes);
      Tensor out = dk::matmul(a, b);
      CHECK(out.sizes() == expected_sizes);
      CHECK(out.dtype() == dtype);
      checkClose(read(out), expected, 1e-5, 1e-5);
    }
  }
}

TEST_CASE("cpu-structural: matmul of strided inputs and its errors", "[cpu-structural][composite]") {
  Tensor a = dk::transpose(make(randomValues(24, 13), {2, 4, 3}), 1, 2);  // [2, 3, 4]
  Tensor b = dk::t(make(randomValues(8, 14), {2, 4}));                  // [4, 2]
  Sizes sizes;
  Values expected = refMatmul(a, b, &sizes);
  Tensor out = dk::matmul(a, b);
  CHECK(out.sizes() == Sizes{2, 3, 2});
  checkClose(read(out), expected);
  Tensor v = dk::slice(make(randomValues(8, 15), {8}), 0, 0, std::nullopt, 2);  // [4], stride 2
  checkClose(read(dk::matmul(v, v)), refMatmul(v, v, &sizes));
  CHECK(dk::matmul(v, v).dim() == 0);
  checkClose(read(dk::matmul(a, v)), refMatmul(a, v, &sizes));

  CHECK_THROWS_WITH(dk::matmul(make({1}, {}), iota({2, 2})),
                    "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  CHECK_THROWS_WITH(dk::matmul(iota({3}), iota({4})),
                    "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, "
                    "but got 3 and 4 elements respectively");
  CHECK_THROWS_WITH(dk::matmul(iota({2, 3}), iota({4})), "size mismatch, got input (2), mat (2x3), vec (4)");
  CHECK_THROWS_WITH(dk::matmul(iota({3}), iota({4, 5})), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)");
  CHECK_THROWS_WITH(dk::matmul(iota({2, 3}), iota({4, 5})), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  CHECK_THROWS_WITH(dk::matmul(iota({2, 2, 3}), iota({4, 5})),
                    "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)");
  CHECK_THROWS_WITH(dk::matmul(iota({2, 2, 3}), iota({2, 4, 5})),
                    "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].");
  CHECK_THROWS_WITH(dk::matmul(iota({2, 2, 3}), iota({3, 3, 5})),
                    "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0 "
                    "(shapes [2] and [3])");
  CHECK_THROWS_WITH(dk::matmul(iota({2, 3}), iota({3, 2}, kDouble)),
                    "expected m1 and m2 to have the same dtype, but got: float != double");
}

TEST_CASE("cpu-structural: linear is input @ weight.t() + bias", "[cpu-structural][composite]") {
  Tensor weight = make(randomValues(12, 21), {4, 3});
  Tensor bias = make(randomValues(4, 22), {4});
  Values wt = read(dk::t(weight)), bv = read(bias);
  auto reference = [&](const Tensor& input, bool with_bias) {
    Sizes sizes;
    Values out = refMatmul(input, dk::t(weight), &sizes);
    if (with_bias)
      for (size_t i = 0; i < out.size(); ++i) out[i] += bv[i % 4];
    return out;
  };
  Tensor x2 = make(randomValues(6, 23), {2, 3});
  Tensor y2 = dk::linear(x2, weight, bias);  // the fused addmm path
  CHECK(y2.sizes() == Sizes{2, 4});
  checkClose(read(y2), reference(x2, true));
  checkClose(read(dk::linear(x2, weight)), reference(x2, false));

  Tensor x3 = make(randomValues(30, 24), {2, 5, 3});  // contiguous 3-D: addmm on a [10, 3] view
  Tensor y3 = dk::linear(x3, weight, bias);
  CHECK(y3.sizes() == Sizes{2, 5, 4});
  checkClose(read(y3), reference(x3, true));

  Tensor x3t = dk::transpose(make(randomValues(30, 25), {5, 2, 3}), 0, 1);  // strided 3-D: matmul, then add_
  CHECK(dk::linear(x3t, weight, bias).sizes() == Sizes{2, 5, 4});
  checkClose(read(dk::linear(x3t, weight, bias)), reference(x3t, true));

  Tensor x1 = make({1, 2, 3}, {3});
  CHECK(dk::linear(x1, weight, bias).sizes() == Sizes{4});
  checkClose(read(dk::linear(x1, weight, bias)), reference(x1, true));
  CHECK(dk::linear(x1, make({1, 1, 1}, {3})).dim() == 0);  // 1-D weight: a dot product
  CHECK(scalarValue(dk::linear(x1, make({1, 1, 1}, {3}))) == 6.0);

  CHECK_THROWS_WITH(dk::linear(make(Values(4), {2, 2}), weight, bias),
                    "mat1 and mat2 shapes cannot be multiplied (2x2 and 3x4)");
}

// ---------------------------------------------------------------- shape composites

TEST_CASE("cpu-structural: reshape views when it can and copies when it must", "[cpu-structural][composite]") {
  Tensor a = iota({2, 3, 4});
  Tensor v = dk::reshape(a, {6, -1});
  CHECK(v.sizes() == Sizes{6, 4});
  CHECK(v.is_view());
  CHECK(v.storage().is_same(a.storage()));
  CHECK(read(v) == read(a));

  Tensor tr = dk::transpose(a, 0, 2);  // [4, 3, 2], not viewable as [24]
  Tensor copy = dk::reshape(tr, {24});
  CHECK(copy.sizes() == Sizes{24});
  CHECK_FALSE(copy.storage().is_same(a.storage()));
  CHECK(read(copy) == read(tr));
  CHECK(dk::reshape(tr, {4, 6}).sizes() == Sizes{4, 6});
  CHECK(read(dk::reshape(tr, {4, 6})) == read(tr));
  // A transposed tensor that still is a view.
  Tensor kept = dk::reshape(tr, {4, 3, 1, 2});
  CHECK(kept.storage().is_same(a.storage()));

  CHECK(dk::reshape(make({7}, {}), {1, 1}).sizes() == Sizes{1, 1});
  CHECK(dk::reshape(iota({1}), {}).dim() == 0);
  CHECK(dk::reshape(iota({0, 4}), {2, 0, 3}).sizes() == Sizes{2, 0, 3});
  CHECK_THROWS_WITH(dk::reshape(iota({0, 4}), {2, 0, -1}),
                    "cannot reshape tensor of 0 elements into shape [2, 0, -1] because the unspecified dimension size "
                    "-1 can be any value and is ambiguous");
  CHECK_THROWS_WITH(dk::reshape(a, {5, -1}), "shape '[5, -1]' is invalid for input of size 24");
}

TEST_CASE("cpu-structural: contiguous returns self or a packed copy", "[cpu-structural][composite]") {
  Tensor a = iota({2, 3});
  CHECK(ops::contiguous::call(a, MemoryFormat::Contiguous).is_same(a));
  Tensor tr = dk::t(a);
  Tensor c = ops::contiguous::call(tr, MemoryFormat::Contiguous);
  CHECK_FALSE(c.is_same(tr));
  CHECK(c.is_contiguous());
  CHECK(c.strides() == Sizes{2, 1});
  CHECK(read(c) == Values{0, 3, 1, 4, 2, 5});
  CHECK_THROWS_WITH(ops::contiguous::call(tr, MemoryFormat::Preserve),
                    "preserve memory format is unsupported by the contiguous operator");
  CHECK_THROWS_WITH(ops::contiguous::call(tr, MemoryFormat::ChannelsLast),
                    "contiguous: memory format ChannelsLast is not supported");
}

TEST_CASE("cpu-structural: flatten merges a range of dims", "[cpu-structural][composite]") {
  Tensor a = iota({2, 3, 4});
  CHECK(dk::flatten(a).sizes() == Sizes{24});
  CHECK(dk::flatten(a, 1).sizes() == Sizes{2, 12});
  CHECK(dk::flatten(a, 0, 1).sizes() == Sizes{6, 4});
  CHECK(dk::flatten(a, -2, -1).sizes() == Sizes{2, 12});
  CHECK(dk::flatten(a, 1).storage().is_same(a.storage()));
  CHECK(dk::flatten(a, 1, 1).is_same(a));
  CHECK(dk::flatten(make({3}, {})).sizes() == Sizes{1});
  CHECK(dk::flatten(iota({0, 1, 3, 0}), 1, 2).sizes() == Sizes{0, 3, 0});
  Tensor tr = dk::transpose(a, 0, 1);
  CHECK(read(dk::flatten(tr)) == read(tr));
  CHECK_THROWS_WITH(dk::flatten(a, 2, 1), "flatten() has invalid args: start_dim cannot come after end_dim");
  CHECK_THROWS_WITH(dk::flatten(a, 0, 3), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
}

TEST_CASE("cpu-structural: stack joins along a new dim", "[cpu-structural][composite]") {
  Tensor a = iota({2, 3});
  Tensor b = make({10, 11, 12, 13, 14, 15}, {2, 3});
  Tensor s0 = dk::stack({a, b}, 0);
  CHECK(s0.sizes() == Sizes{2, 2, 3});
  CHECK(read(s0) == Values{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  Tensor s2 = dk::stack({a, b}, -1);
  CHECK(s2.sizes() == Sizes{2, 3, 2});
  CHECK(read(s2) == Values{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15});
  CHECK(read(dk::stack({a, b}, 1)) == Values{0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15});
  CHECK(dk::stack({make({1}, {}), make({2}, {})}, 0).sizes() == Sizes{2});
  CHECK(dk::stack({make({1}, {1}, kInt), make({2.5}, {1})}, 0).dtype() == kFloat);
  CHECK(read(dk::stack({dk::t(a), dk::t(b)}, 0)) == Values{0, 3, 1, 4, 2, 5, 10, 13, 11, 14, 12, 15});
  CHECK_THROWS_WITH(dk::stack({a, dk::t(b)}, 0),
                    "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 1");
  CHECK_THROWS_WITH(dk::stack({a, b}, 3), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  // With no tensor to dispatch on, the call reaches the composite kernel.
  CHECK_THROWS_WITH(dk::stack(std::vector<Tensor>{}, 0), "stack expects a non-empty TensorList");
}

// ---------------------------------------------------------------- factories like a tensor, copies

TEST_CASE("cpu-structural: zeros_like, ones_like and empty_like", "[cpu-structural][composite]") {
  Tensor a = iota({2, 3}, kInt);
  Tensor z = dk::zeros_like(a);
  CHECK(z.sizes() == Sizes{2, 3});
  CHECK(z.dtype() == kInt);
  CHECK(read(z) == Values(6, 0.0));
  CHECK_FALSE(z.storage().is_same(a.storage()));
  Tensor o = dk::ones_like(a, kHalf);
  CHECK(o.dtype() == kHalf);
  CHECK(read(o) == Values(6, 1.0));
  CHECK(dk::empty_like(a).sizes() == Sizes{2, 3});
  CHECK(dk::empty_like(a, kBool).dtype() == kBool);
  Tensor m = dk::empty_like(a, std::nullopt, std::nullopt, Device(kMeta));
  CHECK(m.device() == Device(kMeta));
  CHECK(m.sizes() == Sizes{2, 3});

  SECTION("Preserve keeps a dense layout and orders a sparse one") {
    Tensor tr = dk::t(iota({2, 3}));  // [3, 2] strides [1, 3]: dense
    CHECK(dk::empty_like(tr).strides() == Sizes{1, 3});
    CHECK(dk::zeros_like(tr).strides() == Sizes{1, 3});
    CHECK(dk::empty_like(tr, std::nullopt, std::nullopt, std::nullopt, std::nullopt, MemoryFormat::Contiguous)
              .strides() == Sizes{2, 1});
    Tensor gappy = dk::t(dk::slice(iota({4, 6}), 1, 0, std::nullopt, 2));  // [3, 4] strides [2, 6]
    CHECK(dk::empty_like(gappy).strides() == Sizes{1, 3});
    Tensor expanded = ops::expand::call(iota({3}), {2, 3}, false);  // strides [0, 1]
    CHECK(dk::empty_like(expanded).strides() == Sizes{3, 1});
    Tensor sliced = dk::slice(iota({8}), 0, 0, std::nullopt, 2);
    CHECK(dk::empty_like(sliced).strides() == Sizes{1});
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(dk::empty_like(a, std::nullopt, Layout::Sparse),
                      "empty_like: only the strided layout is supported, got Sparse");
    CHECK_THROWS_WITH(dk::zeros_like(a, std::nullopt, std::nullopt, std::nullopt, true),
                      "empty_like: pinned memory is not supported");
    CHECK_THROWS_WITH(dk::ones_like(a, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                    MemoryFormat::ChannelsLast),
                      "empty_like: memory format ChannelsLast is not supported");
  }
}

TEST_CASE("cpu-structural: clone and _to_copy make independent copies", "[cpu-structural][composite]") {
  Tensor a = make({1.5, -2.5, 3.25, 4}, {2, 2});
  Tensor c = dk::clone(a);
  CHECK_FALSE(c.storage().is_same(a.storage()));
  CHECK_FALSE(c.is_view());
  CHECK(read(c) == read(a));
  static_cast<float*>(c.data_ptr())[0] = 100;
  CHECK(read(a)[0] == 1.5);

  Tensor tr = dk::t(a);
  CHECK(dk::clone(tr).strides() == Sizes{1, 2});  // Preserve
  CHECK(read(dk::clone(tr)) == read(tr));
  Tensor packed = dk::clone(tr, MemoryFormat::Contiguous);
  CHECK(packed.strides() == Sizes{2, 1});
  CHECK(read(packed) == read(tr));
  CHECK(read(dk::clone(make({7}, {}))) == Values{7});
  CHECK(dk::clone(iota({0, 3})).sizes() == Sizes{0, 3});
  Tensor expanded = ops::expand::call(make({1, 2}, {2}), {3, 2}, false);
  Tensor ce = dk::clone(expanded);
  CHECK(ce.strides() == Sizes{2, 1});
  CHECK(read(ce) == Values{1, 2, 1, 2, 1, 2});

  SECTION("_to_copy converts dtype") {
    Tensor l = dk::_to_copy(a, kLong);
    CHECK(l.dtype() == kLong);
    CHECK(read(l) == Values{1, -2, 3, 4});
    Tensor h = dk::_to_copy(tr, kHalf);
    CHECK(h.dtype() == kHalf);
    CHECK(h.strides() == Sizes{1, 2});
    CHECK(read(h) == read(tr));
    Tensor same = dk::_to_copy(a, std::nullopt, std::nullopt, Device(kCPU));
    CHECK_FALSE(same.is_same(a));
    CHECK(read(same) == read(a));
    CHECK(read(dk::_to_copy(a, kBool)) == Values{1, 1, 1, 1});
    CHECK_THROWS_WITH(dk::_to_copy(a, std::nullopt, Layout::Sparse),
                      "empty_like: only the strided layout is supported, got Sparse");
  }
  SECTION("to.dtype aliases when nothing changes") {
    auto to = [](const Tensor& t, ScalarType dtype, bool copy = false,
                 std::optional<MemoryFormat> format = std::nullopt) {
      return ops::to_dtype::call(t, dtype, false, copy, format);
    };
    CHECK(to(a, kFloat).is_same(a));
    CHECK(to(tr, kFloat, false, MemoryFormat::Contiguous).is_same(tr));  // as PyTorch: suggest_memory_format
    Tensor copied = to(a, kFloat, true);
    CHECK_FALSE(copied.is_same(a));
    CHECK(read(copied) == read(a));
    Tensor converted = to(a, kInt);
    CHECK(converted.dtype() == kInt);
    CHECK(read(converted) == Values{1, -2, 3, 4});
  }
}

// ---------------------------------------------------------------- neural networks

TEST_CASE("cpu-structural: softmax and log_softmax with a dtype", "[cpu-structural][composite]") {
  Values x = randomValues(6, 31, -3, 3);
  Tensor a = make(x, {2, 3});
  Values ls = refLogSoftmaxRows(read(a), 2, 3);
  Tensor s = dk::softmax(a, 1);
  CHECK(s.dtype() == kFloat);
  Values expected;
  for (double v : ls) expected.push_back(std::exp(v));
  checkClose(read(s), expected);
  Tensor sd = dk::softmax(a, -1, kDouble);
  CHECK(sd.dtype() == kDouble);
  checkClose(read(sd), expected, 1e-12, 1e-12);
  Tensor lsd = dk::log_softmax(make(x, {2, 3}, kHalf), 1, kFloat);  // converted first on the CPU
  CHECK(lsd.dtype() == kFloat);
  checkClose(read(lsd), refLogSoftmaxRows(read(make(x, {2, 3}, kHalf)), 2, 3));
  checkClose(read(dk::log_softmax(a, 1)), ls);
  CHECK(dk::softmax(iota({2, 3}, kLong), 0, kFloat).dtype() == kFloat);
  CHECK_THROWS_WITH(dk::softmax(iota({2, 3}, kLong), 0), "_softmax: unsupported dtype Long");
}

TEST_CASE("cpu-structural: cross_entropy_loss with class indices", "[cpu-structural][composite]") {
  const int64_t n = 4, c = 5;
  Values logits = randomValues(n * c, 41, -2, 2);
  Tensor input = make(logits, {n, c});
  Tensor target = make({1, 0, 4, 2}, {n}, kLong);
  Values weight_v{1, 2, 0.5, 3, 1.5};
  Tensor weight = make(weight_v, {c});
  Values ls = refLogSoftmaxRows(read(input), n, c);
  auto lp = [&](int64_t i, int64_t k) { return ls[static_cast<size_t>(i * c + k)]; };
  const int64_t t[] = {1, 0, 4, 2};

  Values none;
  double sum = 0, wsum = 0, wtotal = 0;
  for (int64_t i = 0; i < n; ++i) {
    none.push_back(-lp(i, t[i]));
    sum += -lp(i, t[i]);
    wsum += -lp(i, t[i]) * weight_v[static_cast<size_t>(t[i])];
    wtotal += weight_v[static_cast<size_t>(t[i])];
  }
  checkClose(read(dk::cross_entropy_loss(input, target, std::nullopt, 0)), none);
  CHECK(scalarValue(dk::cross_entropy_loss(input, target)) == Approx(sum / n).epsilon(1e-5));
  CHECK(scalarValue(dk::cross_entropy_loss(input, target, std::nullopt, 2)) == Approx(sum).epsilon(1e-5));
  CHECK(scalarValue(dk::cross_entropy_loss(input, target, weight)) == Approx(wsum / wtotal).epsilon(1e-5));
  // ignore_index drops sample 2 (target 4).
  double kept = sum - (-lp(2, 4));
  CHECK(scalarValue(dk::cross_entropy_loss(input, target, std::nullopt, 1, 4)) == Approx(kept / 3).epsilon(1e-5));

  SECTION("a single sample") {
    Tensor one = make({0.5, 1.5, -1}, {3});
    Values l1 = refLogSoftmaxRows({0.5, 1.5, -1}, 1, 3);
    CHECK(scalarValue(dk::cross_entropy_loss(one, make({1}, {}, kLong))) == Approx(-l1[1]).epsilon(1e-5));
  }
  SECTION("spatial dims: (N, C, d)") {
    // input[i][k][j] = logits3[(i * 3 + k) * 2 + j]; the loss of (i, j) uses the column over k.
    Values l3 = randomValues(12, 42, -2, 2);
    Tensor in3 = make(l3, {2, 3, 2});
    Tensor t3 = make({0, 2, 1, 1}, {2, 2}, kLong);
    Values per;
    const int64_t t3v[2][2] = {{0, 2}, {1, 1}};
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        Values col;
        for (int64_t k = 0; k < 3; ++k) col.push_back(l3[static_cast<size_t>((i * 3 + k) * 2 + j)]);
        per.push_back(-refLogSoftmaxRows(col, 1, 3)[static_cast<size_t>(t3v[i][j])]);
      }
    Tensor none3 = dk::cross_entropy_loss(in3, t3, std::nullopt, 0);
    CHECK(none3.sizes() == Sizes{2, 2});
    checkClose(read(none3), per);
    CHECK(scalarValue(dk::cross_entropy_loss(in3, t3)) ==
          Approx((per[0] + per[1] + per[2] + per[3]) / 4).epsilon(1e-5));
    CHECK_THROWS_WITH(dk::cross_entropy_loss(in3, make({0, 1, 2, 0, 1, 2}, {2, 3}, kLong)),
                      "Expected target size [2, 2], got [2, 3]");
  }
  SECTION("label smoothing") {
    const double eps = 0.2;
    Values smooth;  // -sum_k w_k * lp(i, k)
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t k = 0; k < c; ++k) s -= weight_v[static_cast<size_t>(k)] * lp(i, k);
      smooth.push_back(s);
    }
    // Weighted mean, sample 2 ignored: both parts are divided by the kept targets' weight.
    double nll_w = 0, smooth_w = 0, total_w = 0;
    for (int64_t i : {0, 1, 3}) {
      double wt = weight_v[static_cast<size_t>(t[i])];
      nll_w += -lp(i, t[i]) * wt;
      smooth_w += smooth[static_cast<size_t>(i)];
      total_w += wt;
    }
    double expected = (1 - eps) * nll_w / total_w + eps / c * smooth_w / total_w;
    CHECK(scalarValue(dk::cross_entropy_loss(input, target, weight, 1, 4, eps)) == Approx(expected).epsilon(1e-5));
    // Unweighted, reduction none: per-sample mix, ignored sample 0.
    Values mixed;
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t k = 0; k < c; ++k) s -= lp(i, k);
      mixed.push_back(i == 2 ? 0.0 : (1 - eps) * -lp(i, t[i]) + eps / c * s);
    }
    checkClose(read(dk::cross_entropy_loss(input, target, std::nullopt, 0, 4, eps)), mixed);
    double mixed_sum = mixed[0] + mixed[1] + mixed[3];
    CHECK(scalarValue(dk::cross_entropy_loss(input, target, std::nullopt, 2, 4, eps)) ==
          Approx(mixed_sum).epsilon(1e-5));
    CHECK(scalarValue(dk::cross_entropy_loss(input, target, std::nullopt, 1, 4, eps)) ==
          Approx(mixed_sum / 3).epsilon(1e-5));
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(dk::cross_entropy_loss(input, target, std::nullopt, 1, -100, 1.5),
                      "label_smoothing must be between 0.0 and 1.0. Got: 1.5");
    CHECK_THROWS_WITH(dk::cross_entropy_loss(input, target, std::nullopt, 4),
                      "cross_entropy: reduction must be 0 (none), 1 (mean) or 2 (sum), but got 4");
    CHECK_THROWS_WITH(dk::cross_entropy_loss(input, make({1, 0, 5, 2}, {n}, kLong)), "Target 5 is out of bounds.");
    CHECK_THROWS_WITH(dk::cross_entropy_loss(input, make({1, 0}, {2}, kLong)),
                      "Expected input batch_size (4) to match target batch_size (2).");
  }
}

TEST_CASE("cpu-structural: cross_entropy_loss with class probabilities", "[cpu-structural][composite]") {
  const int64_t n = 3, c = 4;
  Tensor input = make(randomValues(n * c, 51, -2, 2), {n, c});
  Values probs = randomValues(n * c, 52, 0, 1);
  for (int64_t i = 0; i < n; ++i) {  // normalise the rows
    double s = 0;
    for (int64_t k = 0; k < c; ++k) s += probs[static_cast<size_t>(i * c + k)];
    for (int64_t k = 0; k < c; ++k) probs[static_cast<size_t>(i * c + k)] /= s;
  }
  Tensor target = make(probs, {n, c});
  Values weight_v{1, 2, 3, 0.5};
  Values ls = refLogSoftmaxRows(read(input), n, c);
  auto loss = [&](double eps, bool weighted) {
    Values per;
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t k = 0; k < c; ++k) {
        double p = probs[static_cast<size_t>(i * c + k)] * (1 - eps) + eps / c;
        s -= (weighted ? weight_v[static_cast<size_t>(k)] : 1.0) * p * ls[static_cast<size_t>(i * c + k)];
      }
      per.push_back(s);
    }
    return per;
  };
  Values per = loss(0, false);
  checkClose(read(dk::cross_entropy_loss(input, target, std::nullopt, 0)), per);
  CHECK(scalarValue(dk::cross_entropy_loss(input, target)) == Approx((per[0] + per[1] + per[2]) / n).epsilon(1e-5));
  Values wper = loss(0, true);
  CHECK(scalarValue(dk::cross_entropy_loss(input, target, make(weight_v, {c}), 2)) ==
        Approx(wper[0] + wper[1] + wper[2]).epsilon(1e-5));
  Values sper = loss(0.1, false);
  CHECK(scalarValue(dk::cross_entropy_loss(input, target, std::nullopt, 1, -100, 0.1)) ==
        Approx((sper[0] + sper[1] + sper[2]) / n).epsilon(1e-5));
  CHECK(std::isnan(scalarValue(dk::cross_entropy_loss(make({}, {0, 4}), make({}, {0, 4})))));

  CHECK_THROWS_WITH(dk::cross_entropy_loss(input, iota({n, c}, kLong)),
                    "Expected floating point type for target with class probabilities, got Long");
  CHECK_THROWS_WITH(dk::cross_entropy_loss(input, target, std::nullopt, 1, 0),
                    "ignore_index is not supported for floating point target");
  CHECK_THROWS_WITH(dk::cross_entropy_loss(input, target, make({1, 2}, {2})),
                    "cross_entropy: weight tensor should be defined either for all 4 classes or no classes but got "
                    "weight tensor of shape: [2]");
}

TEST_CASE("cpu-structural: dropout", "[cpu-structural][composite]") {
  Tensor x = make(Values(2000, 3.0), {2000});
  CHECK(dk::dropout(x, 0.5, false).is_same(x));
  CHECK(dk::dropout(x, 0.0, true).is_same(x));
  Tensor empty = make({}, {0});
  CHECK(dk::dropout(empty, 0.5, true).is_same(empty));
  Tensor all = dk::dropout(x, 1.0, true);
  CHECK(read(all) == Values(2000, 0.0));

  Tensor d = dk::dropout(x, 0.25, true);
  CHECK(d.dtype() == kFloat);
  CHECK(d.sizes() == Sizes{2000});
  int zeros = 0;
  for (double v : read(d)) {
    if (v == 0) ++zeros;
    else CHECK(v == Approx(4.0));  // 3 / (1 - 0.25)
  }
  CHECK(zeros > 400);  // expected 500; a 5-sigma band
  CHECK(zeros < 600);
  Tensor h = dk::dropout(make(Values(8, 1.0), {2, 4}, kHalf), 0.5, true);
  CHECK(h.dtype() == kHalf);
  for (double v : read(h)) CHECK((v == 0 || v == 2));

  CHECK_THROWS_WITH(dk::dropout(x, 1.5, true), "dropout probability has to be between 0 and 1, but got 1.5");
  CHECK_THROWS_WITH(dk::dropout(x, -0.1, false), "dropout probability has to be between 0 and 1, but got -0.1");
  CHECK_THROWS_WITH(dk::dropout(iota({4}, kLong), 0.5, true),
                    "dropout: expected a floating point input in training, but got Long");
}
