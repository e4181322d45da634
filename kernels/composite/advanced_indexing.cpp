// Advanced indexing as composites (CompositeImplicitAutograd): index.Tensor (x[i, :, j]),
// index_put_ and index_put (x[i, j] = v), written with index_select, scatter_add and view
// operators, so they run on every backend that has those and their gradients are theirs.
//
// Note [Advanced indexing]
// indices[k] applies to dim k of self (a bool or uint8 mask applies to as many dims as it has,
// and becomes the long coordinates of its true elements: nonzero). The long index tensors are
// broadcast to one shape B. The indexed dims are moved to the front (permute) and merged, so that
// each element of B names one row of a [P, rest...] view of self by a linear index
// (sum of index_k times the product of the later indexed sizes). Reading is then one
// index_select, writing one scatter_add. Where the result's B dims go follows PyTorch: in place
// of the indexed dims when those are adjacent, in front otherwise.
#include <algorithm>
#include <sstream>
#include <string>
#include <optional>
#include <vector>

#include "dk/generated/ops/add.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/clone.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/eq.h"
#include "dk/generated/ops/index_native.h"
#include "dk/generated/ops/index_put_native.h"
#include "dk/generated/ops/index_select.h"
#include "dk/generated/ops/lt.h"
#include "dk/generated/ops/max.h"
#include "dk/generated/ops/min.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/narrow_ops.h"
#include "dk/generated/ops/nonzero.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/permute.h"
#include "dk/generated/ops/reshape.h"
#include "dk/generated/ops/scatter_add.h"
#include "dk/generated/ops/select.h"
#include "dk/generated/ops/sort.h"
#include "dk/generated/ops/where.h"
#include "dk/generated/ops/zeros.h"
#include "dk/generated/ops/zeros_like.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

// What an index list does to a tensor (Note [Advanced indexing]).
struct IndexPlan {
  std::vector<int64_t> dims;      // the indexed dims of self, ascending
  std::vector<Tensor> indices;    // one long index per indexed dim, broadcast to `broadcast`
  std::vector<int64_t> broadcast;  // B
  std::vector<int64_t> perm;      // indexed dims first, then the others in order
  std::vector<int64_t> rest;      // the sizes of the other dims
  int64_t rows = 1;               // P: the product of the indexed sizes
  int64_t insert_at = 0;          // where the result's B dims go among the rest dims
  Tensor linear;                  // [B] int64: the row of the [P, rest...] view
};

