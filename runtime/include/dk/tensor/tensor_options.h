// dk/tensor/tensor_options.h: what a factory is asked to make: dtype, device, layout, requires_grad,
// pinned memory. Each setter returns a changed copy, so options chain:
//
//   dk::TensorOptions().dtype(dk::kFloat).device(dk::kCPU)
//   dk::dtype(dk::kLong).device("cuda:0")
//
// Unset fields read as their defaults (get_default_dtype(), CPU, Strided, false); has_*()
// says whether a field was set.
#pragma once

#include <optional>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "dk/core/core_types.h"

namespace dk {

class TensorOptions {
 public:
  TensorOptions() = default;
  // Implicit, like c10: a dtype, device or layout alone stands for the options holding it.
  TensorOptions(ScalarType dtype) : dtype_(dtype) {}  // NOLINT: implicit
  TensorOptions(Device device) : device_(device) {}   // NOLINT: implicit
  TensorOptions(DeviceType type) : device_(Device(type)) {}  // NOLINT: implicit
  TensorOptions(Layout layout) : layout_(layout) {}   // NOLINT: implicit

  [[nodiscard]] TensorOptions dtype(ScalarType dtype) const { return with(&TensorOptions::dtype_, dtype); }
  [[nodiscard]] TensorOptions dtype(std::optional<ScalarType> dtype) const {
    return with(&TensorOptions::dtype_, dtype);
  }
  [[nodiscard]] TensorOptions device(Device device) const { return with(&TensorOptions::device_, device); }
  [[nodiscard]] TensorOptions device(DeviceType type, int8_t index = -1) const {
    return with(&TensorOptions::device_, Device(type, index));
  }
  [[nodiscard]] TensorOptions device(std::string_view spec) const {
    return with(&TensorOptions::device_, Device(spec));
  }
  [[nodiscard]] TensorOptions device(std::optional<Device> device) const {
    return with(&TensorOptions::device_, device);
  }
  [[nodiscard]] TensorOptions layout(Layout layout) const { return with(&TensorOptions::layout_, layout); }
  [[nodiscard]] TensorOptions requires_grad(bool on) const { return with(&TensorOptions::requires_grad_, on); }
  [[nodiscard]] TensorOptions pinned_memory(bool on) const { return with(&TensorOptions::pinned_memory_, on); }

  ScalarType dtype() const { return dtype_.value_or(get_default_dtype()); }
  Device device() const { return device_.value_or(Device(DeviceType::CPU)); }
  Layout layout() const { return layout_.value_or(Layout::Strided); }
  bool requires_grad() const { return requires_grad_.value_or(false); }
  bool pinned_memory() const { return pinned_memory_.value_or(false); }

  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
  bool has_layout() const { return layout_.has_value(); }
  bool has_requires_grad() const { return requires_grad_.has_value(); }
  bool has_pinned_memory() const { return pinned_memory_.has_value(); }
  std::optional<ScalarType> dtype_opt() const { return dtype_; }
  std::optional<Device> device_opt() const { return device_; }
  std::optional<Layout> layout_opt() const { return layout_; }
  std::optional<bool> pinned_memory_opt() const { return pinned_memory_; }

  // Fields set in `o` win over this one's (how a factory applies an override).
  TensorOptions merged_with(const TensorOptions& o) const {
    TensorOptions r = *this;
    if (o.dtype_) r.dtype_ = o.dtype_;
    if (o.device_) r.device_ = o.device_;
    if (o.layout_) r.layout_ = o.layout_;
    if (o.requires_grad_) r.requires_grad_ = o.requires_grad_;
    if (o.pinned_memory_) r.pinned_memory_ = o.pinned_memory_;
    return r;
  }

  bool operator==(const TensorOptions&) const = default;

 private:
  template <class Field, class Value>
  TensorOptions with(std::optional<Field> TensorOptions::*field, Value value) const {
    TensorOptions r = *this;
    r.*field = value;
    return r;
  }

  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  std::optional<Layout> layout_;
  std::optional<bool> requires_grad_;
  std::optional<bool> pinned_memory_;
};

// Shorthands that start a chain: dk::dtype(dk::kLong).device(dk::kCPU).
inline TensorOptions dtype(ScalarType dtype) { return TensorOptions().dtype(dtype); }
inline TensorOptions device(Device device) { return TensorOptions().device(device); }
inline TensorOptions device(DeviceType type, int8_t index = -1) { return TensorOptions().device(type, index); }
inline TensorOptions layout(Layout layout) { return TensorOptions().layout(layout); }
inline TensorOptions requires_grad(bool on = true) { return TensorOptions().requires_grad(on); }

// "TensorOptions(dtype=float32, device=cpu, layout=Strided, requires_grad=false, pinned_memory=false)"
std::ostream& operator<<(std::ostream& out, const TensorOptions& options);

namespace detail {
// Constrains the generated TensorOptions overloads (Note [TensorOptions forms] in
// codegen/api/cpp.py) to a TensorOptions argument, so that dk::zeros({2}, dk::kFloat) still
// picks the plain overload.
template <class O>
using IfTensorOptions = std::enable_if_t<std::is_same_v<std::decay_t<O>, TensorOptions>, int>;
}  // namespace detail

}  // namespace dk
