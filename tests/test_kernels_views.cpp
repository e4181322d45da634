// The view kernels (kernels/composite/views.cpp), called through the dispatcher: view,
// transpose, t, permute, expand, unsqueeze, squeeze, select, slice, split, unbind. Each result
// must alias its input (same storage and version counter, base recorded) with the geometry
// PyTorch 1.13 gives, and the values read through it must be the input's.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/permute.h"
#include "dk/generated/ops/select.h"
#include "dk/generated/ops/slice.h"
#include "dk/generated/ops/split.h"
#include "dk/generated/ops/squeeze.h"
#include "dk/generated/ops/t.h"
#include "dk/generated/ops/transpose.h"
#include "dk/generated/ops/unbind.h"
#include "dk/generated/ops/unsqueeze.h"
#include "dk/generated/ops/view_ops.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

// Element (i0, i1, ...) of a row-major iota of `sizes`: its linear index.
double iotaAt(const Sizes& sizes, const Sizes& index) {
  int64_t linear = 0;
  for (size_t d = 0; d < sizes.size(); ++d) linear = linear * sizes[d] + index[d];
  return static_cast<double>(linear);
}

// Checks `v` is a view of `base`: shared storage and version counter, base recorded.
void requireAliases(const Tensor& v, const Tensor& base) {
  REQUIRE(v.is_view());
  REQUIRE(v.storage().is_same(base.storage()));
  REQUIRE(v.unsafeGetTensorImpl()->version_counter().get() == base.unsafeGetTensorImpl()->version_counter().get());
  Tensor root = base.is_view() ? base.base() : base;
  REQUIRE(v.base().is_same(root));
}

Tensor view(const Tensor& t, IntArrayRef size) { return ops::view::call(t, size); }
Tensor expand(const Tensor& t, IntArrayRef size) { return ops::expand::call(t, size, false); }

}  // namespace

TEST_CASE("cpu-structural: view reshapes without copying", "[cpu-structural][views]") {
  Tensor a = iota({2, 3, 4});
  Tensor v = view(a, {4, 6});
  CHECK(v.sizes() == Sizes{4, 6});
  CHECK(v.strides() == Sizes{6, 1});
  CHECK(v.is_contiguous());
  requireAliases(v, a);
  CHECK(read(v) == read(a));

  SECTION("-1 is inferred") {
    Tensor w = view(a, {-1, 12});
    CHECK(w.sizes() == Sizes{2, 12});
    CHECK(view(a, {3, -1, 2}).sizes() == Sizes{3, 4, 2});
  }
  SECTION("a view of a view records the original base") {
    Tensor w = view(v, {24});
    requireAliases(w, a);
    CHECK(w.base().is_same(a));
  }
  SECTION("the version counter is shared both ways") {
    uint32_t before = a._version();
    v.unsafeGetTensorImpl()->bump_version();
    CHECK(a._version() == before + 1);
    a.unsafeGetTensorImpl()->bump_version();
    CHECK(v._version() == before + 2);
  }
  SECTION("writes through the view reach the base") {
    static_cast<float*>(v.data_ptr())[7] = -1.0f;
    CHECK(static_cast<float*>(a.data_ptr())[7] == -1.0f);
  }
  SECTION("0-dim and size-1 shapes") {
    Tensor one = iota({1});
    CHECK(view(one, {}).dim() == 0);
    CHECK(view(view(one, {}), {1, 1, 1}).sizes() == Sizes{1, 1, 1});
  }
  SECTION("zero-size tensors") {
    Tensor e = iota({0, 3});
    CHECK(view(e, {3, 0}).sizes() == Sizes{3, 0});
    CHECK(view(e, {0}).sizes() == Sizes{0});
    CHECK_THROWS_WITH(view(e, {-1, 0}),
                      "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size "
                      "-1 can be any value and is ambiguous");
    // The tensor has 6 elements, not 0: PyTorch's message for this case.
    CHECK_THROWS_WITH(view(iota({6}), {-1, 0}), "shape '[-1, 0]' is invalid for input of size 6");
  }
  SECTION("non-contiguous inputs view when the strides allow it") {
    Tensor tr = dk::transpose(iota({2, 3}), 0, 1);  // [3, 2] strides [1, 3]
    Tensor w = view(tr, {3, 2, 1});
    CHECK(w.strides() == Sizes{1, 3, 3});  // as PyTorch: the size-1 dim takes the chunk's stride
    CHECK(read(w) == read(tr));
    Tensor sliced = dk::slice(iota({4, 6}), 1, 0, 3, 1);  // [4, 3] strides [6, 1]
    Tensor w2 = view(sliced, {2, 2, 3});
    CHECK(w2.strides() == Sizes{12, 6, 1});
    CHECK(read(w2) == read(sliced));
  }
  SECTION("errors") {
    Tensor tr = dk::transpose(iota({2, 3}), 0, 1);
    CHECK_THROWS_WITH(view(tr, {6}),
                      "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                      "across two contiguous subspaces). Use .reshape(...) instead.");
    CHECK_THROWS_WITH(view(a, {5, 5}), "shape '[5, 5]' is invalid for input of size 24");
    CHECK_THROWS_WITH(view(a, {-1, -1}), "only one dimension can be inferred");
    CHECK_THROWS_WITH(view(a, {-2, 12}), "invalid shape dimension -2");
  }
}

