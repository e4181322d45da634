// Meta kernels of the pointwise operators that are not structured: pow,
// comparisons, where, abs, relu, gelu_backward, clamp. (The structured families' meta functions
// are in binary_structured.cpp and unary_structured.cpp.)
// Shapes, dtypes and checks come from shape_functions.h; outputs are empty meta tensors, and
// in-place and out= variants check (and resize) their self or out argument.
#include "dk/generated/ops/abs_native.h"
#include "dk/generated/ops/clamp_native.h"
#include "dk/generated/ops/eq_native.h"
#include "dk/generated/ops/gelu_backward_native.h"
#include "dk/generated/ops/gt_native.h"
#include "dk/generated/ops/lt_native.h"
#include "dk/generated/ops/pow_native.h"
#include "dk/generated/ops/relu_native.h"
#include "dk/generated/ops/where_native.h"
#include "meta_output.h"
#include "shape_functions.h"

namespace dk::native {

namespace {

using meta::BinaryKind;
using meta::emptyMeta;
using meta::UnaryKind;

Tensor binaryMeta(const char* op, const Tensor& self, const Tensor& other, BinaryKind kind) {
  meta::checkDevicesAllowingCpuScalars(op, {{"self", self}, {"other", other}});
  return emptyMeta(meta::binaryOp(self, other, kind));
}

}  // namespace

// ---------------------------------------------------------------- binary

Tensor pow_meta(const Tensor& self, const Scalar& exponent) { return emptyMeta(meta::powTensorScalar(self, exponent)); }

// ---------------------------------------------------------------- comparison and where

Tensor eq_meta(const Tensor& self, const Tensor& other) {
  return binaryMeta("dk::eq", self, other, BinaryKind::Comparison);
}

Tensor eq_meta(const Tensor& self, const Scalar& other) { return emptyMeta(meta::comparisonWithScalar(self, other)); }

Tensor gt_meta(const Tensor& self, const Tensor& other) {
  return binaryMeta("dk::gt", self, other, BinaryKind::Comparison);
}

Tensor lt_meta(const Tensor& self, const Tensor& other) {
  return binaryMeta("dk::lt", self, other, BinaryKind::Comparison);
}

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


Tensor clamp_meta(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return emptyMeta(meta::clamp(self, min, max));
}

}  // namespace dk::native
