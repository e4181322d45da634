// dk/tensor/dtype_dispatch.h: the C++ type of each dtype, and running one piece of code for the C++
// type of a runtime dtype (what a kernel does to loop over its data).
//
//   DK_DISPATCH_ALL_TYPES(t.scalar_type(), "fill", [&] {
//     scalar_t* p = t.data_ptr<scalar_t>();
//     ...
//   });
//
// Each macro runs the lambda with `scalar_t` naming the C++ type of the dtype, returns what the
// lambda returns, and raises dk::Error "<opname>: unsupported dtype <Dtype>" (e.g.
// "sqrt: unsupported dtype Long") for a dtype outside its group.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "dk/core/core_types.h"
#include "dk/util/half.h"

namespace dk {

// ---- dtype <-> C++ type ----

template <class T>
struct CppTypeToScalarType;  // undefined for types with no dtype
#define DK_DEFINE_DTYPE_MAPPING(cpp_type, dtype)                                 \
  template <>                                                                    \
  struct CppTypeToScalarType<cpp_type> {                                         \
    static constexpr ScalarType value = ScalarType::dtype;                       \
  };
DK_DEFINE_DTYPE_MAPPING(uint8_t, Byte)
DK_DEFINE_DTYPE_MAPPING(int8_t, Char)
DK_DEFINE_DTYPE_MAPPING(int16_t, Short)
DK_DEFINE_DTYPE_MAPPING(int32_t, Int)
DK_DEFINE_DTYPE_MAPPING(int64_t, Long)
DK_DEFINE_DTYPE_MAPPING(Half, Half)
DK_DEFINE_DTYPE_MAPPING(float, Float)
DK_DEFINE_DTYPE_MAPPING(double, Double)
DK_DEFINE_DTYPE_MAPPING(bool, Bool)
DK_DEFINE_DTYPE_MAPPING(BFloat16, BFloat16)
#undef DK_DEFINE_DTYPE_MAPPING

template <class T>
inline constexpr ScalarType cppTypeToScalarType = CppTypeToScalarType<T>::value;

// A type carried as a value, so a generic lambda can receive it: `[](auto tag) { using T =
// typename decltype(tag)::type; }`.
template <class T>
struct TypeTag {
  using type = T;
};

// ---- dtype groups ----

using DtypeGroup = uint32_t;  // bit i set: ScalarType i is in the group
constexpr DtypeGroup dtypeBit(ScalarType t) { return DtypeGroup{1} << static_cast<int>(t); }
inline constexpr DtypeGroup kFloatingDtypes =
    dtypeBit(kHalf) | dtypeBit(kBFloat16) | dtypeBit(kFloat) | dtypeBit(kDouble);
inline constexpr DtypeGroup kIntegralDtypes = dtypeBit(kByte) | dtypeBit(kChar) | dtypeBit(kShort) |
                                             dtypeBit(kInt) | dtypeBit(kLong);
inline constexpr DtypeGroup kAllDtypesExceptBool = kFloatingDtypes | kIntegralDtypes;
inline constexpr DtypeGroup kAllDtypes = kAllDtypesExceptBool | dtypeBit(kBool);

namespace detail {
[[noreturn]] void throwUnsupportedDtype(const char* opname, ScalarType t);
}  // namespace detail

// Calls f(TypeTag<T>{}) for the C++ type T of `t` if `t` is in Group; otherwise raises
// "<opname>: unsupported dtype <Dtype>". Each dtype is one switch case (a jump table).
template <DtypeGroup Group, class F>
decltype(auto) dispatchDtypeIn(ScalarType t, const char* opname, F&& f) {
#define DK_DTYPE_CASE(cpp_type, dtype)                                            \
  case ScalarType::dtype:                                                         \
    if constexpr ((Group & dtypeBit(ScalarType::dtype)) != 0) return f(TypeTag<cpp_type>{}); \
    break;
  switch (t) {
    DK_DTYPE_CASE(uint8_t, Byte)
    DK_DTYPE_CASE(int8_t, Char)
    DK_DTYPE_CASE(int16_t, Short)
    DK_DTYPE_CASE(int32_t, Int)
    DK_DTYPE_CASE(int64_t, Long)
    DK_DTYPE_CASE(Half, Half)
    DK_DTYPE_CASE(float, Float)
    DK_DTYPE_CASE(double, Double)
    DK_DTYPE_CASE(bool, Bool)
    DK_DTYPE_CASE(BFloat16, BFloat16)
    case ScalarType::Undefined: break;
  }
#undef DK_DTYPE_CASE
  detail::throwUnsupportedDtype(opname, t);
}

// Every dtype (all ten).
template <class F>
decltype(auto) dispatchDtype(ScalarType t, const char* opname, F&& f) {
  return dispatchDtypeIn<kAllDtypes>(t, opname, std::forward<F>(f));
}

}  // namespace dk

// The macro forms: the last argument is a lambda taking no arguments that uses `scalar_t`.
#define DK_DISPATCH_IN_GROUP_(GROUP, DTYPE, OPNAME, ...)                               \
  ::dk::dispatchDtypeIn<GROUP>(DTYPE, OPNAME, [&](auto dk_dtype_tag_) -> decltype(auto) { \
    using scalar_t [[maybe_unused]] = typename decltype(dk_dtype_tag_)::type;          \
    return __VA_ARGS__();                                                              \
  })
// All ten dtypes.
#define DK_DISPATCH_ALL_TYPES(DTYPE, OPNAME, ...) DK_DISPATCH_IN_GROUP_(::dk::kAllDtypes, DTYPE, OPNAME, __VA_ARGS__)
// All but Bool.
#define DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(DTYPE, OPNAME, ...) \
  DK_DISPATCH_IN_GROUP_(::dk::kAllDtypesExceptBool, DTYPE, OPNAME, __VA_ARGS__)
// Half, BFloat16, Float, Double.
#define DK_DISPATCH_FLOATING_TYPES(DTYPE, OPNAME, ...) \
  DK_DISPATCH_IN_GROUP_(::dk::kFloatingDtypes, DTYPE, OPNAME, __VA_ARGS__)
// Byte, Char, Short, Int, Long (not Bool).
#define DK_DISPATCH_INTEGRAL_TYPES(DTYPE, OPNAME, ...) \
  DK_DISPATCH_IN_GROUP_(::dk::kIntegralDtypes, DTYPE, OPNAME, __VA_ARGS__)
