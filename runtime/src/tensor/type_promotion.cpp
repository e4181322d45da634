// Type promotion (Note [Type promotion]).
#include "dk/tensor/type_promotion.h"

#include <array>

namespace dk {

namespace {

constexpr ScalarType u1 = kByte, i1 = kChar, i2 = kShort, i4 = kInt, i8 = kLong, f2 = kHalf, f4 = kFloat,
                     f8 = kDouble, b1 = kBool, bf = kBFloat16;

// Rows and columns in ScalarType order: Byte, Char, Short, Int, Long, Half, Float, Double, Bool,
// BFloat16. Symmetric; PyTorch's table restricted to these dtypes (uint8 + int8 is int16).
constexpr std::array<std::array<ScalarType, kNumScalarTypes>, kNumScalarTypes> kPromotionTable = {{
    /*        u1  i1  i2  i4  i8  f2  f4  f8  b1  bf */
    /* u1 */ {u1, i2, i2, i4, i8, f2, f4, f8, u1, bf},
    /* i1 */ {i2, i1, i2, i4, i8, f2, f4, f8, i1, bf},
    /* i2 */ {i2, i2, i2, i4, i8, f2, f4, f8, i2, bf},
    /* i4 */ {i4, i4, i4, i4, i8, f2, f4, f8, i4, bf},
    /* i8 */ {i8, i8, i8, i8, i8, f2, f4, f8, i8, bf},
    /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f8, f2, f4},
    /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, f4, f4},
    /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
    /* b1 */ {u1, i1, i2, i4, i8, f2, f4, f8, b1, bf},
    /* bf */ {bf, bf, bf, bf, bf, f4, f4, f8, bf, bf},
}};

constexpr bool tableIsSymmetric() {
  for (int a = 0; a < kNumScalarTypes; ++a)
    for (int b = 0; b < kNumScalarTypes; ++b)
      if (kPromotionTable[a][b] != kPromotionTable[b][a]) return false;
  return true;
}
static_assert(tableIsSymmetric());

// Promotion where Undefined means "no operand yet".
ScalarType promoteSkippingUndefined(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  return promoteTypes(a, b);
}

// `higher` is the result of a higher tier, `lower` of the tier below: lower takes part only when
// its category is above higher's.
ScalarType combineCategories(ScalarType higher, ScalarType lower) {
  if (isFloatingType(higher)) return higher;
  if (higher == ScalarType::Bool || isFloatingType(lower)) return promoteSkippingUndefined(higher, lower);
  if (higher != ScalarType::Undefined) return higher;  // integral beats integral and bool below it
  return lower;
}

}  // namespace

ScalarType promoteTypes(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined || b == ScalarType::Undefined) return ScalarType::Undefined;
  return kPromotionTable[static_cast<size_t>(a)][static_cast<size_t>(b)];
}

ResultTypeState update_result_type_state(const Tensor& tensor, const ResultTypeState& state) {
  if (!tensor.defined()) return state;
  ResultTypeState next = state;
  ScalarType current = tensor.scalar_type();
  if (tensor.unsafeGetTensorImpl()->is_wrapped_number()) {
    if (isFloatingType(current)) current = get_default_dtype();
    next.wrappedResult = promoteSkippingUndefined(state.wrappedResult, current);
  } else if (tensor.dim() > 0) {
    next.dimResult = promoteSkippingUndefined(state.dimResult, current);
  } else {
    next.zeroResult = promoteSkippingUndefined(state.zeroResult, current);
  }
  return next;
}

ResultTypeState update_result_type_state(const Scalar& scalar, const ResultTypeState& state) {
  ResultTypeState next = state;
  ScalarType current = scalar.isFloatingPoint() ? get_default_dtype() : scalar.type();
  next.wrappedResult = promoteSkippingUndefined(state.wrappedResult, current);
  return next;
}

ScalarType result_type(const ResultTypeState& state) {
  return combineCategories(state.dimResult, combineCategories(state.zeroResult, state.wrappedResult));
}

ScalarType result_type(ArrayRef<Tensor> tensors, ArrayRef<Scalar> scalars) {
  ResultTypeState state;
  for (const Tensor& t : tensors) state = update_result_type_state(t, state);
  for (const Scalar& s : scalars) state = update_result_type_state(s, state);
  return result_type(state);
}

ScalarType result_type(const Tensor& a, const Tensor& b) {
  return result_type(update_result_type_state(b, update_result_type_state(a, ResultTypeState{})));
}

ScalarType result_type(const Tensor& a, const Scalar& b) {
  return result_type(update_result_type_state(b, update_result_type_state(a, ResultTypeState{})));
}

}  // namespace dk
