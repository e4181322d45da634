// Reductions on the cpu: sum (all, and over dims), mean over dims, max over a dim, argmax.
//
// Note [CPU reductions]
// sum and mean accumulate into a buffer with the keepdim shape, seen through a view with the
// input's sizes and stride 0 on the reduced dims; a TensorIterator over (buffer view, input)
// then walks the input in memory order (Note [Iteration order]), and each run of the innermost
// dim either folds into one accumulator (the run is along a reduced dim) or adds elementwise
// (it is not). Floating inputs accumulate in double, integers and bools in int64 (wrapping),
// and the buffer is converted to the result dtype at the end. max.dim and argmax scan the
// reduced dim for each output element, keeping the first index of the maximum; a NaN is a
// maximum no later value replaces.
#include <cmath>
#include <cstring>

#include "dk/generated/ops/argmax_native.h"
#include "dk/generated/ops/copy_native.h"
#include "dk/generated/ops/max_native.h"
#include "dk/generated/ops/mean_native.h"
#include "dk/generated/ops/sum_native.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "tensor_iterator.h"

namespace dk::native {

namespace {

// Which dims of a `ndim`-dim tensor `dims` names: all of them when dims is absent or empty
// (PyTorch 1.13's rule for sum and mean). Errors: maybe_wrap_dim's, and
// "dim 0 appears multiple times in the list of dims".
std::vector<bool> reducedDims(std::optional<IntArrayRef> dims, int64_t ndim) {
  std::vector<bool> reduced(static_cast<size_t>(ndim), false);
  if (!dims || dims->empty()) {
    reduced.assign(static_cast<size_t>(ndim), true);
    return reduced;
  }
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : *dims) {
    int64_t wrapped = maybe_wrap_dim(d, ndim);
    DK_CHECK(!seen[static_cast<size_t>(wrapped)], "dim ", wrapped, " appears multiple times in the list of dims");
    seen[static_cast<size_t>(wrapped)] = true;
    if (ndim > 0) reduced[static_cast<size_t>(wrapped)] = true;
  }
  return reduced;
}

std::vector<int64_t> keepdimShape(IntArrayRef sizes, const std::vector<bool>& reduced) {
  std::vector<int64_t> shape = sizes.vec();
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) shape[d] = 1;
  return shape;
}

std::vector<int64_t> resultShape(IntArrayRef sizes, const std::vector<bool>& reduced, bool keepdim) {
  if (keepdim) return keepdimShape(sizes, reduced);
  std::vector<int64_t> shape;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (!reduced[d]) shape.push_back(sizes[d]);
  return shape;
}

// A run of n elements folded into one value: four independent sums, so the additions overlap.
template <class Acc, class T>
Acc sumRun(const char* p, int64_t stride, int64_t n) {
  Acc s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  auto at = [&](int64_t i) {
    return static_cast<Acc>(static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(p + i * stride)));
  };
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 = addValues(s0, at(i));
    s1 = addValues(s1, at(i + 1));
    s2 = addValues(s2, at(i + 2));
    s3 = addValues(s3, at(i + 3));
  }
  for (; i < n; ++i) s0 = addValues(s0, at(i));
  return addValues(addValues(s0, s1), addValues(s2, s3));
}

// Sums `input` over the reduced dims into a new contiguous tensor of dtype Acc (Double or Long)
// with the keepdim shape (Note [CPU reductions]).
template <class Acc>
Tensor accumulate(const char* op, const Tensor& input, const std::vector<bool>& reduced) {
  std::vector<int64_t> keepShape = keepdimShape(input.sizes(), reduced);
  Tensor acc = detail::empty_contiguous(keepShape, cppTypeToScalarType<Acc>, Device(DeviceType::CPU));
  if (acc.numel() > 0) std::memset(acc.data_ptr(), 0, acc.nbytes());
  if (input.numel() == 0) return acc;
  std::vector<int64_t> viewStrides = acc.strides();
  for (size_t d = 0; d < viewStrides.size(); ++d)
    if (reduced[d]) viewStrides[d] = 0;
  Tensor accView = detail::make_view(acc, input.sizes(), viewStrides, 0);
  TensorIterator iter = TensorIterator::overOperands(op, {accView, input});
  DK_DISPATCH_ALL_TYPES(input.dtype(), op, [&] {
    iter.forEachRun([](char* const* data, const int64_t* strides, int64_t n) {
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
    });
  });
  return acc;
}

// `acc` (contiguous, keepdim shape) given the result shape and converted to `dtype`.
Tensor finishReduction(Tensor acc, std::vector<int64_t> shape, ScalarType dtype) {
  acc.unsafeGetTensorImpl()->set_sizes_contiguous(std::move(shape));  // drops size-1 dims only
  if (acc.dtype() == dtype) return acc;
  Tensor result = detail::empty_contiguous(acc.sizes(), dtype, Device(DeviceType::CPU));
  copy_inplace_cpu(result, acc, false);
  return result;
}

Tensor sumImpl(const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim, std::optional<ScalarType> dtype) {
  checkOnCpu("sum", self);
  std::vector<bool> reduced = reducedDims(dims, self.dim());
  // PyTorch: integral and bool inputs sum to int64 unless a dtype is given.
  ScalarType outDtype =
      dtype.value_or(isIntegralType(self.dtype(), /*includeBool=*/true) ? ScalarType::Long : self.dtype());
  dispatchDtype(outDtype, "sum", [](auto) {});  // rejects Undefined
  const bool integralResult = isIntegralType(outDtype, /*includeBool=*/false);
  // Values are summed as the result dtype; integers reach an integral result exactly without a
  // cast (int64 accumulation wraps like the narrow type would).
  Tensor input = self;
  if (self.dtype() != outDtype && !(integralResult && isIntegralType(self.dtype(), /*includeBool=*/true)))
    input = castToDtype(self, outDtype);
  Tensor acc = isIntegralType(outDtype, /*includeBool=*/true) ? accumulate<int64_t>("sum", input, reduced)
                                                               : accumulate<double>("sum", input, reduced);
  return finishReduction(std::move(acc), resultShape(self.sizes(), reduced, keepdim), outDtype);
}

