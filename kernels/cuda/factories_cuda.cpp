// CUDA kernels of the factories: empty, zeros, ones, full, arange, rand, randn. BackendSelect
// sends a factory here when its device argument is a CUDA device.
#include "../meta/shape_functions.h"
#include "cuda_utils.h"
#include "device_guard.h"
#include "dk/core/generator.h"
#include "dk/generated/ops/arange_native.h"
#include "dk/generated/ops/empty_native.h"
#include "dk/generated/ops/full_native.h"
#include "dk/generated/ops/ones_native.h"
#include "dk/generated/ops/rand_native.h"
#include "dk/generated/ops/randn_native.h"
#include "dk/generated/ops/zeros_native.h"
#include "dk/tensor/empty_tensor.h"

namespace dk::native {

namespace {

// A factory's contiguous output on the resolved CUDA device, after the options checks.
Tensor emptyForFactory(const char* op, IntArrayRef size, ScalarType dtype, std::optional<Layout> layout,
                       std::optional<Device> device, std::optional<bool> pin_memory) {
  Device target = cuda::resolveDevice(device.value_or(Device(DeviceType::CUDA)));
  meta::checkFactoryOptions(op, layout, pin_memory, target);
  return cuda::emptyCuda(size, dtype, target);
}

// The key of a random launch: 64 bits drawn from the generator, so successive calls differ and
// a manual seed reproduces them.
uint64_t randomSeed(const std::optional<Generator>& generator) {
  return generator ? (*generator)->random64() : defaultGenerator()->random64();
}

}  // namespace

Tensor empty_strided_cuda(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                          std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  Device target = cuda::resolveDevice(device.value_or(Device(DeviceType::CUDA)));
  meta::checkFactoryOptions("empty_strided", layout, pin_memory, target);
  return detail::empty_strided(size, stride, dtype.value_or(get_default_dtype()), target);
}

Tensor empty_cuda(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory,
                  std::optional<MemoryFormat> memory_format) {
  Device target = cuda::resolveDevice(device.value_or(Device(DeviceType::CUDA)));
  meta::checkFactoryOptions("empty", layout, pin_memory, target);
  std::vector<int64_t> strides = meta::stridesForMemoryFormat(size, memory_format);
  return detail::empty_strided(size, strides, dtype.value_or(get_default_dtype()), target);
}

Tensor zeros_cuda(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory) {
  Tensor out = emptyForFactory("zeros", size, dtype.value_or(get_default_dtype()), layout, device, pin_memory);
  cuda::fillCuda(out, 0);
  return out;
}

Tensor ones_cuda(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                 std::optional<Device> device, std::optional<bool> pin_memory) {
  Tensor out = emptyForFactory("ones", size, dtype.value_or(get_default_dtype()), layout, device, pin_memory);
  cuda::fillCuda(out, 1);
  return out;
}

Tensor full_cuda(IntArrayRef size, const Scalar& fill_value, std::optional<ScalarType> dtype,
                 std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType result_dtype = meta::fullDtype(fill_value, dtype);
  Tensor out = emptyForFactory("full", size, result_dtype, layout, device, pin_memory);
  meta::checkFillValue(fill_value, result_dtype);
  cuda::fillCuda(out, fill_value);
  return out;
}

Tensor arange_cuda(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<ScalarType> dtype,
                   std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType result_dtype = meta::arangeDtype(start, end, step, dtype);
  int64_t length = meta::arangeLength(start, end, step, result_dtype);
  Tensor out = emptyForFactory("arange", {length}, result_dtype, layout, device, pin_memory);
  cuda::launch::arange(cuda::toLaunchDtype(result_dtype), out.data_ptr(), length, cuda::scalarArg(start),
                       cuda::scalarArg(step));
  return out;
}

Tensor rand_cuda(IntArrayRef size, std::optional<Generator> generator, std::optional<ScalarType> dtype,
                 std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType result_dtype = dtype.value_or(get_default_dtype());
  meta::checkRandomDtype("rand", result_dtype);
  Tensor out = emptyForFactory("rand", size, result_dtype, layout, device, pin_memory);
  cuda::launch::uniform(cuda::toLaunchDtype(result_dtype), out.data_ptr(), out.numel(), randomSeed(generator));
  return out;
}

Tensor rand_cuda(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                 std::optional<Device> device, std::optional<bool> pin_memory) {
  return rand_cuda(size, std::nullopt, dtype, layout, device, pin_memory);
}

Tensor randn_cuda(IntArrayRef size, std::optional<Generator> generator, std::optional<ScalarType> dtype,
                  std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType result_dtype = dtype.value_or(get_default_dtype());
  meta::checkRandomDtype("randn", result_dtype);
  Tensor out = emptyForFactory("randn", size, result_dtype, layout, device, pin_memory);
  cuda::launch::normal(cuda::toLaunchDtype(result_dtype), out.data_ptr(), out.numel(), randomSeed(generator));
  return out;
}

Tensor randn_cuda(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory) {
  return randn_cuda(size, std::nullopt, dtype, layout, device, pin_memory);
}

}  // namespace dk::native
