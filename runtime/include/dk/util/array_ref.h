// dk/util/array_ref.h: a non-owning view of contiguous elements, constructible from a vector, an
// array or a braced list, so that `dk::sum(x, {0, 1})` works. Unboxed list arguments use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <vector>

#include "dk/util/error.h"

namespace dk {

template <class T>
class ArrayRef {
 public:
  using value_type = T;
  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT: implicit
  // The list must outlive the view: fine for an argument of the call it is written in.
#if defined(__GNUC__) && !defined(__clang__)  // a GCC warning; clang has no such group
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr ArrayRef(std::initializer_list<T> list)  // NOLINT: implicit
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  template <size_t N>
  constexpr ArrayRef(const T (&array)[N]) : data_(array), size_(N) {}  // NOLINT: implicit
  constexpr ArrayRef(const T& single) : data_(&single), size_(1) {}     // NOLINT: implicit

  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  std::reverse_iterator<const T*> rbegin() const { return std::reverse_iterator<const T*>(end()); }
  std::reverse_iterator<const T*> rend() const { return std::reverse_iterator<const T*>(begin()); }
  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  constexpr const T& front() const { return data_[0]; }
  constexpr const T& back() const { return data_[size_ - 1]; }
  // The elements from n on; the m elements from n on.
  ArrayRef slice(size_t n) const {
    DK_CHECK(n <= size_, "ArrayRef slice start ", n, " out of range for size ", size_);
    return ArrayRef(data_ + n, size_ - n);
  }
  ArrayRef slice(size_t n, size_t m) const {
    DK_CHECK(n + m <= size_, "ArrayRef slice [", n, ", ", n + m, ") out of range for size ", size_);
    return ArrayRef(data_ + n, m);
  }
  const T& at(size_t i) const {
    DK_CHECK(i < size_, "ArrayRef index ", i, " out of range for size ", size_);
    return data_[i];
  }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  // A copy, as c10::ArrayRef converts: std::vector<int64_t> sizes = t.sizes();
  operator std::vector<T>() const { return vec(); }  // NOLINT: implicit
  bool equals(ArrayRef other) const {
    if (size_ != other.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == other.data_[i])) return false;
    return true;
  }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

template <class T>
std::ostream& operator<<(std::ostream& out, ArrayRef<T> list) {
  out << "[";
  for (size_t i = 0; i < list.size(); ++i) out << (i ? ", " : "") << list[i];
  return out << "]";
}

// Element-wise equality, also with a vector on either side (t.sizes() == std::vector<int64_t>{2, 3}).
template <class T>
bool operator==(ArrayRef<T> a, ArrayRef<T> b) {
  return a.equals(b);
}
template <class T>
bool operator==(ArrayRef<T> a, const std::vector<T>& b) {
  return a.equals(b);
}
template <class T>
bool operator==(const std::vector<T>& a, ArrayRef<T> b) {
  return b.equals(a);
}
template <class T>
bool operator!=(ArrayRef<T> a, ArrayRef<T> b) {
  return !a.equals(b);
}
template <class T>
bool operator!=(ArrayRef<T> a, const std::vector<T>& b) {
  return !a.equals(b);
}
template <class T>
bool operator!=(const std::vector<T>& a, ArrayRef<T> b) {
  return !b.equals(a);
}

using IntArrayRef = ArrayRef<int64_t>;

}  // namespace dk
