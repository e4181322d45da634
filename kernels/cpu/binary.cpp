// Arithmetic on the cpu: add, sub, mul, div and pow (Tensor, Scalar exponent).
#include <cmath>

#include "dk/generated/ops/add_native.h"
#include "dk/generated/ops/div_native.h"
#include "dk/generated/ops/mul_native.h"
#include "dk/generated/ops/pow_native.h"
#include "dk/generated/ops/sub_native.h"
#include "tensor_iterator.h"
#include "vec_math.h"

namespace dk::native {

namespace {

// An iterator computing in the common dtype of self and other, writing `out`.
TensorIterator binaryIterator(const char* op, const Tensor& out, const Tensor& self, const Tensor& other) {
  return TensorIteratorConfig(op)
      .add_output(out)
      .add_input(self)
      .add_input(other)
      .promote_inputs_to_common_dtype(true)
      .build();
}

bool isOne(const Scalar& s) { return s.toDouble() == 1.0; }

// An exact add or mul: float and double take the vector form in their contiguous runs
// (Note [Contiguous binary runs]); `pick` chooses it from vec::MathFunctions.
template <class T, class Op, class Pick>
void exactBinaryKernel(TensorIterator& iter, const Op& op, const Pick& pick) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (iter.numel() > 1) {  // one element: the blocked loop's single-element path is shorter
      cpu_binary_kernel<T>(iter, op, pick(vec::mathFor<T>()));
      return;
    }
  }
  cpu_kernel<T, T, T>(iter, op);
}

// out = self + alpha * other over a built iterator.
void addKernel(TensorIterator& iter, const char* op, const Scalar& alpha) {
  DK_DISPATCH_ALL_TYPES(iter.common_dtype(), op, [&] {
    using M = opmath_t<scalar_t>;
    if (isOne(alpha)) {
      exactBinaryKernel<scalar_t>(iter, [](M a, M b) { return addValues(a, b); }, [](const auto& m) { return m.add; });
    } else {
      const M a = scalarTo<M>(alpha);
      cpu_kernel<scalar_t, scalar_t, scalar_t>(iter, [a](M x, M y) { return addValues(x, mulValues(a, y)); });
    }
  });
}

// base^exponent for integers, by squaring (exponent >= 0), wrapping like the other integer ops.
template <class T>
T integerPow(T base, int64_t exponent) {
  T result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = mulValues(result, base);
    exponent >>= 1;
    if (exponent > 0) base = mulValues(base, base);
  }
  return result;
}

}  // namespace

// The structured families add, sub, mul and div (Note [Structured kernels] in
// dk/tensor/structured.h): meta() in kernels/meta/binary_structured.cpp has checked the
// arguments (alpha, bool subtraction) and given `out` its sizes and dtype.

DK_IMPL_FUNC(add_out_cpu)(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  TensorIterator iter = binaryIterator("add", out, self, other);
  addKernel(iter, "add", alpha);
}

DK_IMPL_FUNC(sub_out_cpu)(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  TensorIterator iter = binaryIterator("sub", out, self, other);
  DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(iter.common_dtype(), "sub", [&] {
    using M = opmath_t<scalar_t>;
    if (isOne(alpha)) {
      cpu_kernel<scalar_t, scalar_t, scalar_t>(iter, [](M x, M y) { return subValues(x, y); });
    } else {
      const M a = scalarTo<M>(alpha);
      cpu_kernel<scalar_t, scalar_t, scalar_t>(iter, [a](M x, M y) { return subValues(x, mulValues(a, y)); });
    }
  });
}

DK_IMPL_FUNC(mul_out_cpu)(const Tensor& self, const Tensor& other, const Tensor& out) {
  TensorIterator iter = binaryIterator("mul", out, self, other);
  DK_DISPATCH_ALL_TYPES(iter.common_dtype(), "mul", [&] {
    using M = opmath_t<scalar_t>;
    exactBinaryKernel<scalar_t>(iter, [](M a, M b) { return mulValues(a, b); }, [](const auto& m) { return m.mul; });
  });
}

// True division: integer and bool inputs divide as get_default_dtype().
DK_IMPL_FUNC(div_out_cpu)(const Tensor& self, const Tensor& other, const Tensor& out) {
  TensorIterator iter = TensorIteratorConfig("div")
                            .add_output(out)
                            .add_input(self)
                            .add_input(other)
                            .promote_inputs_to_common_dtype(true)
                            .promote_integer_inputs_to_float(true)
                            .build();
  DK_DISPATCH_FLOATING_TYPES(iter.common_dtype(), "div", [&] {
    using M = opmath_t<scalar_t>;
    cpu_kernel<scalar_t, scalar_t, scalar_t>(iter, [](M a, M b) { return a / b; });
  });
}

// pow is structured too: meta() has checked the exponent and chosen the dtype,
// result_type(self, exponent). Integer bases take integer powers exactly; the common exponents
// of floating bases use exact forms (x*x for 2, sqrt for 0.5), as PyTorch does.
DK_IMPL_FUNC(pow_Tensor_Scalar_out_cpu)(const Tensor& self, const Scalar& exponent, const Tensor& out) {
  TensorIterator iter =
      TensorIteratorConfig("pow").add_output(out).add_input(self).common_dtype(common_dtype()).build();
  DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(common_dtype(), "pow", [&] {
    using M = opmath_t<scalar_t>;
    if constexpr (std::is_integral_v<scalar_t>) {
      const int64_t e = exponent.toLong();
      cpu_kernel<scalar_t, scalar_t>(iter, [e](M x) { return integerPow<M>(x, e); });
    } else {
      const double e = exponent.toDouble();
      const M em = static_cast<M>(e);
      if (e == 2.0) cpu_kernel<scalar_t, scalar_t>(iter, [](M x) { return x * x; });
      else if (e == 3.0) cpu_kernel<scalar_t, scalar_t>(iter, [](M x) { return x * x * x; });
      else if (e == 0.5) cpu_kernel<scalar_t, scalar_t>(iter, [](M x) { return std::sqrt(x); });
      else if (e == -0.5) cpu_kernel<scalar_t, scalar_t>(iter, [](M x) { return M(1) / std::sqrt(x); });
      else if (e == -1.0) cpu_kernel<scalar_t, scalar_t>(iter, [](M x) { return M(1) / x; });
      else if (e == -2.0) cpu_kernel<scalar_t, scalar_t>(iter, [](M x) { return M(1) / (x * x); });
      else cpu_kernel<scalar_t, scalar_t>(iter, [em](M x) { return std::pow(x, em); });
    }
  });
}

}  // namespace dk::native