TEST_CASE("cpu-structural: views work on meta tensors and every dtype", "[cpu-structural][views]") {
  Tensor m = detail::empty_contiguous({2, 3}, kFloat, kMeta);
  Tensor tm = dk::transpose(m, 0, 1);
  CHECK(tm.device() == Device(kMeta));
  CHECK(tm.sizes() == Sizes{3, 2});
  CHECK(view(m, {3, 2}).sizes() == Sizes{3, 2});
  CHECK(expand(dk::unsqueeze(m, 0), {4, 2, 3}).strides() == Sizes{0, 3, 1});

  for (ScalarType dtype : {kByte, kChar, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16}) {
    Tensor a = iota({2, 2}, dtype);
    Tensor tr = dk::t(a);
    CHECK(tr.dtype() == dtype);
    requireAliases(tr, a);
    std::vector<double> expected = dtype == kBool ? std::vector<double>{0, 1, 1, 1} : std::vector<double>{0, 2, 1, 3};
    CHECK(read(tr) == expected);
  }
}

TEST_CASE("cpu-structural: transpose and t swap dims", "[cpu-structural][views]") {
  Tensor a = iota({2, 3, 4});
  Tensor tr = dk::transpose(a, 0, 2);
  CHECK(tr.sizes() == Sizes{4, 3, 2});
  CHECK(tr.strides() == Sizes{1, 4, 12});
  CHECK_FALSE(tr.is_contiguous());
  CHECK(tr.storage_offset() == 0);
  requireAliases(tr, a);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k)
        CHECK(read(tr)[static_cast<size_t>((i * 3 + j) * 2 + k)] == iotaAt({2, 3, 4}, {k, j, i}));

  CHECK(dk::transpose(a, -1, 0).sizes() == Sizes{4, 3, 2});
  Tensor same = dk::transpose(a, 1, 1);
  CHECK(same.sizes() == a.sizes());
  requireAliases(same, a);
  CHECK(dk::transpose(iota({}), 0, -1).dim() == 0);
  CHECK_THROWS_WITH(dk::transpose(a, 0, 3),
                    "Dimension out of range (expected to be in range of [-3, 2], but got 3)");

  SECTION("t") {
    Tensor m = iota({2, 3});
    Tensor mt = dk::t(m);
    CHECK(mt.sizes() == Sizes{3, 2});
    CHECK(read(mt) == std::vector<double>{0, 3, 1, 4, 2, 5});
    CHECK(dk::t(iota({5})).sizes() == Sizes{5});
    CHECK(dk::t(iota({})).dim() == 0);
    CHECK_THROWS_WITH(dk::t(a), "t() expects a tensor with <= 2 dimensions, but self is 3D");
  }
  SECTION("a transpose of a slice keeps the offset") {
    Tensor s = dk::slice(iota({4, 3}), 0, 1, 3, 1);
    Tensor st = dk::t(s);
    CHECK(st.storage_offset() == 3);
    CHECK(read(st) == std::vector<double>{3, 6, 4, 7, 5, 8});
  }
}