IndexPlan planIndex(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  IndexPlan plan;
  int64_t dim = 0;
  for (const std::optional<Tensor>& entry : indices) {
    if (!entry || !entry->defined()) {
      ++dim;
      continue;
    }
    const Tensor& index = *entry;
    const ScalarType t = index.scalar_type();
    DK_CHECK(t == kLong || t == kBool || t == kByte, "tensors used as indices must be long, byte or bool tensors");
    if (t == kLong) {
      DK_CHECK(dim < self.dim(), "too many indices for tensor of dimension ", self.dim(), " (got ", indices.size(), ")");
      plan.dims.push_back(dim++);
      plan.indices.push_back(index);
      continue;
    }
    // A mask: as many dims as it has, each matching self's; its true elements' coordinates.
    DK_CHECK(dim + index.dim() <= self.dim(), "too many indices for tensor of dimension ", self.dim(), " (got ",
             dim + index.dim(), ")");
    for (int64_t k = 0; k < index.dim(); ++k)
      DK_CHECK(index.size(k) == self.size(dim + k), "The shape of the mask ", index.sizes(), " at index ", k,
               " does not match the shape of the indexed tensor ", self.sizes(), " at index ", dim + k);
    Tensor coords = dk::nonzero(index);  // [count, mask dims]
    for (int64_t k = 0; k < index.dim(); ++k) {
      plan.dims.push_back(dim + k);
      plan.indices.push_back(dk::select(coords, 1, k));
    }
    dim += index.dim();
  }
  DK_CHECK(dim <= self.dim(), "too many indices for tensor of dimension ", self.dim(), " (got ", dim, ")");
  DK_CHECK(!plan.dims.empty(), "index: expected at least one index tensor, got none");
  // Broadcast the index tensors ("shape mismatch: indexing tensors could not be broadcast together
  // with shapes [2], [3]").
  plan.broadcast = plan.indices[0].sizes();
  for (size_t k = 1; k < plan.indices.size(); ++k) {
    try {
      plan.broadcast = inferBroadcastShape(plan.broadcast, plan.indices[k].sizes());
    } catch (const Error&) {
      std::string shapes;
      for (size_t j = 0; j < plan.indices.size(); ++j) {
        std::ostringstream one;
        one << plan.indices[j].sizes();
        shapes += (j ? ", " : "") + one.str();
      }
      DK_ERROR("shape mismatch: indexing tensors could not be broadcast together with shapes ", shapes);
    }
  }
  // Wrap negative indices, check the range, and combine into one linear row index.
  Tensor linear;
  for (size_t k = 0; k < plan.dims.size(); ++k) {
    const int64_t size = self.size(plan.dims[k]);
    Tensor index = plan.indices[k];
    if (index.numel() > 0) {
      // A Meta index has no values to check: it is wrapped as if some were negative, which
      // needs none (the result's shape does not depend on them).
      bool wrap = index.is_meta();
      if (!wrap) {
        const int64_t low = dk::min(index).item<int64_t>(), high = dk::max(index).item<int64_t>();
        if (low < -size) DK_ERROR("index ", low, " is out of bounds for dimension ", plan.dims[k], " with size ", size);
        if (high >= size) DK_ERROR("index ", high, " is out of bounds for dimension ", plan.dims[k], " with size ", size);
        wrap = low < 0;
      }
      if (wrap) {
        Tensor zero = dk::zeros({}, kLong, std::nullopt, index.device());
        index = dk::where(dk::lt(index, zero), dk::add(index, Scalar(size)), index);
      }
    }
    index = index.expand(plan.broadcast);
    linear = linear.defined() ? dk::add(dk::mul(linear, Scalar(size)), index) : index;
    plan.rows *= size;
  }
  plan.linear = linear;
  // Indexed dims first; the result's dims go back in place when the indexed dims are adjacent.
  bool adjacent = plan.dims.back() - plan.dims.front() + 1 == static_cast<int64_t>(plan.dims.size());
  plan.perm = plan.dims;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (std::find(plan.dims.begin(), plan.dims.end(), d) != plan.dims.end()) continue;
    plan.perm.push_back(d);
    plan.rest.push_back(self.size(d));
  }
  plan.insert_at = adjacent ? plan.dims.front() : 0;
  return plan;
}

