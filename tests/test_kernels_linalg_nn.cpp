// The CPU matrix-product and neural-network kernels (kernels/cpu/linalg.cpp, kernels/cpu/nn.cpp),
// called through the dispatcher: mm, mm.out, bmm, addmm, _softmax, _log_softmax, mse_loss,
// nll_loss, embedding, cat. Results are checked against float64 reference loops written here,
// for several dtypes, strided inputs and zero-size shapes, and every error by its exact text.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dk/generated/ops/_log_softmax.h"
#include "dk/generated/ops/_softmax.h"
#include "dk/generated/ops/abs.h"
#include "dk/generated/ops/addmm.h"
#include "dk/generated/ops/addmm_ops.h"
#include "dk/generated/ops/bmm.h"
#include "dk/generated/ops/bmm_ops.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/cat_native.h"
#include "dk/generated/ops/cat_ops.h"
#include "dk/generated/ops/embedding.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mm_ops.h"
#include "dk/generated/ops/mse_loss.h"
#include "dk/generated/ops/nll_loss.h"
#include "dk/generated/ops/permute.h"
#include "dk/generated/ops/slice.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/t.h"
#include "dk/generated/ops/transpose.h"
#include "dk/generated/ops/zeros.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

double scalarValue(const Tensor& t) {
  REQUIRE(t.dim() == 0);
  return read(t)[0];
}

// Random values in [-1, 1), or small integers in [lo, hi] for integral dtypes.
Values randomValues(int64_t n, uint32_t seed, ScalarType dtype) {
  std::mt19937 rng(seed);
  Values v(static_cast<size_t>(n));
  for (double& x : v) {
    if (isFloatingType(dtype)) x = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
    else if (dtype == kByte) x = static_cast<double>(std::uniform_int_distribution<int>(0, 4)(rng));
    else x = static_cast<double>(std::uniform_int_distribution<int>(-3, 3)(rng));
  }
  return v;
}

// |got - expected| <= atol + rtol * |expected| elementwise (NaNs must match NaNs).
void checkClose(const Values& got, const Values& expected, double rtol, double atol) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(std::abs(got[i] - expected[i]) <= atol + rtol * std::abs(expected[i]));
    }
  }
}

// Tolerances for results rounded to `dtype` after float accumulation.
double rtolFor(ScalarType dtype) {
  switch (dtype) {
    case kHalf: return 2e-3;
    case kBFloat16: return 1.6e-2;
    case kFloat: return 1e-5;
    default: return 1e-12;
  }
}

// The row-major (m x n) product of a (m x k) and b (k x n), in double.
Values refMatmul(const Values& a, const Values& b, int64_t m, int64_t k, int64_t n) {
  Values c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += a[static_cast<size_t>(i * k + p)] * b[static_cast<size_t>(p * n + j)];
      c[static_cast<size_t>(i * n + j)] = s;
    }
  return c;
}

// Values as the dtype would hold them (integers wrap, floats round).
Values roundTo(const Values& v, ScalarType dtype) { return read(make(v, {static_cast<int64_t>(v.size())}, dtype)); }

// Softmax (or log-softmax) of `x` (sizes) along `dim`, in double.
Values refSoftmax(const Values& x, const Sizes& sizes, int64_t dim, bool log) {
  int64_t outer = 1, inner = 1, len = sizes[static_cast<size_t>(dim)];
  for (int64_t d = 0; d < dim; ++d) outer *= sizes[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < sizes.size(); ++d) inner *= sizes[d];
  Values out(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * len + k) * inner + i); };
      double mx = -INFINITY;
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, x[at(k)]);
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x[at(k)] - mx);
      for (int64_t k = 0; k < len; ++k)
        out[at(k)] = log ? x[at(k)] - mx - std::log(sum) : std::exp(x[at(k)] - mx) / sum;
    }
  return out;
}

const std::vector<ScalarType> kMatmulDtypes = {kFloat, kDouble, kHalf, kBFloat16, kLong, kInt, kChar, kByte};

// Captures dk::warn messages while alive.
struct WarningCapture {
  std::vector<std::string> messages;
  WarningHandler previous;
  WarningCapture() {
    previous = setWarningHandler([this](const std::string& m) { messages.push_back(m); });
  }
  ~WarningCapture() { setWarningHandler(previous); }
};

}  // namespace

// ---------------------------------------------------------------- mm

TEST_CASE("cpu-structural: mm matches a float64 reference for every dtype", "[cpu-structural][linalg]") {
  // k = 130 and n = 260 cross the kernel's 128 x 256 blocks.
  const int64_t m = 5, k = 130, n = 260;
  for (ScalarType dtype : kMatmulDtypes) {
    INFO("dtype " << dtype);
    Tensor a = make(randomValues(m * k, 1, dtype), {m, k}, dtype);
    Tensor b = make(randomValues(k * n, 2, dtype), {k, n}, dtype);
    Tensor c = dk::mm(a, b);
    CHECK(c.dtype() == dtype);
    CHECK(c.sizes() == Sizes{m, n});
    CHECK(c.is_contiguous());
    Values expected = refMatmul(read(a), read(b), m, k, n);
    if (isFloatingType(dtype)) {
      checkClose(read(c), expected, rtolFor(dtype), rtolFor(dtype));
    } else {
      CHECK(read(c) == roundTo(expected, dtype));  // exact, wrapping like the dtype
    }
  }
}

