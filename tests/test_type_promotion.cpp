// dk/tensor/type_promotion.h: promoteTypes and result_type, against PyTorch 1.13.1's rules.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/tensor/type_promotion.h"
#include "dk/util/error.h"
#include "dk/util/half.h"

using namespace dk;

// ---------------------------------------------------------------- type promotion

TEST_CASE("tensor: promoteTypes follows PyTorch's lattice") {
  // torch.promote_types(a, b) of PyTorch 1.13.1 for every pair of dk's dtypes, rows and columns
  // in this order (printed by PyTorch, not derived from dk's table).
  const ScalarType order[] = {kByte, kChar, kShort, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16};
  constexpr ScalarType u1 = kByte, i1 = kChar, i2 = kShort, i4 = kInt, i8 = kLong, f2 = kHalf, f4 = kFloat,
                       f8 = kDouble, b1 = kBool, bf = kBFloat16;
  const ScalarType pytorch[10][10] = {
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
  };
  for (int a = 0; a < 10; ++a) {
    for (int b = 0; b < 10; ++b) {
      INFO(order[a] << " + " << order[b]);
      CHECK(promoteTypes(order[a], order[b]) == pytorch[a][b]);
    }
  }
  CHECK(promoteTypes(kFloat, ScalarType::Undefined) == ScalarType::Undefined);
  CHECK(promoteTypes(ScalarType::Undefined, kShort) == ScalarType::Undefined);
}

TEST_CASE("tensor: result_type follows PyTorch's category rule") {
  auto dimmed = [](ScalarType t) { return detail::empty_contiguous({2}, t, kCPU); };
  auto zero_dim = [](ScalarType t) { return detail::empty_contiguous({}, t, kCPU); };
  // Dimensioned tensors.
  CHECK(result_type(dimmed(kByte), dimmed(kChar)) == kShort);  // int16, as in PyTorch
  CHECK(result_type(dimmed(kShort), zero_dim(kLong)) == kShort);
  CHECK(result_type(dimmed(kShort), Scalar(70000)) == kShort);
  CHECK(result_type(dimmed(kHalf), dimmed(kBFloat16)) == kFloat);
  CHECK(result_type(dimmed(kInt), dimmed(kFloat)) == kFloat);
  CHECK(result_type(dimmed(kBool), dimmed(kBool)) == kBool);
  // Scalars: only a higher category counts; a floating Scalar is the default dtype.
  CHECK(result_type(dimmed(kInt), Scalar(2.5)) == kFloat);
  CHECK(result_type(dimmed(kLong), Scalar(2.5)) == kFloat);
  CHECK(result_type(dimmed(kInt), Scalar(5)) == kInt);
  CHECK(result_type(dimmed(kByte), Scalar(-1)) == kByte);
  CHECK(result_type(dimmed(kHalf), Scalar(2.5)) == kHalf);
  CHECK(result_type(dimmed(kBFloat16), Scalar(1)) == kBFloat16);
  CHECK(result_type(dimmed(kBool), Scalar(true)) == kBool);
  CHECK(result_type(dimmed(kBool), Scalar(3)) == kLong);
  CHECK(result_type(dimmed(kBool), Scalar(2.5)) == kFloat);
  CHECK(result_type(dimmed(kFloat), Scalar(true)) == kFloat);
  CHECK(result_type(dimmed(kInt), Scalar(true)) == kInt);
  // 0-dim tensors: below dimensioned ones, above Scalars.
  CHECK(result_type(zero_dim(kLong), dimmed(kChar)) == kChar);
  CHECK(result_type(zero_dim(kDouble), dimmed(kFloat)) == kFloat);
  CHECK(result_type(zero_dim(kFloat), dimmed(kInt)) == kFloat);
  CHECK(result_type(zero_dim(kDouble), dimmed(kInt)) == kDouble);  // a 0-dim tensor keeps its dtype
  CHECK(result_type(zero_dim(kHalf), dimmed(kLong)) == kHalf);
  CHECK(result_type(zero_dim(kInt), dimmed(kBool)) == kInt);
  CHECK(result_type(zero_dim(kLong), zero_dim(kInt)) == kLong);  // only 0-dim: plain promotion
  CHECK(result_type(zero_dim(kInt), Scalar(2.5)) == kFloat);
  CHECK(result_type(zero_dim(kDouble), Scalar(2.5)) == kDouble);
  CHECK(result_type(zero_dim(kChar), Scalar(1000)) == kChar);
  // Lists, and Scalars alone.
  CHECK(result_type({dimmed(kInt), zero_dim(kLong), dimmed(kChar)}, {Scalar(1)}) == kInt);
  CHECK(result_type({dimmed(kInt), zero_dim(kDouble), dimmed(kLong)}, {Scalar(1)}) == kDouble);
  CHECK(result_type({}, {Scalar(1), Scalar(2.5)}) == kFloat);
  CHECK(result_type({}, {Scalar(1)}) == kLong);
  CHECK(result_type({}, {Scalar(false)}) == kBool);
  CHECK(result_type({Tensor(), dimmed(kHalf)}, {}) == kHalf);  // undefined tensors are skipped
  // A wrapped number is a Scalar, whatever its dtype.
  Tensor wrapped = zero_dim(kDouble);
  wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
  CHECK(result_type(dimmed(kInt), wrapped) == kFloat);
  CHECK(result_type(zero_dim(kHalf), wrapped) == kHalf);
  // The state can be built step by step.
  ResultTypeState state;
  state = update_result_type_state(dimmed(kByte), state);
  state = update_result_type_state(Scalar(1.5), state);
  CHECK(state.dimResult == kByte);
  CHECK(state.wrappedResult == kFloat);
  CHECK(result_type(state) == kFloat);
}