TEST_CASE("cpu-structural: permute reorders dims", "[cpu-structural][views]") {
  Tensor a = iota({2, 3, 4});
  Tensor p = dk::permute(a, {2, 0, 1});
  CHECK(p.sizes() == Sizes{4, 2, 3});
  CHECK(p.strides() == Sizes{1, 12, 4});
  CHECK_FALSE(p.is_contiguous());
  requireAliases(p, a);
  std::vector<double> got = read(p);
  size_t n = 0;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) CHECK(got[n++] == iotaAt({2, 3, 4}, {j, k, i}));
  CHECK(dk::permute(a, {-1, -3, -2}).sizes() == Sizes{4, 2, 3});
  CHECK(dk::permute(iota({}), {}).dim() == 0);
  CHECK(dk::permute(iota({0, 2}), {1, 0}).sizes() == Sizes{2, 0});
  CHECK_THROWS_WITH(dk::permute(a, {0, 1}), "number of dims don't match in permute");
  CHECK_THROWS_WITH(dk::permute(a, {0, 1, 1}), "repeated dim in permute");
  CHECK_THROWS_WITH(dk::permute(a, {0, 1, 3}), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
}

TEST_CASE("cpu-structural: expand broadcasts with stride 0", "[cpu-structural][views]") {
  Tensor a = iota({3, 1});
  Tensor e = expand(a, {2, 3, 4});
  CHECK(e.sizes() == Sizes{2, 3, 4});
  CHECK(e.strides() == Sizes{0, 1, 0});
  CHECK_FALSE(e.is_contiguous());
  requireAliases(e, a);
  std::vector<double> got = read(e);
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == static_cast<double>((i / 4) % 3));

  CHECK(expand(a, {-1, 5}).sizes() == Sizes{3, 5});
  CHECK(expand(a, {3, 1}).strides() == Sizes{1, 1});
  CHECK(expand(iota({}), {2, 2}).strides() == Sizes{0, 0});
  CHECK(expand(iota({0, 1}), {0, 3}).sizes() == Sizes{0, 3});
  // A new leading dim of size 1 keeps a usable stride.
  CHECK(expand(iota({2, 3}), {1, 2, 3}).strides() == Sizes{6, 3, 1});

  SECTION("errors") {
    CHECK_THROWS_WITH(expand(iota({2, 3}), {2, 4}),
                      "The expanded size of the tensor (4) must match the existing size (3) at non-singleton "
                      "dimension 1.  Target sizes: [2, 4].  Tensor sizes: [2, 3]");
    CHECK_THROWS_WITH(expand(iota({2, 3}), {3}),
                      "expand(torch.FloatTensor{[2, 3]}, size=[3]): the number of sizes provided (1) must be greater "
                      "or equal to the number of dimensions in the tensor (2)");
    CHECK_THROWS_WITH(expand(iota({3}, kLong), {-1, 3}),
                      "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0");
    CHECK_THROWS_WITH(expand(iota({1}), {-2}), "Trying to create tensor with negative dimension -2: [-2]");
  }
}

