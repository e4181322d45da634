// Neural-network kernels on the CPU: _softmax, _log_softmax, mse_loss, nll_loss, embedding and
// cat. Inputs may be strided; outputs are contiguous. Sums run in double (float inputs gain
// accuracy over PyTorch's float sums; results are rounded once, when stored).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "dk/core/parallel.h"
#include "dk/generated/ops/_log_softmax_native.h"
#include "dk/generated/ops/_softmax_native.h"
#include "dk/generated/ops/cat_native.h"
#include "dk/generated/ops/embedding_native.h"
#include "dk/generated/ops/mse_loss_native.h"
#include "dk/generated/ops/nll_loss_native.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"
#include "meta/shape_functions.h"
#include "vec_math.h"

namespace dk::native {

namespace {

// ---------------------------------------------------------------- element access

// Calls fn(offset) for every element of a tensor with this geometry, in row-major order;
// offsets are in elements from the first one. The innermost dim is a plain loop.
template <class F>
void forEachOffset(IntArrayRef sizes, IntArrayRef strides, F&& fn) {
  if (computeNumel(sizes) == 0) return;
  size_t ndim = sizes.size();
  if (ndim == 0) {
    fn(int64_t{0});
    return;
  }
  int64_t inner_size = sizes[ndim - 1];
  int64_t inner_stride = strides[ndim - 1];
  std::vector<int64_t> index(ndim - 1, 0);
  int64_t base = 0;
  while (true) {
    for (int64_t i = 0; i < inner_size; ++i) fn(base + i * inner_stride);
    // Advance the odometer over the outer dims.
    size_t d = ndim - 1;
    while (d > 0) {
      --d;
      base += strides[d];
      if (++index[d] < sizes[d]) break;
      base -= strides[d] * sizes[d];
      index[d] = 0;
      if (d == 0) return;
    }
    if (ndim == 1) return;
  }
}

// Value conversion with C++ static_cast semantics, through float for the 16-bit types and with
// "!= 0" for bool, as PyTorch's copy converts.
template <class To, class From>
To castValue(From v) {
  constexpr bool from_16bit = std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>;
  constexpr bool to_16bit = std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>;
  if constexpr (std::is_same_v<To, From>) return v;
  else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (from_16bit) return static_cast<float>(v) != 0.0f;
    else return v != From(0);
  } else if constexpr (to_16bit) return To(static_cast<float>(v));
  else if constexpr (from_16bit) return static_cast<To>(static_cast<float>(v));
  else return static_cast<To>(v);
}

// The element at `offset` of a tensor of any dtype, as a double (loss inputs may be of mixed
// dtypes; the function is chosen once per tensor).
using LoadAsDouble = double (*)(const void* data, int64_t offset);
LoadAsDouble loaderFor(ScalarType dtype) {
  return dispatchDtype(dtype, "load", [](auto tag) -> LoadAsDouble {
    using T = typename decltype(tag)::type;
    return [](const void* data, int64_t offset) { return castValue<double>(static_cast<const T*>(data)[offset]); };
  });
}

// The strides of `t` seen at the broadcast shape `shape`: 0 for new or expanded dims.
std::vector<int64_t> broadcastStrides(const Tensor& t, IntArrayRef shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  size_t lead = shape.size() - static_cast<size_t>(t.dim());
  for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d)
    strides[lead + d] = t.sizes()[d] == 1 ? 0 : t.strides()[d];
  return strides;
}

// ---------------------------------------------------------------- softmax

using meta::LossReduction;

