// Comparisons and selections on the cpu: eq, gt, lt, where, clamp, maximum, minimum.
#include <algorithm>
#include <cmath>

#include "dk/generated/ops/clamp_native.h"
#include "dk/generated/ops/eq_native.h"
#include "dk/generated/ops/gt_native.h"
#include "dk/generated/ops/lt_native.h"
#include "dk/generated/ops/maximum_native.h"
#include "dk/generated/ops/minimum_native.h"
#include "dk/generated/ops/where_native.h"
#include "dk/tensor/type_promotion.h"
#include "tensor_iterator.h"

namespace dk::native {

namespace {

template <class M>
inline bool isNan(M v) {
  if constexpr (std::is_floating_point_v<M>) return std::isnan(v);
  else return false;
}

// A bool tensor from comparing self and other in their common dtype.
template <class Compare>
Tensor compareTensors(const char* op, const Tensor& self, const Tensor& other, const Compare& compare) {
  TensorIterator iter = TensorIteratorConfig(op)
                            .add_output(Tensor())
                            .add_input(self)
                            .add_input(other)
                            .promote_inputs_to_common_dtype(true)
                            .output_dtype(ScalarType::Bool)
                            .build();
  DK_DISPATCH_ALL_TYPES(iter.common_dtype(), op, [&] {
    using M = opmath_t<scalar_t>;
    cpu_kernel<bool, scalar_t, scalar_t>(iter, [&](M a, M b) { return compare(a, b); });
  });
  return iter.output();
}

// maximum and minimum: a NaN on either side is the result.
template <bool Max>
void extremum(const char* op, const Tensor& self, const Tensor& other, const Tensor& out) {
  TensorIterator iter = TensorIteratorConfig(op)
                            .add_output(out)
                            .add_input(self)
                            .add_input(other)
                            .promote_inputs_to_common_dtype(true)
                            .build();
  DK_DISPATCH_ALL_TYPES(iter.common_dtype(), op, [&] {
    using M = opmath_t<scalar_t>;
    cpu_kernel<scalar_t, scalar_t, scalar_t>(iter, [](M a, M b) -> M {
      if constexpr (std::is_floating_point_v<M>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
      }
      if constexpr (Max) return a < b ? b : a;
      else return b < a ? b : a;
    });
  });
}

}  // namespace

Tensor eq_cpu(const Tensor& self, const Tensor& other) {
  return compareTensors("eq", self, other, [](auto a, auto b) { return a == b; });
}

Tensor gt_cpu(const Tensor& self, const Tensor& other) {
  return compareTensors("gt", self, other, [](auto a, auto b) { return a > b; });
}

Tensor lt_cpu(const Tensor& self, const Tensor& other) {
  return compareTensors("lt", self, other, [](auto a, auto b) { return a < b; });
}

// Compares in result_type(self, other), the Scalar cast to that dtype first (as the 0-dim
// tensor PyTorch makes of it would be).
Tensor eq_cpu(const Tensor& self, const Scalar& other) {
  TensorIterator iter = TensorIteratorConfig("eq")
                            .add_output(Tensor())
                            .add_input(self)
                            .common_dtype(result_type(self, other))
                            .output_dtype(ScalarType::Bool)
                            .build();
  DK_DISPATCH_ALL_TYPES(iter.common_dtype(), "eq", [&] {
    using M = opmath_t<scalar_t>;
    const auto v = static_cast<M>(scalarTo<scalar_t>(other));
    cpu_kernel<bool, scalar_t>(iter, [v](M a) { return a == v; });
  });
  return iter.output();
}

// maximum and minimum are structured (meta() in kernels/meta/binary_structured.cpp).
DK_IMPL_FUNC(maximum_out_cpu)(const Tensor& self, const Tensor& other, const Tensor& out) {
  extremum<true>("maximum", self, other, out);
}

DK_IMPL_FUNC(minimum_out_cpu)(const Tensor& self, const Tensor& other, const Tensor& out) {
  extremum<false>("minimum", self, other, out);
}

// condition picks self where true, other where false; the three broadcast together, and self and
// other promote to their common dtype. A uint8 condition is accepted with PyTorch's warning.
Tensor where_cpu(const Tensor& condition, const Tensor& self, const Tensor& other) {
  DK_CHECK(condition.defined(), "where: expected a defined condition tensor");
  DK_CHECK(condition.dtype() == ScalarType::Bool || condition.dtype() == ScalarType::Byte,
           "where expected condition to be a boolean tensor, but got a tensor with dtype ", condition.dtype());
  if (condition.dtype() == ScalarType::Byte) {
    warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future "
         "version of PyTorch. Use a boolean condition instead.");
  }
  TensorIterator iter = TensorIteratorConfig("where")
                            .add_output(Tensor())
                            .add_input_keeping_dtype(condition)
                            .add_input(self)
                            .add_input(other)
                            .promote_inputs_to_common_dtype(true)
                            .build();
  DK_DISPATCH_ALL_TYPES(iter.common_dtype(), "where", [&] {
    using M = opmath_t<scalar_t>;
    auto pick = [](auto c, M a, M b) { return c ? a : b; };
    if (condition.dtype() == ScalarType::Bool) cpu_kernel<scalar_t, bool, scalar_t, scalar_t>(iter, pick);
    else cpu_kernel<scalar_t, uint8_t, scalar_t, scalar_t>(iter, pick);
  });
  return iter.output();
}

// The result dtype is self's when floating, else result_type of self and the bounds (an
// integer tensor clamped to 0.5 gives float32). A NaN element stays NaN; with min > max every
// element becomes max.
Tensor clamp_cpu(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  checkOnCpu("clamp", self);
  DK_CHECK(min.has_value() || max.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  ScalarType common = self.dtype();
  if (!isFloatingType(common)) {
    ResultTypeState state = update_result_type_state(self, ResultTypeState{});
    if (min) state = update_result_type_state(*min, state);
    if (max) state = update_result_type_state(*max, state);
    common = result_type(state);
  }
  TensorIterator iter = TensorIteratorConfig("clamp").add_output(Tensor()).add_input(self).common_dtype(common).build();
  DK_DISPATCH_ALL_TYPES(common, "clamp", [&] {
    using M = opmath_t<scalar_t>;
    const M lo = min ? static_cast<M>(scalarTo<scalar_t>(*min)) : M();
    const M hi = max ? static_cast<M>(scalarTo<scalar_t>(*max)) : M();
    if (min && max) {
      cpu_kernel<scalar_t, scalar_t>(iter, [lo, hi](M x) { return isNan(x) ? x : std::min(std::max(x, lo), hi); });
    } else if (min) {
      cpu_kernel<scalar_t, scalar_t>(iter, [lo](M x) { return isNan(x) ? x : std::max(x, lo); });
    } else {
      cpu_kernel<scalar_t, scalar_t>(iter, [hi](M x) { return isNan(x) ? x : std::min(x, hi); });
    }
  });
  return iter.output();
}

}  // namespace dk::native
