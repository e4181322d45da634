// One-input elementwise math on the cpu: neg, abs, exp, log, sqrt, rsqrt, sin, cos, tanh,
// sigmoid, relu, relu_, gelu.
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
#include "tensor_iterator.h"

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

// out = f(self) for math defined on floating values: integer and bool inputs compute and give
// get_default_dtype() (exp of an int64 tensor is float32), as in PyTorch.
template <class F>
Tensor floatingUnaryOp(const char* op, const Tensor& self, const F& f) {
  TensorIterator iter = TensorIteratorConfig(op)
                            .add_output(Tensor())
                            .add_input(self)
                            .promote_inputs_to_common_dtype(true)
                            .promote_integer_inputs_to_float(true)
                            .build();
  DK_DISPATCH_FLOATING_TYPES(iter.common_dtype(), op, [&] {
    cpu_kernel<scalar_t, scalar_t>(iter, [&](opmath_t<scalar_t> x) { return f(x); });
  });
  return iter.output();
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

Tensor neg_cpu(const Tensor& self) {
  checkOnCpu("neg", self);
  DK_CHECK(self.dtype() != ScalarType::Bool,
           "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the "
           "`~` or `logical_not()` operator instead.");
  return unaryOp<kAllDtypesExceptBool>("neg", self, Tensor(), [](auto x) { return subValues(decltype(x)(0), x); });
}

Tensor abs_cpu(const Tensor& self) {
  return unaryOp<kAllDtypesExceptBool>("abs", self, Tensor(), [](auto x) {
    using M = decltype(x);
    if constexpr (std::is_floating_point_v<M>) return std::fabs(x);
    else if constexpr (std::is_unsigned_v<M>) return x;
    else return x < 0 ? subValues(M(0), x) : x;  // the most negative value stays itself, as in PyTorch
  });
}

Tensor exp_cpu(const Tensor& self) {
  return floatingUnaryOp("exp", self, [](auto x) { return std::exp(x); });
}

Tensor log_cpu(const Tensor& self) {
  return floatingUnaryOp("log", self, [](auto x) { return std::log(x); });
}

Tensor sqrt_cpu(const Tensor& self) {
  return floatingUnaryOp("sqrt", self, [](auto x) { return std::sqrt(x); });
}

Tensor rsqrt_cpu(const Tensor& self) {
  return floatingUnaryOp("rsqrt", self, [](auto x) { return decltype(x)(1) / std::sqrt(x); });
}

Tensor sin_cpu(const Tensor& self) {
  return floatingUnaryOp("sin", self, [](auto x) { return std::sin(x); });
}

Tensor cos_cpu(const Tensor& self) {
  return floatingUnaryOp("cos", self, [](auto x) { return std::cos(x); });
}

Tensor tanh_cpu(const Tensor& self) {
  return floatingUnaryOp("tanh", self, [](auto x) { return std::tanh(x); });
}

Tensor sigmoid_cpu(const Tensor& self) {
  return floatingUnaryOp("sigmoid", self, [](auto x) {
    using M = decltype(x);
    return M(1) / (M(1) + std::exp(-x));
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

// approximate="none": x * Phi(x) with the normal CDF through erf; "tanh": PyTorch's tanh
// approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu_cpu(const Tensor& self, std::string_view approximate) {
  checkOnCpu("gelu", self);
  if (approximate == "none") {
    return unaryOp<kFloatingDtypes>("gelu", self, Tensor(), [](auto x) {
      using M = decltype(x);
      constexpr M kInvSqrt2 = M(0.70710678118654752440);
      return x * M(0.5) * (M(1) + std::erf(x * kInvSqrt2));
    });
  }
  if (approximate == "tanh") {
    return unaryOp<kFloatingDtypes>("gelu", self, Tensor(), [](auto x) {
      using M = decltype(x);
      constexpr M kSqrt2OverPi = M(0.79788456080286535588);
      constexpr M kKappa = M(0.044715);
      M inner = kSqrt2OverPi * (x + kKappa * x * x * x);
      return M(0.5) * x * (M(1) + std::tanh(inner));
    });
  }
  DK_ERROR("approximate argument must be either none or tanh.");
}

}  // namespace dk::native

namespace dk::native {

// d gelu(x)/dx times grad_output. "none": Phi(x) + x phi(x) (phi the normal density); "tanh":
// the derivative of the tanh approximation.
Tensor gelu_backward_cpu(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  checkOnCpu("gelu_backward", grad_output);
  checkOnCpu("gelu_backward", self);
  DK_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  const bool tanh_form = approximate == "tanh";
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
