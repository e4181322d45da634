// Meta functions of the structured unary pointwise families: neg, exp, log, sqrt, rsqrt, sin,
// cos, tanh, sigmoid, gelu, clamp (functional, in-place and out=; Note [Structured kernels] in
// dk/tensor/structured.h). The floating ones give get_default_dtype() for integral and bool
// inputs, so their in-place forms refuse an integral self ("result type Float can't be cast to
// the desired output type Long"), as in PyTorch.
#include "dk/generated/ops/clamp_native.h"
#include "dk/generated/ops/cos_native.h"
#include "dk/generated/ops/exp_native.h"
#include "dk/generated/ops/gelu_native.h"
#include "dk/generated/ops/log_native.h"
#include "dk/generated/ops/neg_native.h"
#include "dk/generated/ops/rsqrt_native.h"
#include "dk/generated/ops/sigmoid_native.h"
#include "dk/generated/ops/sin_native.h"
#include "dk/generated/ops/sqrt_native.h"
#include "dk/generated/ops/tanh_native.h"
#include "shape_functions.h"

namespace dk {

namespace {

// Devices first (an out= tensor elsewhere), then the result's dtype and its checks.
template <class Result>
void unaryMeta(TensorIteratorBase& m, const Tensor& self, const Result& result) {
  meta::checkPointwiseOperands(m, {{"self", self}});
  meta::OutputSpec spec = result(self);
  meta::setOutput(m, 0, spec, self.device());
  m.set_common_dtype(spec.dtype);
}

meta::OutputSpec floating(const Tensor& self) { return meta::unaryFloatOp(self); }

}  // namespace

DK_META_FUNC(neg)(const Tensor& self) {
  unaryMeta(*this, self, [](const Tensor& t) { return meta::unaryOp(t, meta::UnaryKind::Neg); });
}

DK_META_FUNC(gelu)(const Tensor& self, std::string_view approximate) {
  meta::parseGeluApproximation(approximate);
  unaryMeta(*this, self, [](const Tensor& t) { return meta::unaryOp(t, meta::UnaryKind::Gelu); });
}

DK_META_FUNC(exp)(const Tensor& self) { unaryMeta(*this, self, floating); }
DK_META_FUNC(log)(const Tensor& self) { unaryMeta(*this, self, floating); }
DK_META_FUNC(sqrt)(const Tensor& self) { unaryMeta(*this, self, floating); }
DK_META_FUNC(rsqrt)(const Tensor& self) { unaryMeta(*this, self, floating); }
DK_META_FUNC(sin)(const Tensor& self) { unaryMeta(*this, self, floating); }
DK_META_FUNC(cos)(const Tensor& self) { unaryMeta(*this, self, floating); }
DK_META_FUNC(tanh)(const Tensor& self) { unaryMeta(*this, self, floating); }
DK_META_FUNC(sigmoid)(const Tensor& self) { unaryMeta(*this, self, floating); }

// An integral self clamped to a floating bound gives Float, which clamp_ cannot write back.
DK_META_FUNC(clamp)(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  unaryMeta(*this, self, [&](const Tensor& t) { return meta::clamp(t, min, max); });
}

}  // namespace dk
