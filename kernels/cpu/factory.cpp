// Factories on the cpu: empty, zeros, ones, full, arange, rand, randn.
//
// Note [CPU random numbers]
// Each element draws from the Generator (the default one when none is given) in order, so a
// seed fixes every value. rand: one draw of 64 bits per element, whose top bits (as many as the
// dtype's significand holds: 53 for double, 24 for float, 11 for Half, 8 for BFloat16) are
// scaled into [0, 1), which every value is exactly representable in. randn: Box-Muller on pairs
// of elements, from two 53-bit uniforms u1, u2: sqrt(-2 ln(1 - u1)) times cos(2 pi u2) for the
// first of the pair and sin(2 pi u2) for the second (an odd last element uses the cos value).
#include <cmath>
#include <cstring>
#include <numbers>

#include "dk/core/generator.h"
#include "dk/generated/ops/arange_native.h"
#include "dk/generated/ops/empty_native.h"
#include "dk/generated/ops/fill_native.h"
#include "dk/generated/ops/full_native.h"
#include "dk/generated/ops/ones_native.h"
#include "dk/generated/ops/rand_native.h"
#include "dk/generated/ops/randn_native.h"
#include "dk/generated/ops/zeros_native.h"
#include "dk/tensor/empty_tensor.h"
#include "meta/shape_functions.h"
#include "tensor_iterator.h"

