// One-input elementwise math on the cpu: abs, relu, relu_, gelu_backward, and the impls of the
// structured neg, exp, log, sqrt, rsqrt, sin, cos, tanh, sigmoid and gelu.
#include <cmath>
#include <string_view>

#include "dk/generated/ops/abs_native.h"
#include "dk/generated/ops/cos_native.h"
#include "dk/generated/ops/exp_native.h"
#include "dk/generated/ops/gelu_backward_native.h"
#include "dk/generated/ops/gelu_native.h"
#include "dk/generated/ops/log_native.h"
#include "dk/generated/ops/neg_native.h"
#include "dk/generated/ops/relu_native.h"
#include "dk/generated/ops/rsqrt_native.h"
#include "dk/generated/ops/sigmoid_native.h"
#include "dk/generated/ops/sin_native.h"
#include "dk/generated/ops/sqrt_native.h"
#include "dk/generated/ops/tanh_native.h"
#include "meta/shape_functions.h"
#include "tensor_iterator.h"
#include "vec_math.h"
#include "vec_math_scalar.h"

namespace dk::native {

namespace {

// out = f(self) in self's dtype.
template <DtypeGroup Group, class F>
Tensor unaryOp(const char* op, const Tensor& self, const Tensor& out, const F& f) {
  TensorIterator iter = TensorIteratorConfig(op).add_output(out).add_input(self).build();
  dispatchDtypeIn<Group>(iter.common_dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu_kernel<T, T>(iter, [&](opmath_t<T> x) { return f(x); });
  });
  return iter.output();
}

// Runs one of the vectorized math functions (Note [Vectorized math]) over `iter`, which holds a
// floating dtype: `pick` chooses it from vec::MathFunctions of the dtype's opmath type.
template <class Pick>
void mathKernel(TensorIterator& iter, const char* op, const Pick& pick) {
  DK_DISPATCH_FLOATING_TYPES(iter.common_dtype(), op, [&] {
    if constexpr (std::is_same_v<opmath_t<scalar_t>, double>) cpu_array_kernel<scalar_t>(iter, pick(vec::doubleMath()));
    else cpu_array_kernel<scalar_t>(iter, pick(vec::floatMath()));
  });
}

// The iterator of math defined on floating values: integer and bool inputs compute and give
// get_default_dtype() (exp of an int64 tensor is float32), as in PyTorch.
TensorIterator floatingIterator(const char* op, const Tensor& self, const Tensor& out) {
  return TensorIteratorConfig(op)
      .add_output(out)
      .add_input(self)
      .promote_inputs_to_common_dtype(true)
      .promote_integer_inputs_to_float(true)
      .build();
}

// out = f(self) by one of the vectorized math functions.
template <class Pick>
void floatingMathOp(const char* op, const Tensor& self, const Tensor& out, const Pick& pick) {
  TensorIterator iter = floatingIterator(op, self, out);
  mathKernel(iter, op, pick);
}

// The same with a per-element function, for the math without a vector form.
template <class F>
void floatingUnaryOp(const char* op, const Tensor& self, const Tensor& out, const F& f) {
  TensorIterator iter = floatingIterator(op, self, out);
  DK_DISPATCH_FLOATING_TYPES(iter.common_dtype(), op, [&] {
    cpu_kernel<scalar_t, scalar_t>(iter, [&](opmath_t<scalar_t> x) { return f(x); });
  });
}

void checkNotBoolForRelu(const Tensor& self) {
  DK_CHECK(self.dtype() != ScalarType::Bool, "Boolean inputs not supported for relu");
}

// relu's value: NaN stays NaN (a NaN is not > 0, but is kept).
template <class M>
inline M reluValue(M x) {
  if constexpr (std::is_floating_point_v<M>) return std::isnan(x) || x > M(0) ? x : M(0);
  else return x > M(0) ? x : M(0);
}

}  // namespace

Tensor abs_cpu(const Tensor& self) {
  return unaryOp<kAllDtypesExceptBool>("abs", self, Tensor(), [](auto x) {
    using M = decltype(x);
    if constexpr (std::is_floating_point_v<M>) return std::fabs(x);
    else if constexpr (std::is_unsigned_v<M>) return x;
    else return x < 0 ? subValues(M(0), x) : x;  // the most negative value stays itself, as in PyTorch
  });
}

Tensor relu_cpu(const Tensor& self) {
  checkOnCpu("relu", self);
  checkNotBoolForRelu(self);
  return unaryOp<kAllDtypesExceptBool>("relu", self, Tensor(), [](auto x) { return reluValue(x); });
}

Tensor relu_inplace_cpu(const Tensor& self) {
  checkOnCpu("relu_", self);
  checkNotBoolForRelu(self);
  return unaryOp<kAllDtypesExceptBool>("relu_", self, self, [](auto x) { return reluValue(x); });
}

