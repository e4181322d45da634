// The view inverses functionalization writes a changed view back with (Note
// [Functionalization] in dk/func/functionalize.h; declared by the generator in
// dk/generated/FunctionalInverses.h). Each returns `base` with `mutated_view` in the place the
// view took from it, using only functional operators (the view copies and the scatters), so the
// program below functionalization stays free of views and writes. `args` are the view call's
// arguments (args[0], its input, is not kept: `base` is its current value).
#include <algorithm>
#include <optional>
#include <vector>

#include "dk/generated/FunctionalInverses.h"
#include "dk/generated/ops/permute_copy.h"
#include "dk/generated/ops/select_scatter.h"
#include "dk/generated/ops/slice_scatter.h"
#include "dk/generated/ops/squeeze_copy.h"
#include "dk/generated/ops/t_copy.h"
#include "dk/generated/ops/transpose_copy.h"
#include "dk/generated/ops/view_copy.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::functional_inverses {

namespace {

std::vector<int64_t> ints(const IValue& v) {
  std::vector<int64_t> out;
  for (const IValue& e : v.toListElements()) out.push_back(e.toInt());
  return out;
}

std::optional<int64_t> optionalInt(const IValue& v) {
  if (v.isNone()) return std::nullopt;
  return v.toInt();
}

// The base's geometry with the view's values: the inverse of a view that only regroups
// dimensions (view, squeeze, unsqueeze of a base of the same numel).
Tensor reshapedLikeBase(const Tensor& base, const Tensor& mutated_view) {
  return dk::view_copy(mutated_view, base.sizes());
}

}  // namespace

Tensor view_inverse(const Tensor& base, const Tensor& mutated_view, const Stack&, size_t) {
  return reshapedLikeBase(base, mutated_view);
}

Tensor transpose_int_inverse(const Tensor&, const Tensor& mutated_view, const Stack& args, size_t) {
  return dk::transpose_copy(mutated_view, args[1].toInt(), args[2].toInt());
}

Tensor t_inverse(const Tensor&, const Tensor& mutated_view, const Stack&, size_t) { return dk::t_copy(mutated_view); }

Tensor permute_inverse(const Tensor& base, const Tensor& mutated_view, const Stack& args, size_t) {
  const std::vector<int64_t> dims = ints(args[1]);
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[static_cast<size_t>(maybe_wrap_dim(dims[i], base.dim()))] = static_cast<int64_t>(i);
  return dk::permute_copy(mutated_view, inverse);
}

Tensor expand_inverse(const Tensor& base, const Tensor& mutated_view, const Stack&, size_t) {
  // Eager refuses writes into a broadcast view, whose elements share memory.
  DK_CHECK(mutated_view.numel() == base.numel(),
           "unsupported operation: more than one element of the written-to tensor refers to a single memory "
           "location. Please clone() the tensor before performing the operation.");
  return reshapedLikeBase(base, mutated_view);
}

Tensor unsqueeze_inverse(const Tensor&, const Tensor& mutated_view, const Stack& args, size_t) {
  return dk::squeeze_copy(mutated_view, args[1].toInt());
}

Tensor detach_inverse(const Tensor&, const Tensor& mutated_view, const Stack&, size_t) { return mutated_view; }

Tensor squeeze_inverse(const Tensor& base, const Tensor& mutated_view, const Stack&, size_t) {
  return reshapedLikeBase(base, mutated_view);
}

Tensor squeeze_dim_inverse(const Tensor& base, const Tensor& mutated_view, const Stack&, size_t) {
  return reshapedLikeBase(base, mutated_view);
}

Tensor select_int_inverse(const Tensor& base, const Tensor& mutated_view, const Stack& args, size_t) {
  return dk::select_scatter(base, mutated_view, args[1].toInt(), args[2].toInt());
}

Tensor slice_Tensor_inverse(const Tensor& base, const Tensor& mutated_view, const Stack& args, size_t) {
  return dk::slice_scatter(base, mutated_view, args[1].toInt(), optionalInt(args[2]), optionalInt(args[3]),
                           args[4].toInt());
}

Tensor split_Tensor_inverse(const Tensor& base, const Tensor& mutated_view, const Stack& args, size_t output) {
  const int64_t split_size = args[1].toInt();
  const int64_t dim = maybe_wrap_dim(args[2].toInt(), base.dim());
  const int64_t start = static_cast<int64_t>(output) * split_size;
  const int64_t end = std::min(start + split_size, base.size(dim));
  return dk::slice_scatter(base, mutated_view, dim, start, end, 1);
}

Tensor unbind_int_inverse(const Tensor& base, const Tensor& mutated_view, const Stack& args, size_t output) {
  return dk::select_scatter(base, mutated_view, args[1].toInt(), static_cast<int64_t>(output));
}

}  // namespace dk::functional_inverses
