// CPU kernels that pick, scatter, scan and sort along one dim: index_select, gather,
// scatter_add, cumsum, sort and topk; and nonzero. Shapes, dtypes and argument errors come from
// kernels/meta/index_shapes.h (shared with Meta and CUDA); the checks that need the index values
// run over the whole index before any output element is written.
//
// Most of these walk "lines": the 1-D runs along `dim`, one per position of the other dims. A
// TensorIterator over views with size 1 at `dim` visits the first element of every line for each
// operand at once (merging dims where it can); the kernel then walks the line by its stride.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "dk/generated/ops/copy_native.h"
#include "dk/generated/ops/cumsum_native.h"
#include "dk/generated/ops/gather_native.h"
#include "dk/generated/ops/index_select_native.h"
#include "dk/generated/ops/nonzero_native.h"
#include "dk/generated/ops/scatter_add_native.h"
#include "dk/generated/ops/sort_native.h"
#include "dk/generated/ops/topk_native.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "meta/index_shapes.h"
#include "tensor_iterator.h"

namespace dk::native {

namespace {

// One operand of a line walk: its first element of the line and its stride along the line, in
// elements.
struct Line {
  char* data;
  int64_t stride;
};

// `t` seen with `line_sizes` (size 1 at dim) and its own strides; a 0-dim tensor as [1].
Tensor lineStarts(const Tensor& t, const std::vector<int64_t>& line_sizes) {
  std::vector<int64_t> strides = t.dim() == 0 ? std::vector<int64_t>{1} : std::vector<int64_t>(t.strides());
  return detail::make_view(t, line_sizes, strides, t.storage_offset());
}

int64_t strideAlong(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.stride(dim); }

// Calls fn(lines) once per line: lines[i] is operand i's line. `shape` gives the lines (its dim
// `dim` is ignored); every operand has at least shape's sizes on the other dims (they may be
// larger: gather reads a sub-block of self).
template <size_t N, class Fn>
void forEachLine(const char* op, IntArrayRef shape, int64_t dim, const std::array<const Tensor*, N>& operands,
                 Fn&& fn) {
  std::vector<int64_t> line_sizes = shape.empty() ? std::vector<int64_t>{1} : std::vector<int64_t>(shape);
  line_sizes[static_cast<size_t>(dim)] = 1;
  std::vector<Tensor> views;
  std::array<int64_t, N> strides{};
  for (size_t i = 0; i < N; ++i) {
    views.push_back(lineStarts(*operands[i], line_sizes));
    strides[i] = strideAlong(*operands[i], dim) * static_cast<int64_t>(operands[i]->element_size());
  }
  TensorIterator iter = TensorIterator::overOperands(op, std::move(views));
  iter.forEachRun([&](char* const* data, const int64_t* run_strides, int64_t count) {
    std::array<Line, N> lines;
    for (int64_t k = 0; k < count; ++k) {
      for (size_t i = 0; i < N; ++i) lines[i] = Line{data[i] + k * run_strides[i], strides[i]};
      fn(lines);
    }
  });
}

template <class T>
T& at(const Line& line, int64_t j) {
  return *reinterpret_cast<T*>(line.data + j * line.stride);
}

// Every element of the int64 `index` lies in [0, size): "index 5 is out of bounds for dimension 1
// with size 3" names the first that does not.
void checkIndexRange(const Tensor& index, int64_t dim, int64_t size) {
  forEachLine<1>("index range", index.sizes(), 0, {&index}, [&](const std::array<Line, 1>& lines) {
    const int64_t n = index.dim() == 0 ? 1 : index.size(0);
    for (int64_t j = 0; j < n; ++j) {
      int64_t i = at<int64_t>(lines[0], j);
      if (i < 0 || i >= size) throw Error(meta::indexOutOfBoundsMessage(i, dim, size));
    }
  });
}

// The size `self` has along dim `dim`, a 0-dim tensor counting as [1].
int64_t sizeAlong(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.size(dim); }

// index_select's index values as int64, checked against `size` with PyTorch's CPU messages:
// "INDICES element is out of DATA bounds, id=3 axis_dim=3" on its fast paths (self of 2 or more
// dims, empty or selecting along dim 1), "index out of range in self" otherwise.
std::vector<int64_t> selectIndices(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t n = index.numel();
  std::vector<int64_t> values(static_cast<size_t>(n));
  Tensor flat = index.dim() == 0 ? detail::make_view(index, {1}, {1}, index.storage_offset()) : index;
  for (int64_t k = 0; k < n; ++k) {
    const char* p = static_cast<const char*>(flat.data_ptr()) + k * flat.stride(0) * flat.element_size();
    values[static_cast<size_t>(k)] = index.dtype() == kLong ? *reinterpret_cast<const int64_t*>(p)
                                                             : *reinterpret_cast<const int32_t*>(p);
  }
  const int64_t size = sizeAlong(self, dim);
  const bool fast_path_message = self.dim() > 1 && (self.numel() == 0 || dim == 1);
  if (self.dim() > 1 && self.numel() == 0 && n > 0)
    DK_CHECK(size > 0, "index_select(): self indexing axis dim should be positive");
  for (int64_t i : values) {
    if (i >= 0 && i < size) continue;
    if (fast_path_message) DK_ERROR("INDICES element is out of DATA bounds, id=", i, " axis_dim=", size);
    DK_ERROR("index out of range in self");
  }
  return values;
}

}  // namespace

// Slices of self along dim, in the order index gives them. Contiguous self copies whole blocks.
Tensor index_select_cpu(const Tensor& self, int64_t dim, const Tensor& index) {
  meta::IndexSelectSpec spec = meta::indexSelect(self, dim, index);
  Tensor out = detail::empty_contiguous(spec.output.sizes, spec.output.dtype, self.device());
  if (self.dim() > 1 && index.numel() == 0) return out;
  std::vector<int64_t> picks = selectIndices(self, spec.dim, index);
  if (out.numel() == 0) return out;
  if (self.dim() == 0) {
    copy_inplace_cpu(out, self, false);
    return out;
  }
  const int64_t d = spec.dim;
  if (self.is_contiguous()) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < d; ++i) outer *= self.size(i);
    for (int64_t i = d + 1; i < self.dim(); ++i) inner *= self.size(i);
    const size_t block = static_cast<size_t>(inner) * self.element_size();
    const auto* src = static_cast<const char*>(self.data_ptr());
    auto* dst = static_cast<char*>(out.data_ptr());
    const auto n = static_cast<int64_t>(picks.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < n; ++k)
        std::memcpy(dst + static_cast<size_t>(o * n + k) * block,
                    src + static_cast<size_t>(o * self.size(d) + picks[static_cast<size_t>(k)]) * block, block);
    return out;
  }
  // Any other layout: one strided slice copy per index.
  std::vector<int64_t> slice_sizes = self.sizes();
  slice_sizes.erase(slice_sizes.begin() + d);
  std::vector<int64_t> self_strides = self.strides(), out_strides = out.strides();
  self_strides.erase(self_strides.begin() + d);
  out_strides.erase(out_strides.begin() + d);
  for (size_t k = 0; k < picks.size(); ++k) {
    Tensor from = detail::make_view(self, slice_sizes, self_strides, self.storage_offset() + picks[k] * self.stride(d));
    Tensor to = detail::make_view(out, slice_sizes, out_strides, static_cast<int64_t>(k) * out.stride(d));
    copy_inplace_cpu(to, from, false);
  }
  return out;
}

