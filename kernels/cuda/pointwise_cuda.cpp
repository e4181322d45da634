// CUDA kernels of the pointwise operators: binary, comparison, where, unary, clamp, pow.
// Shapes, dtypes and checks come from the meta functions (structured families) and the meta
// shape functions (the rest); operands are converted to the compute dtype (0-dim CPU tensors
// passed by value with the launch: cuda::pointwiseInput), and one launcher of launch.h does the work.
#include <cstring>
#include <limits>

#include "../meta/shape_functions.h"
#include "cuda_utils.h"
#include "device_guard.h"
#include "dk/generated/ops/abs_native.h"
#include "dk/generated/ops/add_native.h"
#include "dk/generated/ops/clamp_native.h"
#include "dk/generated/ops/cos_native.h"
#include "dk/generated/ops/div_native.h"
#include "dk/generated/ops/eq_native.h"
#include "dk/generated/ops/exp_native.h"
#include "dk/generated/ops/gelu_backward_native.h"
#include "dk/generated/ops/gelu_native.h"
#include "dk/generated/ops/gt_native.h"
#include "dk/generated/ops/log_native.h"
#include "dk/generated/ops/lt_native.h"
#include "dk/generated/ops/maximum_native.h"
#include "dk/generated/ops/minimum_native.h"
#include "dk/generated/ops/mul_native.h"
#include "dk/generated/ops/neg_native.h"
#include "dk/generated/ops/pow_native.h"
#include "dk/generated/ops/relu_native.h"
#include "dk/generated/ops/rsqrt_native.h"
#include "dk/generated/ops/sigmoid_native.h"
#include "dk/generated/ops/sin_native.h"
#include "dk/generated/ops/sqrt_native.h"
#include "dk/generated/ops/sub_native.h"
#include "dk/generated/ops/tanh_native.h"
#include "dk/generated/ops/where_native.h"
#include "dk/tensor/empty_tensor.h"

namespace dk::native {

namespace {

using Binary = cuda::launch::BinaryOp;
using cuda::launch::UnaryOp;
using meta::BinaryKind;

// Where a pointwise result is written: straight into `out` when out has the result's sizes
// and dtype (in-place and out= calls), else into a fresh tensor that finish() copies into out.
struct ResultTarget {
  Tensor result;
  Tensor out;

