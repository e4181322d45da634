// Names and parsing of the small value types of core_types.h.
#include "dk/core/core_types.h"

#include <array>
#include <charconv>

#include "dk/util/error.h"

namespace dk {

std::string_view toString(ScalarType t) {
  static constexpr std::array<std::string_view, kNumScalarTypes + 1> names = {
      "Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double", "Bool", "BFloat16", "Undefined"};
  auto i = static_cast<size_t>(t);
  return i < names.size() ? names[i] : std::string_view("UNKNOWN_SCALAR_TYPE");
}
std::ostream& operator<<(std::ostream& out, ScalarType t) { return out << toString(t); }

std::string_view dtypeName(ScalarType t) {
  static constexpr std::array<std::string_view, kNumScalarTypes + 1> names = {
      "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool", "bfloat16", "undefined"};
  auto i = static_cast<size_t>(t);
  return i < names.size() ? names[i] : std::string_view("unknown");
}

std::string_view toString(Layout l) { return l == Layout::Strided ? "Strided" : "Sparse"; }
std::ostream& operator<<(std::ostream& out, Layout l) { return out << toString(l); }

std::string_view toString(MemoryFormat m) {
  switch (m) {
    case MemoryFormat::Contiguous: return "Contiguous";
    case MemoryFormat::Preserve: return "Preserve";
    case MemoryFormat::ChannelsLast: return "ChannelsLast";
  }
  return "UNKNOWN_MEMORY_FORMAT";
}
std::ostream& operator<<(std::ostream& out, MemoryFormat m) { return out << toString(m); }

std::string_view toString(DeviceType t) {
  auto i = static_cast<size_t>(t);
  return i < detail::kDeviceTypeNames.size() ? detail::kDeviceTypeNames[i] : std::string_view("unknown");
}

Device::Device(std::string_view spec) {
  std::string_view type_name = spec.substr(0, spec.find(':'));
  bool found = false;
  std::string names;  // "cpu, cuda, privateuseone or meta"
  for (size_t i = 0; i < detail::kDeviceTypeNames.size(); ++i) {
    if (detail::kDeviceTypeNames[i] == type_name) {
      type = static_cast<DeviceType>(i);
      found = true;
    }
    names += i == 0 ? "" : i + 1 == detail::kDeviceTypeNames.size() ? " or " : ", ";
    names += detail::kDeviceTypeNames[i];
  }
  DK_CHECK(found, "invalid device string '", spec, "': expected ", names, ", optionally followed by :<index>");
  if (type_name.size() < spec.size()) {
    std::string_view digits = spec.substr(type_name.size() + 1);
    int value = -1;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    DK_CHECK(err == std::errc() && end == digits.data() + digits.size() && value >= 0 && value < 128,
             "invalid device string '", spec, "': the index must be a number from 0 to 127");
    index = static_cast<int8_t>(value);
  }
}

std::string Device::str() const {
  std::string out(toString(type));
  if (index >= 0) {  // appended piece by piece: "literal" + std::string trips GCC 12's -Wrestrict at -O3
    out += ':';
    out += std::to_string(index);
  }
  return out;
}
std::ostream& operator<<(std::ostream& out, const Device& d) { return out << d.str(); }

}  // namespace dk