// out[... j ...] = self[... index[... j ...] ...] along dim.
DK_IMPL_FUNC(gather_out_cpu)(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/,
                             const Tensor& out) {
  if (index.numel() == 0) return;
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  const int64_t size = sizeAlong(self, d);
  checkIndexRange(index, d, size);
  const int64_t n = sizeAlong(index, d);
  DK_DISPATCH_ALL_TYPES(self.dtype(), "gather", [&] {
    forEachLine<3>("gather", index.sizes(), d, {&out, &self, &index}, [&](const std::array<Line, 3>& l) {
      for (int64_t j = 0; j < n; ++j) at<scalar_t>(l[0], j) = at<scalar_t>(l[1], at<int64_t>(l[2], j));
    });
  });
}

// out = self, then out[... index[... j ...] ...] += src[... j ...] along dim.
DK_IMPL_FUNC(scatter_add_out_cpu)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                                  const Tensor& out) {
  if (!aliasesExactly(out, self)) copy_inplace_cpu(out, self, false);
  if (index.numel() == 0) return;
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  checkIndexRange(index, d, sizeAlong(self, d));
  const int64_t n = sizeAlong(index, d);
  DK_DISPATCH_ALL_TYPES(self.dtype(), "scatter_add", [&] {
    forEachLine<3>("scatter_add", index.sizes(), d, {&out, &index, &src}, [&](const std::array<Line, 3>& l) {
      for (int64_t j = 0; j < n; ++j) {
        scalar_t& slot = at<scalar_t>(l[0], at<int64_t>(l[1], j));
        slot = static_cast<scalar_t>(addValues<opmath_t<scalar_t>>(slot, at<scalar_t>(l[2], j)));
      }
    });
  });
}

