// The view operators (CompositeExplicitAutograd): view, transpose, t, permute, expand,
// unsqueeze, squeeze, select, slice, split, unbind. Each computes new sizes, strides and storage
// offset and returns detail::make_view of its input, so the result shares the input's storage
// and version counter and records its base (Note [Version counter] in dk/tensor/tensor.h). No data is
// read or written, so one kernel serves every backend, meta included.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "dk/generated/ops/detach_native.h"
#include "dk/generated/ops/expand_native.h"
#include "dk/generated/ops/permute.h"
#include "dk/generated/ops/permute_native.h"
#include "dk/generated/ops/select.h"
#include "dk/generated/ops/select_native.h"
#include "dk/generated/ops/slice.h"
#include "dk/generated/ops/slice_native.h"
#include "dk/generated/ops/split.h"
#include "dk/generated/ops/split_native.h"
#include "dk/generated/ops/squeeze.h"
#include "dk/generated/ops/squeeze_native.h"
#include "dk/generated/ops/t.h"
#include "dk/generated/ops/t_native.h"
#include "dk/generated/ops/transpose.h"
#include "dk/generated/ops/transpose_native.h"
#include "dk/generated/ops/unbind.h"
#include "dk/generated/ops/unbind_native.h"
#include "dk/generated/ops/unsqueeze.h"
#include "dk/generated/ops/unsqueeze_native.h"
#include "dk/generated/ops/view_native.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

// PyTorch's legacy type name, used by its expand error: "torch.FloatTensor",
// "torch.cuda.LongTensor".
std::string legacyTypeName(const Tensor& self) {
  const char* scalar = "Undefined";
  switch (self.dtype()) {
    case ScalarType::Byte: scalar = "Byte"; break;
    case ScalarType::Char: scalar = "Char"; break;
    case ScalarType::Short: scalar = "Short"; break;
    case ScalarType::Int: scalar = "Int"; break;
    case ScalarType::Long: scalar = "Long"; break;
    case ScalarType::Half: scalar = "Half"; break;
    case ScalarType::Float: scalar = "Float"; break;
    case ScalarType::Double: scalar = "Double"; break;
    case ScalarType::Bool: scalar = "Bool"; break;
    case ScalarType::BFloat16: scalar = "BFloat16"; break;
    case ScalarType::Undefined: break;
  }
  std::string prefix = "torch.";
  if (self.device().type != DeviceType::CPU) prefix += std::string(toString(self.device().type)) + ".";
  return prefix + scalar + "Tensor";
}

// A view with the same geometry as `self` (what PyTorch's alias() gives).
Tensor alias(const Tensor& self) {
  return detail::make_view(self, self.sizes(), self.strides(), self.storage_offset());
}

}  // namespace

