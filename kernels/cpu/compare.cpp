// Comparisons and selections on the cpu: eq, gt, lt, where, clamp, maximum, minimum.
#include <algorithm>
#include <cmath>
#include <limits>

#include "dk/generated/ops/clamp_native.h"
#include "dk/generated/ops/eq_native.h"
#include "dk/generated/ops/fill_native.h"
#include "dk/generated/ops/gt_native.h"
#include "dk/generated/ops/lt_native.h"
#include "dk/generated/ops/maximum_native.h"
#include "dk/generated/ops/minimum_native.h"
#include "dk/generated/ops/where_native.h"
#include "meta/shape_functions.h"
#include "tensor_iterator.h"

namespace dk::native {

namespace {

template <class M>
inline bool isNan(M v) {
  if constexpr (std::is_floating_point_v<M>) return std::isnan(v);
  else return false;
}

// out = compare(self, other) in `common`, the inputs' promoted dtype; the kernel writes Bool (an
// out= tensor of another dtype gets it cast, through a temporary).
template <class Compare>
void compareTensors(const char* op, const Tensor& self, const Tensor& other, ScalarType common, const Tensor& out,
                    const Compare& compare) {
  TensorIterator iter =
      TensorIteratorConfig(op).add_output(out).add_input(self).add_input(other).common_dtype(common).output_dtype(
          ScalarType::Bool).build();
  DK_DISPATCH_ALL_TYPES(common, op, [&] {
    using M = opmath_t<scalar_t>;
    cpu_kernel<bool, scalar_t, scalar_t>(iter, [&](M a, M b) { return compare(a, b); });
  });
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

// The comparisons are structured (meta() in kernels/meta/binary_structured.cpp): `out` is Bool
// and common_dtype() is result_type(self, other).
DK_IMPL_FUNC(eq_Tensor_out_cpu)(const Tensor& self, const Tensor& other, const Tensor& out) {
  compareTensors("eq", self, other, common_dtype(), out, [](auto a, auto b) { return a == b; });
}

DK_IMPL_FUNC(gt_Tensor_out_cpu)(const Tensor& self, const Tensor& other, const Tensor& out) {
  compareTensors("gt", self, other, common_dtype(), out, [](auto a, auto b) { return a > b; });
}

DK_IMPL_FUNC(lt_Tensor_out_cpu)(const Tensor& self, const Tensor& other, const Tensor& out) {
  compareTensors("lt", self, other, common_dtype(), out, [](auto a, auto b) { return a < b; });
}

// The Scalar is cast to the common dtype first (as the 0-dim tensor PyTorch makes of it would be).
DK_IMPL_FUNC(eq_Scalar_out_cpu)(const Tensor& self, const Scalar& other, const Tensor& out) {
  TensorIterator iter = TensorIteratorConfig("eq")
                            .add_output(out)
                            .add_input(self)
                            .common_dtype(common_dtype())
                            .output_dtype(ScalarType::Bool)
                            .build();
  DK_DISPATCH_ALL_TYPES(common_dtype(), "eq", [&] {
    using M = opmath_t<scalar_t>;
    const auto v = static_cast<M>(scalarTo<scalar_t>(other));
    cpu_kernel<bool, scalar_t>(iter, [v](M a) { return a == v; });
  });
}

// maximum and minimum are structured (meta() in kernels/meta/binary_structured.cpp).
DK_IMPL_FUNC(maximum_out_cpu)(const Tensor& self, const Tensor& other, const Tensor& out) {
  extremum<true>("maximum", self, other, out);
}

DK_IMPL_FUNC(minimum_out_cpu)(const Tensor& self, const Tensor& other, const Tensor& out) {
  extremum<false>("minimum", self, other, out);
}

// condition picks self where true, other where false; the three broadcast together, and self and
// other promote to their common dtype. A uint8 condition is accepted with PyTorch's warning
// (meta::where makes the checks and warns).
Tensor where_cpu(const Tensor& condition, const Tensor& self, const Tensor& other) {
  DK_CHECK(condition.defined(), "where: expected a defined condition tensor");
  meta::where(condition, self, other);
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

// clamp is structured (meta() in kernels/meta/unary_structured.cpp): the dtype is self's when
// floating, else result_type of self and the bounds (an integer tensor clamped to 0.5 gives
// float32). A NaN element stays NaN; with min > max every element becomes max; with both bounds
// and one of them NaN every element is NaN (meta::clampGivesNan).
DK_IMPL_FUNC(clamp_out_cpu)(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
                            const Tensor& out) {
  if (meta::clampGivesNan(min, max)) {
    fill_inplace_cpu(out, std::numeric_limits<double>::quiet_NaN());
    return;
  }
  const ScalarType common = common_dtype();
  TensorIterator iter = TensorIteratorConfig("clamp").add_output(out).add_input(self).common_dtype(common).build();
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
}

}  // namespace dk::native
