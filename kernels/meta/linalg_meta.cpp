// Meta kernels of the matrix products: mm, mm.out, bmm, addmm.
#include "dk/generated/ops/addmm_native.h"
#include "dk/generated/ops/bmm_native.h"
#include "dk/generated/ops/mm_native.h"
#include "meta_output.h"
#include "shape_functions.h"

namespace dk::native {

Tensor mm_meta(const Tensor& self, const Tensor& mat2) { return meta::emptyMeta(meta::mm(self, mat2)); }

Tensor mm_out_meta(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  meta::OutputSpec spec = meta::mm(self, mat2, /*check_dtype_support=*/false);
  meta::checkOutDtypeExact(out, spec.dtype);
  meta::resizeOutput(out, spec.sizes);
  meta::checkMatmulDtypeSupported("mm", spec);
  return out;
}

Tensor bmm_meta(const Tensor& self, const Tensor& mat2) { return meta::emptyMeta(meta::bmm(self, mat2)); }

Tensor addmm_meta(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                  const Scalar& alpha) {
  return meta::emptyMeta(meta::addmm(self, mat1, mat2, beta, alpha));
}

}  // namespace dk::native