Tensor view(const Tensor& self, IntArrayRef size) {
  std::vector<int64_t> shape = inferSize(size, self.numel());
  std::optional<std::vector<int64_t>> strides = computeStrideForView(self.sizes(), self.strides(), shape);
  DK_CHECK(strides.has_value(),
           "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
           "two contiguous subspaces). Use .reshape(...) instead.");
  return detail::make_view(self, shape, *strides, self.storage_offset());
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  int64_t ndim = self.dim();
  dim0 = maybe_wrap_dim(dim0, ndim);
  dim1 = maybe_wrap_dim(dim1, ndim);
  if (dim0 == dim1) return alias(self);
  std::vector<int64_t> sizes = self.sizes();
  std::vector<int64_t> strides = self.strides();
  std::swap(sizes[static_cast<size_t>(dim0)], sizes[static_cast<size_t>(dim1)]);
  std::swap(strides[static_cast<size_t>(dim0)], strides[static_cast<size_t>(dim1)]);
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

Tensor t(const Tensor& self) {
  DK_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return native::transpose(self, 0, self.dim() < 2 ? 0 : 1);
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  int64_t ndim = self.dim();
  DK_CHECK(static_cast<int64_t>(dims.size()) == ndim, "number of dims don't match in permute");
  std::vector<int64_t> sizes(dims.size());
  std::vector<int64_t> strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    auto dim = static_cast<size_t>(maybe_wrap_dim(dims[i], ndim));
    DK_CHECK(!seen[dim], "repeated dim in permute");
    seen[dim] = true;
    sizes[i] = self.sizes()[dim];
    strides[i] = self.strides()[dim];
  }
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

// New dims are added at the front; a dim of size 1 may grow to any size (stride 0); -1 keeps a
// dim's size. `implicit` only matters to autograd tracing in PyTorch; it changes nothing here.
Tensor expand(const Tensor& self, IntArrayRef size, bool /*implicit*/) {
  auto ndim = static_cast<int64_t>(size.size());
  int64_t tensor_dim = self.dim();
  DK_CHECK(ndim >= tensor_dim, "expand(", legacyTypeName(self), "{", IntArrayRef(self.sizes()), "}, size=", size,
           "): the number of sizes provided (", ndim, ") must be greater or equal to the number of dimensions in "
           "the tensor (", tensor_dim, ")");
  std::vector<int64_t> sizes(size.size());
  std::vector<int64_t> strides(size.size());
  for (int64_t i = ndim - 1; i >= 0; --i) {
    auto at = static_cast<size_t>(i);
    int64_t dim = tensor_dim - (ndim - i);  // the matching dim of self, or < 0 for a new leading dim
    int64_t existing = dim >= 0 ? self.sizes()[static_cast<size_t>(dim)] : 1;
    int64_t stride = dim >= 0 ? self.strides()[static_cast<size_t>(dim)]
                     : i + 1 < ndim ? sizes[at + 1] * strides[at + 1]
                                    : 1;
    int64_t target = size[at];
    if (target == -1) {
      DK_CHECK(dim >= 0, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension ",
               i);
      target = existing;
    }
    DK_CHECK(target >= 0, "Trying to create tensor with negative dimension ", target, ": ", size);
    if (existing != target) {
      DK_CHECK(existing == 1, "The expanded size of the tensor (", target, ") must match the existing size (",
               existing, ") at non-singleton dimension ", i, ".  Target sizes: ", size,
               ".  Tensor sizes: ", IntArrayRef(self.sizes()));
      stride = 0;
    }
    sizes[at] = target;
    strides[at] = stride;
  }
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  dim = maybe_wrap_dim(dim, self.dim() + 1);
  auto at = static_cast<size_t>(dim);
  std::vector<int64_t> sizes = self.sizes();
  std::vector<int64_t> strides = self.strides();
  // The new dim is never stepped over; this stride keeps the result contiguous when self is.
  int64_t stride = dim >= self.dim() ? 1 : sizes[at] * strides[at];
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

Tensor squeeze(const Tensor& self, int64_t dim) {
  dim = maybe_wrap_dim(dim, self.dim());
  if (self.dim() == 0 || self.sizes()[static_cast<size_t>(dim)] != 1) return alias(self);
  std::vector<int64_t> sizes = self.sizes();
  std::vector<int64_t> strides = self.strides();
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

// Every dim of size 1 dropped.
Tensor squeeze(const Tensor& self) {
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.sizes()[static_cast<size_t>(d)] == 1) continue;
    sizes.push_back(self.sizes()[static_cast<size_t>(d)]);
    strides.push_back(self.strides()[static_cast<size_t>(d)]);
  }
  return detail::make_view(self, sizes, strides, self.storage_offset());
}

// A tensor of its own over the same memory, with the same version counter (in-place changes
// through either show in both), but not a view (PyTorch: detach()._is_view() is False).
Tensor detach(const Tensor& self) {
  const TensorImpl& impl = *self.unsafeGetTensorImpl();
  return Tensor(make_intrusive<TensorImpl>(impl.storage(), impl.version_counter(), impl.key_set(), impl.dtype(),
                                           impl.device(), impl.sizes(), impl.strides(), impl.storage_offset()));
}

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  DK_CHECK(self.dim() != 0, "select() cannot be applied to a 0-dim tensor.");
  dim = maybe_wrap_dim(dim, self.dim());
  auto at = static_cast<size_t>(dim);
  int64_t size = self.sizes()[at];
  DK_CHECK(index >= -size && index < size, "select(): index ", index, " out of range for tensor of size ",
           IntArrayRef(self.sizes()), " at dimension ", dim);
  if (index < 0) index += size;
  std::vector<int64_t> sizes = self.sizes();
  std::vector<int64_t> strides = self.strides();
  int64_t offset = self.storage_offset() + index * strides[at];
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return detail::make_view(self, sizes, strides, offset);
}

// Python slicing along one dim: negative bounds count from the end, and bounds past either end
// are clamped, so the result may be empty but is never an error.
Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  DK_CHECK(self.dim() != 0, "slice() cannot be applied to a 0-dim tensor.");
  dim = maybe_wrap_dim(dim, self.dim());
  DK_CHECK(step > 0, "slice step must be positive");
  auto at = static_cast<size_t>(dim);
  int64_t size = self.sizes()[at];
  int64_t first = start.value_or(0);
  int64_t last = end.value_or(std::numeric_limits<int64_t>::max());
  if (first < 0) first += size;
  if (last < 0) last += size;
  first = first < 0 ? 0 : first > size ? size : first;
  last = last < first ? first : last > size ? size : last;
  std::vector<int64_t> sizes = self.sizes();
  std::vector<int64_t> strides = self.strides();
  int64_t offset = self.storage_offset() + first * strides[at];
  // A step past the end selects at most the first element: clamping it keeps the arithmetic
  // below inside int64 for any step.
  if (step > size) step = std::max<int64_t>(size, 1);
  sizes[at] = (last - first + step - 1) / step;
  strides[at] *= step;
  return detail::make_view(self, sizes, strides, offset);
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  DK_CHECK(self.dim() != 0, "split expects at least a 1-dimensional tensor");
  DK_CHECK(split_size >= 0, "split expects split_size be non-negative, but got split_size=", split_size);
  dim = maybe_wrap_dim(dim, self.dim());
  int64_t dim_size = self.sizes()[static_cast<size_t>(dim)];
  DK_CHECK(split_size > 0 || dim_size == 0,
           "split_size can only be 0 if dimension size is 0, but got dimension size of ", dim_size);
  // At least one piece, even when split_size exceeds the dim (or both are 0).
  int64_t num_splits =
      split_size == 0 ? 1 : std::max<int64_t>(dim_size / split_size + (dim_size % split_size != 0), 1);
  int64_t last_size = dim_size - split_size * (num_splits - 1);
  std::vector<Tensor> pieces;
  pieces.reserve(static_cast<size_t>(num_splits));
  for (int64_t i = 0; i < num_splits; ++i) {
    int64_t begin = i * split_size;
    int64_t length = i + 1 < num_splits ? split_size : last_size;
    pieces.push_back(native::slice(self, dim, begin, begin + length, 1));
  }
  return pieces;
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  dim = maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/false);
  int64_t size = self.sizes()[static_cast<size_t>(dim)];
  std::vector<Tensor> slices;
  slices.reserve(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) slices.push_back(native::select(self, dim, i));
  return slices;
}

}  // namespace dk::native