// Softmax (or log-softmax) of each line of `in` along `dim`, into the contiguous `out`, by the
// vectorized line function (Note [Vectorized math]): exp(x - max) * (1 / sum(exp(x - max))),
// log: (x - max) - log(sum(exp(x - max))), in PyTorch's order of operations. Subtracting the
// line's max keeps exp from overflowing. A contiguous line of float or double (softmax over the
// last dim) is read and written in place; any other is copied into a buffer of the accumulation
// type first, so both give the same values.
template <class In, class Out, bool kLog>
void softmaxLines(const Tensor& in, const Tensor& out, int64_t dim) {
  using Acc = std::conditional_t<std::is_same_v<In, double>, double, float>;
  const vec::MathFunctions<Acc>& math = vec::mathFor<Acc>();
  const auto* in_data = static_cast<const In*>(in.data_ptr());
  auto* out_data = static_cast<Out*>(out.data_ptr());
  bool scalar = in.dim() == 0;
  int64_t length = scalar ? 1 : in.size(dim);
  int64_t in_step = scalar ? 1 : in.stride(dim);
  // Lines of `out` (contiguous): outer index o, inner index i -> o * length * inner + i.
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < in.dim(); ++d) inner *= in.size(d);
  // Line starts of `in`, in the same row-major order as `out`'s lines: the geometry with `dim`
  // dropped.
  std::vector<int64_t> other_sizes = in.sizes(), other_strides = in.strides();
  if (!scalar) {
    other_sizes.erase(other_sizes.begin() + dim);
    other_strides.erase(other_strides.begin() + dim);
  }
  int64_t lines = 1;
  for (int64_t size : other_sizes) lines *= size;
  // Lines are independent: split over the threads, about kGrainSize elements per chunk at least.
  parallel_for(0, lines, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(length, 1)), [&](int64_t first, int64_t last) {
    constexpr bool kSameType = std::is_same_v<In, Acc> && std::is_same_v<Out, Acc>;
    const bool direct = kSameType && in_step == 1 && inner == 1;
    std::vector<Acc> line(direct ? 0 : static_cast<size_t>(length));
    std::vector<Acc> result(direct ? 0 : static_cast<size_t>(length));
    for (int64_t line_index = first; line_index < last; ++line_index) {
      // The line's start in `in`: its index spelled in other_sizes, dotted with other_strides.
      int64_t in_base = 0;
      for (int64_t d = static_cast<int64_t>(other_sizes.size()) - 1, rest = line_index; d >= 0; --d) {
        in_base += rest % other_sizes[static_cast<size_t>(d)] * other_strides[static_cast<size_t>(d)];
        rest /= other_sizes[static_cast<size_t>(d)];
      }
      int64_t o = line_index / inner, i = line_index % inner;
      Out* out_line = out_data + o * length * inner + i;
      if constexpr (kSameType) {
        if (direct) {
          math.softmax(in_data + in_base, out_line, length, kLog);
          continue;
        }
      }
      for (int64_t k = 0; k < length; ++k) line[static_cast<size_t>(k)] = static_cast<Acc>(in_data[in_base + k * in_step]);
      math.softmax(line.data(), result.data(), length, kLog);
      for (int64_t k = 0; k < length; ++k) out_line[k * inner] = Out(result[static_cast<size_t>(k)]);
    }
  });
}

// The checks, the wrapped dim and the output come from meta::softmax.
template <bool kLog>
Tensor softmaxImpl(const Tensor& self, int64_t dim, bool half_to_float, const char* op) {
  meta::SoftmaxSpec spec = meta::softmax(op, self, dim, half_to_float);
  Tensor out = detail::empty_contiguous(spec.output.sizes, spec.output.dtype, self.device());
  DK_DISPATCH_FLOATING_TYPES(self.dtype(), op, [&] {
    if (out.numel() == 0) return;
    if (half_to_float) softmaxLines<Half, float, kLog>(self, out, spec.dim);
    else softmaxLines<scalar_t, scalar_t, kLog>(self, out, spec.dim);
  });
  return out;
}

// ---------------------------------------------------------------- cat

// A size-[0] 1-D tensor: the legacy "empty tensor", skipped by cat whatever its shape is.
bool catSkips(const Tensor& t) { return meta::catSkipsTensor(t); }

// Copies `src` (any geometry) into the contiguous block of `out` starting at element `start`
// whose rows are `out_row` elements apart: src is seen as (outer, src_row) with src_row the
// product of its sizes from the cat dim on.
template <class To, class From>
void copyIntoCatSlot(const Tensor& src, To* out, int64_t src_row, int64_t out_row) {
  const auto* in = static_cast<const From*>(src.data_ptr());
  int64_t n = 0;
  forEachOffset(src.sizes(), src.strides(), [&](int64_t offset) {
    int64_t o = n / src_row, j = n % src_row;
    ++n;
    out[o * out_row + j] = castValue<To>(in[offset]);
  });
}

}  // namespace

Tensor _softmax_cpu(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmaxImpl<false>(self, dim, half_to_float, "_softmax");
}

Tensor _log_softmax_cpu(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmaxImpl<true>(self, dim, half_to_float, "_log_softmax");
}