// The structured unary families (Note [Structured kernels] in dk/tensor/structured.h): meta() in
// kernels/meta/unary_structured.cpp has checked the dtype (neg of bool, gelu's floating types, its
// approximate argument) and given `out` the result's sizes and dtype.

DK_IMPL_FUNC(neg_out_cpu)(const Tensor& self, const Tensor& out) {
  unaryOp<kAllDtypesExceptBool>("neg", self, out, [](auto x) { return subValues(decltype(x)(0), x); });
}

DK_IMPL_FUNC(exp_out_cpu)(const Tensor& self, const Tensor& out) {
  floatingMathOp("exp", self, out, [](const auto& math) { return math.exp; });
}

DK_IMPL_FUNC(log_out_cpu)(const Tensor& self, const Tensor& out) {
  floatingMathOp("log", self, out, [](const auto& math) { return math.log; });
}

DK_IMPL_FUNC(sqrt_out_cpu)(const Tensor& self, const Tensor& out) {
  floatingUnaryOp("sqrt", self, out, [](auto x) { return std::sqrt(x); });
}

DK_IMPL_FUNC(rsqrt_out_cpu)(const Tensor& self, const Tensor& out) {
  floatingUnaryOp("rsqrt", self, out, [](auto x) { return decltype(x)(1) / std::sqrt(x); });
}

DK_IMPL_FUNC(sin_out_cpu)(const Tensor& self, const Tensor& out) {
  floatingMathOp("sin", self, out, [](const auto& math) { return math.sin; });
}

DK_IMPL_FUNC(cos_out_cpu)(const Tensor& self, const Tensor& out) {
  floatingMathOp("cos", self, out, [](const auto& math) { return math.cos; });
}

DK_IMPL_FUNC(tanh_out_cpu)(const Tensor& self, const Tensor& out) {
  floatingMathOp("tanh", self, out, [](const auto& math) { return math.tanh; });
}

DK_IMPL_FUNC(sigmoid_out_cpu)(const Tensor& self, const Tensor& out) {
  floatingMathOp("sigmoid", self, out, [](const auto& math) { return math.sigmoid; });
}

// approximate="none": x * Phi(x) with the normal CDF through erf; "tanh": PyTorch's tanh
// approximation (vec::geluValue, vec::geluTanhValue).
DK_IMPL_FUNC(gelu_out_cpu)(const Tensor& self, std::string_view approximate, const Tensor& out) {
  TensorIterator iter = TensorIteratorConfig("gelu").add_output(out).add_input(self).build();
  if (approximate == "tanh") mathKernel(iter, "gelu", [](const auto& math) { return math.gelu_tanh; });
  else mathKernel(iter, "gelu", [](const auto& math) { return math.gelu; });
}

}  // namespace dk::native

namespace dk::native {

// d gelu(x)/dx times grad_output. "none": Phi(x) + x phi(x) (phi the normal density); "tanh":
// the derivative of the tanh approximation.
Tensor gelu_backward_cpu(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  checkOnCpu("gelu_backward", grad_output);
  checkOnCpu("gelu_backward", self);
  const bool tanh_form = meta::parseGeluApproximation(approximate) == meta::GeluApproximation::Tanh;
  TensorIterator iter = TensorIteratorConfig("gelu_backward")
                            .add_output(Tensor())
                            .add_input(grad_output)
                            .add_input(self)
                            .promote_inputs_to_common_dtype(true)
                            .build();
  DK_DISPATCH_FLOATING_TYPES(iter.common_dtype(), "gelu_backward", [&] {
    using M = opmath_t<scalar_t>;
    cpu_kernel<scalar_t, scalar_t, scalar_t>(iter, [tanh_form](M g, M x) {
      if (tanh_form) {
        constexpr M kSqrt2OverPi = M(0.79788456080286535588);
        constexpr M kKappa = M(0.044715);
        M inner = kSqrt2OverPi * (x + kKappa * x * x * x);
        M t = std::tanh(inner);
        M d_inner = kSqrt2OverPi * (M(1) + M(3) * kKappa * x * x);
        return g * (M(0.5) * (M(1) + t) + M(0.5) * x * (M(1) - t * t) * d_inner);
      }
      constexpr M kInvSqrt2 = M(0.70710678118654752440);
      constexpr M kInvSqrt2Pi = M(0.39894228040143267794);
      M cdf = M(0.5) * (M(1) + std::erf(x * kInvSqrt2));
      M pdf = kInvSqrt2Pi * std::exp(M(-0.5) * x * x);
      return g * (cdf + x * pdf);
    });
  });
  return iter.output();
}

}  // namespace dk::native
