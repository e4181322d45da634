// Meta functions of the structured binary families: add, sub, mul, div, maximum, minimum, pow
// with a Scalar exponent, and the comparisons eq, gt, lt (functional, in-place and out=; Note
// [Structured kernels] in dk/tensor/structured.h). Each checks devices (0-dim CPU tensors join any
// device, except as a written tensor), computes the result with the shape functions and hands it
// to set_output; every backend's impl then computes into it, in common_dtype().
#include "dk/generated/ops/add_native.h"
#include "dk/generated/ops/div_native.h"
#include "dk/generated/ops/eq_native.h"
#include "dk/generated/ops/gt_native.h"
#include "dk/generated/ops/lt_native.h"
#include "dk/generated/ops/maximum_native.h"
#include "dk/generated/ops/minimum_native.h"
#include "dk/generated/ops/mul_native.h"
#include "dk/generated/ops/pow_native.h"
#include "dk/generated/ops/sub_native.h"
#include "dk/tensor/type_promotion.h"
#include "shape_functions.h"

namespace dk {

namespace {

void setBinaryOutput(TensorIteratorBase& m, const Tensor& self, const Tensor& other, const meta::OutputSpec& spec) {
  meta::setOutput(m, 0, spec, meta::pointwiseDevice({&self, &other}));
  m.set_common_dtype(spec.dtype);
}

// A comparison gives Bool and computes in the inputs' promoted dtype.
void compareTensorsMeta(TensorIteratorBase& m, const Tensor& self, const Tensor& other) {
  meta::checkPointwiseOperands(m, {{"self", self}, {"other", other}});
  meta::setOutput(m, 0, meta::binaryOp(self, other, meta::BinaryKind::Comparison),
                  meta::pointwiseDevice({&self, &other}));
  m.set_common_dtype(result_type(self, other));
}

// The Scalar is converted to result_type(self, other) first, as the 0-dim tensor PyTorch makes of
// it would be.
void compareWithScalarMeta(TensorIteratorBase& m, const Tensor& self, const Scalar& other) {
  meta::checkPointwiseOperands(m, {{"self", self}});
  meta::setOutput(m, 0, meta::comparisonWithScalar(self, other), self.device());
  m.set_common_dtype(result_type(self, other));
}

}  // namespace

DK_META_FUNC(add_Tensor)(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  meta::checkPointwiseOperands(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::addOrSub(self, other, alpha, /*is_sub=*/false));
}

DK_META_FUNC(sub_Tensor)(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  meta::checkPointwiseOperands(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::addOrSub(self, other, alpha, /*is_sub=*/true));
}

DK_META_FUNC(mul_Tensor)(const Tensor& self, const Tensor& other) {
  meta::checkPointwiseOperands(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::binaryOp(self, other, meta::BinaryKind::Arithmetic));
}

DK_META_FUNC(div_Tensor)(const Tensor& self, const Tensor& other) {
  meta::checkPointwiseOperands(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::binaryOp(self, other, meta::BinaryKind::TrueDivide));
}

DK_META_FUNC(maximum)(const Tensor& self, const Tensor& other) {
  meta::checkPointwiseOperands(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::binaryOp(self, other, meta::BinaryKind::Arithmetic));
}

DK_META_FUNC(minimum)(const Tensor& self, const Tensor& other) {
  meta::checkPointwiseOperands(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::binaryOp(self, other, meta::BinaryKind::Arithmetic));
}

DK_META_FUNC(pow_Tensor_Scalar)(const Tensor& self, const Scalar& exponent) {
  meta::checkPointwiseOperands(*this, {{"self", self}});
  meta::OutputSpec spec = meta::powTensorScalar(self, exponent);
  meta::setOutput(*this, 0, spec, self.device());
  set_common_dtype(spec.dtype);
}

DK_META_FUNC(eq_Tensor)(const Tensor& self, const Tensor& other) { compareTensorsMeta(*this, self, other); }
DK_META_FUNC(gt_Tensor)(const Tensor& self, const Tensor& other) { compareTensorsMeta(*this, self, other); }
DK_META_FUNC(lt_Tensor)(const Tensor& self, const Tensor& other) { compareTensorsMeta(*this, self, other); }
DK_META_FUNC(eq_Scalar)(const Tensor& self, const Scalar& other) { compareWithScalarMeta(*this, self, other); }

}  // namespace dk
