// Reductions on the cpu: sum (all, and over dims), mean over dims, max and min over a dim,
// argmax, argmin. All but the full sum are structured (meta() in kernels/meta/reduce_structured.cpp has checked the
// dims and dtypes and given each output its sizes and dtype), so they write into given outputs.
//
// Note [CPU reductions]
// sum and mean accumulate into a buffer with the keepdim shape, seen through a view with the
// input's sizes and stride 0 on the reduced dims; a TensorIterator over (buffer view, input)
// then walks the input in memory order (Note [Iteration order]), and each run of the innermost
// dim either folds into one accumulator (the run is along a reduced dim) or adds elementwise
// (it is not). Floating inputs accumulate in double, integers and bools in int64 (wrapping),
// and the buffer is converted into the output at the end; an output that is contiguous and of
// the accumulator's dtype is the buffer itself. max.dim, min.dim, argmax and argmin scan the
// reduced dim for each output element, keeping the first index of the maximum (minimum); a NaN
// is an extremum no later value replaces.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "meta/shape_functions.h"
#include "dk/generated/ops/argmax_native.h"
#include "dk/generated/ops/copy_native.h"
#include "dk/generated/ops/argmin_native.h"
#include "dk/generated/ops/max_native.h"
#include "dk/generated/ops/min_native.h"
#include "dk/generated/ops/mean_native.h"
#include "dk/generated/ops/sum_native.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "tensor_iterator.h"
#include "vec_math.h"

namespace dk::native {

namespace {

std::vector<int64_t> keepdimShape(IntArrayRef sizes, const meta::DimMask& reduced) {
  std::vector<int64_t> shape = sizes.vec();
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) shape[d] = 1;
  return shape;
}

// A run of n elements folded into one value. A contiguous run of float or double into a double
// accumulator goes to the vectorized sum (Note [Vectorized math]); any other run is summed in
// four partial sums, so the additions overlap.
template <class Acc, class T>
Acc sumRun(const char* p, int64_t stride, int64_t n) {
  if constexpr (std::is_same_v<Acc, double> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    if (stride == static_cast<int64_t>(sizeof(T))) {
      const T* values = reinterpret_cast<const T*>(p);
      if constexpr (std::is_same_v<T, float>) return vec::floatMath().sum(values, n);
      else return vec::doubleMath().sum(values, n);
    }
  }
  auto at = [&](int64_t i) {
    return static_cast<Acc>(static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(p + i * stride)));
  };
  int64_t i = 0;
  Acc s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (; i + 4 <= n; i += 4) {
    s0 = addValues(s0, at(i));
    s1 = addValues(s1, at(i + 1));
    s2 = addValues(s2, at(i + 2));
    s3 = addValues(s3, at(i + 3));
  }
  for (; i < n; ++i) s0 = addValues(s0, at(i));
  return addValues(addValues(s0, s1), addValues(s2, s3));
}

// Adds `input` over the reduced dims into `acc` (contiguous, dtype Acc: Double or Long, the
// keepdim shape, zeroed here) (Note [CPU reductions]).
template <class Acc>
void accumulate(const char* op, const Tensor& input, const meta::DimMask& reduced, const Tensor& acc) {
  if (acc.numel() > 0) std::memset(acc.data_ptr(), 0, acc.nbytes());
  if (input.numel() == 0) return;
  std::vector<int64_t> viewStrides = acc.strides();
  for (size_t d = 0; d < viewStrides.size(); ++d)
    if (reduced[d]) viewStrides[d] = 0;
  Tensor accView = detail::make_view(acc, input.sizes(), viewStrides, acc.storage_offset());
  TensorIterator iter = TensorIterator::overOperands(op, {accView, input});
  DK_DISPATCH_ALL_TYPES(input.dtype(), op, [&] {
    const auto run = [](char* const* data, const int64_t* strides, int64_t n) {
      if (strides[0] == 0) {
        Acc* out = reinterpret_cast<Acc*>(data[0]);
        *out = addValues(*out, sumRun<Acc, scalar_t>(data[1], strides[1], n));
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        Acc* out = reinterpret_cast<Acc*>(data[0] + i * strides[0]);
        auto v = static_cast<opmath_t<scalar_t>>(*reinterpret_cast<const scalar_t*>(data[1] + i * strides[1]));
        *out = addValues(*out, static_cast<Acc>(v));
      }
    };
    if (acc.numel() != 1 || iter.numel() <= kGrainSize || !detail::parallelAvailable()) {
      iter.forEachRun(run);
      return;
    }
    // A full reduction of a large input: each chunk (Note [Intra-op parallelism]) sums its part
    // into its own accumulator, and the parts are added in the order of the chunks.
    std::mutex m;
    std::vector<std::pair<int64_t, Acc>> parts;
    parallel_for(0, iter.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
      Acc part = 0;
      iter.forEachRunIn(begin, end, [&](char* const* data, const int64_t* strides, int64_t n) {
        part = addValues(part, sumRun<Acc, scalar_t>(data[1], strides[1], n));
      });
      std::lock_guard<std::mutex> lock(m);
      parts.emplace_back(begin, part);
    });
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Acc* out = acc.data_ptr<Acc>();
    for (const auto& part : parts) *out = addValues(*out, part.second);
  });
}