TEST_CASE("cpu-structural: mm reads strided inputs", "[cpu-structural][linalg]") {
  for (ScalarType dtype : {kFloat, kDouble, kHalf, kLong}) {
    INFO("dtype " << dtype);
    // a: the transpose of a [7, 4] tensor; b: every other column of a [7, 10] tensor.
    Tensor a = dk::t(make(randomValues(28, 3, dtype), {7, 4}, dtype));
    Tensor b = dk::slice(make(randomValues(70, 4, dtype), {7, 10}, dtype), 1, 0, std::nullopt, 2);
    REQUIRE_FALSE(a.is_contiguous());
    REQUIRE_FALSE(b.is_contiguous());
    Tensor c = dk::mm(a, b);
    checkClose(read(c), refMatmul(read(a), read(b), 4, 7, 5), rtolFor(dtype), rtolFor(dtype));
  }
  // An expanded (stride 0) operand.
  Tensor row = make({1, 2, 3}, {1, 3});
  Tensor expanded = ops::expand::call(row, {4, 3}, false);
  Tensor c = dk::mm(expanded, make({1, 0, 0, 1, 1, 1}, {3, 2}));
  CHECK(read(c) == Values{4, 5, 4, 5, 4, 5, 4, 5});
}

TEST_CASE("cpu-structural: mm hand-worked values and zero sizes", "[cpu-structural][linalg]") {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = make({7, 8, 9, 10, 11, 12}, {3, 2});
  CHECK(read(dk::mm(a, b)) == Values{58, 64, 139, 154});
  CHECK(dk::mm(make({}, {0, 3}), b).sizes() == Sizes{0, 2});
  CHECK(dk::mm(a, make({}, {3, 0})).sizes() == Sizes{2, 0});
  Tensor empty_k = dk::mm(make({}, {2, 0}), make({}, {0, 3}));
  CHECK(empty_k.sizes() == Sizes{2, 3});
  CHECK(read(empty_k) == Values(6, 0.0));
  // NaN and inf propagate like IEEE sums.
  Tensor nan_a = make({NAN, 1}, {1, 2});
  CHECK(std::isnan(read(dk::mm(nan_a, make({0, 0}, {2, 1})))[0]));
}

TEST_CASE("cpu-structural: mm errors", "[cpu-structural][linalg]") {
  CHECK_THROWS_WITH(dk::mm(make(Values(6), {2, 3}), make(Values(20), {4, 5})),
                    "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  CHECK_THROWS_WITH(dk::mm(make(Values(6), {2, 3}), make(Values(6), {3, 2}, kDouble)),
                    "expected m1 and m2 to have the same dtype, but got: float != double");
  CHECK_THROWS_WITH(dk::mm(make(Values(6), {2, 3}, kLong), make(Values(6), {3, 2}, kHalf)),
                    "expected m1 and m2 to have the same dtype, but got: long int != c10::Half");
  CHECK_THROWS_WITH(dk::mm(make(Values(3), {3}), make(Values(6), {3, 2})), "self must be a matrix");
  CHECK_THROWS_WITH(dk::mm(make(Values(6), {2, 3}), make(Values(3), {3})), "mat2 must be a matrix");
  CHECK_THROWS_WITH(dk::mm(make(Values(4), {2, 2}, kBool), make(Values(4), {2, 2}, kBool)),
                    "mm: unsupported dtype Bool");
  Tensor meta = detail::empty_contiguous({2, 2}, kFloat, kMeta);
  CHECK_THROWS_WITH(dk::ops::mm::redispatch(DispatchKeySet(BackendComponent::CPUBit).add(DispatchKey::Dense),
                                            make(Values(4), {2, 2}), meta),
                    "dk::mm: expected all tensors to be on the same device, but found at least two devices, cpu "
                    "(argument 'self') and meta (argument 'mat2')");
}

