// The dtype vocabulary: Half and BFloat16 (dk/util/half.h), dtype properties and their C++
// types (dk/core/core_types.h), and dtype dispatch (dk/tensor/dtype_dispatch.h).
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

namespace {

uint16_t halfBits(float f) { return Half(f).x; }
uint16_t bf16Bits(float f) { return BFloat16(f).x; }
float fromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

}  // namespace

// ---------------------------------------------------------------- 16-bit floats

TEST_CASE("tensor: Half conversions round to nearest even") {
  CHECK(halfBits(0.0f) == 0x0000);
  CHECK(halfBits(-0.0f) == 0x8000);
  CHECK(halfBits(1.0f) == 0x3c00);
  CHECK(halfBits(-2.0f) == 0xc000);
  CHECK(halfBits(0.5f) == 0x3800);
  CHECK(halfBits(65504.0f) == 0x7bff);  // largest finite
  CHECK(halfBits(65519.0f) == 0x7bff);  // below the halfway point to 65536
  CHECK(halfBits(65520.0f) == 0x7c00);  // halfway: rounds to even, which is infinity
  CHECK(halfBits(1e10f) == 0x7c00);
  CHECK(halfBits(-1e10f) == 0xfc00);
  // Ties between neighbours 1 and 1 + 2^-10 go to the even one.
  CHECK(halfBits(1.0f + 0x1p-11f) == 0x3c00);
  CHECK(halfBits(1.0f + 3 * 0x1p-11f) == 0x3c02);
  CHECK(halfBits(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);  // just above the tie
  CHECK(halfBits(1.0f + 0x1p-11f - 0x1p-20f) == 0x3c00);  // just below
  // Subnormals: units of 2^-24.
  CHECK(halfBits(0x1p-24f) == 0x0001);
  CHECK(halfBits(0x1p-25f) == 0x0000);        // tie with 0: even
  CHECK(halfBits(1.5f * 0x1p-25f) == 0x0001);  // above the tie
  CHECK(halfBits(3 * 0x1p-25f) == 0x0002);     // tie between 1 and 2: even
  CHECK(halfBits(5 * 0x1p-25f) == 0x0002);     // tie between 2 and 3: even
  CHECK(halfBits(0x1p-30f) == 0x0000);
  CHECK(halfBits(-0x1p-24f) == 0x8001);
  CHECK(halfBits(0x1p-14f - 0x1p-26f) == 0x0400);  // rounds up out of the subnormals
  CHECK(halfBits(0x1p-14f) == 0x0400);             // smallest normal
  CHECK(halfBits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  // Specials.
  CHECK(halfBits(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(halfBits(-std::numeric_limits<float>::infinity()) == 0xfc00);
  Half nan = std::numeric_limits<float>::quiet_NaN();
  CHECK((nan.x & 0x7c00) == 0x7c00);
  CHECK((nan.x & 0x03ff) != 0);
  CHECK(std::isnan(static_cast<float>(nan)));
  CHECK(std::isinf(static_cast<float>(Half(0x7c00, Half::from_bits()))));
  CHECK(static_cast<float>(Half(0x0001, Half::from_bits())) == 0x1p-24f);
  CHECK(static_cast<float>(Half(0x3555, Half::from_bits())) == 0.333251953125f);
  CHECK(static_cast<float>(Half(0x8000, Half::from_bits())) == 0.0f);
  CHECK(std::signbit(static_cast<float>(Half(0x8000, Half::from_bits()))));

  // Every non-NaN half survives the round trip through float.
  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    Half h(static_cast<uint16_t>(bits), Half::from_bits());
    float f = h;
    if (std::isnan(f)) continue;
    if (Half(f).x != bits) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("tensor: BFloat16 conversions round to nearest even") {
  CHECK(bf16Bits(1.0f) == 0x3f80);
  CHECK(bf16Bits(-2.0f) == 0xc000);
  CHECK(bf16Bits(fromBits(0x3f808000)) == 0x3f80);  // tie: even
  CHECK(bf16Bits(fromBits(0x3f818000)) == 0x3f82);  // tie: even
  CHECK(bf16Bits(fromBits(0x3f808001)) == 0x3f81);  // above the tie
  CHECK(bf16Bits(fromBits(0x3f807fff)) == 0x3f80);  // below the tie
  CHECK(bf16Bits(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to infinity
  CHECK(bf16Bits(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(bf16Bits(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(bf16Bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  BFloat16 nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(static_cast<float>(nan)));
  BFloat16 low_payload_nan = fromBits(0x7f800001);  // NaN whose payload is only in the low bits
  CHECK(std::isnan(static_cast<float>(low_payload_nan)));
  CHECK(static_cast<float>(BFloat16(0x4049, BFloat16::from_bits())) == 3.140625f);

  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    BFloat16 b(static_cast<uint16_t>(bits), BFloat16::from_bits());
    float f = b;
    if (std::isnan(f)) continue;
    if (BFloat16(f).x != bits) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("tensor: 16-bit arithmetic goes through float") {
  Half a = 1.5f, b = 2.25f;
  Half sum = a + b;
  CHECK(static_cast<float>(sum) == 3.75f);
  CHECK(a < b);
  CHECK(a + 1 == 2.5f);
  Half third = 1.0f / 3.0f;
  CHECK(third.x == 0x3555);
  BFloat16 c = 3.0f;
  BFloat16 product = c * c;
  CHECK(static_cast<float>(product) == 9.0f);
  Half from_double = 0.1;
  CHECK(from_double.x == 0x2e66);
  std::ostringstream out;
  out << Half(0.5f) << " " << BFloat16(2.0f);
  CHECK(out.str() == "0.5 2");
  Scalar s = Half(0.5f);
  CHECK(s.isFloatingPoint());
  CHECK(s.toDouble() == 0.5);
  CHECK(Scalar(2.5).to<Half>().x == Half(2.5f).x);
}

// ---------------------------------------------------------------- dtypes

TEST_CASE("tensor: dtype properties and C++ types") {
  CHECK(elementSize(kByte) == 1);
  CHECK(elementSize(kChar) == 1);
  CHECK(elementSize(kBool) == 1);
  CHECK(elementSize(kHalf) == 2);
  CHECK(elementSize(kBFloat16) == 2);
  CHECK(elementSize(kInt) == 4);
  CHECK(elementSize(kFloat) == 4);
  CHECK(elementSize(kLong) == 8);
  CHECK(elementSize(kDouble) == 8);
  CHECK(elementSize(ScalarType::Undefined) == 0);
  CHECK(isFloatingType(kHalf));
  CHECK(isFloatingType(kBFloat16));
  CHECK(isFloatingType(kDouble));
  CHECK_FALSE(isFloatingType(kLong));
  CHECK_FALSE(isFloatingType(kBool));
  CHECK(isIntegralType(kByte, false));
  CHECK(isIntegralType(kLong, false));
  CHECK_FALSE(isIntegralType(kBool, false));
  CHECK(isIntegralType(kBool, true));
  CHECK_FALSE(isIntegralType(kFloat, true));
  STATIC_REQUIRE(cppTypeToScalarType<float> == kFloat);
  STATIC_REQUIRE(CppTypeToScalarType<int64_t>::value == kLong);
  STATIC_REQUIRE(CppTypeToScalarType<uint8_t>::value == kByte);
  STATIC_REQUIRE(CppTypeToScalarType<int8_t>::value == kChar);
  STATIC_REQUIRE(CppTypeToScalarType<bool>::value == kBool);
  STATIC_REQUIRE(CppTypeToScalarType<Half>::value == kHalf);
  STATIC_REQUIRE(CppTypeToScalarType<BFloat16>::value == kBFloat16);
  CHECK(dtypeName(kFloat) == "float32");
  CHECK(dtypeName(kDouble) == "float64");
  CHECK(dtypeName(kByte) == "uint8");
  CHECK(dtypeName(kBFloat16) == "bfloat16");
  CHECK(get_default_dtype() == kFloat);
}

TEST_CASE("tensor: dtype dispatch") {
  for (ScalarType t : {kByte, kChar, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16}) {
    size_t size = DK_DISPATCH_ALL_TYPES(t, "size", [&] { return sizeof(scalar_t); });
    CHECK(size == elementSize(t));
    ScalarType back = dispatchDtype(t, "back", [](auto tag) { return cppTypeToScalarType<typename decltype(tag)::type>; });
    CHECK(back == t);
  }
  int floating_calls = 0;
  for (ScalarType t : {kHalf, kFloat, kDouble, kBFloat16})
    DK_DISPATCH_FLOATING_TYPES(t, "sqrt", [&] {
      static_assert(!std::is_integral_v<scalar_t>);
      ++floating_calls;
    });
  CHECK(floating_calls == 4);
  CHECK_THROWS_WITH(DK_DISPATCH_FLOATING_TYPES(kLong, "sqrt", [&] {}), "sqrt: unsupported dtype Long");
  CHECK_THROWS_WITH(DK_DISPATCH_FLOATING_TYPES(kBool, "sqrt", [&] {}), "sqrt: unsupported dtype Bool");
  CHECK_THROWS_WITH(DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(kBool, "neg", [&] {}), "neg: unsupported dtype Bool");
  CHECK(DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(kByte, "neg", [&] { return int(sizeof(scalar_t)); }) == 1);
  CHECK_THROWS_WITH(DK_DISPATCH_INTEGRAL_TYPES(kFloat, "bitwise_and", [&] {}),
                    "bitwise_and: unsupported dtype Float");
  CHECK_THROWS_WITH(DK_DISPATCH_ALL_TYPES(ScalarType::Undefined, "fill", [&] {}), "fill: unsupported dtype Undefined");
}
