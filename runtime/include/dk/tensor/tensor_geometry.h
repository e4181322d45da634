// dk/tensor/tensor_geometry.h: sizes, strides and dims as plain numbers: contiguous strides, -1
// inference, when a reshape can be a view, broadcasting, dim wrapping. Kernels call these; no
// dispatch happens here.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "dk/util/array_ref.h"

namespace dk {

// Row-major strides: the last dim has stride 1, each earlier one the product of the sizes after
// it (sizes of 0 count as 1, as in PyTorch, so strides stay meaningful for empty tensors).
std::vector<int64_t> computeContiguousStrides(IntArrayRef sizes);
// The same written to strides[0 .. sizes.size()), for callers that keep them on the stack.
void computeContiguousStridesInto(IntArrayRef sizes, int64_t* strides);

// True when the layout is row-major dense: every dim of size != 1 has the stride
// computeContiguousStrides gives. Tensors with no elements are contiguous.
bool isContiguousLayout(IntArrayRef sizes, IntArrayRef strides);

// Product of the sizes.
int64_t computeNumel(IntArrayRef sizes);

// Elements of storage a tensor with this geometry reaches: storage_offset + 1 + sum of
// (size - 1) * stride; 0 when a size is 0. Raises on overflow.
int64_t storageElementsFor(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);

// `shape` with at most one -1 filled in so the product is `numel` (view/reshape). Errors:
//   "only one dimension can be inferred"
//   "invalid shape dimension -2"
//   "shape '[2, -1]' is invalid for input of size 7"
//   "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified dimension
//    size -1 can be any value and is ambiguous"
std::vector<int64_t> inferSize(IntArrayRef shape, int64_t numel);

// Strides that let a tensor of (oldSizes, oldStrides) be seen as newSizes without copying, or
// nullopt when no such strides exist (then reshape must copy). newSizes must have the same
// number of elements. Old dims merge into a chunk when each one's stride is the next one's
// stride times its size; every chunk must be split exactly by a run of new dims.
std::optional<std::vector<int64_t>> computeStrideForView(IntArrayRef oldSizes, IntArrayRef oldStrides,
                                                         IntArrayRef newSizes);

// The broadcast of two shapes (aligned at the right; sizes must match or be 1). Error:
//   "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1
//    (shapes [2, 3] and [4])"
std::vector<int64_t> inferBroadcastShape(IntArrayRef a, IntArrayRef b);

// `dim` in [-ndim, ndim) mapped to [0, ndim). With wrap_scalar, a 0-dim tensor accepts dims
// in [-1, 0]. Errors:
//   "Dimension out of range (expected to be in range of [-2, 1], but got 5)"
//   "Dimension specified as 0 but tensor has no dimensions"
int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, bool wrap_scalar = true);

}  // namespace dk
