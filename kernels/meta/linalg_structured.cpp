// Meta functions of the structured matrix products: mm, bmm, addmm (functional, out= and, for
// addmm, in-place; Note [Structured kernels] in dk/tensor/structured.h). Their outputs take no
// other dtype than the result's ("Expected out tensor to have dtype float, but got double
// instead"), as in PyTorch; devices are compared by the generated device check.
#include "dk/generated/ops/addmm_native.h"
#include "dk/generated/ops/bmm_native.h"
#include "dk/generated/ops/mm_native.h"
#include "shape_functions.h"

namespace dk {

DK_META_FUNC(mm)(const Tensor& self, const Tensor& mat2) {
  meta::OutputSpec spec = meta::mm(self, mat2, /*check_dtype_support=*/false);
  meta::setOutput(*this, 0, spec, self.device());
  // After the out= tensor's dtype check, as in PyTorch.
  meta::checkMatmulDtypeSupported("mm", spec);
}

DK_META_FUNC(bmm)(const Tensor& self, const Tensor& mat2) {
  meta::setOutput(*this, 0, meta::bmm(self, mat2), self.device());
}

DK_META_FUNC(addmm)(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                    const Scalar& alpha) {
  meta::setOutput(*this, 0, meta::addmm(self, mat1, mat2, beta, alpha), mat1.device());
}

}  // namespace dk
