// The shape functions of index_select, gather, scatter_add, cumsum, sort and topk
// (kernels/meta/index_shapes.h).
#include "index_shapes.h"

#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::meta {

namespace {

// A 0-dim tensor counts as 1-D of size 1 (PyTorch's ensure_nonempty_dim / _size).
int64_t nonemptyDim(const Tensor& t) { return t.dim() == 0 ? 1 : t.dim(); }
int64_t nonemptySize(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }

std::vector<int64_t> sizesWithDim(IntArrayRef sizes, int64_t dim, int64_t value) {
  std::vector<int64_t> out = sizes;
  if (!out.empty()) out[static_cast<size_t>(dim)] = value;
  return out;
}

}  // namespace

void checkNoOverlap(const Tensor& written, const Tensor& input) {
  if (!written.defined() || !input.defined()) return;
  MemOverlap status = overlapStatus(written, input);
  DK_CHECK(status != MemOverlap::Partial && status != MemOverlap::Full,
           "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.");
}

IndexSelectSpec indexSelect(const Tensor& self, int64_t dim, const Tensor& index) {
  int64_t wrapped = maybe_wrap_dim(dim, self.dim());
  DK_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  DK_CHECK(index.dtype() == kLong || index.dtype() == kInt, "index_select(): Expected dtype int32 or int64 for index");
  return {wrapped, OutputSpec(sizesWithDim(self.sizes(), wrapped, index.numel()), self.dtype())};
}

int64_t checkGather(const Tensor& self, int64_t dim, const Tensor& index) {
  int64_t wrapped = maybe_wrap_dim(dim, self.dim());
  if (index.numel() == 0) return wrapped;
  DK_CHECK(index.dtype() == kLong, "gather(): Expected dtype int64 for index");
  DK_CHECK(nonemptyDim(index) == nonemptyDim(self),
           "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t d = 0; d < nonemptyDim(self); ++d) {
    if (d == wrapped) continue;
    DK_CHECK(nonemptySize(index, d) <= nonemptySize(self, d), "Size does not match at dimension ", d,
             " expected index ", index.sizes(), " to be smaller than self ", self.sizes(), " apart from dimension ",
             wrapped);
  }
  return wrapped;
}

int64_t checkScatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  int64_t wrapped = maybe_wrap_dim(dim, self.dim());
  DK_CHECK(index.dtype() == kLong, "scatter(): Expected dtype int64 for index");
  DK_CHECK(self.dtype() == src.dtype(), "scatter(): Expected self.dtype to be equal to src.dtype");
  if (index.numel() == 0) return wrapped;
  DK_CHECK(nonemptyDim(self) == nonemptyDim(index),
           "Index tensor must have the same number of dimensions as self tensor");
  DK_CHECK(nonemptyDim(src) == nonemptyDim(index),
           "Index tensor must have the same number of dimensions as src tensor");
  bool wrong_shape = false;
  for (int64_t d = 0; d < nonemptyDim(self) && !wrong_shape; ++d) {
    int64_t size = nonemptySize(index, d);
    wrong_shape = (d != wrapped && size > nonemptySize(self, d)) || size > nonemptySize(src, d);
  }
  DK_CHECK(!wrong_shape, "Expected index ", index.sizes(), " to be smaller than self ", self.sizes(),
           " apart from dimension ", wrapped, " and to be smaller size than src ", src.sizes());
  return wrapped;
}

std::string indexOutOfBoundsMessage(int64_t index, int64_t dim, int64_t size) {
  return detail::concat("index ", index, " is out of bounds for dimension ", dim, " with size ", size);
}

CumsumSpec cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, ScalarType out_dtype) {
  int64_t wrapped = maybe_wrap_dim(dim, self.dim());
  ScalarType result = dtype                             ? *dtype
                      : out_dtype != ScalarType::Undefined ? out_dtype
                      : isIntegralType(self.dtype(), /*includeBool=*/true) ? kLong
                                                                         : self.dtype();
  return {wrapped, OutputSpec(self.sizes(), result)};
}

SortSpec sort(const Tensor& self, int64_t dim) {
  int64_t wrapped = maybe_wrap_dim(dim, self.dim());
  return {wrapped, self.sizes(), self.dtype()};
}

SortSpec topk(const Tensor& self, int64_t k, int64_t dim) {
  int64_t wrapped = maybe_wrap_dim(dim, self.dim());
  DK_CHECK(k >= 0 && k <= nonemptySize(self, wrapped), "selected index k out of range");
  checkDtypeIn("topk", self.dtype(), kAllDtypesExceptBool);
  return {wrapped, sizesWithDim(self.sizes(), wrapped, k), self.dtype()};
}

}  // namespace dk::meta
