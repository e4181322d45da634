// dk/core/scalar.h: a number of any kind (the schema type Scalar): integral, floating or boolean.
// Boxed, it is an Int, Double or Bool IValue.
#pragma once

#include <cstdint>
#include <ostream>
#include <type_traits>

#include "dk/core/core_types.h"
#include "dk/util/half.h"

namespace dk {

class Scalar {
 public:
  enum class Kind : uint8_t { Int, Double, Bool };

  Scalar() : Scalar(int64_t{0}) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int) {  // NOLINT: implicit, like c10::Scalar
    value_.i = static_cast<int64_t>(v);
  }
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Double) {  // NOLINT: implicit
    value_.d = static_cast<double>(v);
  }
  Scalar(bool v) : kind_(Kind::Bool) { value_.i = v ? 1 : 0; }  // NOLINT: implicit
  // Without these, a Half would reach Scalar(bool) through float (Note [16-bit float arithmetic]).
  Scalar(Half v) : Scalar(static_cast<double>(static_cast<float>(v))) {}      // NOLINT: implicit
  Scalar(BFloat16 v) : Scalar(static_cast<double>(static_cast<float>(v))) {}  // NOLINT: implicit

  [[noreturn]] static void throwLongOverflow(double value);

  Kind kind() const { return kind_; }
  bool isIntegral() const { return kind_ == Kind::Int; }
  bool isFloatingPoint() const { return kind_ == Kind::Double; }
  bool isBoolean() const { return kind_ == Kind::Bool; }

  double toDouble() const { return kind_ == Kind::Double ? value_.d : static_cast<double>(value_.i); }
  // A double outside int64's range (or NaN) raises "value cannot be converted to type int64_t
  // without overflow" (the cast would be undefined behaviour).
  int64_t toLong() const {
    if (kind_ != Kind::Double) return value_.i;
    if (!(value_.d >= -9223372036854775808.0 && value_.d < 9223372036854775808.0)) throwLongOverflow(value_.d);
    return static_cast<int64_t>(value_.d);
  }
  bool toBool() const { return kind_ == Kind::Double ? value_.d != 0.0 : value_.i != 0; }
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return toBool();
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(toDouble());
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(static_cast<float>(toDouble()));
    else return static_cast<T>(toLong());
  }

  // The dtype a tensor made from this value alone would have (Long, Double or Bool).
  ScalarType type() const {
    return kind_ == Kind::Double ? ScalarType::Double : kind_ == Kind::Bool ? ScalarType::Bool : ScalarType::Long;
  }
  bool operator==(const Scalar& o) const {
    if (kind_ != o.kind_) return false;
    return kind_ == Kind::Double ? value_.d == o.value_.d : value_.i == o.value_.i;
  }

 private:
  union {
    int64_t i;
    double d;
  } value_;
  Kind kind_;
};

std::ostream& operator<<(std::ostream& out, const Scalar& s);

}  // namespace dk
