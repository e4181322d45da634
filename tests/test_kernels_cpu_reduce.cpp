// The CPU reductions (kernels/cpu/reduce.cpp): sum, sum over dims, mean, max over a dim,
// argmax, against hand-worked cases and float64 reference loops, over dtypes, dim lists,
// keepdim, strided and zero-size inputs, with every error by its exact text.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "dk/core/generator.h"  // before Functions.h, which needs Generator complete
#include "dk/generated/ops/argmax.h"
#include "dk/generated/ops/argmax_ops.h"
#include "dk/generated/ops/max.h"
#include "dk/generated/ops/max_ops.h"
#include "dk/generated/ops/mean.h"
#include "dk/generated/ops/mean_ops.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/sum_ops.h"
#include "dk/generated/ops/sum_native.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

#define CHECK_VALUES(tensor, ...) CHECK(sameValues(read(tensor), Values(__VA_ARGS__)))

// Sum over the dims flagged in `reduced` of a row-major tensor with `sizes`, in double: the
// reference loop. The result is row-major over the kept dims.
Values referenceSum(const Values& values, const Sizes& sizes, const std::vector<bool>& reduced) {
  Sizes kept;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (!reduced[d]) kept.push_back(sizes[d]);
  Values out(static_cast<size_t>(computeNumel(kept)), 0.0);
  Sizes index(sizes.size(), 0);
  for (double v : values) {
    int64_t outIndex = 0;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (!reduced[d]) outIndex = outIndex * sizes[d] + index[d];
    out[static_cast<size_t>(outIndex)] += v;
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < sizes[static_cast<size_t>(d)]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

Values iota(int64_t n, double scale = 1, double offset = 0) {
  Values v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i) * scale + offset);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- sum

TEST_CASE("cpu-elementwise: sum of everything", "[cpu-elementwise]") {
  Tensor s = native::sum_cpu(make({1, 2, 3, 4, 5, 6}, {2, 3}), std::nullopt);
  CHECK(s.dim() == 0);
  CHECK(s.dtype() == kFloat);
  CHECK_VALUES(s, {21});
  CHECK_VALUES(dk::sum(make({1, 2, 3}, {3})), {6});
  // Integers and bools sum to int64.
  Tensor i = native::sum_cpu(make({100, 100, 100}, {3}, kChar), std::nullopt);
  CHECK(i.dtype() == kLong);
  CHECK_VALUES(i, {300});
  Tensor b = native::sum_cpu(make({1, 0, 1, 1}, {4}, kBool), std::nullopt);
  CHECK(b.dtype() == kLong);
  CHECK_VALUES(b, {3});
  CHECK(native::sum_cpu(make({1}, {1}, kByte), std::nullopt).dtype() == kLong);
  // 16-bit floats keep their dtype.
  Tensor h = native::sum_cpu(make({0.5, 0.25, 64}, {3}, kHalf), std::nullopt);
  CHECK(h.dtype() == kHalf);
  CHECK_VALUES(h, {64.75});
  // Empty: zero.
  CHECK_VALUES(native::sum_cpu(make({}, {0}), std::nullopt), {0});
  CHECK_VALUES(native::sum_cpu(make({}, {2, 0}, kInt), std::nullopt), {0});
  // 0-dim.
  CHECK_VALUES(native::sum_cpu(make({7}, {}), std::nullopt), {7});
  // Strided.
  CHECK_VALUES(native::sum_cpu(transposed(make({1, 2, 3, 4}, {2, 2})), std::nullopt), {10});
}

TEST_CASE("cpu-elementwise: sum with a dtype sums values converted to it", "[cpu-elementwise]") {
  Tensor d = native::sum_cpu(make({1, 2, 3}, {3}, kInt), kDouble);
  CHECK(d.dtype() == kDouble);
  CHECK_VALUES(d, {6});
  // Floats to int64: each truncated first.
  CHECK_VALUES(native::sum_cpu(make({1.5, 1.5, 1.5}, {3}), kLong), {3});
  // int8 result: the int64 sum wraps like int8 additions would.
  Tensor c = native::sum_cpu(make({100, 100, 100}, {3}, kInt), kChar);
  CHECK(c.dtype() == kChar);
  CHECK_VALUES(c, {44});
  Tensor f = native::sum_cpu(make({1, 1}, {2}, kBool), kFloat);
  CHECK(f.dtype() == kFloat);
  CHECK_VALUES(f, {2});
}

TEST_CASE("cpu-elementwise: sum accumulates float32 in double", "[cpu-elementwise]") {
  const int64_t n = 1000000;
  Tensor t = make(Values(static_cast<size_t>(n), 0.1), {n});
  double expected = static_cast<double>(0.1f) * static_cast<double>(n);
  double got = read(native::sum_cpu(t, std::nullopt))[0];
  CHECK(std::fabs(got - expected) < 1e-2);  // a float accumulator would be off by hundreds
  Tensor big = make(iota(n, 1.0), {1000, 1000}, kLong);
  CHECK_VALUES(native::sum_cpu(big, std::nullopt), {499999500000.0});
}

TEST_CASE("cpu-elementwise: sum over dims against a float64 reference loop", "[cpu-elementwise]") {
  Sizes sizes{2, 3, 4};
  Values values = iota(24, 0.5, -3);
  struct Case {
    std::vector<int64_t> dims;
    std::vector<bool> reduced;
  };
  const std::vector<Case> cases{{{0}, {true, false, false}},  {{1}, {false, true, false}},
                                {{2}, {false, false, true}},  {{-1}, {false, false, true}},
                                {{0, 2}, {true, false, true}}, {{2, -3}, {true, false, true}},
                                {{0, 1, 2}, {true, true, true}}, {{}, {true, true, true}}};
  for (const Case& c : cases) {
    for (ScalarType dtype : {kFloat, kDouble, kLong}) {
      Tensor t = make(values, sizes, dtype);
      Values typed = read(t);
      Values expected = referenceSum(typed, sizes, c.reduced);
      Tensor r = ops::sum_dim_IntList::call(t, IntArrayRef(c.dims), false, std::nullopt);
      Sizes shape;
      for (size_t d = 0; d < 3; ++d)
        if (!c.reduced[d]) shape.push_back(sizes[d]);
      CHECK(r.sizes() == shape);
      CHECK(sameValues(read(r), expected, 1e-12));
      Tensor k = ops::sum_dim_IntList::call(t, IntArrayRef(c.dims), true, std::nullopt);
      Sizes keep = sizes;
      for (size_t d = 0; d < 3; ++d)
        if (c.reduced[d]) keep[d] = 1;
      CHECK(k.sizes() == keep);
      CHECK(sameValues(read(k), expected, 1e-12));
    }
  }
  // dim=None is every dim too.
  CHECK(ops::sum_dim_IntList::call(make(values, sizes), std::nullopt, false, std::nullopt).dim() == 0);
  CHECK(ops::sum_dim_IntList::call(make(values, sizes), std::nullopt, true, std::nullopt).sizes() == Sizes{1, 1, 1});
  CHECK_VALUES(dk::sum(make(values, sizes), {0, 1}), referenceSum(values, sizes, {true, true, false}));
}

TEST_CASE("cpu-elementwise: sum over dims of strided and zero-size inputs", "[cpu-elementwise]") {
  Tensor t = transposed(make({1, 2, 3, 4, 5, 6}, {2, 3}));  // [[1, 4], [2, 5], [3, 6]]
  CHECK_VALUES(ops::sum_dim_IntList::call(t, IntArrayRef{0}, false, std::nullopt), {6, 15});
  CHECK_VALUES(ops::sum_dim_IntList::call(t, IntArrayRef{1}, false, std::nullopt), {5, 7, 9});
  Tensor z = ops::sum_dim_IntList::call(make({}, {2, 0}), IntArrayRef{1}, false, std::nullopt);
  CHECK(z.sizes() == Sizes{2});
  CHECK_VALUES(z, {0, 0});
  CHECK(ops::sum_dim_IntList::call(make({}, {2, 0}), IntArrayRef{0}, false, std::nullopt).sizes() == Sizes{0});
  // A 0-dim tensor takes dim 0 or -1.
  CHECK_VALUES(ops::sum_dim_IntList::call(make({3}, {}), IntArrayRef{0}, false, std::nullopt), {3});
  CHECK_VALUES(ops::sum_dim_IntList::call(make({3}, {}), IntArrayRef{-1}, true, std::nullopt), {3});
}

TEST_CASE("cpu-elementwise: sum errors", "[cpu-elementwise]") {
  Tensor t = make(iota(6), {2, 3});
  CHECK_THROWS_WITH(ops::sum_dim_IntList::call(t, IntArrayRef{2}, false, std::nullopt),
                    "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  CHECK_THROWS_WITH(ops::sum_dim_IntList::call(t, IntArrayRef{0, -2}, false, std::nullopt),
                    "dim 0 appears multiple times in the list of dims");
  CHECK_THROWS_WITH(ops::sum_dim_IntList::call(make({1}, {}), IntArrayRef{1}, false, std::nullopt),
                    "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

// ---------------------------------------------------------------- mean

TEST_CASE("cpu-elementwise: mean over dims", "[cpu-elementwise]") {
  Tensor t = make({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK_VALUES(ops::mean_dim::call(t, IntArrayRef{1}, false, std::nullopt), {2, 5});
  CHECK_VALUES(ops::mean_dim::call(t, IntArrayRef{0}, true, std::nullopt), {2.5, 3.5, 4.5});
  CHECK(ops::mean_dim::call(t, IntArrayRef{0}, true, std::nullopt).sizes() == Sizes{1, 3});
  Tensor all = ops::mean_dim::call(t, std::nullopt, false, std::nullopt);
  CHECK(all.dim() == 0);
  CHECK_VALUES(all, {3.5});
  CHECK_VALUES(ops::mean_dim::call(t, IntArrayRef{}, false, std::nullopt), {3.5});
  CHECK_VALUES(ops::mean_dim::call(transposed(t), IntArrayRef{1}, false, std::nullopt), {2.5, 3.5, 4.5});
  Tensor h = ops::mean_dim::call(make({1, 2}, {2}, kHalf), std::nullopt, false, std::nullopt);
  CHECK(h.dtype() == kHalf);
  CHECK_VALUES(h, {1.5});
  // An integer tensor with a floating dtype.
  Tensor i = ops::mean_dim::call(make({1, 2}, {2}, kLong), std::nullopt, false, kDouble);
  CHECK(i.dtype() == kDouble);
  CHECK_VALUES(i, {1.5});
  // No elements: 0 / 0.
  CHECK_VALUES(ops::mean_dim::call(make({}, {0}), std::nullopt, false, std::nullopt), {kNaN});
  CHECK_VALUES(ops::mean_dim::call(make({}, {2, 0}), IntArrayRef{1}, false, std::nullopt), {kNaN, kNaN});
  Values values = iota(60, 0.25, 1);
  Values expected = referenceSum(values, {3, 4, 5}, {true, false, true});
  for (double& v : expected) v /= 15;
  CHECK(sameValues(read(ops::mean_dim::call(make(values, {3, 4, 5}, kDouble), IntArrayRef{0, 2}, false, std::nullopt)),
                   expected, 1e-14));
  CHECK_VALUES(dk::mean(t, {1}), {2, 5});
  CHECK_THROWS_WITH(ops::mean_dim::call(make({1}, {1}, kLong), std::nullopt, false, std::nullopt),
                    "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                    "dtype. Got: Long");
  CHECK_THROWS_WITH(ops::mean_dim::call(make({1}, {1}), std::nullopt, false, kInt),
                    "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex "
                    "dtype. Got: Int");
  CHECK_THROWS_WITH(ops::mean_dim::call(t, IntArrayRef{3}, false, std::nullopt),
                    "Dimension out of range (expected to be in range of [-2, 1], but got 3)");
}

// ---------------------------------------------------------------- max.dim, argmax

TEST_CASE("cpu-elementwise: max over a dim gives values and first indices", "[cpu-elementwise]") {
  Tensor t = make({3, 1, 3, 2, 7, 7}, {2, 3});
  auto [values, indices] = ops::max_dim::call(t, 1, false);
  CHECK(values.sizes() == Sizes{2});
  CHECK(values.dtype() == kFloat);
  CHECK(indices.dtype() == kLong);
  CHECK_VALUES(values, {3, 7});
  CHECK_VALUES(indices, {0, 1});  // ties: the first
  auto [v0, i0] = ops::max_dim::call(t, 0, true);
  CHECK(v0.sizes() == Sizes{1, 3});
  CHECK_VALUES(v0, {3, 7, 7});
  CHECK_VALUES(i0, {0, 1, 1});
  auto [vn, in] = ops::max_dim::call(t, -1, true);
  CHECK(vn.sizes() == Sizes{2, 1});
  CHECK_VALUES(in, {0, 1});
  // NaN is the maximum, at its first position.
  auto [nv, ni] = ops::max_dim::call(make({1, kNaN, 5, kNaN}, {4}), 0, false);
  CHECK(nv.dim() == 0);
  CHECK_VALUES(nv, {kNaN});
  CHECK_VALUES(ni, {1});
  // Dtypes.
  auto [bv, bi] = ops::max_dim::call(make({0, 1, 1}, {3}, kBool), 0, false);
  CHECK(bv.dtype() == kBool);
  CHECK_VALUES(bv, {1});
  CHECK_VALUES(bi, {1});
  auto [lv, li] = ops::max_dim::call(make({-5, -2, -9}, {3}, kLong), 0, false);
  CHECK_VALUES(lv, {-2});
  CHECK_VALUES(li, {1});
  auto [hv, hi] = ops::max_dim::call(make({0.5, 1.5}, {2}, kHalf), 0, false);
  CHECK(hv.dtype() == kHalf);
  CHECK_VALUES(hv, {1.5});
  // Strided input: the transpose's dim 1 is the base's dim 0.
  auto [tv, ti] = ops::max_dim::call(transposed(t), 1, false);
  CHECK_VALUES(tv, {3, 7, 7});
  CHECK_VALUES(ti, {0, 1, 1});
  // 0-dim: the value itself, index 0.
  auto [sv, si] = ops::max_dim::call(make({4}, {}), 0, false);
  CHECK(sv.dim() == 0);
  CHECK_VALUES(sv, {4});
  CHECK_VALUES(si, {0});
  // An empty tensor whose reduced dim is not empty.
  auto [ev, ei] = ops::max_dim::call(make({}, {0, 3}), 1, false);
  CHECK(ev.sizes() == Sizes{0});
  // Against a reference over a 3-d tensor.
  Values digits{5, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4};
  Tensor c = make(digits, {2, 3, 4});
  auto [cv, ci] = ops::max_dim::call(c, 1, false);
  Values expectedValues, expectedIndices;
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 4; ++b) {
      double best = -1;
      int at = -1;
      for (int m = 0; m < 3; ++m) {
        double v = digits[static_cast<size_t>(a * 12 + m * 4 + b)];
        if (v > best) {
          best = v;
          at = m;
        }
      }
      expectedValues.push_back(best);
      expectedIndices.push_back(at);
    }
  }
  CHECK(read(cv) == expectedValues);
  CHECK(read(ci) == expectedIndices);
  auto [dv, di] = dk::max(c, 1);
  CHECK(read(di) == expectedIndices);
  CHECK_THROWS_WITH(ops::max_dim::call(make({}, {2, 0}), 1, false),
                    "max(): Expected reduction dim 1 to have non-zero size.");
  CHECK_THROWS_WITH(ops::max_dim::call(t, 2, false),
                    "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("cpu-elementwise: argmax", "[cpu-elementwise]") {
  Tensor t = make({3, 9, 3, 2, 7, 9}, {2, 3});
  Tensor all = ops::argmax::call(t, std::nullopt, false);
  CHECK(all.dim() == 0);
  CHECK(all.dtype() == kLong);
  CHECK_VALUES(all, {1});
  Tensor kept = ops::argmax::call(t, std::nullopt, true);
  CHECK(kept.sizes() == Sizes{1, 1});
  CHECK_VALUES(kept, {1});
  // Flattened in logical order, also for a strided input: the transpose is [[3, 2], [9, 7], [3, 9]].
  CHECK_VALUES(ops::argmax::call(transposed(t), std::nullopt, false), {2});
  CHECK_VALUES(ops::argmax::call(t, 1, false), {1, 2});
  CHECK_VALUES(ops::argmax::call(t, 0, false), {0, 0, 1});
  CHECK(ops::argmax::call(t, 0, true).sizes() == Sizes{1, 3});
  CHECK_VALUES(ops::argmax::call(make({1, kNaN, kNaN}, {3}), std::nullopt, false), {1});
  CHECK_VALUES(ops::argmax::call(make({-1, -3}, {2}, kChar), 0, false), {0});
  CHECK_VALUES(ops::argmax::call(make({5}, {}), std::nullopt, false), {0});
  CHECK_VALUES(dk::argmax(t), {1});
  CHECK_THROWS_WITH(ops::argmax::call(make({}, {0}), std::nullopt, false),
                    "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  CHECK_THROWS_WITH(ops::argmax::call(make({}, {3, 0}), 1, false),
                    "argmax(): Expected reduction dim 1 to have non-zero size.");
  CHECK_THROWS_WITH(ops::argmax::call(make({1}, {1}, kBool), std::nullopt, false), "argmax: unsupported dtype Bool");
}

TEST_CASE("cpu-reduce: the out= forms of sum, mean, max.dim and argmax", "[cpu-reduce][structured]") {
  Tensor x = make(iota(12), {2, 3, 2});
  // Without a dtype argument, sum takes out's dtype (PyTorch: infer_dtype_from_optional).
  Tensor f = make({}, {0});
  CHECK(ops::sum_IntList_out::call(make({1, 2, 3, 4, 5, 6}, {2, 3}, kInt), IntArrayRef{1}, false, std::nullopt, f)
            .is_same(f));
  CHECK(f.dtype() == kFloat);
  CHECK(f.sizes() == Sizes{2});
  CHECK_VALUES(f, {6, 15});
  // A strided out of the right sizes keeps its strides and gets the values where it points.
  Tensor strided = transposed(make(Values(6, 0.0), {3, 2}));
  ops::sum_IntList_out::call(x, IntArrayRef{2}, false, std::nullopt, strided);
  CHECK(strided.strides() == Sizes{1, 2});
  CHECK_VALUES(strided, {1, 5, 9, 13, 17, 21});
  // A contiguous double out is the accumulator itself; keepdim sizes it [2, 1, 2].
  Tensor d = make({}, {0}, kDouble);
  ops::sum_IntList_out::call(x, IntArrayRef{1}, true, std::nullopt, d);
  CHECK(d.sizes() == Sizes{2, 1, 2});
  CHECK_VALUES(d, {6, 9, 24, 27});
  CHECK_THROWS_WITH(ops::sum_IntList_out::call(x, IntArrayRef{1}, false, kDouble, make({}, {0})),
                    "Expected out tensor to have dtype double, but got float instead");

  Tensor m = make({}, {0}, kDouble);
  ops::mean_out::call(make({1, 2, 3, 4, 5, 6}, {2, 3}), IntArrayRef{1}, false, std::nullopt, m);
  CHECK(m.dtype() == kDouble);
  CHECK_VALUES(m, {2, 5});
  CHECK_THROWS_WITH(ops::mean_out::call(make({1, 2}, {2}), std::nullopt, false, std::nullopt, make({}, {0}, kLong)),
                    "result type Float can't be cast to the desired output type Long");
  CHECK_THROWS_WITH(ops::mean_out::call(make({1, 2}, {2}, kLong), std::nullopt, false, std::nullopt, make({}, {0})),
                    "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                    "dtype. Got: Long");

  // max.dim_max into strided outputs, without keepdim.
  Tensor t = make({1, 7, 3, 9, 2, 8}, {2, 3});
  Tensor values = detail::make_view(make(Values(4, 0.0), {4}), {2}, {2}, 0);
  Tensor indices = detail::make_view(make(Values(4, 0.0), {4}, kLong), {2}, {2}, 0);
  auto [v, i] = ops::max_dim_max::call(t, 1, false, values, indices);
  CHECK(v.is_same(values));
  CHECK(i.is_same(indices));
  CHECK_VALUES(values, {7, 9});
  CHECK_VALUES(indices, {1, 0});
  CHECK(values.strides() == Sizes{2});
  CHECK(indices.strides() == Sizes{2});
  Tensor kv = make({}, {0});
  Tensor ki = make({}, {0}, kLong);
  ops::max_dim_max::call(t, 0, true, kv, ki);
  CHECK(kv.sizes() == Sizes{1, 3});
  CHECK_VALUES(kv, {9, 7, 8});
  CHECK_VALUES(ki, {1, 0, 1});
  CHECK_THROWS_WITH(ops::max_dim_max::call(t, 1, false, make({}, {0}, kDouble), make({}, {0}, kLong)),
                    "Expected out tensor to have dtype float, but got double instead");
  CHECK_THROWS_WITH(ops::max_dim_max::call(t, 1, false, make({}, {0}), make({}, {0}, kInt)),
                    "Expected out tensor to have dtype long int, but got int instead");

  Tensor a = detail::make_view(make(Values(6, 0.0), {6}, kLong), {3}, {2}, 0);
  ops::argmax_out::call(t, 0, false, a);
  CHECK_VALUES(a, {1, 0, 1});
  Tensor flat = make({}, {0}, kLong);
  ops::argmax_out::call(transposed(t), std::nullopt, true, flat);
  CHECK(flat.sizes() == Sizes{1, 1});
  CHECK_VALUES(flat, {1});  // the transpose flattened: 1, 9, 7, 2, 3, 8
  CHECK_THROWS_WITH(ops::argmax_out::call(t, 0, false, make({}, {0}, kInt)),
                    "Expected out tensor to have dtype long int, but got int instead");
}