// The sum (mean: divided by the number of elements reduced, 0 of them giving NaN) of self over
// the reduced dims, written into `out` (its dtype is the result's; its sizes the result shape).
// Floating results accumulate in double, integral ones in int64; values are summed as out's
// dtype (integers reach an integral result exactly without a cast: int64 accumulation wraps as
// the narrow type would).
void sumInto(const char* op, const Tensor& self, const meta::DimMask& reduced, const Tensor& out, bool mean) {
  const ScalarType outDtype = out.dtype();
  const bool integralResult = isIntegralType(outDtype, /*includeBool=*/true);
  Tensor input = self;
  if (self.dtype() != outDtype && !(integralResult && isIntegralType(self.dtype(), /*includeBool=*/true)))
    input = castToDtype(self, outDtype);
  const ScalarType accDtype = integralResult ? ScalarType::Long : ScalarType::Double;
  const std::vector<int64_t> keepShape = keepdimShape(self.sizes(), reduced);
  const bool inPlace = out.dtype() == accDtype && out.is_contiguous();
  Tensor acc = inPlace ? detail::make_view(out, keepShape, computeContiguousStrides(keepShape), out.storage_offset())
                       : detail::empty_contiguous(keepShape, accDtype, Device(DeviceType::CPU));
  if (integralResult) accumulate<int64_t>(op, input, reduced, acc);
  else accumulate<double>(op, input, reduced, acc);
  if (mean) {
    int64_t count = 1;
    for (size_t d = 0; d < self.sizes().size(); ++d)
      if (reduced[d]) count *= self.sizes()[d];
    auto* values = acc.data_ptr<double>();
    for (int64_t i = 0; i < acc.numel(); ++i) values[i] /= static_cast<double>(count);
  }
  if (inPlace) return;
  copy_inplace_cpu(out, detail::make_view(acc, out.sizes(), computeContiguousStrides(out.sizes()), 0), false);
}

// The index of the first maximum (kMax) or minimum of n elements from p (step `stride` bytes);
// NaN wins either way.
template <class T, bool kMax>
int64_t argExtremumRun(const char* p, int64_t stride, int64_t n) {
  using M = opmath_t<T>;
  auto at = [&](int64_t i) { return static_cast<M>(*reinterpret_cast<const T*>(p + i * stride)); };
  M best = at(0);
  int64_t index = 0;
  if constexpr (std::is_floating_point_v<M>) {
    if (std::isnan(best)) return 0;
  }
  for (int64_t i = 1; i < n; ++i) {
    M v = at(i);
    if constexpr (std::is_floating_point_v<M>) {
      if (std::isnan(v)) return i;
    }
    if (kMax ? v > best : v < best) {
      best = v;
      index = i;
    }
  }
  return index;
}

// An output of a reduction along dim `d` of self seen with the keepdim shape: `t` itself with
// keepdim (or a 0-dim self), else `t` with a dim of size 1 put back at d.
Tensor keepdimView(const Tensor& t, const Tensor& self, int64_t d, bool keepdim) {
  if (keepdim || self.dim() == 0) return t;
  std::vector<int64_t> sizes = t.sizes();
  std::vector<int64_t> strides = t.strides();
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, 1);
  return detail::make_view(t, sizes, strides, t.storage_offset());
}

