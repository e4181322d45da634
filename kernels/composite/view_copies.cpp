// The copying twins of the views (CompositeExplicitAutogradNonFunctional: view_copy,
// transpose_copy, ..., unbind_copy), the scatters that write a view's new values back into its
// base (select_scatter, slice_scatter), and the functional forms of the in-place fills (copy,
// fill, zero). Functionalization (Note [Functionalization] in dk/func/functionalize.h) replays
// views and writes with these, so the program below it neither aliases nor mutates.
//
// A view copy is its view's values in a fresh contiguous tensor: the view kernel (which reads
// no data) then a contiguous clone. They are written against the native view kernels, so one
// kernel serves every backend, meta included.
#include <optional>
#include <vector>

#include "dk/generated/ops/clone.h"
#include "dk/generated/ops/copy_ops.h"
#include "dk/generated/ops/detach_copy_native.h"
#include "dk/generated/ops/detach_native.h"
#include "dk/generated/ops/empty_like.h"
#include "dk/generated/ops/expand_copy_native.h"
#include "dk/generated/ops/expand_native.h"
#include "dk/generated/ops/fill_ops.h"
#include "dk/generated/ops/permute_copy_native.h"
#include "dk/generated/ops/permute_native.h"
#include "dk/generated/ops/select_copy_native.h"
#include "dk/generated/ops/select_native.h"
#include "dk/generated/ops/select_scatter_native.h"
#include "dk/generated/ops/slice_copy_native.h"
#include "dk/generated/ops/slice_native.h"
#include "dk/generated/ops/slice_scatter_native.h"
#include "dk/generated/ops/split_copy_native.h"
#include "dk/generated/ops/split_native.h"
#include "dk/generated/ops/squeeze_copy_native.h"
#include "dk/generated/ops/squeeze_native.h"
#include "dk/generated/ops/t_copy_native.h"
#include "dk/generated/ops/t_native.h"
#include "dk/generated/ops/transpose_copy_native.h"
#include "dk/generated/ops/transpose_native.h"
#include "dk/generated/ops/unbind_copy_native.h"
#include "dk/generated/ops/unbind_native.h"
#include "dk/generated/ops/unsqueeze_copy_native.h"
#include "dk/generated/ops/unsqueeze_native.h"
#include "dk/generated/ops/view_copy_native.h"
#include "dk/generated/ops/view_native.h"
#include "dk/generated/ops/zero_ops.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

Tensor fresh(const Tensor& view) { return ops::clone::call(view, MemoryFormat::Contiguous); }

std::vector<Tensor> fresh(std::vector<Tensor> views) {
  for (Tensor& v : views) v = fresh(v);
  return views;
}

// PyTorch's check and message for a scatter's src against the part of self it replaces.
void checkScatterSource(const Tensor& part, const Tensor& src, const char* op) {
  DK_CHECK(part.sizes() == src.sizes(), op, ": expected src to have a size equal to the slice of self. src size = ",
           IntArrayRef(src.sizes()), ", slice size = ", IntArrayRef(part.sizes()));
}

}  // namespace

Tensor view_copy(const Tensor& self, IntArrayRef size) { return fresh(view(self, size)); }
Tensor transpose_copy(const Tensor& self, int64_t dim0, int64_t dim1) { return fresh(transpose(self, dim0, dim1)); }
Tensor t_copy(const Tensor& self) { return fresh(t(self)); }
Tensor permute_copy(const Tensor& self, IntArrayRef dims) { return fresh(permute(self, dims)); }
Tensor expand_copy(const Tensor& self, IntArrayRef size, bool implicit) { return fresh(expand(self, size, implicit)); }
Tensor unsqueeze_copy(const Tensor& self, int64_t dim) { return fresh(unsqueeze(self, dim)); }
Tensor detach_copy(const Tensor& self) { return fresh(detach(self)); }
Tensor squeeze_copy(const Tensor& self) { return fresh(squeeze(self)); }
Tensor squeeze_copy(const Tensor& self, int64_t dim) { return fresh(squeeze(self, dim)); }
Tensor select_copy(const Tensor& self, int64_t dim, int64_t index) { return fresh(select(self, dim, index)); }
Tensor slice_copy(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                  int64_t step) {
  return fresh(slice(self, dim, start, end, step));
}
std::vector<Tensor> split_copy(const Tensor& self, int64_t split_size, int64_t dim) {
  return fresh(split(self, split_size, dim));
}
std::vector<Tensor> unbind_copy(const Tensor& self, int64_t dim) { return fresh(unbind(self, dim)); }

Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index) {
  Tensor out = fresh(self);
  Tensor part = select(out, dim, index);
  checkScatterSource(part, src, "select_scatter");
  ops::copy_::call(part, src, false);
  return out;
}

Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
  Tensor out = fresh(self);
  Tensor part = slice(out, dim, start, end, step);
  checkScatterSource(part, src, "slice_scatter");
  ops::copy_::call(part, src, false);
  return out;
}

// self's geometry, dtype and device; src's values (broadcast and converted as copy_ does).
Tensor copy(const Tensor& self, const Tensor& src, bool non_blocking) {
  Tensor out = dk::empty_like(self);
  return ops::copy_::call(out, src, non_blocking);
}

Tensor fill(const Tensor& self, const Scalar& value) {
  Tensor out = dk::empty_like(self);
  return ops::fill__Scalar::call(out, value);
}

Tensor zero(const Tensor& self) {
  Tensor out = dk::empty_like(self);
  return ops::zero_::call(out);
}

}  // namespace dk::native
