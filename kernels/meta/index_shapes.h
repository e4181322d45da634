// kernels/meta/index_shapes.h: the shape functions (kernels/meta/shape_functions.h explains
// the idea) of the operators that pick, scatter, scan and sort along one dim: index_select,
// gather, scatter_add, cumsum, sort and topk. Every backend calls these before touching data, so
// CPU, CUDA and Meta agree on shapes, dtypes and the errors below (PyTorch 1.13.1's words).
// Checks that need the index values (an index out of range) are the kernels' own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dk/core/core_types.h"
#include "dk/tensor/tensor.h"
#include "shape_functions.h"

namespace dk::meta {

// index_select: self's sizes with dim `dim` replaced by index.numel(), self's dtype; `dim`
// wrapped. Errors: "index_select(): Index is supposed to be a vector" (index of 2 or more dims),
// "index_select(): Expected dtype int32 or int64 for index", the dim range.
struct IndexSelectSpec {
  int64_t dim;
  OutputSpec output;
};
IndexSelectSpec indexSelect(const Tensor& self, int64_t dim, const Tensor& index);

// gather: index's sizes, self's dtype; returns `dim` wrapped. Errors: "gather(): Expected dtype
// int64 for index", "Index tensor must have the same number of dimensions as input tensor" (a
// 0-dim and a 1-dim tensor count as alike), "Size does not match at dimension 0 expected index
// [3, 4] to be smaller than self [2, 3] apart from dimension 1" (skipped for an empty index), the
// dim range.
int64_t checkGather(const Tensor& self, int64_t dim, const Tensor& index);

// scatter_add: the output is self (sizes, dtype); returns `dim` wrapped. Errors: "scatter():
// Expected dtype int64 for index", "scatter(): Expected self.dtype to be equal to src.dtype",
// "Index tensor must have the same number of dimensions as self tensor", "Expected index [1, 4]
// to be smaller than self [2, 3] apart from dimension 0 and to be smaller size than src [2, 3]"
// (skipped for an empty index), the dim range.
int64_t checkScatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);

// gather's and scatter_add's message for an index outside [0, size) (negative ones too):
// "index 5 is out of bounds for dimension 1 with size 3".
std::string indexOutOfBoundsMessage(int64_t index, int64_t dim, int64_t size);

// cumsum: self's sizes; the dtype asked for, else the out= tensor's (`out_dtype`, Undefined in
// a functional call), else int64 for integral and bool inputs and self's dtype otherwise; `dim`
// wrapped (a 0-dim tensor takes 0 and -1).
struct CumsumSpec {
  int64_t dim;
  OutputSpec output;
};
CumsumSpec cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, ScalarType out_dtype);

// sort and topk: values (self's dtype) and indices (Long) of self's sizes with dim `dim` holding
// `k` (sort: all of them); `dim` wrapped. topk: "selected index k out of range" unless
// 0 <= k <= self.size(dim) (1 for a 0-dim tensor); Bool is refused ("topk: unsupported dtype
// Bool"), as PyTorch's CPU kernel does.
struct SortSpec {
  int64_t dim;
  std::vector<int64_t> sizes;
  ScalarType values_dtype;
};
SortSpec sort(const Tensor& self, int64_t dim);
SortSpec topk(const Tensor& self, int64_t k, int64_t dim);

// PyTorch's assert_no_overlap, for outputs written in an order the kernel chooses (gather,
// scatter_add, index_select, sort, topk, cumsum): `input` may not share any memory with
// `written`, not even all of it. "unsupported operation: some elements of the input tensor and
// the written-to tensor refer to a single memory location. Please clone() the tensor before
// performing the operation."
void checkNoOverlap(const Tensor& written, const Tensor& input);

}  // namespace dk::meta