// Running sums along dim in out's dtype (self converted to it first), accumulated in double for
// floating types and int64 for integral ones.
DK_IMPL_FUNC(cumsum_out_cpu)(const Tensor& self, int64_t dim, std::optional<ScalarType> /*dtype*/,
                             const Tensor& out) {
  if (out.numel() == 0) return;
  Tensor src = self.dtype() == out.dtype() ? self : castToDtype(self, out.dtype());
  // An input sharing only part of out's memory would be overwritten before it is read.
  meta::MemOverlap overlap = meta::overlapStatus(out, src);
  if (overlap != meta::MemOverlap::No && overlap != meta::MemOverlap::Full) src = castToDtype(src, src.dtype());
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  const int64_t n = sizeAlong(self, d);
  DK_DISPATCH_ALL_TYPES(out.dtype(), "cumsum", [&] {
    using acc_t = std::conditional_t<std::is_floating_point_v<opmath_t<scalar_t>>, double, int64_t>;
    forEachLine<2>("cumsum", self.sizes(), d, {&out, &src}, [&](const std::array<Line, 2>& l) {
      acc_t sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (std::is_integral_v<acc_t>) {
          // Wraps modulo 2^64 as PyTorch's int64 sums do, without signed overflow.
          sum = static_cast<acc_t>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(convertValue<int64_t>(at<scalar_t>(l[1], j))));
        } else {
          sum += static_cast<acc_t>(static_cast<opmath_t<scalar_t>>(at<scalar_t>(l[1], j)));
        }
        at<scalar_t>(l[0], j) = convertValue<scalar_t>(sum);
      }
    });
  });
}

namespace {

// The order sort and topk use: NaN above every number (PyTorch's), `descending` reversing it; ties
// keep the order of their positions (a stable order).
template <class T>
struct LineOrder {
  const Line& line;
  bool descending;

  static bool isNan(opmath_t<T> v) {
    if constexpr (std::is_floating_point_v<opmath_t<T>>) return std::isnan(v);
    else return false;
  }
  bool operator()(int64_t a, int64_t b) const {
    auto x = static_cast<opmath_t<T>>(at<T>(line, a)), y = static_cast<opmath_t<T>>(at<T>(line, b));
    bool x_nan = isNan(x), y_nan = isNan(y);
    if (x_nan != y_nan) return descending ? x_nan : y_nan;  // the NaN is the larger
    if (!x_nan && x != y) return descending ? x > y : x < y;
    return a < b;  // equal: the earlier position first
  }
};

// The k first positions of each line of self in LineOrder (all of them for sort), into values
// and indices.
void selectOrdered(const char* op, const Tensor& self, int64_t dim, int64_t k, bool descending, const Tensor& values,
                   const Tensor& indices) {
  if (values.numel() == 0) return;
  const int64_t n = sizeAlong(self, dim);
  std::vector<int64_t> perm(static_cast<size_t>(n));
  DK_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    forEachLine<3>(op, self.sizes(), dim, {&values, &indices, &self}, [&](const std::array<Line, 3>& l) {
      std::iota(perm.begin(), perm.end(), int64_t{0});
      LineOrder<scalar_t> order{l[2], descending};
      if (k == n) std::sort(perm.begin(), perm.end(), order);
      else std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), order);
      for (int64_t j = 0; j < k; ++j) {
        int64_t from = perm[static_cast<size_t>(j)];
        at<scalar_t>(l[0], j) = at<scalar_t>(l[2], from);
        at<int64_t>(l[1], j) = from;
      }
    });
  });
}

}  // namespace

// Ascending (NaN last) or descending (NaN first); equal values keep their order.
std::tuple<Tensor, Tensor> sort_cpu(const Tensor& self, int64_t dim, bool descending) {
  meta::SortSpec spec = meta::sort(self, dim);
  Tensor values = detail::empty_contiguous(spec.sizes, spec.values_dtype, self.device());
  Tensor indices = detail::empty_contiguous(spec.sizes, kLong, self.device());
  selectOrdered("sort", self, spec.dim, sizeAlong(self, spec.dim), descending, values, indices);
  return {values, indices};
}

// The k largest (or smallest) along dim, in order, whatever `sorted` says (PyTorch leaves the
// order unspecified then).
DK_IMPL_FUNC(topk_out_cpu)(const Tensor& self, int64_t k, int64_t dim, bool largest, bool /*sorted*/,
                           const Tensor& values, const Tensor& indices) {
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  selectOrdered("topk", self, d, k, largest, values, indices);
}

// The coordinates of every nonzero element, in row-major order: [count, self.dim()] int64.
Tensor nonzero_cpu(const Tensor& self) {
  const int64_t ndim = self.dim();
  std::vector<int64_t> coords;
  std::vector<int64_t> position(static_cast<size_t>(ndim), 0);
  Tensor flat = contiguousCpu(self);
  int64_t count = 0;
  DK_DISPATCH_ALL_TYPES(self.dtype(), "nonzero", [&] {
    const auto* data = flat.data_ptr<scalar_t>();
    for (int64_t i = 0; i < self.numel(); ++i) {
      if (static_cast<opmath_t<scalar_t>>(data[i]) != opmath_t<scalar_t>(0)) {
        coords.insert(coords.end(), position.begin(), position.end());
        ++count;
      }
      // The next position, row-major.
      for (int64_t d = ndim - 1; d >= 0; --d) {
        if (++position[static_cast<size_t>(d)] < self.size(d)) break;
        position[static_cast<size_t>(d)] = 0;
      }
    }
  });
  Tensor out = detail::empty_contiguous({count, ndim}, kLong, self.device());
  if (!coords.empty()) std::memcpy(out.data_ptr<int64_t>(), coords.data(), coords.size() * sizeof(int64_t));
  return out;
}

}  // namespace dk::native
