// copy_, fill_, zero_ and item on the cpu.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dk/core/parallel.h"
#include "dk/generated/ops/copy_native.h"
#include "dk/generated/ops/fill_native.h"
#include "dk/generated/ops/item_native.h"
#include "dk/generated/ops/zero_native.h"
#include "dk/tensor/empty_tensor.h"
#include "meta/shape_functions.h"
#include "tensor_iterator.h"

namespace dk::native {

namespace {

// Same dtype: elements move as raw bits of their size, so every dtype of one size shares a loop.
void copySameDtype(TensorIterator& iter, size_t itemsize) {
  auto bits = [](auto v) { return v; };
  switch (itemsize) {
    case 1: cpu_kernel<uint8_t, uint8_t>(iter, bits); break;
    case 2: cpu_kernel<uint16_t, uint16_t>(iter, bits); break;
    case 4: cpu_kernel<uint32_t, uint32_t>(iter, bits); break;
    case 8: cpu_kernel<uint64_t, uint64_t>(iter, bits); break;
    default: DK_ERROR("copy_: unexpected element size ", itemsize);
  }
}

// A copy into a contiguous [R, C] matrix from the transpose of a contiguous [C, R] one (strides
// (1, R)): the gradient of a weight used as weight.t(), made contiguous. Element by element it
// reads (or writes) one element per cache line; in 32 x 32 tiles both sides stay in the L1
// cache. Tiles of rows are split over the threads.
template <class Bits>
void copyTransposed(Bits* out, const Bits* in, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  parallel_for(0, (rows + kTile - 1) / kTile, std::max<int64_t>(1, kGrainSize / (kTile * std::max<int64_t>(cols, 1))),
               [&](int64_t first, int64_t last) {
    for (int64_t i0 = first * kTile; i0 < std::min(rows, last * kTile); i0 += kTile) {
      const int64_t i1 = std::min(rows, i0 + kTile);
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const int64_t j1 = std::min(cols, j0 + kTile);
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) out[i * cols + j] = in[j * rows + i];
      }
    }
  });
}

// copyTransposed when it applies (same dtype, a contiguous destination, a transposed source,
// large enough for tiles to pay: PyTorch's 60 x 60); false otherwise.
bool tryCopyTransposed(const Tensor& self, const Tensor& src) {
  if (self.dtype() != src.dtype() || self.dim() != 2 || src.sizes() != self.sizes() || !self.is_contiguous())
    return false;
  const int64_t rows = self.size(0), cols = self.size(1);
  if (rows * cols < 60 * 60 || src.stride(0) != 1 || src.stride(1) != rows) return false;
  auto run = [&](auto bits) {
    using Bits = decltype(bits);
    copyTransposed(static_cast<Bits*>(self.data_ptr()), static_cast<const Bits*>(src.data_ptr()), rows, cols);
    return true;
  };
  switch (self.element_size()) {
    case 1: return run(uint8_t{});
    case 2: return run(uint16_t{});
    case 4: return run(uint32_t{});
    case 8: return run(uint64_t{});
    default: return false;
  }
}

// `value` as a T, refusing values T cannot hold (meta::checkFillValue, shared with every backend).
template <class T>
T checkedScalarTo(const Scalar& value) {
  meta::checkFillValue(value, cppTypeToScalarType<T>);
  return scalarTo<T>(value);
}

}  // namespace

Tensor copy_inplace_cpu(const Tensor& self, const Tensor& src, bool non_blocking) {
  (void)non_blocking;  // host copies are synchronous
  DK_CHECK(self.defined() && src.defined(), "copy_: expected defined tensors");
  DK_CHECK(self.is_cpu() && src.is_cpu(), "copy_: the cpu kernel copies between cpu tensors only, not from ",
           src.device().str(), " to ", self.device().str(),
           " (a copy to or from another device is the job of that device's copy_ kernel)");
  if (self.is_same(src)) return self;
  assertNoInternalOverlap(self);
  meta::checkNoPartialOverlap(self, src);  // Note [Memory overlap]
  if (aliasesExactly(self, src)) return self;
  Tensor source = src;
  if (meta::mayOverlap(self, src)) {  // not dense (TooHard): read everything before writing any of it
    source = detail::empty_contiguous(src.sizes(), src.dtype(), Device(DeviceType::CPU));
    copy_inplace_cpu(source, src, false);
  }
  // Fast: one memcpy when both are dense in the same layout.
  if (self.dtype() == source.dtype() && self.is_contiguous() && source.is_contiguous() &&
      self.sizes() == source.sizes()) {
    if (self.numel() > 0) std::memcpy(self.data_ptr(), source.data_ptr(), self.nbytes());
    return self;
  }
  if (tryCopyTransposed(self, source)) return self;
  TensorIterator iter = TensorIterator::overOperands("copy_", {self, source});
  if (self.dtype() == source.dtype()) {
    copySameDtype(iter, self.element_size());
  } else {
    DK_DISPATCH_ALL_TYPES(self.dtype(), "copy_", [&] {
      using To = scalar_t;
      DK_DISPATCH_ALL_TYPES(source.dtype(), "copy_", [&] {
        cpu_kernel<To, scalar_t>(iter, [](opmath_t<scalar_t> v) { return convertValue<To>(v); });
      });
    });
  }
  return self;
}

Tensor fill_inplace_cpu(const Tensor& self, const Scalar& value) {
  checkOnCpu("fill_", self);
  DK_DISPATCH_ALL_TYPES(self.dtype(), "fill_", [&] {
    const scalar_t v = checkedScalarTo<scalar_t>(value);
    if (self.numel() == 0) return;
    TensorIterator iter = TensorIterator::overOperands("fill_", {self});
    iter.forEachRun([&](char* const* data, const int64_t* strides, int64_t n) {
      if (strides[0] == static_cast<int64_t>(sizeof(scalar_t))) {
        auto* p = reinterpret_cast<scalar_t*>(data[0]);
        for (int64_t i = 0; i < n; ++i) p[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<scalar_t*>(data[0] + i * strides[0]) = v;
      }
    });
  });
  return self;
}

Tensor zero_inplace_cpu(const Tensor& self) {
  checkOnCpu("zero_", self);
  // Fast: zero is all-zero bits in every dtype.
  if (self.is_contiguous()) {
    if (self.numel() > 0) std::memset(self.data_ptr(), 0, self.nbytes());
    return self;
  }
  return fill_inplace_cpu(self, Scalar(int64_t{0}));
}

Scalar item_cpu(const Tensor& self) {
  checkOnCpu("item", self);
  DK_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  return DK_DISPATCH_ALL_TYPES(self.dtype(), "item", [&]() -> Scalar {
    scalar_t v = *static_cast<const scalar_t*>(self.data_ptr());
    if constexpr (std::is_same_v<scalar_t, bool>) return Scalar(v);
    else if constexpr (std::is_integral_v<scalar_t>) return Scalar(static_cast<int64_t>(v));
    else return Scalar(static_cast<double>(static_cast<opmath_t<scalar_t>>(v)));
  });
}

}  // namespace dk::native
