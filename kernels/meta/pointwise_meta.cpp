// Meta kernels of the pointwise operators that are not structured: where, abs, relu,
// gelu_backward. (The structured families' meta functions are in binary_structured.cpp and
// unary_structured.cpp.)
// Shapes, dtypes and checks come from shape_functions.h; outputs are empty meta tensors, and
// in-place and out= variants check (and resize) their self or out argument.
#include "dk/generated/ops/abs_native.h"
#include "dk/generated/ops/gelu_backward_native.h"
#include "dk/generated/ops/relu_native.h"
#include "dk/generated/ops/where_native.h"
#include "meta_output.h"
#include "shape_functions.h"

namespace dk::native {

using meta::emptyMeta;
using meta::UnaryKind;

// ---------------------------------------------------------------- where

Tensor where_meta(const Tensor& condition, const Tensor& self, const Tensor& other) {
  meta::checkDevicesAllowingCpuScalars("dk::where", {{"condition", condition}, {"self", self}, {"other", other}});
  return emptyMeta(meta::where(condition, self, other));
}

// ---------------------------------------------------------------- unary

Tensor abs_meta(const Tensor& self) { return emptyMeta(meta::unaryOp(self, UnaryKind::Abs)); }
Tensor relu_meta(const Tensor& self) { return emptyMeta(meta::unaryOp(self, UnaryKind::Relu)); }

Tensor relu_inplace_meta(const Tensor& self) {
  meta::unaryOp(self, UnaryKind::Relu);
  meta::checkNoInternalOverlap(self);
  return self;
}

Tensor gelu_backward_meta(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  meta::parseGeluApproximation(approximate);
  meta::unaryOp(self, UnaryKind::Gelu);
  return emptyMeta(meta::binaryOp(grad_output, self, meta::BinaryKind::Arithmetic));
}

}  // namespace dk::native