  Tensor finish() const {
    if (!out.defined()) return result;
    if (!out.is_same(result)) cuda::copyWithinDevice(out, result);
    return out;
  }
};

// A new result laid out as the spec says (pointwise results follow their inputs' layout).
Tensor emptyFor(const meta::OutputSpec& spec, Device device) {
  return cuda::emptyCudaStrided(spec.sizes, spec.allocationStrides(), spec.dtype, device);
}

ResultTarget targetFor(const meta::OutputSpec& spec, Device device, const Tensor* out) {
  if (out != nullptr && out->dtype() == spec.dtype && IntArrayRef(out->sizes()).equals(spec.sizes)) {
    return ResultTarget{*out, *out};
  }
  return ResultTarget{emptyFor(spec, device), out != nullptr ? *out : Tensor()};
}

// A 0-dim CPU tensor holding `value` as `dtype`: a launch reads it as a value (pointwiseInput).
Tensor hostScalar(const Scalar& value, ScalarType dtype) {
  Tensor t = detail::empty_contiguous({}, dtype, Device(DeviceType::CPU));
  uint64_t bits = cuda::scalarBits(value, dtype);
  std::memcpy(t.data_ptr(), &bits, elementSize(dtype));
  return t;
}

// out (or a new tensor) = op(self, other), computed in `compute`.
Tensor runBinary(cuda::launch::BinaryOp op, const Tensor& self, const Tensor& other, const meta::OutputSpec& spec,
                 ScalarType compute, const Scalar& alpha = 1, const Tensor* out = nullptr) {
  Device device = cuda::computeDevice({&self, &other});
  // The wrapper guards self's device, which is the CPU when self is a CPU scalar.
  cuda::DeviceGuard guard(device);
  cuda::PointwiseInput a = cuda::pointwiseInput(self, compute);
  cuda::PointwiseInput b = cuda::pointwiseInput(other, compute);
  ResultTarget target = targetFor(spec, device, out);
  if (target.result.numel() > 0) {
    cuda::launch::binary(op, cuda::toLaunchDtype(compute),
                         cuda::makeGeometry(spec.sizes, {&target.result, &a.tensor, &b.tensor}),
                         target.result.data_ptr(), a.input, b.input, cuda::scalarArg(alpha));
  }
  return target.finish();
}

// out = op(self, other), computed in out's dtype: out has the result's sizes and dtype.
void runBinaryInto(cuda::launch::BinaryOp op, const Tensor& self, const Tensor& other, const Tensor& out,
                   const Scalar& alpha) {
  const meta::OutputSpec spec(out.sizes(), out.dtype());
  runBinary(op, self, other, spec, out.dtype(), alpha, &out);
}

// out (or a new tensor) = op(self) in the dtype of spec.
Tensor runUnary(UnaryOp op, const Tensor& self, const meta::OutputSpec& spec, const Tensor* out = nullptr) {
  Device device = cuda::resolveDevice(self.device());
  Tensor in = cuda::convertCuda(self, spec.dtype);
  ResultTarget target = targetFor(spec, device, out);
  if (target.result.numel() > 0) {
    cuda::launch::unary(op, cuda::toLaunchDtype(spec.dtype), cuda::makeGeometry(spec.sizes, {&target.result, &in}),
                        target.result.data_ptr(), in.data_ptr());
  }
  return target.finish();
}

// out = op(self) in out's dtype: out has the result's sizes and dtype.
void runUnaryInto(UnaryOp op, const Tensor& self, const Tensor& out) {
  runUnary(op, self, meta::OutputSpec(out.sizes(), out.dtype()), &out);
}

}  // namespace

// ---------------------------------------------------------------- binary

// The structured families add, sub, mul and div (Note [Structured kernels] in
// dk/tensor/structured.h): meta() has checked devices and arguments and given `out` the
// result's sizes and dtype, which is also the dtype these compute in.

DK_IMPL_FUNC(add_out_cuda)(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  runBinaryInto(Binary::Add, self, other, out, alpha);
}

DK_IMPL_FUNC(sub_out_cuda)(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  runBinaryInto(Binary::Sub, self, other, out, alpha);
}

DK_IMPL_FUNC(mul_out_cuda)(const Tensor& self, const Tensor& other, const Tensor& out) {
  runBinaryInto(Binary::Mul, self, other, out, 1);
}

DK_IMPL_FUNC(div_out_cuda)(const Tensor& self, const Tensor& other, const Tensor& out) {
  runBinaryInto(Binary::Div, self, other, out, 1);
}

DK_IMPL_FUNC(maximum_out_cuda)(const Tensor& self, const Tensor& other, const Tensor& out) {
  runBinaryInto(Binary::Maximum, self, other, out, 1);
}

DK_IMPL_FUNC(minimum_out_cuda)(const Tensor& self, const Tensor& other, const Tensor& out) {
  runBinaryInto(Binary::Minimum, self, other, out, 1);
}

DK_IMPL_FUNC(pow_Tensor_Scalar_out_cuda)(const Tensor& self, const Scalar& exponent, const Tensor& out) {
  Tensor in = cuda::convertCuda(self, out.dtype());
  if (out.numel() > 0) {
    cuda::launch::powScalar(cuda::toLaunchDtype(out.dtype()), cuda::makeGeometry(out.sizes(), {&out, &in}),
                            out.data_ptr(), in.data_ptr(), cuda::scalarArg(exponent));
  }
}

// ---------------------------------------------------------------- comparison and where

// The structured comparisons: `out` is Bool; they compute in common_dtype(), the inputs'
// promoted dtype.

DK_IMPL_FUNC(eq_Tensor_out_cuda)(const Tensor& self, const Tensor& other, const Tensor& out) {
  runBinary(Binary::Eq, self, other, meta::OutputSpec(out.sizes(), out.dtype()), common_dtype(), 1, &out);
}

DK_IMPL_FUNC(gt_Tensor_out_cuda)(const Tensor& self, const Tensor& other, const Tensor& out) {
  runBinary(Binary::Gt, self, other, meta::OutputSpec(out.sizes(), out.dtype()), common_dtype(), 1, &out);
}

DK_IMPL_FUNC(lt_Tensor_out_cuda)(const Tensor& self, const Tensor& other, const Tensor& out) {
  runBinary(Binary::Lt, self, other, meta::OutputSpec(out.sizes(), out.dtype()), common_dtype(), 1, &out);
}

// The Scalar becomes a 0-dim CPU tensor of the common dtype, passed by value.
DK_IMPL_FUNC(eq_Scalar_out_cuda)(const Tensor& self, const Scalar& other, const Tensor& out) {
  Tensor value = hostScalar(other, common_dtype());
  runBinary(Binary::Eq, self, value, meta::OutputSpec(out.sizes(), out.dtype()), common_dtype(), 1, &out);
}

Tensor where_cuda(const Tensor& condition, const Tensor& self, const Tensor& other) {
  meta::checkDevicesAllowingCpuScalars("dk::where", {{"condition", condition}, {"self", self}, {"other", other}});
  meta::OutputSpec spec = meta::where(condition, self, other);
  Device device = cuda::computeDevice({&condition, &self, &other});
  cuda::DeviceGuard guard(device);  // condition, the guarded argument, may be a CPU scalar
  cuda::PointwiseInput cond = cuda::pointwiseInput(condition, condition.dtype());
  cuda::PointwiseInput a = cuda::pointwiseInput(self, spec.dtype);
  cuda::PointwiseInput b = cuda::pointwiseInput(other, spec.dtype);
  Tensor out = emptyFor(spec, device);
  if (out.numel() > 0) {
    cuda::launch::where(cuda::toLaunchDtype(spec.dtype), cuda::toLaunchDtype(condition.dtype()),
                        cuda::makeGeometry(spec.sizes, {&out, &cond.tensor, &a.tensor, &b.tensor}), out.data_ptr(),
                        cond.input, a.input, b.input);
  }
  return out;
}

// ---------------------------------------------------------------- unary

Tensor abs_cuda(const Tensor& self) { return runUnary(UnaryOp::Abs, self, meta::unaryOp(self, meta::UnaryKind::Abs)); }

Tensor relu_cuda(const Tensor& self) {
  return runUnary(UnaryOp::Relu, self, meta::unaryOp(self, meta::UnaryKind::Relu));
}

Tensor relu_inplace_cuda(const Tensor& self) {
  meta::OutputSpec spec = meta::unaryOp(self, meta::UnaryKind::Relu);
  meta::checkNoInternalOverlap(self);
  return runUnary(UnaryOp::Relu, self, spec, &self);
}

Tensor gelu_backward_cuda(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  meta::GeluApproximation kind = meta::parseGeluApproximation(approximate);
  meta::checkDevicesAllowingCpuScalars("dk::gelu_backward", {{"grad_output", grad_output}, {"self", self}});
  meta::unaryOp(self, meta::UnaryKind::Gelu);  // gelu's dtype check
  meta::OutputSpec spec = meta::binaryOp(grad_output, self, BinaryKind::Arithmetic);
  return runBinary(kind == meta::GeluApproximation::Tanh ? Binary::GeluBackwardTanh : Binary::GeluBackwardErf,
                   grad_output, self, spec, spec.dtype);
}

// The structured unary families: meta() has checked the dtype and given `out` the result's
// sizes and dtype, which they compute in.

DK_IMPL_FUNC(neg_out_cuda)(const Tensor& self, const Tensor& out) { runUnaryInto(UnaryOp::Neg, self, out); }
DK_IMPL_FUNC(exp_out_cuda)(const Tensor& self, const Tensor& out) { runUnaryInto(UnaryOp::Exp, self, out); }
DK_IMPL_FUNC(log_out_cuda)(const Tensor& self, const Tensor& out) { runUnaryInto(UnaryOp::Log, self, out); }
DK_IMPL_FUNC(sqrt_out_cuda)(const Tensor& self, const Tensor& out) { runUnaryInto(UnaryOp::Sqrt, self, out); }
DK_IMPL_FUNC(rsqrt_out_cuda)(const Tensor& self, const Tensor& out) { runUnaryInto(UnaryOp::Rsqrt, self, out); }
DK_IMPL_FUNC(sin_out_cuda)(const Tensor& self, const Tensor& out) { runUnaryInto(UnaryOp::Sin, self, out); }
DK_IMPL_FUNC(cos_out_cuda)(const Tensor& self, const Tensor& out) { runUnaryInto(UnaryOp::Cos, self, out); }
DK_IMPL_FUNC(tanh_out_cuda)(const Tensor& self, const Tensor& out) { runUnaryInto(UnaryOp::Tanh, self, out); }
DK_IMPL_FUNC(sigmoid_out_cuda)(const Tensor& self, const Tensor& out) {
  runUnaryInto(UnaryOp::Sigmoid, self, out);
}

DK_IMPL_FUNC(gelu_out_cuda)(const Tensor& self, std::string_view approximate, const Tensor& out) {
  runUnaryInto(approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::GeluErf, self, out);
}

DK_IMPL_FUNC(clamp_out_cuda)(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
                             const Tensor& out) {
  if (meta::clampGivesNan(min, max)) {
    cuda::fillCuda(out, std::numeric_limits<double>::quiet_NaN());
    return;
  }
  Tensor in = cuda::convertCuda(self, out.dtype());
  if (out.numel() > 0) {
    cuda::launch::ScalarArg lo = min ? cuda::scalarArg(*min) : cuda::launch::ScalarArg{};
    cuda::launch::ScalarArg hi = max ? cuda::scalarArg(*max) : cuda::launch::ScalarArg{};
    cuda::launch::clamp(cuda::toLaunchDtype(out.dtype()), cuda::makeGeometry(out.sizes(), {&out, &in}), out.data_ptr(),
                        in.data_ptr(), min ? &lo : nullptr, max ? &hi : nullptr);
  }
}

}  // namespace dk::native
