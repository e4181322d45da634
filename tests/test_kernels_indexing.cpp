// index_select, gather, scatter_add, cumsum, sort and topk through the dispatcher: CPU values
// (each expected value printed by PyTorch 1.13.1 on the same inputs), layouts (transposed inputs,
// out= tensors that are not contiguous), PyTorch's errors, overlap checks, and the Meta shapes.
// Gradients are in tests/test_autograd_gradcheck.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "dk/dk.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor longs(const Values& values, const Sizes& sizes) { return make(values, sizes, kLong); }

// The 3x5 input the expected values below were printed for.
Tensor sample() { return make({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9}, {3, 5}); }

// The first n values of t.
Values firstValues(const Tensor& t, size_t n) {
  Values all = read(t);
  return Values(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
}

bool sameWithNaN(const Values& a, const Values& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

}  // namespace

TEST_CASE("indexing: index_select") {
  Tensor x = sample();
  CHECK(sameValues(read(dk::index_select(x, 1, longs({4, 0, 0}, {3}))), {5, 3, 3, 3, 9, 9, 9, 5, 5}));
  CHECK(dk::index_select(x, 1, longs({4, 0, 0}, {3})).sizes() == Sizes{3, 3});
  // A transposed self and an int32 index.
  Tensor picked = x.t().index_select(0, make({2, 1}, {2}, kInt));
  CHECK(sameValues(read(picked), {4, 6, 9, 1, 2, 8}));
  // 0-dim index, 0-dim self, empty index, integer dtypes.
  CHECK(dk::index_select(x, 0, make({2}, {}, kLong)).sizes() == Sizes{1, 5});
  CHECK(dk::index_select(make({5}, {}), 0, longs({0}, {1})).item<double>() == 5);
  CHECK(dk::index_select(x, 0, longs({}, {0})).sizes() == Sizes{0, 5});
  CHECK(sameValues(read(dk::index_select(make({7, 8, 9}, {3}, kShort), 0, longs({2, 2}, {2}))), {9, 9}));
  // PyTorch's errors (the CPU kernel's words).
  CHECK_THROWS_WITH(dk::index_select(x, 1, longs({0}, {1, 1})), "index_select(): Index is supposed to be a vector");
  CHECK_THROWS_WITH(dk::index_select(x, 1, make({0}, {1})), "index_select(): Expected dtype int32 or int64 for index");
  CHECK_THROWS_WITH(dk::index_select(x, 1, longs({5}, {1})), "INDICES element is out of DATA bounds, id=5 axis_dim=5");
  CHECK_THROWS_WITH(dk::index_select(x, 0, longs({3}, {1})), "index out of range in self");
  CHECK_THROWS_WITH(dk::index_select(x, 0, longs({-1}, {1})), "index out of range in self");
  CHECK_THROWS_WITH(dk::index_select(make({1, 2, 3}, {3}), 0, longs({3}, {1})), "index out of range in self");
  CHECK_THROWS_WITH(dk::index_select(dk::zeros({0, 3}), 0, longs({0, 1}, {2})),
                    "index_select(): self indexing axis dim should be positive");
  CHECK_THROWS_WITH(dk::index_select(x, 2, longs({0}, {1})),
                    "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("indexing: gather") {
  Tensor x = sample();
  CHECK(sameValues(read(dk::gather(x, 1, longs({0, 0, 1, 4, 2, 3}, {3, 2}))), {3, 3, 2, 3, 9, 7}));
  CHECK(sameValues(read(x.gather(0, longs({2, 1, 0}, {1, 3}))), {5, 2, 4}));
  // index smaller than self on the other dims reads the leading block; a transposed self.
  CHECK(sameValues(read(dk::gather(x.t(), 0, longs({2, 0}, {1, 2}))), {4, 9}));
  // out= into a transposed tensor.
  Tensor out = dk::zeros({2, 3}).t();
  dk::gather_out(out, x, 1, longs({0, 0, 1, 4, 2, 3}, {3, 2}));
  CHECK(sameValues(read(out), {3, 3, 2, 3, 9, 7}));
  CHECK(dk::gather(make({3}, {}), 0, make({0}, {}, kLong)).item<double>() == 3);
  CHECK(dk::gather(x, 0, dk::zeros({0, 9}, kLong)).sizes() == Sizes{0, 9});  // empty: no checks
  CHECK_THROWS_WITH(dk::gather(x, 1, make({0}, {1, 1}, kInt)), "gather(): Expected dtype int64 for index");
  CHECK_THROWS_WITH(dk::gather(x, 1, longs({0, 1}, {2})),
                    "Index tensor must have the same number of dimensions as input tensor");
  CHECK_THROWS_WITH(dk::gather(x, 1, dk::zeros({4, 1}, kLong)),
                    "Size does not match at dimension 0 expected index [4, 1] to be smaller than self [3, 5] apart "
                    "from dimension 1");
  CHECK_THROWS_WITH(dk::gather(x, 1, longs({0, 5}, {1, 2})), "index 5 is out of bounds for dimension 1 with size 5");
  CHECK_THROWS_WITH(dk::gather(x, 0, longs({-1}, {1, 1})), "index -1 is out of bounds for dimension 0 with size 3");
  // out= may not share memory with an input; a bad index writes nothing.
  Tensor y = sample();
  CHECK_THROWS_WITH(dk::gather_out(y, y, 0, dk::zeros({3, 5}, kLong)),
                    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                    "single memory location. Please clone() the tensor before performing the operation.");
  Tensor untouched = dk::full({1, 2}, 7.0);
  CHECK_THROWS(dk::gather_out(untouched, x, 1, longs({0, 9}, {1, 2})));
  CHECK(sameValues(read(untouched), {7, 7}));
}

TEST_CASE("indexing: scatter_add") {
  Tensor src = make({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = dk::scatter_add(dk::zeros({2, 4}), 1, longs({0, 0, 3, 2, 1, 2}, {2, 3}), src);
  CHECK(sameValues(read(r), {3, 0, 0, 3, 0, 5, 10, 0}));
  // index smaller than src: only its block of src is read; repeated targets accumulate.
  Tensor s = dk::ones({3, 2});
  s.scatter_add_(0, longs({2, 0, 2, 2}, {2, 2}), make({1, 2, 3, 4, 5, 6}, {3, 2}));
  CHECK(sameValues(read(s), {1, 3, 1, 1, 5, 5}));
  // Integer and bool dtypes.
  CHECK(sameValues(read(dk::scatter_add(dk::zeros({2}, kLong), 0, longs({1, 1, 0}, {3}), make({5, 6, 7}, {3}, kLong))),
                   {7, 11}));
  CHECK(sameValues(read(dk::scatter_add(make({0, 0}, {2}, kBool), 0, longs({1}, {1}), make({1}, {1}, kBool))), {0, 1}));
  // out= leaves self alone.
  Tensor base = dk::zeros({2});
  Tensor out = dk::empty({2});
  dk::scatter_add_out(out, base, 0, longs({0}, {1}), make({4}, {1}));
  CHECK(sameValues(read(out), {4, 0}));
  CHECK(sameValues(read(base), {0, 0}));
  CHECK_THROWS_WITH(dk::scatter_add(dk::zeros({2}), 0, make({0}, {1}, kInt), make({1}, {1})),
                    "scatter(): Expected dtype int64 for index");
  CHECK_THROWS_WITH(dk::scatter_add(dk::zeros({2}), 0, longs({0}, {1}), make({1}, {1}, kDouble)),
                    "scatter(): Expected self.dtype to be equal to src.dtype");
  CHECK_THROWS_WITH(dk::scatter_add(dk::zeros({2, 3}), 0, longs({0, 1}, {2}), dk::ones({2, 3})),
                    "Index tensor must have the same number of dimensions as self tensor");
  CHECK_THROWS_WITH(dk::scatter_add(dk::zeros({2, 3}), 0, dk::zeros({1, 4}, kLong), dk::ones({2, 3})),
                    "Expected index [1, 4] to be smaller than self [2, 3] apart from dimension 0 and to be smaller "
                    "size than src [2, 3]");
  Tensor kept = dk::zeros({2, 3});
  CHECK_THROWS_WITH(kept.scatter_add_(0, longs({0, 7}, {1, 2}), dk::ones({2, 3})),
                    "index 7 is out of bounds for dimension 0 with size 2");
  CHECK(sameValues(read(kept), {0, 0, 0, 0, 0, 0}));  // nothing was added
  CHECK_THROWS_WITH(kept.scatter_add_(0, longs({0}, {1, 1}), kept),
                    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                    "single memory location. Please clone() the tensor before performing the operation.");
}

TEST_CASE("indexing: cumsum") {
  Tensor x = sample();
  CHECK(sameValues(read(dk::cumsum(x, 1)), {3, 4, 8, 9, 14, 9, 11, 17, 22, 25, 5, 13, 22, 29, 38}));
  CHECK(sameValues(read(x.cumsum(0)), {3, 1, 4, 1, 5, 12, 3, 10, 6, 8, 17, 11, 19, 13, 17}));
  CHECK(sameValues(read(dk::cumsum(x.t(), 1)), read(dk::cumsum(x, 0).t())));
  // Integral inputs sum in int64 unless a dtype is given (then they wrap).
  Tensor small = make({100, 100, 100}, {3}, kChar);
  CHECK(dk::cumsum(small, 0).scalar_type() == kLong);
  CHECK(sameValues(read(dk::cumsum(small, 0)), {100, 200, 300}));
  CHECK(sameValues(read(dk::cumsum(small, 0, kChar)), {100, -56, 44}));
  CHECK(sameValues(read(dk::cumsum(make({1, 1}, {2}, kBool), 0)), {1, 2}));
  // An out= tensor of another dtype takes the sum in its dtype; in-place keeps self's.
  Tensor out = dk::empty({2});
  dk::cumsum_out(out, make({1, 2}, {2}, kChar), 0);
  CHECK(out.scalar_type() == kFloat);
  CHECK(sameValues(read(out), {1, 3}));
  Tensor y = make({1, 2, 3}, {3});
  y.cumsum_(0);
  CHECK(sameValues(read(y), {1, 3, 6}));
  CHECK(dk::cumsum(make({3}, {}), 0).item<double>() == 3);
  CHECK_THROWS_WITH(dk::cumsum(x, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("indexing: sort") {
  Tensor x = sample();
  auto [values, indices] = dk::sort(x, 1);
  CHECK(sameValues(read(values), {1, 1, 3, 4, 5, 2, 3, 5, 6, 9, 5, 7, 8, 9, 9}));
  CHECK(sameValues(read(indices), {1, 3, 0, 2, 4, 1, 4, 3, 2, 0, 0, 3, 1, 2, 4}));  // ties keep their order
  auto [down, down_indices] = x.sort(0, /*descending=*/true);
  CHECK(sameValues(read(down), {9, 8, 9, 7, 9, 5, 2, 6, 5, 5, 3, 1, 4, 1, 3}));
  CHECK(sameValues(read(down_indices), {1, 2, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 1}));
  // NaN is above every number; bool and 0-dim inputs.
  Tensor with_nan = make({1, kNaN, 3, 1, 0}, {5});
  auto [up_nan, up_nan_indices] = dk::sort(with_nan);
  CHECK(sameWithNaN(read(up_nan), {0, 1, 1, 3, kNaN}));
  CHECK(sameValues(read(up_nan_indices), {4, 0, 3, 2, 1}));
  auto [down_nan, down_nan_indices] = dk::sort(with_nan, 0, true);
  CHECK(sameWithNaN(read(down_nan), {kNaN, 3, 1, 1, 0}));
  CHECK(sameValues(read(down_nan_indices), {1, 2, 0, 3, 4}));
  CHECK(sameValues(read(std::get<1>(dk::sort(make({1, 0, 1}, {3}, kBool)))), {1, 0, 2}));
  CHECK(std::get<1>(dk::sort(make({3}, {}))).item<int64_t>() == 0);
  CHECK_THROWS_WITH(dk::sort(x, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("indexing: topk") {
  Tensor x = make({3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, {2, 5});
  auto [values, indices] = dk::topk(x, 2);
  CHECK(sameValues(read(values), {5, 4, 9, 6}));
  CHECK(sameValues(read(indices), {4, 2, 0, 2}));
  auto [low, low_indices] = make({3, 1, 4, 7, 5, 9, 2, 6, 5, 3}, {2, 5}).topk(2, 1, /*largest=*/false);
  CHECK(sameValues(read(low), {1, 3, 2, 3}));
  CHECK(sameValues(read(low_indices), {1, 0, 1, 4}));
  auto [col, col_indices] = dk::topk(make({3, 1, 4, 9, 2, 6}, {2, 3}), 1, 0);
  CHECK(sameValues(read(col), {9, 2, 6}));
  CHECK(sameValues(read(col_indices), {1, 1, 1}));
  // NaN counts as the largest; k = 0 and 0-dim inputs.
  auto [with_nan, nan_indices] = dk::topk(make({1, kNaN, 3}, {3}), 2);
  CHECK(sameWithNaN(read(with_nan), {kNaN, 3}));
  CHECK(sameValues(read(nan_indices), {1, 2}));
  CHECK(sameValues(read(std::get<0>(dk::topk(make({1, kNaN, 3}, {3}), 2, 0, false))), {1, 3}));
  CHECK(std::get<0>(dk::topk(x, 0)).sizes() == Sizes{2, 0});
  CHECK(std::get<0>(dk::topk(make({3}, {}), 1)).item<double>() == 3);
  // out= into transposed tensors.
  Tensor v = dk::empty({2, 2}).t(), i = dk::empty({2, 2}, kLong).t();
  dk::topk_out(v, i, x, 2);
  CHECK(sameValues(read(v), {5, 4, 9, 6}));
  CHECK(sameValues(read(i), {4, 2, 0, 2}));
  CHECK_THROWS_WITH(dk::topk(x, 6), "selected index k out of range");
  CHECK_THROWS_WITH(dk::topk(x, -1), "selected index k out of range");
  CHECK_THROWS_WITH(dk::topk(make({3}, {}), 2), "selected index k out of range");
  CHECK_THROWS_WITH(dk::topk(make({1, 0}, {2}, kBool), 1), "topk: unsupported dtype Bool");
}

TEST_CASE("indexing: Meta shapes and errors match the CPU kernels") {
  TensorOptions meta = TensorOptions().device(kMeta);
  Tensor x = dk::empty({3, 5}, meta);
  Tensor index = dk::empty({2}, TensorOptions().dtype(kLong).device(kMeta));
  CHECK(dk::index_select(x, 1, index).sizes() == Sizes{3, 2});
  CHECK(dk::gather(x, 0, dk::empty({2, 4}, TensorOptions().dtype(kLong).device(kMeta))).sizes() == Sizes{2, 4});
  CHECK(dk::scatter_add(x, 0, dk::empty({2, 4}, TensorOptions().dtype(kLong).device(kMeta)), x).sizes() ==
        Sizes{3, 5});
  CHECK(dk::cumsum(dk::empty({3}, TensorOptions().dtype(kInt).device(kMeta)), 0).scalar_type() == kLong);
  auto [values, indices] = dk::sort(x, 0);
  CHECK(values.sizes() == Sizes{3, 5});
  CHECK(indices.scalar_type() == kLong);
  auto [top, top_indices] = dk::topk(x, 3);
  CHECK(top.sizes() == Sizes{3, 3});
  CHECK(top_indices.is_meta());
  CHECK_THROWS_WITH(dk::topk(x, 6), "selected index k out of range");
  CHECK_THROWS_WITH(dk::gather(x, 1, dk::empty({2}, TensorOptions().dtype(kLong).device(kMeta))),
                    "Index tensor must have the same number of dimensions as input tensor");
}

TEST_CASE("indexing: nonzero, index.Tensor (advanced indexing)") {
  CHECK(sameValues(read(dk::nonzero(make({0, 1, 2, 0}, {2, 2}, kLong))), {0, 1, 1, 0}));
  CHECK(dk::nonzero(make({0, 1, 2, 0}, {2, 2}, kLong)).sizes() == Sizes{2, 2});
  CHECK(dk::nonzero(make({3}, {}, kLong)).sizes() == Sizes{1, 0});
  CHECK(dk::nonzero(make({0}, {}, kLong)).sizes() == Sizes{0, 0});
  Tensor x = iota({2, 3, 4});
  // x[[1, 0]]: whole slabs.
  Tensor rows = dk::index(x, {longs({1, 0}, {2})});
  CHECK(rows.sizes() == Sizes{2, 3, 4});
  CHECK(sameValues(firstValues(rows, 1), {12}));
  // x[:, [2, 0], [1, 3]]: adjacent indexed dims keep their place.
  CHECK(sameValues(read(dk::index(x, {std::nullopt, longs({2, 0}, {2}), longs({1, 3}, {2})})), {9, 3, 21, 15}));
  // x[[1, 0], :, [1, 3]]: separated indexed dims go first.
  Tensor apart = x.index({longs({1, 0}, {2}), std::nullopt, longs({1, 3}, {2})});
  CHECK(apart.sizes() == Sizes{2, 3});
  CHECK(sameValues(read(apart), {13, 17, 21, 3, 7, 11}));
  // Broadcast index tensors; a bool mask; a negative index.
  Tensor broadcast = dk::index(x, {longs({1, 0}, {2, 1}), longs({0, 2}, {2})});
  CHECK(broadcast.sizes() == Sizes{2, 2, 4});
  CHECK(sameValues(firstValues(broadcast, 8), {12, 13, 14, 15, 20, 21, 22, 23}));
  Tensor mask = dk::gt(dk::select(dk::select(x, 2, 0), 0, 0), dk::full({}, 5.0));  // [3]: x[0, :, 0] > 5
  CHECK(sameValues(read(dk::index(x, {std::nullopt, mask})), read(dk::index(x, {std::nullopt, longs({2}, {1})}))));
  CHECK(sameValues(read(dk::index(x, {longs({-2}, {1})})), read(dk::index(x, {longs({0}, {1})}))));
  // PyTorch's errors.
  CHECK_THROWS_WITH(dk::index(x, {longs({5}, {1})}), "index 5 is out of bounds for dimension 0 with size 2");
  CHECK_THROWS_WITH(dk::index(x, {std::nullopt, longs({-4}, {1})}), "index -4 is out of bounds for dimension 1 with size 3");
  CHECK_THROWS_WITH(dk::index(x, {make({0}, {1})}), "tensors used as indices must be long, byte or bool tensors");
  CHECK_THROWS_WITH(dk::index(x, {longs({0, 1}, {2}), longs({0, 1, 2}, {3})}),
                    "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
  CHECK_THROWS_WITH(dk::index(x, {longs({0}, {1}), longs({0}, {1}), longs({0}, {1}), longs({0}, {1})}),
                    "too many indices for tensor of dimension 3 (got 4)");
  CHECK_THROWS_WITH(dk::index(x, {make({1, 0, 1}, {3}, kBool)}),
                    "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3, 4] at "
                    "index 0");
}

TEST_CASE("indexing: index_put_ and index_put") {
  Tensor y = dk::zeros({3, 4});
  y.index_put_({longs({0, 2}, {2})}, dk::full({}, 5.0));
  CHECK(sameValues(read(y), {5, 5, 5, 5, 0, 0, 0, 0, 5, 5, 5, 5}));
  // accumulate adds repeated positions up.
  Tensor acc = dk::zeros({3, 4});
  dk::index_put_(acc, {longs({0, 0}, {2}), longs({1, 1}, {2})}, make({1, 2}, {2}), true);
  CHECK(sameValues(read(acc), {0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  // Without accumulate, a repeated row keeps its last value (PyTorch 1.13.1's CPU result).
  Tensor rep = dk::zeros({3, 4});
  rep.index_put_({longs({2, 0, 2}, {3})}, make({1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, {3, 4}));
  CHECK(sameValues(read(rep), {2, 2, 2, 2, 0, 0, 0, 0, 3, 3, 3, 3}));
  Tensor rep1 = dk::zeros({3});
  rep1.index_put_({longs({1, 1, 1, 0}, {4})}, make({5, 6, 7, 8}, {4}));
  CHECK(sameValues(read(rep1), {8, 7, 0}));
  Tensor cols = dk::zeros({3, 4});
  cols.index_put_({std::nullopt, longs({1, 3}, {2})}, make({1, 2}, {1, 2}));
  CHECK(sameValues(read(cols), {0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 0, 2}));
  // A transposed self is written in place.
  Tensor t = dk::zeros({4, 3}).t();
  t.index_put_({longs({1}, {1})}, dk::full({}, 7.0));
  CHECK(sameValues(read(t), {0, 0, 0, 0, 7, 7, 7, 7, 0, 0, 0, 0}));
  // A mask covering everything; the functional form leaves self alone.
  Tensor base = dk::zeros({2, 2});
  Tensor filled = dk::index_put(base, {dk::gt(dk::ones({2, 2}), dk::zeros({2, 2}))}, dk::full({}, 2.0));
  CHECK(sameValues(read(filled), {2, 2, 2, 2}));
  CHECK(sameValues(read(base), {0, 0, 0, 0}));
  CHECK_THROWS_WITH(dk::zeros({3, 4}).index_put_({longs({0}, {1})}, make({1}, {1}, kDouble)),
                    "Index put requires the source and destination dtypes match, got Float for the destination and "
                    "Double for the source.");
  CHECK_THROWS_WITH(dk::zeros({3, 4}).index_put_({longs({0}, {1})}, make({1, 2, 3}, {3})),
                    "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [1, 4]");
  CHECK_THROWS_WITH(dk::zeros({3, 4}).index_put_({longs({7}, {1})}, make({1}, {1})),
                    "index 7 is out of bounds for dimension 0 with size 3");
  // Autograd: accumulate=True through a non-leaf, as PyTorch's example.
  Tensor a = iota({2, 3}).requires_grad_();
  Tensor b = dk::mul(a, 1.0);
  b.index_put_({longs({0, 0}, {2})}, make({10, 20, 30}, {3}), true);
  CHECK(sameValues(read(b), {20, 41, 62, 3, 4, 5}));
  dk::sum(dk::mul(b, b)).backward();
  CHECK(sameValues(read(a.grad()), {40, 82, 124, 6, 8, 10}));
}
