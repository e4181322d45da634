// Meta kernels that write or join whole tensors: cat, copy_, fill_, zero_.
#include "dk/generated/ops/cat_native.h"
#include "dk/generated/ops/copy_native.h"
#include "dk/generated/ops/fill_native.h"
#include "dk/generated/ops/zero_native.h"
#include "meta_output.h"
#include "shape_functions.h"

namespace dk::native {

Tensor cat_meta(ArrayRef<Tensor> tensors, int64_t dim) { return meta::emptyMeta(meta::cat(tensors, dim).output); }

// copy_ reaches Meta whenever either side is a meta tensor (Meta is the highest backend), so
// this kernel also refuses to copy a meta source into real memory.
Tensor copy_inplace_meta(const Tensor& self, const Tensor& src, bool /*non_blocking*/) {
  DK_CHECK(self.is_meta(), "Cannot copy out of meta tensor; no data!");
  if (self.is_same(src)) return self;
  meta::checkNoInternalOverlap(self);
  meta::checkCopy(self, src);
  return self;
}

Tensor fill_inplace_meta(const Tensor& self, const Scalar& value) {
  meta::checkFillValue(value, self.dtype());
  return self;
}

Tensor zero_inplace_meta(const Tensor& self) { return self; }

}  // namespace dk::native