// The result of indexing laid out as [B..., rest...] moved to PyTorch's order: the rest dims
// before insert_at first (and back the other way with `inverse`).
std::vector<int64_t> resultOrder(const IndexPlan& plan, bool inverse) {
  const auto b = static_cast<int64_t>(plan.broadcast.size());
  const auto r = static_cast<int64_t>(plan.rest.size());
  std::vector<int64_t> order;  // order[i]: the [B..., rest...] dim at result position i
  for (int64_t i = 0; i < plan.insert_at; ++i) order.push_back(b + i);
  for (int64_t i = 0; i < b; ++i) order.push_back(i);
  for (int64_t i = plan.insert_at; i < r; ++i) order.push_back(b + i);
  if (!inverse) return order;
  std::vector<int64_t> back(order.size());
  for (size_t i = 0; i < order.size(); ++i) back[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return back;
}

std::vector<int64_t> concat(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// self's indexed dims merged into rows: [P, rest...].
Tensor rowsView(const Tensor& self, const IndexPlan& plan) {
  return dk::reshape(dk::permute(self, plan.perm), concat({plan.rows}, plan.rest));
}

// index_put's new [P, rest...] rows: `values` (already in [B..., rest...] order) written (or added)
// at the planned rows of `rows`.
Tensor putRows(const Tensor& rows, const IndexPlan& plan, const Tensor& values, bool accumulate) {
  const int64_t n = computeNumel(plan.broadcast);
  std::vector<int64_t> flat_shape = concat({n}, plan.rest);
  std::vector<int64_t> index_shape(flat_shape.size(), 1);
  index_shape[0] = n;
  Tensor flat_index = dk::reshape(plan.linear, {n});
  Tensor spread = dk::reshape(flat_index, index_shape).expand(flat_shape);
  Tensor vals = dk::reshape(values, flat_shape);
  // With no positions, scatter_add still takes `values` (empty), so it stays in the autograd graph
  // and gets an (empty) gradient, as in PyTorch.
  if (accumulate || n == 0) return dk::scatter_add(rows, 0, spread, vals);
  // Meta tensors have no row numbers to sort, and the result has rows' shape and dtype.
  if (rows.is_meta()) return dk::clone(rows);
  // Without accumulate, a row named more than once takes the value of its last position, as a
  // serial loop over the positions writes it (PyTorch's CPU kernel). A stable sort of the row
  // numbers groups each row's positions in order; the last of each group is kept.
  auto [sorted_rows, order] = dk::sort(flat_index, 0, false);
  Tensor run_ends = dk::cat({dk::eq(dk::eq(sorted_rows.narrow(0, 1, n - 1), sorted_rows.narrow(0, 0, n - 1)), Scalar(false)),
                             dk::ones({1}, kBool, std::nullopt, rows.device())});
  Tensor keep = dk::reshape(dk::nonzero(run_ends), {-1});
  Tensor unique_rows = dk::index_select(sorted_rows, 0, keep);
  Tensor last_values = dk::index_select(vals, 0, dk::index_select(order, 0, keep));
  const int64_t k = unique_rows.size(0);
  flat_shape[0] = k;
  index_shape[0] = k;
  std::vector<int64_t> row_shape(flat_shape.size(), 1);
  row_shape[0] = plan.rows;
  Tensor hits = dk::scatter_add(dk::zeros({plan.rows}, kLong, std::nullopt, rows.device()), 0, unique_rows,
                                dk::ones({k}, kLong, std::nullopt, rows.device()));
  Tensor untouched = dk::reshape(dk::eq(hits, Scalar(0)), row_shape);
  Tensor written = dk::scatter_add(dk::zeros_like(rows), 0, dk::reshape(unique_rows, index_shape).expand(flat_shape),
                                   last_values);
  return dk::where(untouched, rows, written);
}

}  // namespace

Tensor index(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  IndexPlan plan = planIndex(self, indices);
  const int64_t n = computeNumel(plan.broadcast);
  Tensor picked = dk::index_select(rowsView(self, plan), 0, dk::reshape(plan.linear, {n}));  // [n, rest...]
  Tensor shaped = dk::reshape(picked, concat(plan.broadcast, plan.rest));
  return plan.insert_at == 0 ? shaped : dk::permute(shaped, resultOrder(plan, false));
}

Tensor index_put_(const Tensor& self, ArrayRef<std::optional<Tensor>> indices, const Tensor& values, bool accumulate) {
  DK_CHECK(self.scalar_type() == values.scalar_type(), "Index put requires the source and destination dtypes match, got ",
           self.scalar_type(), " for the destination and ", values.scalar_type(), " for the source.");
  IndexPlan plan = planIndex(self, indices);
  // values broadcast to the indexing result's shape, then into [B..., rest...] order.
  std::vector<int64_t> blocked = concat(plan.broadcast, plan.rest), result_shape;
  for (int64_t d : resultOrder(plan, false)) result_shape.push_back(blocked[static_cast<size_t>(d)]);
  std::vector<int64_t> value_sizes = values.sizes();
  bool fits = value_sizes.size() <= result_shape.size();
  for (size_t i = 0; fits && i < value_sizes.size(); ++i) {
    int64_t v = value_sizes[value_sizes.size() - 1 - i], r = result_shape[result_shape.size() - 1 - i];
    fits = v == r || v == 1;
  }
  DK_CHECK(fits, "shape mismatch: value tensor of shape ", values.sizes(),
           " cannot be broadcast to indexing result of shape ", IntArrayRef(result_shape));
  Tensor vals = values.expand(result_shape);
  if (plan.insert_at != 0) vals = dk::permute(vals, resultOrder(plan, true));
  Tensor updated = putRows(rowsView(self, plan), plan, vals, accumulate);  // [P, rest...]
  // Back to self's layout and into self's memory.
  std::vector<int64_t> permuted_sizes;
  for (int64_t d : plan.perm) permuted_sizes.push_back(self.size(d));
  Tensor target = dk::permute(self, plan.perm);
  target.copy_(dk::reshape(updated, permuted_sizes));
  return self;
}

Tensor index_put(const Tensor& self, ArrayRef<std::optional<Tensor>> indices, const Tensor& values, bool accumulate) {
  Tensor out = dk::clone(self);
  return index_put_(out, indices, values, accumulate);
}

}  // namespace dk::native