TEST_CASE("cpu-structural: mm.out writes into, resizes and checks out", "[cpu-structural][linalg]") {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = make({7, 8, 9, 10, 11, 12}, {3, 2});
  const Values expected{58, 64, 139, 154};

  SECTION("the right shape is written in place") {
    Tensor out = detail::empty_contiguous({2, 2}, kFloat, kCPU);
    void* data = out.data_ptr();
    Tensor r = dk::mm(a, b, out);
    CHECK(r.is_same(out));
    CHECK(out.data_ptr() == data);
    CHECK(read(out) == expected);
  }
  SECTION("a strided out is written through its strides") {
    Tensor base = detail::empty_contiguous({2, 2}, kFloat, kCPU);
    Tensor out = dk::t(base);
    dk::mm(a, b, out);
    CHECK(out.strides() == Sizes{1, 2});
    CHECK(read(out) == expected);
    CHECK(read(base) == Values{58, 139, 64, 154});
  }
  SECTION("an empty out is resized silently") {
    WarningCapture warnings;
    Tensor out = detail::empty_contiguous({0}, kFloat, kCPU);
    dk::mm(a, b, out);
    CHECK(out.sizes() == Sizes{2, 2});
    CHECK(read(out) == expected);
    CHECK(warnings.messages.empty());
  }
  SECTION("a non-empty out of another shape is resized with a warning") {
    WarningCapture warnings;
    Tensor out = detail::empty_contiguous({3}, kFloat, kCPU);
    dk::mm(a, b, out);
    CHECK(out.sizes() == Sizes{2, 2});
    CHECK(out.is_contiguous());
    CHECK(read(out) == expected);
    REQUIRE(warnings.messages.size() == 1);
    CHECK(warnings.messages[0] ==
          "An output with one or more elements was resized since it had shape [3], which does not match the "
          "required output shape [2, 2]. This behavior is deprecated, and in a future PyTorch release outputs will "
          "not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, "
          "inplace, to zero elements with t.resize_(0).");
  }
  SECTION("out may be an input") {
    Tensor sq = make({1, 2, 3, 4}, {2, 2});
    dk::mm(sq, sq, sq);
    CHECK(read(sq) == Values{7, 10, 15, 22});
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(dk::mm(a, b, detail::empty_contiguous({2, 2}, kDouble, kCPU)),
                      "Expected out tensor to have dtype float, but got double instead");
    CHECK_THROWS_WITH(dk::mm(a, a, detail::empty_contiguous({2, 2}, kFloat, kCPU)),
                      "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  }
}

// ---------------------------------------------------------------- bmm, addmm

TEST_CASE("cpu-structural: bmm multiplies each batch", "[cpu-structural][linalg]") {
  const int64_t batches = 3, m = 4, k = 5, n = 2;
  for (ScalarType dtype : kMatmulDtypes) {
    INFO("dtype " << dtype);
    Values av = randomValues(batches * m * k, 5, dtype);
    Tensor a = make(av, {batches, m, k}, dtype);
    // b as the transpose of a [3, 2, 5] tensor: strided within each batch.
    Tensor b = dk::transpose(make(randomValues(batches * n * k, 6, dtype), {batches, n, k}, dtype), 1, 2);
    Tensor c = dk::bmm(a, b);
    CHECK(c.sizes() == Sizes{batches, m, n});
    Values bvals = read(b), cvals = read(c);
    for (int64_t i = 0; i < batches; ++i) {
      Values ai(av.begin() + i * m * k, av.begin() + (i + 1) * m * k);
      Values bi(bvals.begin() + i * k * n, bvals.begin() + (i + 1) * k * n);
      Values ci(cvals.begin() + i * m * n, cvals.begin() + (i + 1) * m * n);
      Values expected = refMatmul(read(make(ai, {m * k}, dtype)), bi, m, k, n);
      if (isFloatingType(dtype)) checkClose(ci, expected, rtolFor(dtype), rtolFor(dtype));
      else CHECK(ci == roundTo(expected, dtype));
    }
  }
  CHECK(dk::bmm(make({}, {0, 2, 3}), make({}, {0, 3, 4})).sizes() == Sizes{0, 2, 4});
  CHECK(read(dk::bmm(make({}, {2, 1, 0}), make({}, {2, 0, 1}))) == Values{0, 0});

  CHECK_THROWS_WITH(dk::bmm(make(Values(6), {2, 3}), make(Values(6), {1, 3, 2})), "batch1 must be a 3D tensor");
  CHECK_THROWS_WITH(dk::bmm(make(Values(6), {1, 2, 3}), make(Values(6), {3, 2})), "batch2 must be a 3D tensor");
  CHECK_THROWS_WITH(dk::bmm(make(Values(18), {3, 2, 3}), make(Values(12), {2, 3, 2})),
                    "Expected size for first two dimensions of batch2 tensor to be: [3, 3] but got: [2, 3].");
  CHECK_THROWS_WITH(dk::bmm(make(Values(6), {1, 2, 3}), make(Values(8), {1, 4, 2})),
                    "Expected size for first two dimensions of batch2 tensor to be: [1, 3] but got: [1, 4].");
  CHECK_THROWS_WITH(dk::bmm(make(Values(6), {1, 2, 3}), make(Values(6), {1, 3, 2}, kDouble)),
                    "expected m1 and m2 to have the same dtype, but got: float != double");
}

TEST_CASE("cpu-structural: addmm is beta * self + alpha * mat1 @ mat2", "[cpu-structural][linalg]") {
  Tensor m1 = make({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor m2 = make({7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor bias = make({1, -1}, {2});
  CHECK(read(dk::addmm(bias, m1, m2)) == Values{59, 63, 140, 153});
  CHECK(read(dk::addmm(bias, m1, m2, 0.5, 2)) == Values{116.5, 127.5, 278.5, 307.5});
  CHECK(read(dk::addmm(make({10}, {1}), m1, m2)) == Values{68, 74, 149, 164});
  CHECK(read(dk::addmm(make({1, 2}, {2, 1}), m1, m2)) == Values{59, 65, 141, 156});

  SECTION("beta = 0 ignores self, NaNs included") {
    Tensor nan_self = make({NAN, NAN, NAN, NAN}, {2, 2});
    CHECK(read(dk::addmm(nan_self, m1, m2, 0, 1)) == Values{58, 64, 139, 154});
  }
  SECTION("integer matrices") {
    Tensor i1 = make({1, 2, 3, 4, 5, 6}, {2, 3}, kLong);
    Tensor i2 = make({7, 8, 9, 10, 11, 12}, {3, 2}, kLong);
    Tensor r = dk::addmm(make({1, 1}, {2}, kLong), i1, i2, 2, 3);
    CHECK(r.dtype() == kLong);
    CHECK(read(r) == Values{176, 194, 419, 464});
    CHECK_THROWS_WITH(dk::addmm(make({1, 1}, {2}, kLong), i1, i2, 1, 0.5),
                      "For integral input tensors, argument alpha must not be a floating point number.");
    CHECK_THROWS_WITH(dk::addmm(make({1, 1}, {2}, kLong), i1, i2, 1.5, 1),
                      "For integral input tensors, argument beta must not be a floating point number.");
  }
  SECTION("self of another dtype is converted (PyTorch 1.13)") {
    Tensor r = dk::addmm(make({1, -1}, {2}, kDouble), m1, m2);
    CHECK(r.dtype() == kFloat);
    CHECK(read(r) == Values{59, 63, 140, 153});
  }
  SECTION("half and strided operands") {
    Tensor h1 = dk::t(make({1, 4, 2, 5, 3, 6}, {3, 2}, kHalf));
    Tensor h2 = make({7, 8, 9, 10, 11, 12}, {3, 2}, kHalf);
    Tensor r = dk::addmm(make({1, -1}, {2}, kHalf), h1, h2, 1, 0.5);
    CHECK(r.dtype() == kHalf);
    CHECK(read(r) == Values{30, 31, 70.5, 76});
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(dk::addmm(make({1, 2, 3}, {3}), m1, m2),
                      "The expanded size of the tensor (2) must match the existing size (3) at non-singleton "
                      "dimension 1.  Target sizes: [2, 2].  Tensor sizes: [3]");
    CHECK_THROWS_WITH(dk::addmm(bias, make(Values(3), {3}), m2), "mat1 must be a matrix, got 1-D tensor");
    CHECK_THROWS_WITH(dk::addmm(bias, m1, make(Values(6), {1, 3, 2})), "mat2 must be a matrix, got 3-D tensor");
    CHECK_THROWS_WITH(dk::addmm(bias, m1, m1), "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
    CHECK_THROWS_WITH(dk::addmm(bias, m1, make(Values(6), {3, 2}, kDouble)),
                      "expected m1 and m2 to have the same dtype, but got: float != double");
  }
}

TEST_CASE("cpu-structural: bmm.out, addmm.out and addmm_ (the structured forms)", "[cpu-structural][linalg]") {
  Tensor m1 = make({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor m2 = make({7, 8, 9, 10, 11, 12}, {3, 2});
  SECTION("bmm.out writes a strided out through its strides, resizes an empty one") {
    Tensor a = make({1, 2, 3, 4, 5, 6}, {1, 2, 3}), b = make({7, 8, 9, 10, 11, 12}, {1, 3, 2});
    Tensor base = make(Values(4), {1, 2, 2});
    Tensor out = dk::transpose(base, 1, 2);  // the right sizes, columns contiguous
    CHECK(ops::bmm_out::call(a, b, out).is_same(out));
    CHECK(out.strides() == Sizes{4, 1, 2});
    CHECK(read(base) == Values{58, 139, 64, 154});
    Tensor empty = make({}, {0});
    ops::bmm_out::call(a, b, empty);
    CHECK(empty.sizes() == Sizes{1, 2, 2});
    CHECK(read(empty) == Values{58, 64, 139, 154});
    CHECK(read(ops::bmm_out::call(make({}, {2, 1, 0}), make({}, {2, 0, 1}), make({7, 7}, {2, 1, 1}))) ==
          Values{0, 0});
    CHECK_THROWS_WITH(ops::bmm_out::call(a, b, make({}, {0}, kDouble)),
                      "Expected out tensor to have dtype float, but got double instead");
  }
  SECTION("addmm.out and addmm_ compute what addmm does") {
    Tensor bias = make({1, -1}, {2});
    Tensor out = make({}, {0});
    CHECK(ops::addmm_out::call(bias, m1, m2, 0.5, 2, out).is_same(out));
    CHECK(read(out) == Values{116.5, 127.5, 278.5, 307.5});
    Tensor self = make({1, -1, 1, -1}, {2, 2});
    CHECK(ops::addmm_::call(self, m1, m2, 1, 1).is_same(self));
    CHECK(read(self) == Values{59, 63, 140, 153});
    // self is read before it is written, also when it is a mat argument too.
    Tensor sq = make({1, 2, 3, 4}, {2, 2});
    sq.addmm_(sq, sq);
    CHECK(read(sq) == Values{8, 12, 18, 26});
    CHECK_THROWS_WITH(ops::addmm_::call(make({1, 2}, {2}), m1, m2, 1, 1),
                      "Bad in-place call: input tensor size [2] and output tensor size [2, 2] should match");
    CHECK_THROWS_WITH(ops::addmm_::call(make({1, 2, 3, 4}, {2, 2}, kDouble), m1, m2, 1, 1),
                      "Bad in-place call: input tensor dtype double and output tensor dtype float should match");
    CHECK_THROWS_WITH(ops::addmm_out::call(bias, m1, m2, 1, 1, make({}, {0}, kLong)),
                      "Expected out tensor to have dtype float, but got long int instead");
  }
}

// ---------------------------------------------------------------- softmax

TEST_CASE("cpu-structural: _softmax and _log_softmax over any dim", "[cpu-structural][nn]") {
  const Sizes sizes{2, 3, 4};
  for (ScalarType dtype : {kFloat, kDouble, kHalf, kBFloat16}) {
    Values x = read(make(randomValues(24, 7, kFloat), sizes, dtype));  // as the dtype holds them
    for (int64_t dim : {0, 1, 2, -1}) {
      INFO("dtype " << dtype << ", dim " << dim);
      int64_t d = dim < 0 ? dim + 3 : dim;
      Tensor in = make(x, sizes, dtype);
      Tensor s = dk::_softmax(in, dim, false);
      Tensor ls = dk::_log_softmax(in, dim, false);
      CHECK(s.dtype() == dtype);
      CHECK(s.sizes() == sizes);
      CHECK(s.is_contiguous());
      checkClose(read(s), refSoftmax(x, sizes, d, false), rtolFor(dtype), rtolFor(dtype) * 0.1);
      checkClose(read(ls), refSoftmax(x, sizes, d, true), rtolFor(dtype), rtolFor(dtype));
    }
  }
}

TEST_CASE("cpu-structural: softmax of strided inputs and edge cases", "[cpu-structural][nn]") {
  SECTION("a permuted input") {
    Tensor base = make(randomValues(24, 8, kFloat), {4, 2, 3});
    Tensor p = dk::permute(base, {1, 2, 0});  // [2, 3, 4], strided
    Values x = read(p);
    checkClose(read(dk::_softmax(p, 1, false)), refSoftmax(x, {2, 3, 4}, 1, false), 1e-6, 1e-7);
    checkClose(read(dk::_log_softmax(p, 2, false)), refSoftmax(x, {2, 3, 4}, 2, true), 1e-6, 1e-6);
  }
  SECTION("large values do not overflow") {
    Tensor big = make({1000, 1001, 1002}, {3});
    checkClose(read(dk::_softmax(big, 0, false)), refSoftmax({0, 1, 2}, {3}, 0, false), 1e-6, 1e-7);
    Values ls = read(dk::_log_softmax(make({0, -1000}, {2}), 0, false));
    checkClose(ls, {0, -1000}, 1e-6, 1e-6);
  }
  SECTION("half_to_float gives float from half") {
    Tensor h = make({1, 2, 3, 4}, {2, 2}, kHalf);
    Tensor s = dk::_softmax(h, 1, true);
    CHECK(s.dtype() == kFloat);
    checkClose(read(s), refSoftmax({1, 2, 3, 4}, {2, 2}, 1, false), 1e-6, 1e-7);
    CHECK(dk::_log_softmax(h, 0, true).dtype() == kFloat);
    CHECK_THROWS_WITH(dk::_softmax(make({1}, {1}), 0, true), "conversion is supported for Half type only");
  }
  SECTION("0-dim, size-1 and zero-size inputs") {
    CHECK(scalarValue(dk::_softmax(make({5}, {}), 0, false)) == 1.0);
    CHECK(scalarValue(dk::_log_softmax(make({5}, {}), -1, false)) == 0.0);
    CHECK(read(dk::_softmax(make({3, 4}, {2, 1}), 1, false)) == Values{1, 1});
    CHECK(dk::_softmax(make({}, {0, 3}), 1, false).sizes() == Sizes{0, 3});
    CHECK(dk::_log_softmax(make({}, {2, 0}), 1, false).sizes() == Sizes{2, 0});
  }
  SECTION("NaN and -inf") {
    Values s = read(dk::_softmax(make({1, NAN, 2}, {3}), 0, false));
    CHECK((std::isnan(s[0]) && std::isnan(s[1]) && std::isnan(s[2])));
    checkClose(read(dk::_softmax(make({-INFINITY, 0}, {2}), 0, false)), {0, 1}, 0, 0);
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(dk::_softmax(make({1, 2}, {2}, kLong), 0, false), "_softmax: unsupported dtype Long");
    CHECK_THROWS_WITH(dk::_log_softmax(make({1, 2}, {2}, kBool), 0, false), "_log_softmax: unsupported dtype Bool");
    CHECK_THROWS_WITH(dk::_softmax(make({1, 2}, {2}), 1, false),
                      "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  }
}

// ---------------------------------------------------------------- losses

TEST_CASE("cpu-structural: mse_loss with every reduction", "[cpu-structural][nn]") {
  Tensor a = make({1, 2, 3}, {3});
  Tensor b = make({1, 0, 6}, {3});
  Tensor none = dk::mse_loss(a, b, 0);
  CHECK(none.sizes() == Sizes{3});
  CHECK(read(none) == Values{0, 4, 9});
  Tensor mean = dk::mse_loss(a, b);
  CHECK(mean.dim() == 0);
  CHECK(scalarValue(mean) == Approx(13.0 / 3));
  CHECK(scalarValue(dk::mse_loss(a, b, 2)) == 13.0);

  SECTION("broadcasting, strides and dtypes") {
    Tensor m = dk::t(make({1, 4, 2, 5, 3, 6}, {3, 2}));  // [[1, 2, 3], [4, 5, 6]], strided
    Tensor r = dk::mse_loss(m, make({1, 1, 1}, {3}, kDouble), 0);
    CHECK(r.dtype() == kDouble);
    CHECK(r.sizes() == Sizes{2, 3});
    CHECK(read(r) == Values{0, 1, 4, 9, 16, 25});
    CHECK(scalarValue(dk::mse_loss(m, make({0}, {}), 2)) == 91.0);
    for (ScalarType dtype : {kHalf, kBFloat16, kFloat, kDouble}) {
      Tensor h = dk::mse_loss(make({0.5, 1.5}, {2}, dtype), make({0, 0}, {2}, dtype), 1);
      CHECK(h.dtype() == dtype);
      CHECK(scalarValue(h) == Approx(1.25));
    }
  }
  SECTION("empty inputs") {
    CHECK(std::isnan(scalarValue(dk::mse_loss(make({}, {0}), make({}, {0})))));
    CHECK(scalarValue(dk::mse_loss(make({}, {0}), make({}, {0}), 2)) == 0.0);
    CHECK(dk::mse_loss(make({}, {0, 2}), make({}, {0, 2}), 0).sizes() == Sizes{0, 2});
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(dk::mse_loss(make({1}, {1}, kLong), make({1}, {1}, kLong)), "mse_loss: unsupported dtype Long");
    CHECK_THROWS_WITH(dk::mse_loss(a, b, 3), "mse_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), but got 3");
    CHECK_THROWS_WITH(dk::mse_loss(a, make({1, 2}, {2})),
                      "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0 "
                      "(shapes [3] and [2])");
  }
}

TEST_CASE("cpu-structural: nll_loss picks the target log-probabilities", "[cpu-structural][nn]") {
  // input[i][c] = -(i * 4 + c + 1) / 10
  Values x;
  for (int i = 0; i < 12; ++i) x.push_back(-(i + 1) / 10.0);
  Tensor input = make(x, {3, 4});
  Tensor target = make({1, 0, 3}, {3}, kLong);
  Tensor weight = make({1, 2, 3, 4}, {4});

  Tensor none = dk::nll_loss(input, target, std::nullopt, 0);
  CHECK(none.sizes() == Sizes{3});
  checkClose(read(none), {0.2, 0.5, 1.2}, 1e-6, 0);
  CHECK(scalarValue(dk::nll_loss(input, target, std::nullopt, 2)) == Approx(1.9));
  CHECK(scalarValue(dk::nll_loss(input, target)) == Approx(1.9 / 3));

  SECTION("class weights") {
    checkClose(read(dk::nll_loss(input, target, weight, 0)), {0.4, 0.5, 4.8}, 1e-6, 0);
    CHECK(scalarValue(dk::nll_loss(input, target, weight, 2)) == Approx(5.7));
    CHECK(scalarValue(dk::nll_loss(input, target, weight, 1)) == Approx(5.7 / 7));
  }
  SECTION("ignore_index") {
    checkClose(read(dk::nll_loss(input, target, weight, 0, 0)), {0.4, 0, 4.8}, 1e-6, 0);
    CHECK(scalarValue(dk::nll_loss(input, target, weight, 1, 0)) == Approx(5.2 / 6));
    CHECK(scalarValue(dk::nll_loss(input, target, std::nullopt, 1, 3)) == Approx(0.7 / 2));
    // Every target ignored: mean is 0 / 0.
    Tensor all = make({2, 2, 2}, {3}, kLong);
    CHECK(std::isnan(scalarValue(dk::nll_loss(input, all, std::nullopt, 1, 2))));
    CHECK(scalarValue(dk::nll_loss(input, all, std::nullopt, 2, 2)) == 0.0);
    // An ignored target may be out of range.
    CHECK(scalarValue(dk::nll_loss(input, make({-100, 0, 1}, {3}, kLong), std::nullopt, 2)) == Approx(1.5));
  }
  SECTION("a single sample: 1-D input, 0-dim target") {
    Tensor one = make({-0.5, -1.5, -2.5}, {3});
    Tensor t = make({2}, {}, kLong);
    CHECK(scalarValue(dk::nll_loss(one, t, std::nullopt, 0)) == 2.5);
    CHECK(scalarValue(dk::nll_loss(one, t, make({1, 1, 4}, {3}), 1)) == 2.5);
    CHECK(scalarValue(dk::nll_loss(one, t, make({1, 1, 4}, {3}), 2)) == 10.0);
  }
  SECTION("strided input, byte targets and other dtypes") {
    Tensor tr = dk::t(make(x, {4, 3}));  // [3, 4]: tr[i][c] = x[c * 3 + i]
    checkClose(read(dk::nll_loss(tr, make({1, 0, 3}, {3}, kByte), std::nullopt, 0)), {0.4, 0.2, 1.2}, 1e-6, 0);
    for (ScalarType dtype : {kHalf, kBFloat16, kDouble}) {
      Tensor r = dk::nll_loss(make({-1, -2, -3, -4}, {2, 2}, dtype), make({0, 1}, {2}, kLong));
      CHECK(r.dtype() == dtype);
      CHECK(scalarValue(r) == 2.5);
    }
  }
  SECTION("empty batch") {
    Tensor e = make({}, {0, 4});
    Tensor et = make({}, {0}, kLong);
    CHECK(std::isnan(scalarValue(dk::nll_loss(e, et))));
    CHECK(scalarValue(dk::nll_loss(e, et, std::nullopt, 2)) == 0.0);
    CHECK(dk::nll_loss(e, et, std::nullopt, 0).sizes() == Sizes{0});
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(dk::nll_loss(input, make({1, 5, 0}, {3}, kLong)), "Target 5 is out of bounds.");
    CHECK_THROWS_WITH(dk::nll_loss(input, make({-1, 0, 0}, {3}, kLong), std::nullopt, 0), "Target -1 is out of bounds.");
    CHECK_THROWS_WITH(dk::nll_loss(input, make({1, 0, 3}, {3}, kInt)), "expected scalar type Long but found Int");
    CHECK_THROWS_WITH(dk::nll_loss(input, target, make({1, 2, 3}, {3})),
                      "weight tensor should be defined either for all 4 classes or no classes but got weight tensor "
                      "of shape: [3]");
    CHECK_THROWS_WITH(dk::nll_loss(input, target, make({1, 2, 3, 4}, {4}, kDouble)),
                      "expected scalar type Float but found Double");
    CHECK_THROWS_WITH(dk::nll_loss(input, make({1, 0}, {2}, kLong)), "size mismatch (got input: [3, 4], target: [2])");
    CHECK_THROWS_WITH(dk::nll_loss(make(Values(8), {2, 2, 2}), make({0, 1}, {2}, kLong)),
                      "input tensor should be 1D or 2D");
    CHECK_THROWS_WITH(dk::nll_loss(input, make(Values(6), {3, 2}, kLong)),
                      "0D or 1D target tensor expected, multi-target not supported");
    CHECK_THROWS_WITH(dk::nll_loss(make({1, 2}, {1, 2}, kLong), make({0}, {1}, kLong)),
                      "nll_loss: unsupported dtype Long");
    CHECK_THROWS_WITH(dk::nll_loss(input, target, std::nullopt, 7),
                      "nll_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), but got 7");
  }
}

// ---------------------------------------------------------------- embedding, cat

TEST_CASE("cpu-structural: embedding gathers rows", "[cpu-structural][nn]") {
  Values w;
  for (int i = 0; i < 15; ++i) w.push_back(i);
  Tensor weight = make(w, {5, 3});
  Tensor out = dk::embedding(weight, make({0, 4, 2, 2}, {2, 2}, kLong));
  CHECK(out.sizes() == Sizes{2, 2, 3});
  CHECK(read(out) == Values{0, 1, 2, 12, 13, 14, 6, 7, 8, 6, 7, 8});
  CHECK(read(dk::embedding(weight, make({3, 1}, {2}, kInt))) == Values{9, 10, 11, 3, 4, 5});
  CHECK(read(dk::embedding(weight, make({1}, {}, kLong))) == Values{3, 4, 5});
  CHECK(dk::embedding(weight, make({}, {0}, kLong)).sizes() == Sizes{0, 3});
  // padding_idx only matters to the backward.
  CHECK(read(dk::embedding(weight, make({1}, {1}, kLong), 1)) == Values{3, 4, 5});

  SECTION("strided weights, strided indices, other dtypes") {
    Tensor tw = dk::t(make(w, {3, 5}));  // [5, 3]: tw[r][c] = w[c * 5 + r]
    CHECK(read(dk::embedding(tw, make({4}, {1}, kLong))) == Values{4, 9, 14});
    Tensor idx = dk::slice(make({0, 9, 1, 9, 2}, {5}, kLong), 0, 0, std::nullopt, 2);  // [0, 1, 2]
    CHECK(read(dk::embedding(weight, idx)) == Values{0, 1, 2, 3, 4, 5, 6, 7, 8});
    for (ScalarType dtype : {kHalf, kBool, kByte, kDouble}) {
      Tensor r = dk::embedding(make({0, 1, 1, 0}, {2, 2}, dtype), make({1}, {1}, kLong));
      CHECK(r.dtype() == dtype);
      CHECK(read(r) == Values{1, 0});
    }
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(dk::embedding(weight, make({5}, {1}, kLong)), "index out of range in self");
    CHECK_THROWS_WITH(dk::embedding(weight, make({-1}, {1}, kLong)), "index out of range in self");
    CHECK_THROWS_WITH(dk::embedding(weight, make({1}, {1}, kFloat)),
                      "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
                      "Int; but got torch.FloatTensor instead (while checking arguments for embedding)");
    CHECK_THROWS_WITH(dk::embedding(make({1, 2}, {2}), make({1}, {1}, kLong)), "'weight' must be 2-D");
  }
}

TEST_CASE("cpu-structural: cat joins along a dim", "[cpu-structural][nn]") {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = make({7, 8, 9}, {1, 3});
  Tensor c0 = dk::cat({a, b}, 0);
  CHECK(c0.sizes() == Sizes{3, 3});
  CHECK(read(c0) == Values{1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor c1 = dk::cat({a, make({10, 20}, {2, 1}), a}, -1);
  CHECK(c1.sizes() == Sizes{2, 7});
  CHECK(read(c1) == Values{1, 2, 3, 10, 1, 2, 3, 4, 5, 6, 20, 4, 5, 6});
  CHECK(read(dk::cat({a}, 1)) == read(a));
  CHECK_FALSE(dk::cat({a}, 1).is_same(a));

  SECTION("type promotion across inputs") {
    Tensor r = dk::cat({make({1, 2}, {2}, kInt), make({0.5}, {1})}, 0);
    CHECK(r.dtype() == kFloat);
    CHECK(read(r) == Values{1, 2, 0.5});
    CHECK(dk::cat({make({1}, {1}, kInt), make({2}, {1}, kLong)}, 0).dtype() == kLong);
    CHECK(dk::cat({make({1}, {1}, kHalf), make({2}, {1}, kBFloat16)}, 0).dtype() == kFloat);
    Tensor bools = dk::cat({make({1, 0}, {2}, kBool), make({1}, {1}, kBool)}, 0);
    CHECK(bools.dtype() == kBool);
    CHECK(read(bools) == Values{1, 0, 1});
    Tensor mixed = dk::cat({make({1, 0}, {2}, kBool), make({3}, {1}, kByte)}, 0);
    CHECK(mixed.dtype() == kByte);
    CHECK(read(mixed) == Values{1, 0, 3});
  }
  SECTION("strided inputs") {
    Tensor tr = dk::t(make({1, 2, 3, 4, 5, 6}, {3, 2}));  // [[1, 3, 5], [2, 4, 6]]
    CHECK(read(dk::cat({tr, a}, 1)) == Values{1, 3, 5, 1, 2, 3, 2, 4, 6, 4, 5, 6});
    Tensor expanded = ops::expand::call(make({7, 8, 9}, {1, 3}), {2, 3}, false);
    CHECK(read(dk::cat({expanded, a}, 0)) == Values{7, 8, 9, 7, 8, 9, 1, 2, 3, 4, 5, 6});
  }
  SECTION("legacy empty tensors are skipped") {
    Tensor empty = make({}, {0});
    CHECK(read(dk::cat({empty, a, empty}, 1)) == read(a));
    CHECK(dk::cat({empty, a}, 1).sizes() == Sizes{2, 3});
    CHECK(dk::cat({make({}, {0}, kDouble), a}, 0).dtype() == kDouble);  // still promoted
    Tensor all_empty = dk::cat({empty, empty}, 0);
    CHECK(all_empty.sizes() == Sizes{0});
    // Other empty shapes are not skipped: they must match.
    CHECK(dk::cat({make({}, {2, 0}), a}, 1).sizes() == Sizes{2, 3});
    CHECK(dk::cat({make({}, {0, 3}), a}, 0).sizes() == Sizes{2, 3});
  }
  SECTION("errors") {
    // Through the dispatcher an empty list has no tensor to dispatch on; the kernel's own check:
    CHECK_THROWS_WITH(native::cat_cpu(std::vector<Tensor>{}, 0), "torch.cat(): expected a non-empty list of Tensors");
    CHECK_THROWS_WITH(dk::cat({a, make({1}, {})}, 0), "zero-dimensional tensor (at position 1) cannot be concatenated");
    CHECK_THROWS_WITH(dk::cat({a, make(Values(8), {2, 4})}, 0),
                      "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor "
                      "number 1 in the list.");
    CHECK_THROWS_WITH(dk::cat({make({}, {0}), a, make(Values(4), {4, 1})}, 0),
                      "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 1 for tensor "
                      "number 2 in the list.");
    CHECK_THROWS_WITH(dk::cat({a, make(Values(6), {1, 2, 3})}, 0), "Tensors must have same number of dimensions: got 2 and 3");
    CHECK_THROWS_WITH(dk::cat({a, b}, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    std::vector<Tensor> cpu_and_meta{a, detail::empty_contiguous({1, 3}, kFloat, kMeta)};
    CHECK_THROWS_WITH(ops::cat::redispatch(DispatchKeySet(BackendComponent::CPUBit).add(DispatchKey::Dense),
                                           cpu_and_meta, 0),
                      "dk::cat: expected all tensors to be on the same device, but found at least two devices, cpu "
                      "(argument 'tensors[0]') and meta (argument 'tensors[1]')");
  }
}

// Found by the boxed-calls fuzz target (tools/fuzz): empty operands must not be read.
TEST_CASE("cpu-structural: bmm with an empty inner dim gives zeros; embedding of zero-width rows is empty",
          "[cpu-structural][linalg]") {
  Tensor a = dk::zeros({2, 3, 0});
  Tensor b = dk::zeros({2, 0, 4});
  Tensor out = dk::bmm(a, b);
  CHECK(out.sizes() == Sizes{2, 3, 4});
  CHECK(dk::sum(dk::abs(out)).item().toDouble() == 0.0);
  Tensor weight = dk::zeros({5, 0});
  Tensor rows = dk::embedding(weight, make({1, 4}, {2}, kLong));
  CHECK(rows.sizes() == Sizes{2, 0});
  CHECK_THROWS_WITH(dk::embedding(weight, make({7}, {1}, kLong)), "index out of range in self");
}