// (self - target)^2, broadcast, in the promoted (floating) dtype; then none/mean/sum.
Tensor mse_loss_cpu(const Tensor& self, const Tensor& target, int64_t reduction_value) {
  meta::OutputSpec spec = meta::mseLoss(self, target, reduction_value);  // checks, output
  const auto reduction = static_cast<LossReduction>(reduction_value);
  const ScalarType dtype = spec.dtype;
  std::vector<int64_t> shape = inferBroadcastShape(self.sizes(), target.sizes());
  Tensor out = detail::empty_contiguous(spec.sizes, dtype, self.device());
  std::vector<int64_t> self_strides = broadcastStrides(self, shape), target_strides = broadcastStrides(target, shape);
  LoadAsDouble load_self = loaderFor(self.dtype()), load_target = loaderFor(target.dtype());
  const void* self_data = self.data_ptr();
  const void* target_data = target.data_ptr();
  DK_DISPATCH_FLOATING_TYPES(dtype, "mse_loss", [&] {
    auto* out_data = static_cast<scalar_t*>(out.data_ptr());
    // Walk the broadcast shape once, with both inputs' offsets.
    int64_t numel = computeNumel(shape);
    std::vector<int64_t> index(shape.size(), 0);
    int64_t self_offset = 0, target_offset = 0;
    double total = 0;
    for (int64_t n = 0; n < numel; ++n) {
      // Each input is first rounded to the result dtype, as PyTorch's TensorIterator does.
      double a = static_cast<double>(castValue<scalar_t>(load_self(self_data, self_offset)));
      double b = static_cast<double>(castValue<scalar_t>(load_target(target_data, target_offset)));
      double d = a - b;
      if (reduction == LossReduction::None) out_data[n] = scalar_t(d * d);
      else total += d * d;
      for (size_t dim = shape.size(); dim-- > 0;) {
        self_offset += self_strides[dim];
        target_offset += target_strides[dim];
        if (++index[dim] < shape[dim]) break;
        self_offset -= self_strides[dim] * shape[dim];
        target_offset -= target_strides[dim] * shape[dim];
        index[dim] = 0;
      }
    }
    if (reduction == LossReduction::Sum) *out_data = scalar_t(total);
    // 0 / 0 = NaN when empty
    if (reduction == LossReduction::Mean) *out_data = scalar_t(total / static_cast<double>(numel));
  });
  return out;
}

// The negative log-likelihood of the target classes: input (C) or (N, C) holds log-probabilities,
// target () or (N) class indices. none with a batch: -weight[t] * input[i, t] per sample (0 for
// ignore_index); otherwise a 0-dim sum, divided for mean by the total weight of the counted
// targets (0 / 0 = NaN when none count).
// The checks and the output come from meta::nllLoss.
Tensor nll_loss_cpu(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight_opt,
                    int64_t reduction_value, int64_t ignore_index) {
  meta::OutputSpec spec = meta::nllLoss(self, target, weight_opt, reduction_value);
  const auto reduction = static_cast<LossReduction>(reduction_value);
  const int64_t n_classes = self.size(-1);
  Tensor weight = weight_opt.has_value() ? *weight_opt : Tensor();
  bool per_sample = reduction == LossReduction::None && self.dim() == 2;
  int64_t batch = self.dim() == 1 ? 1 : self.size(0);
  Tensor out = detail::empty_contiguous(spec.sizes, spec.dtype, self.device());
  LoadAsDouble load_target = loaderFor(target.dtype());
  int64_t target_stride = target.dim() == 0 ? 0 : target.stride(0);
  int64_t row_stride = self.dim() == 1 ? 0 : self.stride(0);
  int64_t class_stride = self.stride(-1);
  DK_DISPATCH_FLOATING_TYPES(self.dtype(), "nll_loss", [&] {
    const auto* in = static_cast<const scalar_t*>(self.data_ptr());
    const auto* w = weight.defined() ? static_cast<const scalar_t*>(weight.data_ptr()) : nullptr;
    int64_t w_stride = weight.defined() ? weight.stride(0) : 0;
    auto* out_data = static_cast<scalar_t*>(out.data_ptr());
    if (target.numel() == 0) {  // an empty batch: none gives [0], mean 0 / 0 = NaN, sum 0
      const double empty = reduction == LossReduction::Mean ? std::numeric_limits<double>::quiet_NaN() : 0.0;
      if (!per_sample) *out_data = scalar_t(empty);
      return;
    }
    double loss = 0, total_weight = 0;
    for (int64_t i = 0; i < batch; ++i) {
      auto t = static_cast<int64_t>(load_target(target.data_ptr(), i * target_stride));
      if (t == ignore_index) {
        if (per_sample) out_data[i] = scalar_t(0.0f);
        continue;
      }
      if (t < 0 || t >= n_classes) DK_ERROR("Target ", t, " is out of bounds.");
      double wt = w ? static_cast<double>(w[t * w_stride]) : 1.0;
      double value = -static_cast<double>(in[i * row_stride + t * class_stride]) * wt;
      if (per_sample) out_data[i] = scalar_t(value);
      loss += value;
      total_weight += wt;
    }
    if (!per_sample) *out_data = scalar_t(reduction == LossReduction::Mean ? loss / total_weight : loss);
  });
  return out;
}

