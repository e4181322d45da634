// Meta kernels of the factories: empty, zeros, ones, full, arange, rand, randn. BackendSelect
// sends a factory here when its device argument is meta.
#include "dk/generated/ops/arange_native.h"
#include "dk/generated/ops/empty_native.h"
#include "dk/generated/ops/full_native.h"
#include "dk/generated/ops/ones_native.h"
#include "dk/generated/ops/rand_native.h"
#include "dk/generated/ops/randn_native.h"
#include "dk/generated/ops/zeros_native.h"
#include "meta_output.h"
#include "shape_functions.h"

namespace dk::native {

namespace {

// A factory's contiguous meta output after the options checks.
Tensor metaFactory(const char* op, IntArrayRef size, ScalarType dtype, std::optional<Layout> layout,
                   std::optional<Device> device, std::optional<bool> pin_memory) {
  Device target = device.value_or(Device(DeviceType::Meta));
  meta::checkFactoryOptions(op, layout, pin_memory, target);
  return detail::empty_contiguous(size, dtype, target);
}

}  // namespace

Tensor empty_strided_meta(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                          std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  Device target = device.value_or(Device(DeviceType::Meta));
  meta::checkFactoryOptions("empty_strided", layout, pin_memory, target);
  return detail::empty_strided(size, stride, dtype.value_or(get_default_dtype()), target);
}

Tensor empty_meta(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory,
                  std::optional<MemoryFormat> memory_format) {
  Device target = device.value_or(Device(DeviceType::Meta));
  meta::checkFactoryOptions("empty", layout, pin_memory, target);
  std::vector<int64_t> strides = meta::stridesForMemoryFormat(size, memory_format);
  return detail::empty_strided(size, strides, dtype.value_or(get_default_dtype()), target);
}

Tensor zeros_meta(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory) {
  return metaFactory("zeros", size, dtype.value_or(get_default_dtype()), layout, device, pin_memory);
}

Tensor ones_meta(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                 std::optional<Device> device, std::optional<bool> pin_memory) {
  return metaFactory("ones", size, dtype.value_or(get_default_dtype()), layout, device, pin_memory);
}

Tensor full_meta(IntArrayRef size, const Scalar& fill_value, std::optional<ScalarType> dtype,
                 std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType result_dtype = meta::fullDtype(fill_value, dtype);
  Tensor out = metaFactory("full", size, result_dtype, layout, device, pin_memory);
  meta::checkFillValue(fill_value, result_dtype);
  return out;
}

Tensor arange_meta(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<ScalarType> dtype,
                   std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType result_dtype = meta::arangeDtype(start, end, step, dtype);
  int64_t length = meta::arangeLength(start, end, step, result_dtype);
  return metaFactory("arange", {length}, result_dtype, layout, device, pin_memory);
}

Tensor rand_meta(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                 std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType result_dtype = dtype.value_or(get_default_dtype());
  meta::checkRandomDtype("rand", result_dtype);
  return metaFactory("rand", size, result_dtype, layout, device, pin_memory);
}

Tensor rand_meta(IntArrayRef size, std::optional<Generator> /*generator*/, std::optional<ScalarType> dtype,
                 std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  return rand_meta(size, dtype, layout, device, pin_memory);
}

Tensor randn_meta(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType result_dtype = dtype.value_or(get_default_dtype());
  meta::checkRandomDtype("randn", result_dtype);
  return metaFactory("randn", size, result_dtype, layout, device, pin_memory);
}

Tensor randn_meta(IntArrayRef size, std::optional<Generator> /*generator*/, std::optional<ScalarType> dtype,
                  std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  return randn_meta(size, dtype, layout, device, pin_memory);
}

}  // namespace dk::native
