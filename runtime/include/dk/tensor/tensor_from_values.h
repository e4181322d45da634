// dk/tensor/tensor_from_values.h: dk::tensor(...), a tensor holding the values written in the call.
//
//   dk::tensor(3.5)                    // 0-dim, float32
//   dk::tensor({1.0, 2.0})             // float32 [2]
//   dk::tensor({{1, 2}, {3, 4}})       // int64 [2, 2]
//   dk::tensor({true, false})          // bool [2]
//   dk::tensor({1, 2}, dk::kHalf)      // options override dtype (and device)
//
// The dtype follows Python's torch.tensor: floating values give get_default_dtype() (float32),
// integers give int64, bools give bool. Up to 4 nested levels; every list at one level must have
// the same length ("tensor: ragged nested list: expected 2 elements at dim 1, got 3"). The data
// is written on the CPU; a meta tensor gets the shape only; other devices are refused (copying
// there needs an operator).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_options.h"

namespace dk {

namespace detail {

// Builders behind dk::tensor: `values` row-major, `natural` the dtype the values imply.
Tensor tensorFromIntegers(const std::vector<int64_t>& values, std::vector<int64_t> sizes, ScalarType natural,
                          const TensorOptions& options);
Tensor tensorFromFloats(const std::vector<double>& values, std::vector<int64_t> sizes, const TensorOptions& options);
[[noreturn]] void throwRaggedList(int64_t dim, int64_t expected, int64_t got);

template <class T>
struct NestedListTraits {  // a single value
  static constexpr int depth = 0;
  using value_type = T;
};
template <class T>
struct NestedListTraits<std::initializer_list<T>> {
  static constexpr int depth = 1 + NestedListTraits<T>::depth;
  using value_type = typename NestedListTraits<T>::value_type;
};

// Flattens `list` into `out`, recording each level's length in `sizes` (-1: not seen yet).
template <class Wide, class List>
void flattenNestedList(const List& list, size_t dim, std::vector<int64_t>& sizes, std::vector<Wide>& out) {
  if constexpr (NestedListTraits<List>::depth == 0) {
    out.push_back(static_cast<Wide>(list));
  } else {
    auto n = static_cast<int64_t>(list.size());
    if (sizes[dim] < 0) sizes[dim] = n;
    else if (sizes[dim] != n) throwRaggedList(static_cast<int64_t>(dim), sizes[dim], n);
    for (const auto& item : list) flattenNestedList(item, dim + 1, sizes, out);
  }
}

template <class List>
Tensor tensorFromNestedList(const List& list, const TensorOptions& options) {
  using Value = typename NestedListTraits<List>::value_type;
  static_assert(std::is_arithmetic_v<Value>, "dk::tensor takes numbers and bools");
  std::vector<int64_t> sizes(NestedListTraits<List>::depth, -1);
  if constexpr (std::is_floating_point_v<Value>) {
    std::vector<double> values;
    flattenNestedList(list, 0, sizes, values);
    for (int64_t& s : sizes) s = s < 0 ? 0 : s;  // levels under an empty list
    return tensorFromFloats(values, std::move(sizes), options);
  } else {
    std::vector<int64_t> values;
    flattenNestedList(list, 0, sizes, values);
    for (int64_t& s : sizes) s = s < 0 ? 0 : s;
    return tensorFromIntegers(values, std::move(sizes), std::is_same_v<Value, bool> ? kBool : kLong, options);
  }
}

}  // namespace detail

template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(T value, const TensorOptions& options = {}) {
  return detail::tensorFromNestedList(value, options);
}
template <class T>
Tensor tensor(std::initializer_list<T> values, const TensorOptions& options = {}) {
  return detail::tensorFromNestedList(values, options);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> values, const TensorOptions& options = {}) {
  return detail::tensorFromNestedList(values, options);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> values,
              const TensorOptions& options = {}) {
  return detail::tensorFromNestedList(values, options);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> values,
              const TensorOptions& options = {}) {
  return detail::tensorFromNestedList(values, options);
}
// A 1-D tensor from a vector (std::vector<bool> included).
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(const std::vector<T>& values, const TensorOptions& options = {}) {
  std::vector<int64_t> sizes{static_cast<int64_t>(values.size())};
  if constexpr (std::is_floating_point_v<T>) {
    return detail::tensorFromFloats(std::vector<double>(values.begin(), values.end()), std::move(sizes), options);
  } else {
    return detail::tensorFromIntegers(std::vector<int64_t>(values.begin(), values.end()), std::move(sizes),
                                      std::is_same_v<T, bool> ? kBool : kLong, options);
  }
}

}  // namespace dk
