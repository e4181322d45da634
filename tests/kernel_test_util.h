// Helpers shared by the kernel tests: CPU tensors from values (and 0, 1, 2, ...), values read
// back through any strides, a transposed view, and a tolerant comparison that treats NaN and infinities exactly.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"

namespace dk::test {

using Sizes = std::vector<int64_t>;
using Values = std::vector<double>;

// A double as T, the way the tests mean it (integers by truncation, exact when in range).
template <class T>
T fromDouble(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(static_cast<float>(v));
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<int64_t>(v));
  else return static_cast<T>(v);
}

// A contiguous CPU tensor of `dtype` holding `values` row-major.
inline Tensor make(const Values& values, const Sizes& sizes, ScalarType dtype = kFloat) {
  Tensor t = detail::empty_contiguous(sizes, dtype, Device(kCPU));
  REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
  dispatchDtype(dtype, "make", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* p = static_cast<T*>(t.data_ptr());
    for (size_t i = 0; i < values.size(); ++i) p[i] = fromDouble<T>(values[i]);
  });
  return t;
}

// 0, 1, 2, ... (n values).
inline Values iotaValues(int64_t n) {
  Values v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i);
  return v;
}

// A contiguous CPU tensor holding 0, 1, 2, ... in row-major order.
inline Tensor iota(const Sizes& sizes, ScalarType dtype = kFloat) {
  return make(iotaValues(computeNumel(sizes)), sizes, dtype);
}

// A float64 CPU tensor of values drawn uniformly from [lo, hi) by a generator seeded with `seed`.
inline Tensor uniformDoubles(const Sizes& sizes, uint32_t seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Values v(static_cast<size_t>(computeNumel(sizes)));
  for (double& x : v) x = dist(gen);
  return make(v, sizes, kDouble);
}

// The elements in row-major order of the logical shape, whatever the strides, as doubles.
inline Values read(const Tensor& t) {
  Values out;
  if (t.numel() == 0) return out;
  std::vector<int64_t> index(static_cast<size_t>(t.dim()), 0);
  dispatchDtype(t.dtype(), "read", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* base = static_cast<const T*>(t.data_ptr());
    for (int64_t n = 0; n < t.numel(); ++n) {
      int64_t offset = 0;
      for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
        out.push_back(static_cast<double>(static_cast<float>(base[offset])));
      else
        out.push_back(static_cast<double>(base[offset]));
      for (int64_t d = t.dim() - 1; d >= 0; --d) {
        if (++index[static_cast<size_t>(d)] < t.sizes()[static_cast<size_t>(d)]) break;
        index[static_cast<size_t>(d)] = 0;
      }
    }
  });
  return out;
}

// The transpose of a 2-d tensor, as a view.
inline Tensor transposed(const Tensor& t) {
  return detail::make_view(t, {t.size(1), t.size(0)}, {t.stride(1), t.stride(0)}, t.storage_offset());
}

// Equal within `tol` relative to max(1, |b|); NaN matches only NaN, an infinity only itself.
inline bool sameValues(const Values& a, const Values& b, double tol = 0) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return false;
    } else if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return false;
    } else if (std::fabs(a[i] - b[i]) > tol * std::max(1.0, std::fabs(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace dk::test
