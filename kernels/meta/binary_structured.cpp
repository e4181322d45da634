// Meta functions of the structured binary arithmetic families: add, sub, mul, div, maximum and
// minimum (functional, in-place and out=; Note [Structured kernels] in dk/tensor/structured.h). Each checks devices
// (0-dim CPU tensors join any device, except as a written tensor), computes the result with the
// shape functions and hands it to set_output; every backend's impl then computes into it.
#include "dk/generated/ops/add_native.h"
#include "dk/generated/ops/div_native.h"
#include "dk/generated/ops/maximum_native.h"
#include "dk/generated/ops/minimum_native.h"
#include "dk/generated/ops/mul_native.h"
#include "dk/generated/ops/sub_native.h"
#include "shape_functions.h"

namespace dk {

namespace {

void setBinaryOutput(TensorIteratorBase& m, const Tensor& self, const Tensor& other, const meta::OutputSpec& spec) {
  meta::setOutput(m, 0, spec, meta::pointwiseDevice({&self, &other}));
  m.set_common_dtype(spec.dtype);
}

}  // namespace

DK_META_FUNC(add_Tensor)(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  meta::checkPointwiseDevices(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::addOrSub(self, other, alpha, /*is_sub=*/false));
}

DK_META_FUNC(sub_Tensor)(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  meta::checkPointwiseDevices(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::addOrSub(self, other, alpha, /*is_sub=*/true));
}

DK_META_FUNC(mul_Tensor)(const Tensor& self, const Tensor& other) {
  meta::checkPointwiseDevices(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::binaryOp(self, other, meta::BinaryKind::Arithmetic));
}

DK_META_FUNC(div_Tensor)(const Tensor& self, const Tensor& other) {
  meta::checkPointwiseDevices(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::binaryOp(self, other, meta::BinaryKind::TrueDivide));
}

DK_META_FUNC(maximum)(const Tensor& self, const Tensor& other) {
  meta::checkPointwiseDevices(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::binaryOp(self, other, meta::BinaryKind::Arithmetic));
}

DK_META_FUNC(minimum)(const Tensor& self, const Tensor& other) {
  meta::checkPointwiseDevices(*this, {{"self", self}, {"other", other}});
  setBinaryOutput(*this, self, other, meta::binaryOp(self, other, meta::BinaryKind::Arithmetic));
}

}  // namespace dk
