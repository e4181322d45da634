// dk/util/half.h: the two 16-bit floating types, dk::Half (IEEE binary16) and dk::BFloat16 (the top
// half of a float32). Both store 16 bits and compute through float.
//
// Note [16-bit float arithmetic]
// A Half or BFloat16 converts implicitly to float and back, and defines no arithmetic of its
// own: `a + b` is a float, rounded to 16 bits only when stored (`Half c = a + b;`). That keeps
// overload resolution unambiguous (there is exactly one route from Half to a built-in type) and
// matches how kernels use these types: load, compute in float, store. Conversions from float
// round to nearest, ties to even; values past the largest finite 16-bit value become infinity;
// NaN stays NaN (quiet).
#pragma once

#include <bit>
#include <cstdint>
#include <ostream>

namespace dk {

namespace detail {

// float -> binary16 bits, round to nearest even.
constexpr uint16_t floatToHalfBits(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  auto sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  uint32_t magnitude = f & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // inf, or NaN (kept quiet, top payload bits kept)
    if (magnitude == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent > 15) return static_cast<uint16_t>(sign | 0x7c00u);  // beyond 2^16: infinity
  uint32_t mantissa = magnitude & 0x7fffffu;
  if (exponent >= -14) {
    // Normal half: keep 10 of the 23 mantissa bits; a carry out of the mantissa bumps the
    // exponent, and out of exponent 30 gives infinity (0x7c00), both by plain addition.
    uint32_t bits = (static_cast<uint32_t>(exponent + 15) << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (bits & 1u))) ++bits;
    return static_cast<uint16_t>(sign | bits);
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal (2^-24): zero
  // Subnormal half: units of 2^-24. The full 24-bit significand is value * 2^(23 - exponent).
  uint32_t significand = mantissa | 0x800000u;
  int shift = -exponent - 1;  // 14..24
  uint32_t bits = significand >> shift;
  uint32_t rest = significand & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (bits & 1u))) ++bits;  // may reach 0x400: smallest normal
  return static_cast<uint16_t>(sign | bits);
}

constexpr float halfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));  // 112 = 127 - 15
}

// float -> bfloat16 bits: drop the low 16 bits, rounding to nearest even.
constexpr uint16_t floatToBFloat16Bits(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x0040u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return static_cast<uint16_t>((f + rounding) >> 16);  // overflow of the largest values gives inf
}

constexpr float bfloat16BitsToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace detail

struct Half {
  uint16_t x = 0;

  struct from_bits_t {};
  static constexpr from_bits_t from_bits() { return {}; }

  Half() = default;
  constexpr Half(uint16_t bits, from_bits_t) : x(bits) {}
  constexpr Half(float value) : x(detail::floatToHalfBits(value)) {}  // NOLINT: implicit, Note [16-bit float arithmetic]
  constexpr operator float() const { return detail::halfBitsToFloat(x); }  // NOLINT: implicit
};

struct BFloat16 {
  uint16_t x = 0;

  struct from_bits_t {};
  static constexpr from_bits_t from_bits() { return {}; }

  BFloat16() = default;
  constexpr BFloat16(uint16_t bits, from_bits_t) : x(bits) {}
  constexpr BFloat16(float value) : x(detail::floatToBFloat16Bits(value)) {}  // NOLINT: implicit
  constexpr operator float() const { return detail::bfloat16BitsToFloat(x); }  // NOLINT: implicit
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

inline std::ostream& operator<<(std::ostream& out, Half h) { return out << static_cast<float>(h); }
inline std::ostream& operator<<(std::ostream& out, BFloat16 b) { return out << static_cast<float>(b); }

}  // namespace dk
