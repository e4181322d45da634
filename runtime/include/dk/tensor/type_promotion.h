// dk/tensor/type_promotion.h: the dtype of an operator's result from the dtypes of its inputs, by
// PyTorch's rules.
//
// Note [Type promotion]
// promoteTypes(a, b) is the lattice: Bool < integers < floating types, and within a category
// the type that holds both (uint8 + int8 -> int16, uint8 + int32 -> int32, float16 + bfloat16 ->
// float32), exactly PyTorch's table over the dtypes dk has.
//
// result_type over tensors and Scalars ranks operands in three tiers: tensors with dims, then
// 0-dim tensors, then Scalars (and 0-dim tensors marked is_wrapped_number). A lower tier
// matters only when its category (bool < integral < floating) is higher than every higher
// tier's: int32 tensor + int64 0-dim tensor -> int32, but int32 tensor + 2.5 -> float32. A
// floating Scalar counts as get_default_dtype() (float32), an integral one as int64, a
// boolean one as bool.
#pragma once

#include "dk/core/core_types.h"
#include "dk/core/scalar.h"
#include "dk/tensor/tensor.h"
#include "dk/util/array_ref.h"

namespace dk {

// Undefined with anything gives Undefined.
ScalarType promoteTypes(ScalarType a, ScalarType b);

// The three tiers, each the promotion of the operands seen in it so far (Undefined if none).
struct ResultTypeState {
  ScalarType dimResult = ScalarType::Undefined;
  ScalarType zeroResult = ScalarType::Undefined;
  ScalarType wrappedResult = ScalarType::Undefined;
};

// Adds one operand. Undefined tensors are skipped.
ResultTypeState update_result_type_state(const Tensor& tensor, const ResultTypeState& state);
ResultTypeState update_result_type_state(const Scalar& scalar, const ResultTypeState& state);
// Combines the tiers (Note [Type promotion]).
ScalarType result_type(const ResultTypeState& state);

ScalarType result_type(ArrayRef<Tensor> tensors, ArrayRef<Scalar> scalars = {});
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, const Scalar& b);

}  // namespace dk