namespace dk::native {

namespace {

void checkFactoryOptions(const char* op, std::optional<Layout> layout, std::optional<Device> device,
                         std::optional<bool> pin_memory) {
  DK_CHECK(!layout || *layout == Layout::Strided, op, ": only the strided layout is supported, got ", *layout);
  DK_CHECK(!device || device->is_cpu(), op, ": the cpu kernel cannot make a tensor on ", device->str());
  DK_CHECK(!pin_memory || !*pin_memory, op, ": pinned memory is not supported yet");
}

Tensor emptyFactory(const char* op, IntArrayRef size, ScalarType dtype, std::optional<Layout> layout,
                    std::optional<Device> device, std::optional<bool> pin_memory) {
  checkFactoryOptions(op, layout, device, pin_memory);
  return detail::empty_contiguous(size, dtype, Device(DeviceType::CPU));
}

// Uniform in [0, 1) with as many random bits as T's significand (Note [CPU random numbers]).
template <class T>
T uniformFromBits(uint64_t bits) {
  if constexpr (std::is_same_v<T, double>) {
    return static_cast<double>(bits >> 11) * 0x1.0p-53;
  } else {
    constexpr int kBits = std::is_same_v<T, float> ? 24 : std::is_same_v<T, Half> ? 11 : 8;
    constexpr float kScale = 1.0f / static_cast<float>(uint64_t{1} << kBits);
    return static_cast<T>(static_cast<float>(bits >> (64 - kBits)) * kScale);
  }
}

Generator generatorOrDefault(const std::optional<Generator>& generator) {
  return generator ? *generator : defaultGenerator();
}

Tensor randImpl(IntArrayRef size, const std::optional<Generator>& generator, std::optional<ScalarType> dtype,
                std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType type = dtype.value_or(get_default_dtype());
  Tensor result = emptyFactory("rand", size, type, layout, device, pin_memory);
  Generator gen = generatorOrDefault(generator);
  DK_DISPATCH_FLOATING_TYPES(type, "rand", [&] {
    auto* p = static_cast<scalar_t*>(result.data_ptr());
    for (int64_t i = 0; i < result.numel(); ++i) p[i] = uniformFromBits<scalar_t>(gen->random64());
  });
  return result;
}

Tensor randnImpl(IntArrayRef size, const std::optional<Generator>& generator, std::optional<ScalarType> dtype,
                 std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  ScalarType type = dtype.value_or(get_default_dtype());
  Tensor result = emptyFactory("randn", size, type, layout, device, pin_memory);
  Generator gen = generatorOrDefault(generator);
  DK_DISPATCH_FLOATING_TYPES(type, "randn", [&] {
    auto* p = static_cast<scalar_t*>(result.data_ptr());
    const int64_t n = result.numel();
    for (int64_t i = 0; i < n; i += 2) {
      double u1 = uniformFromBits<double>(gen->random64());
      double u2 = uniformFromBits<double>(gen->random64());
      double radius = std::sqrt(-2.0 * std::log(1.0 - u1));
      double angle = 2.0 * std::numbers::pi * u2;
      p[i] = convertValue<scalar_t>(radius * std::cos(angle));
      if (i + 1 < n) p[i + 1] = convertValue<scalar_t>(radius * std::sin(angle));
    }
  });
  return result;
}

}  // namespace

Tensor empty_strided_cpu(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                         std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  checkFactoryOptions("empty_strided", layout, device, pin_memory);
  return detail::empty_strided(size, stride, dtype.value_or(get_default_dtype()), Device(DeviceType::CPU));
}

// memory_format: Contiguous (the default) or ChannelsLast for 4-dim sizes.
Tensor empty_cpu(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                 std::optional<Device> device, std::optional<bool> pin_memory,
                 std::optional<MemoryFormat> memory_format) {
  checkFactoryOptions("empty", layout, device, pin_memory);
  ScalarType type = dtype.value_or(get_default_dtype());
  MemoryFormat format = memory_format.value_or(MemoryFormat::Contiguous);
  if (format == MemoryFormat::Contiguous) return detail::empty_contiguous(size, type, Device(DeviceType::CPU));
  DK_CHECK(format == MemoryFormat::ChannelsLast, "unsupported memory format ", format);
  DK_CHECK(size.size() == 4, "required rank 4 tensor to use channels_last format");
  for (int64_t s : size) DK_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", size);
  // NHWC in memory: C innermost, then W, H, N.
  int64_t c = std::max<int64_t>(size[1], 1), h = std::max<int64_t>(size[2], 1), w = std::max<int64_t>(size[3], 1);
  std::vector<int64_t> strides{h * w * c, 1, w * c, c};
  return detail::empty_strided(size, strides, type, Device(DeviceType::CPU));
}

Tensor zeros_cpu(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                 std::optional<Device> device, std::optional<bool> pin_memory) {
  Tensor result = emptyFactory("zeros", size, dtype.value_or(get_default_dtype()), layout, device, pin_memory);
  if (result.numel() > 0) std::memset(result.data_ptr(), 0, result.nbytes());
  return result;
}

Tensor ones_cpu(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                std::optional<Device> device, std::optional<bool> pin_memory) {
  Tensor result = emptyFactory("ones", size, dtype.value_or(get_default_dtype()), layout, device, pin_memory);
  return fill_inplace_cpu(result, Scalar(int64_t{1}));
}

// Without a dtype, the fill value decides it, as in PyTorch: bool -> Bool, integer -> Long,
// floating -> get_default_dtype().
Tensor full_cpu(IntArrayRef size, const Scalar& fill_value, std::optional<ScalarType> dtype,
                std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  Tensor result = emptyFactory("full", size, meta::fullDtype(fill_value, dtype), layout, device, pin_memory);
  return fill_inplace_cpu(result, fill_value);
}

// Values start + i * step for i in [0, ceil((end - start) / step)), computed in int64 for
// integer dtypes and in double otherwise. The dtype (without one: Long, or get_default_dtype()
// when any of start, end, step is floating), the bounds checks and the length are
// meta::arangeDtype's and meta::arangeLength's.
Tensor arange_cpu(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<ScalarType> dtype,
                  std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  const ScalarType type = meta::arangeDtype(start, end, step, dtype);
  checkFactoryOptions("arange", layout, device, pin_memory);
  const int64_t n = meta::arangeLength(start, end, step, type);
  return DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(type, "arange", [&]() -> Tensor {
    using Acc = std::conditional_t<std::is_integral_v<scalar_t>, int64_t, double>;
    const Acc xstart = scalarTo<Acc>(start), xstep = scalarTo<Acc>(step);
    Tensor result = detail::empty_contiguous({n}, type, Device(DeviceType::CPU));
    auto* p = static_cast<scalar_t*>(result.data_ptr());
    for (int64_t i = 0; i < n; ++i)
      p[i] = convertValue<scalar_t>(addValues(xstart, mulValues(static_cast<Acc>(i), xstep)));
    return result;
  });
}

Tensor rand_cpu(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                std::optional<Device> device, std::optional<bool> pin_memory) {
  return randImpl(size, std::nullopt, dtype, layout, device, pin_memory);
}

Tensor rand_cpu(IntArrayRef size, std::optional<Generator> generator, std::optional<ScalarType> dtype,
                std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  return randImpl(size, generator, dtype, layout, device, pin_memory);
}

Tensor randn_cpu(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                 std::optional<Device> device, std::optional<bool> pin_memory) {
  return randnImpl(size, std::nullopt, dtype, layout, device, pin_memory);
}

Tensor randn_cpu(IntArrayRef size, std::optional<Generator> generator, std::optional<ScalarType> dtype,
                 std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  return randnImpl(size, generator, dtype, layout, device, pin_memory);
}

}  // namespace dk::native
