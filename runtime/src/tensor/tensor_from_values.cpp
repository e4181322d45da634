// dk::tensor(...): writing literal values into a new tensor (dk/tensor/tensor_from_values.h).
#include "dk/tensor/tensor_from_values.h"

#include <cmath>

#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"

namespace dk {

namespace detail {

namespace {

// The output tensor, or an error for options this cannot honour.
Tensor emptyForValues(std::vector<int64_t> sizes, ScalarType dtype, const TensorOptions& options) {
  DK_CHECK(options.layout() == Layout::Strided, "tensor: only the strided layout is supported, got ",
           options.layout());
  DK_CHECK(!options.pinned_memory(), "tensor: pinned memory is not supported yet");
  Device device = options.device();
  DK_CHECK(device.type == DeviceType::CPU || device.type == DeviceType::Meta,
           "tensor: values can only be written to a cpu tensor here, not ", device,
           " (make it on the cpu and copy it)");
  return empty_contiguous(sizes, dtype, device);
}

template <class T>
T fromInteger(int64_t v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(static_cast<float>(v));
  else return static_cast<T>(v);  // integers wrap modulo 2^n, as in PyTorch
}

template <class T>
T fromFloat(double v, ScalarType dtype) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    // Out-of-range float -> integer conversion is undefined in C++: refuse it instead.
    DK_CHECK(std::isfinite(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0, "tensor: value ", v,
             " cannot be converted to dtype ", dtype);
    return static_cast<T>(static_cast<int64_t>(v));
  }
}

}  // namespace

Tensor tensorFromIntegers(const std::vector<int64_t>& values, std::vector<int64_t> sizes, ScalarType natural,
                          const TensorOptions& options) {
  ScalarType dtype = options.has_dtype() ? options.dtype() : natural;
  Tensor out = emptyForValues(std::move(sizes), dtype, options);
  if (out.is_meta()) return applyRequiresGrad(out, options);
  dispatchDtype(dtype, "tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = out.data_ptr<T>();
    for (size_t i = 0; i < values.size(); ++i) data[i] = fromInteger<T>(values[i]);
  });
  return applyRequiresGrad(out, options);
}

Tensor tensorFromFloats(const std::vector<double>& values, std::vector<int64_t> sizes, const TensorOptions& options) {
  ScalarType dtype = options.has_dtype() ? options.dtype() : get_default_dtype();
  Tensor out = emptyForValues(std::move(sizes), dtype, options);
  if (out.is_meta()) return applyRequiresGrad(out, options);
  dispatchDtype(dtype, "tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = out.data_ptr<T>();
    for (size_t i = 0; i < values.size(); ++i) data[i] = fromFloat<T>(values[i], dtype);
  });
  return applyRequiresGrad(out, options);
}

void throwRaggedList(int64_t dim, int64_t expected, int64_t got) {
  DK_ERROR("tensor: ragged nested list: expected ", expected, " elements at dim ", dim, ", got ", got);
}

}  // namespace detail

}  // namespace dk