// The index of the first maximum of n elements from p (step `stride` bytes); NaN wins.
template <class T>
int64_t argmaxRun(const char* p, int64_t stride, int64_t n) {
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
    if (v > best) {
      best = v;
      index = i;
    }
  }
  return index;
}

// PyTorch's zero_numel_check_dims: "max(): Expected reduction dim 0 to have non-zero size."
void checkReducedDimNonEmpty(const char* what, const Tensor& self, int64_t dim) {
  if (self.dim() == 0) return;  // maybe_wrap_dim already allowed only 0 and -1
  DK_CHECK(self.size(dim) != 0, what, ": Expected reduction dim ", dim, " to have non-zero size.");
}

// Values (when wanted) and indices of the maximum of self along dim `dim` (wrapped), keepdim shape.
void maxAlongDim(const char* op, const Tensor& self, int64_t dim, const Tensor& values, const Tensor& indices) {
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
        int64_t index = argmaxRun<scalar_t>(p, reducedStride, n);
        *reinterpret_cast<int64_t*>(data[0] + i * strides[0]) = index;
        if (withValues)
          *reinterpret_cast<scalar_t*>(data[2] + i * strides[2]) =
              *reinterpret_cast<const scalar_t*>(p + index * reducedStride);
      }
    });
  });
}

}  // namespace

Tensor sum_cpu(const Tensor& self, std::optional<ScalarType> dtype) {
  return sumImpl(self, std::nullopt, /*keepdim=*/false, dtype);
}

Tensor sum_cpu(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<ScalarType> dtype) {
  return sumImpl(self, dim, keepdim, dtype);
}

// The sum, accumulated in double, divided by the number of elements reduced (0 of them give NaN).
Tensor mean_cpu(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<ScalarType> dtype) {
  checkOnCpu("mean", self);
  ScalarType outDtype = dtype.value_or(self.dtype());
  DK_CHECK(isFloatingType(outDtype), "mean(): could not infer output dtype. ", dtype ? "Optional" : "Input",
           " dtype must be either a floating point or complex dtype. Got: ", outDtype);
  std::vector<bool> reduced = reducedDims(dim, self.dim());
  Tensor input = self.dtype() == outDtype ? self : castToDtype(self, outDtype);
  Tensor acc = accumulate<double>("mean", input, reduced);
  int64_t count = 1;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d]) count *= self.sizes()[d];
  auto* values = acc.data_ptr<double>();
  for (int64_t i = 0; i < acc.numel(); ++i) values[i] /= static_cast<double>(count);
  return finishReduction(std::move(acc), resultShape(self.sizes(), reduced, keepdim), outDtype);
}

std::tuple<Tensor, Tensor> max_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  checkOnCpu("max", self);
  int64_t d = maybe_wrap_dim(dim, self.dim());
  checkReducedDimNonEmpty("max()", self, d);
  std::vector<bool> reduced(static_cast<size_t>(self.dim()), false);
  if (self.dim() > 0) reduced[static_cast<size_t>(d)] = true;
  std::vector<int64_t> keepShape = keepdimShape(self.sizes(), reduced);
  Tensor values = detail::empty_contiguous(keepShape, self.dtype(), Device(DeviceType::CPU));
  Tensor indices = detail::empty_contiguous(keepShape, ScalarType::Long, Device(DeviceType::CPU));
  maxAlongDim("max", self, d, values, indices);
  if (!keepdim) {
    std::vector<int64_t> shape = resultShape(self.sizes(), reduced, false);
    values.unsafeGetTensorImpl()->set_sizes_contiguous(shape);
    indices.unsafeGetTensorImpl()->set_sizes_contiguous(shape);
  }
  return {values, indices};
}

// With dim None the input counts as flattened; the result is 0-dim, or all ones with keepdim.
Tensor argmax_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  checkOnCpu("argmax", self);
  dispatchDtypeIn<kAllDtypesExceptBool>(self.dtype(), "argmax", [](auto) {});
  if (dim) {
    int64_t d = maybe_wrap_dim(*dim, self.dim());
    checkReducedDimNonEmpty("argmax()", self, d);
    std::vector<bool> reduced(static_cast<size_t>(self.dim()), false);
    if (self.dim() > 0) reduced[static_cast<size_t>(d)] = true;
    Tensor indices =
        detail::empty_contiguous(keepdimShape(self.sizes(), reduced), ScalarType::Long, Device(DeviceType::CPU));
    maxAlongDim("argmax", self, d, Tensor(), indices);
    if (!keepdim) indices.unsafeGetTensorImpl()->set_sizes_contiguous(resultShape(self.sizes(), reduced, false));
    return indices;
  }
  DK_CHECK(self.numel() != 0, "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  Tensor flat = self.is_contiguous() ? self : castToDtype(self, self.dtype());
  flat = detail::make_view(flat, {flat.numel()}, {1}, flat.storage_offset());
  Tensor index = detail::empty_contiguous({1}, ScalarType::Long, Device(DeviceType::CPU));
  maxAlongDim("argmax", flat, 0, Tensor(), index);
  std::vector<int64_t> shape;
  if (keepdim) shape.assign(static_cast<size_t>(self.dim()), 1);
  index.unsafeGetTensorImpl()->set_sizes_contiguous(shape);
  return index;
}

}  // namespace dk::native
