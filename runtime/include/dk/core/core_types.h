// dk/core/core_types.h: small value types shared by tensors, schemas and boxed values:
// ScalarType (dtype), Layout, MemoryFormat, DeviceType and Device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "dk/core/dispatch_key.h"

namespace dk {

enum class ScalarType : int8_t {
  Byte,      // uint8
  Char,      // int8
  Short,     // int16
  Int,       // int32
  Long,      // int64
  Half,      // float16
  Float,     // float32
  Double,    // float64
  Bool,
  BFloat16,
  Undefined,
};
inline constexpr int kNumScalarTypes = static_cast<int>(ScalarType::Undefined);
inline constexpr ScalarType kByte = ScalarType::Byte, kChar = ScalarType::Char, kShort = ScalarType::Short,
                            kInt = ScalarType::Int,
                            kLong = ScalarType::Long, kHalf = ScalarType::Half, kFloat = ScalarType::Float,
                            kDouble = ScalarType::Double, kBool = ScalarType::Bool,
                            kBFloat16 = ScalarType::BFloat16;
// PyTorch's other spellings of the same dtypes: dk::kFloat32 is dk::kFloat.
inline constexpr ScalarType kUInt8 = kByte, kInt8 = kChar, kInt16 = kShort, kInt32 = kInt, kInt64 = kLong,
                            kFloat16 = kHalf, kFloat32 = kFloat, kFloat64 = kDouble;

std::string_view toString(ScalarType t);  // "Float", "Long", ...
std::ostream& operator<<(std::ostream& out, ScalarType t);
// The PyTorch name of a dtype, without "torch.": "float32", "int64", "bool", "bfloat16".
std::string_view dtypeName(ScalarType t);

// Bytes per element; 0 for Undefined.
constexpr size_t elementSize(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Bool: return 1;
    case ScalarType::Short:
    case ScalarType::Half:
    case ScalarType::BFloat16: return 2;
    case ScalarType::Int:
    case ScalarType::Float: return 4;
    case ScalarType::Long:
    case ScalarType::Double: return 8;
    case ScalarType::Undefined: return 0;
  }
  return 0;
}
constexpr bool isFloatingType(ScalarType t) {
  return t == ScalarType::Half || t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::BFloat16;
}
constexpr bool isIntegralType(ScalarType t, bool includeBool) {
  return t == ScalarType::Byte || t == ScalarType::Char || t == ScalarType::Short || t == ScalarType::Int || t == ScalarType::Long ||
         (includeBool && t == ScalarType::Bool);
}

// The dtype Python floats become (torch.get_default_dtype()). Fixed at Float here: there is
// no set_default_dtype.
constexpr ScalarType get_default_dtype() { return ScalarType::Float; }

// The reduction of a loss, as PyTorch numbers it: the `int reduction` argument of the loss
// operators (dk::nll_loss(input, target, {}, dk::Reduction::Sum)).
namespace Reduction {
enum Reduction : int64_t { None = 0, Mean = 1, Sum = 2, END };
}  // namespace Reduction

enum class Layout : int8_t { Strided, Sparse };
std::string_view toString(Layout l);
std::ostream& operator<<(std::ostream& out, Layout l);

enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast };
std::string_view toString(MemoryFormat m);
std::ostream& operator<<(std::ostream& out, MemoryFormat m);

// DeviceType: one per backend with a device in schemas/dispatch_keys.yaml (dk/generated/keys/).
std::string_view toString(DeviceType t);  // "cpu", "cuda", "meta", "privateuseone"

// A device: a type plus an index (-1 means "the current one").
struct Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = -1;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int8_t i = -1) : type(t), index(i) {}  // NOLINT: implicit like c10
  explicit Device(std::string_view spec);  // "cpu", "cuda:1", "meta", "privateuseone"
  bool operator==(const Device&) const = default;
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;
};
std::ostream& operator<<(std::ostream& out, const Device& d);
inline constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA, kMeta = DeviceType::Meta,
                            kPrivateUse1 = DeviceType::PrivateUse1;

// The backend bit a device's data lives behind.
constexpr BackendComponent toBackendComponent(DeviceType t) {
  return detail::kDeviceTypeBackends[static_cast<size_t>(t)];
}
// The device type of a backend component; nullopt for one without a device (PrivateUse2).
constexpr std::optional<DeviceType> toDeviceType(BackendComponent b) {
  for (size_t i = 0; i < detail::kDeviceTypeBackends.size(); ++i)
    if (detail::kDeviceTypeBackends[i] == b) return static_cast<DeviceType>(i);
  return std::nullopt;
}

}  // namespace dk