// Values (when wanted) and indices of the maximum (kMax) or minimum of self along dim `dim`
// (wrapped), keepdim shape.
template <bool kMax>
void extremumAlongDim(const char* op, const Tensor& self, int64_t dim, const Tensor& values, const Tensor& indices) {
  if (self.dim() == 0) {
    if (values.defined()) copy_inplace_cpu(values, self, false);
    *indices.data_ptr<int64_t>() = 0;
    return;
  }
  if (indices.numel() == 0) return;
  const int64_t reducedStride = self.stride(dim) * static_cast<int64_t>(self.element_size());
  const int64_t n = self.size(dim);
  // The input seen at index 0 of the reduced dim: it walks in step with the outputs.
  std::vector<int64_t> viewSizes = self.sizes();
  viewSizes[static_cast<size_t>(dim)] = 1;
  Tensor first = detail::make_view(self, viewSizes, self.strides(), self.storage_offset());
  std::vector<Tensor> operands{indices, first};
  if (values.defined()) operands.push_back(values);
  TensorIterator iter = TensorIterator::overOperands(op, std::move(operands));
  const bool withValues = values.defined();
  DK_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    iter.forEachRun([&](char* const* data, const int64_t* strides, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        const char* p = data[1] + i * strides[1];
        int64_t index = argExtremumRun<scalar_t, kMax>(p, reducedStride, n);
        *reinterpret_cast<int64_t*>(data[0] + i * strides[0]) = index;
        if (withValues)
          *reinterpret_cast<scalar_t*>(data[2] + i * strides[2]) =
              *reinterpret_cast<const scalar_t*>(p + index * reducedStride);
      }
    });
  });
}

}  // namespace

// The full sum (not structured): a 0-dim result; integral and bool inputs sum to int64 unless a
// dtype is given.
Tensor sum_cpu(const Tensor& self, std::optional<ScalarType> dtype) {
  checkOnCpu("sum", self);
  ScalarType outDtype = meta::sumDtype(self.dtype(), dtype);
  dispatchDtype(outDtype, "sum", [](auto) {});  // rejects Undefined
  Tensor out = detail::empty_contiguous({}, outDtype, Device(DeviceType::CPU));
  sumInto("sum", self, meta::makeDimMask(std::nullopt, self.dim()), out, /*mean=*/false);
  return out;
}

DK_IMPL_FUNC(sum_out_cpu)(const Tensor& self, std::optional<IntArrayRef> dim, bool /*keepdim*/,
                          std::optional<ScalarType> /*dtype*/, const Tensor& out) {
  sumInto("sum", self, meta::makeDimMask(dim, self.dim()), out, /*mean=*/false);
}

DK_IMPL_FUNC(mean_out_cpu)(const Tensor& self, std::optional<IntArrayRef> dim, bool /*keepdim*/,
                           std::optional<ScalarType> /*dtype*/, const Tensor& out) {
  sumInto("mean", self, meta::makeDimMask(dim, self.dim()), out, /*mean=*/true);
}

DK_IMPL_FUNC(max_out_cpu)(const Tensor& self, int64_t dim, bool keepdim, const Tensor& max,
                          const Tensor& max_values) {
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  extremumAlongDim<true>("max", self, d, keepdimView(max, self, d, keepdim),
                         keepdimView(max_values, self, d, keepdim));
}

DK_IMPL_FUNC(min_out_cpu)(const Tensor& self, int64_t dim, bool keepdim, const Tensor& min,
                          const Tensor& min_indices) {
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  extremumAlongDim<false>("min", self, d, keepdimView(min, self, d, keepdim),
                          keepdimView(min_indices, self, d, keepdim));
}

namespace {

// argmax and argmin: with dim None the input counts as flattened; the result is 0-dim, or all
// ones with keepdim.
template <bool kMax>
void argExtremum(const char* op, const Tensor& self, std::optional<int64_t> dim, bool keepdim, const Tensor& out) {
  if (dim) {
    const int64_t d = maybe_wrap_dim(*dim, self.dim());
    extremumAlongDim<kMax>(op, self, d, Tensor(), keepdimView(out, self, d, keepdim));
    return;
  }
  Tensor flat = contiguousCpu(self);
  flat = detail::make_view(flat, {flat.numel()}, {1}, flat.storage_offset());
  extremumAlongDim<kMax>(op, flat, 0, Tensor(), detail::make_view(out, {1}, {1}, out.storage_offset()));
}

}  // namespace

DK_IMPL_FUNC(argmax_out_cpu)(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const Tensor& out) {
  argExtremum<true>("argmax", self, dim, keepdim, out);
}

DK_IMPL_FUNC(argmin_out_cpu)(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const Tensor& out) {
  argExtremum<false>("argmin", self, dim, keepdim, out);
}

}  // namespace dk::native