// Rows of `weight` picked by `indices`: output shape indices.sizes() + [weight.size(1)].
// padding_idx, scale_grad_by_freq and sparse only change the backward. The checks and the
// output come from meta::embedding.
Tensor embedding_cpu(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/, bool /*scale_grad_by_freq*/,
                     bool /*sparse*/) {
  meta::OutputSpec spec = meta::embedding(weight, indices);
  int64_t rows = weight.size(0), width = weight.size(1);
  Tensor out = detail::empty_contiguous(spec.sizes, spec.dtype, weight.device());
  // Nothing to copy (and an empty output has no memory to copy into); indices are still checked.
  const bool copies = out.numel() > 0;
  size_t itemsize = weight.element_size();
  const auto* src = static_cast<const char*>(weight.data_ptr());
  auto* dst = static_cast<char*>(out.data_ptr());
  LoadAsDouble load_index = loaderFor(indices.dtype());
  bool rows_contiguous = weight.stride(1) == 1 || width <= 1;
  int64_t n = 0;
  forEachOffset(indices.sizes(), indices.strides(), [&](int64_t offset) {
    auto row = static_cast<int64_t>(load_index(indices.data_ptr(), offset));
    if (row < 0 || row >= rows) DK_ERROR("index out of range in self");
    if (!copies) return;
    const char* from = src + static_cast<size_t>(row * weight.stride(0)) * itemsize;
    char* to = dst + static_cast<size_t>(n * width) * itemsize;
    ++n;
    if (rows_contiguous) {
      std::memcpy(to, from, static_cast<size_t>(width) * itemsize);
    } else {
      for (int64_t j = 0; j < width; ++j)
        std::memcpy(to + static_cast<size_t>(j) * itemsize, from + static_cast<size_t>(j * weight.stride(1)) * itemsize,
                    itemsize);
    }
  });
  return out;
}

// Concatenation along `dim` in the promoted dtype of the inputs. Size-[0] 1-D tensors are
// skipped whatever the others' shapes (PyTorch's legacy rule); every other input must match the
// first kept one except at `dim`.
Tensor cat_cpu(ArrayRef<Tensor> tensors, int64_t dim) {
  // The checks, output shape, dtype and wrapped dim are the shared ones Meta and CUDA use.
  meta::CatSpec spec = meta::cat(tensors, dim);
  ScalarType dtype = spec.output.dtype;
  size_t ref = 0;
  while (ref < tensors.size() && catSkips(tensors[ref])) ++ref;
  if (ref == tensors.size()) return detail::empty_contiguous({0}, dtype, tensors[0].device());
  const Tensor& first = tensors[ref];
  dim = spec.dim;
  const std::vector<int64_t>& out_size = spec.output.sizes;
  int64_t total = out_size[static_cast<size_t>(dim)];
  Tensor out = detail::empty_contiguous(out_size, dtype, first.device());
  if (out.numel() == 0) return out;
  // Each input fills a slab of out: rows of (its size at dim) * inner elements, out_row apart.
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < first.dim(); ++d) inner *= first.size(d);
  int64_t out_row = total * inner;
  int64_t at_dim = 0;
  for (const Tensor& t : tensors) {
    if (catSkips(t)) continue;
    int64_t src_row = t.size(dim) * inner;
    if (t.numel() != 0) {
      dispatchDtype(dtype, "cat", [&](auto out_tag) {
        using To = typename decltype(out_tag)::type;
        To* slot = static_cast<To*>(out.data_ptr()) + at_dim * inner;
        dispatchDtype(t.dtype(), "cat", [&](auto in_tag) {
          using From = typename decltype(in_tag)::type;
          copyIntoCatSlot<To, From>(t, slot, src_row, out_row);
        });
      });
    }
    at_dim += t.size(dim);
  }
  return out;
}

}  // namespace dk::native