TEST_CASE("cpu-structural: unsqueeze and squeeze add and drop size-1 dims", "[cpu-structural][views]") {
  Tensor a = iota({2, 3});
  Tensor u0 = dk::unsqueeze(a, 0);
  CHECK(u0.sizes() == Sizes{1, 2, 3});
  CHECK(u0.strides() == Sizes{6, 3, 1});
  CHECK(u0.is_contiguous());
  requireAliases(u0, a);
  CHECK(dk::unsqueeze(a, 1).strides() == Sizes{3, 3, 1});
  CHECK(dk::unsqueeze(a, 2).strides() == Sizes{3, 1, 1});
  CHECK(dk::unsqueeze(a, -1).sizes() == Sizes{2, 3, 1});
  CHECK(dk::unsqueeze(a, -3).sizes() == Sizes{1, 2, 3});
  CHECK(dk::unsqueeze(iota({}), 0).sizes() == Sizes{1});
  CHECK(dk::unsqueeze(dk::t(a), 1).strides() == Sizes{1, 6, 3});
  CHECK_THROWS_WITH(dk::unsqueeze(a, 3), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");

  Tensor b = iota({2, 1, 3});
  Tensor s = dk::squeeze(b, 1);
  CHECK(s.sizes() == Sizes{2, 3});
  CHECK(s.strides() == Sizes{3, 1});
  requireAliases(s, b);
  Tensor kept = dk::squeeze(b, 0);  // size 2: not squeezed, still a view
  CHECK(kept.sizes() == Sizes{2, 1, 3});
  requireAliases(kept, b);
  CHECK(dk::squeeze(b, -2).sizes() == Sizes{2, 3});
  CHECK(dk::squeeze(iota({}), 0).dim() == 0);
  CHECK(dk::squeeze(iota({}), -1).dim() == 0);
  CHECK(dk::squeeze(iota({1}), 0).dim() == 0);
  CHECK_THROWS_WITH(dk::squeeze(b, 3), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
}

TEST_CASE("cpu-structural: select picks one index and drops the dim", "[cpu-structural][views]") {
  Tensor a = iota({3, 4});
  Tensor row = dk::select(a, 0, 1);
  CHECK(row.sizes() == Sizes{4});
  CHECK(row.storage_offset() == 4);
  requireAliases(row, a);
  CHECK(read(row) == std::vector<double>{4, 5, 6, 7});
  Tensor col = dk::select(a, 1, -1);
  CHECK(col.strides() == Sizes{4});
  CHECK(read(col) == std::vector<double>{3, 7, 11});
  CHECK(read(dk::select(row, 0, 2)) == std::vector<double>{6});
  CHECK(dk::select(row, 0, 2).dim() == 0);
  CHECK(read(dk::select(dk::t(a), 0, 2)) == std::vector<double>{2, 6, 10});
  CHECK(dk::select(iota({0, 2}), 1, 0).sizes() == Sizes{0});

  CHECK_THROWS_WITH(dk::select(iota({}), 0, 0), "select() cannot be applied to a 0-dim tensor.");
  CHECK_THROWS_WITH(dk::select(a, 0, 3), "select(): index 3 out of range for tensor of size [3, 4] at dimension 0");
  CHECK_THROWS_WITH(dk::select(a, 1, -5), "select(): index -5 out of range for tensor of size [3, 4] at dimension 1");
  CHECK_THROWS_WITH(dk::select(a, 2, 0), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("cpu-structural: slice follows Python slicing", "[cpu-structural][views]") {
  Tensor a = iota({10});
  auto sl = [&](std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
    return read(dk::slice(a, 0, start, end, step));
  };
  CHECK(sl(2, 5, 1) == std::vector<double>{2, 3, 4});
  CHECK(sl(std::nullopt, std::nullopt, 3) == std::vector<double>{0, 3, 6, 9});
  CHECK(sl(1, std::nullopt, 4) == std::vector<double>{1, 5, 9});
  CHECK(sl(-3, std::nullopt, 1) == std::vector<double>{7, 8, 9});
  CHECK(sl(std::nullopt, -8, 1) == std::vector<double>{0, 1});
  CHECK(sl(-100, 2, 1) == std::vector<double>{0, 1});   // clamped at the start
  CHECK(sl(8, 100, 1) == std::vector<double>{8, 9});    // clamped at the end
  CHECK(sl(5, 2, 1).empty());                            // end before start: empty
  CHECK(sl(20, 30, 1).empty());
  CHECK(dk::slice(a, 0, 20, 30, 1).storage_offset() == 10);

  Tensor m = iota({4, 6});
  Tensor s = dk::slice(m, 1, 1, 6, 2);
  CHECK(s.sizes() == Sizes{4, 3});
  CHECK(s.strides() == Sizes{6, 2});
  CHECK(s.storage_offset() == 1);
  requireAliases(s, m);
  CHECK(read(dk::select(s, 0, 1)) == std::vector<double>{7, 9, 11});
  Tensor s2 = dk::slice(s, 0, 1, 4, 2);  // slice of a slice
  CHECK(read(s2) == std::vector<double>{7, 9, 11, 19, 21, 23});
  requireAliases(s2, m);
  CHECK(dk::slice(m, -1, std::nullopt, std::nullopt, 1).sizes() == Sizes{4, 6});

  CHECK_THROWS_WITH(dk::slice(a, 0, 0, 5, 0), "slice step must be positive");
  CHECK_THROWS_WITH(dk::slice(a, 0, 0, 5, -1), "slice step must be positive");
  CHECK_THROWS_WITH(dk::slice(iota({}), 0, 0, 1, 1), "slice() cannot be applied to a 0-dim tensor.");
  CHECK_THROWS_WITH(dk::slice(m, 2, 0, 1, 1), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("cpu-structural: split cuts equal pieces with a shorter last one", "[cpu-structural][views]") {
  Tensor a = iota({7, 2});
  std::vector<Tensor> pieces = dk::split(a, 3, 0);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[0].sizes() == Sizes{3, 2});
  CHECK(pieces[1].sizes() == Sizes{3, 2});
  CHECK(pieces[2].sizes() == Sizes{1, 2});
  CHECK(read(pieces[2]) == std::vector<double>{12, 13});
  CHECK(pieces[1].storage_offset() == 6);
  for (const Tensor& p : pieces) requireAliases(p, a);

  std::vector<Tensor> cols = dk::split(a, 1, -1);
  REQUIRE(cols.size() == 2);
  CHECK(read(cols[1]) == std::vector<double>{1, 3, 5, 7, 9, 11, 13});
  CHECK(dk::split(a, 10, 0).size() == 1);  // larger than the dim: one piece
  CHECK(dk::split(a, 10, 0)[0].sizes() == Sizes{7, 2});
  CHECK(dk::split(a, 7, 0).size() == 1);
  std::vector<Tensor> empty = dk::split(iota({0, 2}), 0, 0);  // 0 with an empty dim: one empty piece
  REQUIRE(empty.size() == 1);
  CHECK(empty[0].sizes() == Sizes{0, 2});
  CHECK(dk::split(iota({0, 2}), 2, 0).size() == 1);

  CHECK_THROWS_WITH(dk::split(iota({}), 1, 0), "split expects at least a 1-dimensional tensor");
  CHECK_THROWS_WITH(dk::split(a, -1, 0), "split expects split_size be non-negative, but got split_size=-1");
  CHECK_THROWS_WITH(dk::split(a, 0, 0), "split_size can only be 0 if dimension size is 0, but got dimension size of 7");
  CHECK_THROWS_WITH(dk::split(a, 1, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("cpu-structural: unbind returns every index along a dim", "[cpu-structural][views]") {
  Tensor a = iota({2, 3});
  std::vector<Tensor> rows = dk::unbind(a, 0);
  REQUIRE(rows.size() == 2);
  CHECK(read(rows[1]) == std::vector<double>{3, 4, 5});
  std::vector<Tensor> cols = dk::unbind(a, 1);
  REQUIRE(cols.size() == 3);
  CHECK(read(cols[2]) == std::vector<double>{2, 5});
  for (const Tensor& c : cols) requireAliases(c, a);
  CHECK(dk::unbind(iota({0, 3}), 0).empty());
  CHECK(dk::unbind(iota({4}), 0)[3].dim() == 0);
  CHECK_THROWS_WITH(dk::unbind(iota({}), 0), "Dimension specified as 0 but tensor has no dimensions");
  CHECK_THROWS_WITH(dk::unbind(a, -3), "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
}

// Found by the boxed-calls fuzz target (tools/fuzz): huge steps and split sizes must not
// overflow int64.
TEST_CASE("cpu-structural: slice with a huge step and split with a huge size", "[cpu-structural][views]") {
  Tensor t = dk::arange(0, 6, 1, kFloat);
  Tensor s = dk::slice(t, 0, 1, std::nullopt, std::numeric_limits<int64_t>::max());
  CHECK(s.sizes() == Sizes{1});
  CHECK(s.item().toDouble() == 1.0);
  std::vector<Tensor> parts = dk::split(t, std::numeric_limits<int64_t>::max());
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].sizes() == Sizes{6});
}
