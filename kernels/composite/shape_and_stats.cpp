// Composite (CompositeImplicitAutograd) operators a CNN or a transformer reaches for: narrow,
// chunk, repeat, tril, triu, layer_norm (and native_layer_norm and its backward for the
// backends without a fused kernel), masked_fill, var, std, baddbmm. Each is written with
// other dk operators, so it runs on every backend and its gradient is theirs; checks and
// messages are PyTorch's.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "dk/generated/ops/add.h"
#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/baddbmm_native.h"
#include "dk/generated/ops/bmm.h"
#include "dk/generated/ops/chunk_native.h"
#include "dk/generated/ops/clone.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/gt.h"
#include "dk/generated/ops/layer_norm_native.h"
#include "dk/generated/ops/native_layer_norm.h"
#include "dk/generated/ops/native_layer_norm_backward_native.h"
#include "dk/generated/ops/native_layer_norm_native.h"
#include "dk/generated/ops/lt.h"
#include "dk/generated/ops/masked_fill_native.h"
#include "dk/generated/ops/mean.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/narrow_native.h"
#include "dk/generated/ops/repeat_native.h"
#include "dk/generated/ops/rsqrt.h"
#include "dk/generated/ops/reshape.h"
#include "dk/generated/ops/slice.h"
#include "dk/generated/ops/split.h"
#include "dk/generated/ops/sqrt.h"
#include "dk/generated/ops/std_native.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/tril_native.h"
#include "dk/generated/ops/triu_native.h"
#include "dk/generated/ops/var_native.h"
#include "dk/generated/ops/where.h"
#include "dk/generated/ops/zeros_like.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"
#include "meta/shape_functions.h"

namespace dk::native {

// ---------------------------------------------------------------- shape

// `length` elements of dim from `start` (negative: from the end), as a view.
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  DK_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  dim = maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.size(dim);
  if (start != size) start = maybe_wrap_dim(start, size);  // start == size: an empty narrow at the end
  DK_CHECK(length >= 0 && start <= size - length, "start (", start, ") + length (", length,
           ") exceeds dimension size (", size, ").");
  return dk::slice(self, dim, start, start + length, 1);
}

// `chunks` views of ceil(size / chunks) elements along dim (the last may be smaller; fewer
// chunks when they run out), as PyTorch's chunk.
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  DK_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  DK_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  dim = maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.size(dim);
  const int64_t split_size = size / chunks + (size % chunks != 0 ? 1 : 0);  // ceil, without overflow
  if (split_size == 0 && size == 0) {  // as PyTorch: `chunks` empty views
    Tensor empty = dk::slice(self, dim, 0, 0, 1);
    std::vector<Tensor> pieces;
    try {
      pieces.assign(static_cast<size_t>(chunks), empty);
    } catch (const std::exception&) {  // too many to hold (std::length_error, std::bad_alloc)
      DK_ERROR("chunk: cannot make ", chunks, " empty chunks of a tensor of size 0 at dim ", dim);
    }
    return pieces;
  }
  return dk::split(self, split_size, dim);
}

// self tiled repeats[i] times along each dim (self gains leading dims of size 1 when repeats has
// more); always a new tensor.
Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  DK_CHECK(static_cast<int64_t>(repeats.size()) >= self.dim(),
           "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  std::vector<int64_t> padded(repeats.size() - static_cast<size_t>(self.dim()), 1);
  for (int64_t s : self.sizes()) padded.push_back(s);
  // [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...], then merged pairwise.
  std::vector<int64_t> interleaved, expanded, result;
  for (size_t i = 0; i < repeats.size(); ++i) {
    DK_CHECK(repeats[i] >= 0, "Trying to create tensor with negative dimension ", repeats[i], ": ", repeats);
    interleaved.insert(interleaved.end(), {1, padded[i]});
    expanded.insert(expanded.end(), {repeats[i], padded[i]});
    int64_t size = 0;
    DK_CHECK(!__builtin_mul_overflow(repeats[i], padded[i], &size), "repeat: repeating a dim of size ", padded[i], " ",
             repeats[i], " times overflows int64");
    result.push_back(size);
  }
  Tensor tiled = dk::reshape(dk::reshape(self, interleaved).expand(expanded), result);
  // All repeats 1: the reshapes may have given a view of self; repeat never does.
  if (tiled.numel() > 0 && tiled.data_ptr() == self.data_ptr()) tiled = dk::clone(tiled);
  return tiled;
}

// ---------------------------------------------------------------- tril and triu

namespace {

// Where column - row of the last two dims is <= diagonal (lower) or >= diagonal (upper).
Tensor triangleMask(const Tensor& self, int64_t diagonal, bool lower) {
  const int64_t rows = self.size(-2), cols = self.size(-1);
  Tensor row = dk::reshape(dk::arange(0, rows, 1, kLong, std::nullopt, self.device()), {rows, 1});
  Tensor col = dk::reshape(dk::arange(0, cols, 1, kLong, std::nullopt, self.device()), {1, cols});
  Tensor offset = dk::sub(col, row);  // [rows, cols]: col - row
  // Integers: offset <= d is offset < d + 1, offset >= d is offset > d - 1.
  // (Saturating: a diagonal at the int64 limits keeps everything or nothing, as it would.)
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  const int64_t limit = lower ? (diagonal == kMax ? kMax : diagonal + 1) : (diagonal == kMin ? kMin : diagonal - 1);
  Tensor bound = dk::full({}, limit, kLong, std::nullopt, self.device());
  return lower ? dk::lt(offset, bound) : dk::gt(offset, bound);
}

Tensor triangle(const Tensor& self, int64_t diagonal, bool lower) {
  maybe_wrap_dim(-2, self.dim());  // PyTorch's error for fewer than 2 dims
  Tensor zero = dk::full({}, 0, self.scalar_type(), std::nullopt, self.device());
  return dk::where(triangleMask(self, diagonal, lower), self, zero);
}

}  // namespace

// The elements on and below (tril) or above (triu) the diagonal-th diagonal of the last two
// dims; the others are 0.
Tensor tril(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, /*lower=*/true); }

Tensor triu(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, /*lower=*/false); }

// ---------------------------------------------------------------- layer_norm

// layer_norm: native_layer_norm's output (PyTorch's composite; the kernel checks the arguments).
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, bool /*cudnn_enable*/) {
  return std::get<0>(dk::native_layer_norm(input, normalized_shape, weight, bias, eps));
}

// native_layer_norm for the backends without a fused kernel: (input - mean) * rsqrt(var + eps)
// over the normalized dims (biased variance), then * weight + bias; mean and rstd keep those dims
// as 1s.
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                     const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, double eps) {
  meta::LayerNormSpec spec = meta::layerNorm(input, normalized_shape, weight, bias);
  const IntArrayRef dims(spec.normalized_dims);
  Tensor mean = dk::mean(input, dims, /*keepdim=*/true);
  Tensor centered = dk::sub(input, mean);
  Tensor rstd = dk::rsqrt(dk::add(dk::mean(dk::mul(centered, centered), dims, /*keepdim=*/true), eps));
  Tensor out = dk::mul(centered, rstd);
  if (weight && weight->defined()) out = dk::mul(out, *weight);
  if (bias && bias->defined()) out = dk::add(out, *bias);
  return {out, mean, rstd};
}

// native_layer_norm_backward for the backends without a fused kernel, and the double backward
// (written with dk operators, it records its own graph under create_graph): with
// xhat = (input - mean) * rstd and g = grad_out * weight,
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) over the normalized dims; dweight and dbias
// sum grad_out * xhat and grad_out over the other dims.
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                              IntArrayRef normalized_shape, const Tensor& mean,
                                                              const Tensor& rstd, const std::optional<Tensor>& weight,
                                                              const std::optional<Tensor>& bias,
                                                              std::array<bool, 3> output_mask) {
  meta::LayerNormSpec spec = meta::layerNorm(input, normalized_shape, weight, bias);
  const IntArrayRef dims(spec.normalized_dims);
  std::vector<int64_t> outer;
  for (int64_t d = 0; d < input.dim() - static_cast<int64_t>(dims.size()); ++d) outer.push_back(d);
  const Tensor stat_mean = dk::reshape(mean, spec.stat_sizes), stat_rstd = dk::reshape(rstd, spec.stat_sizes);
  const Tensor xhat = dk::mul(dk::sub(input, stat_mean), stat_rstd);
  const bool has_weight = weight && weight->defined();
  Tensor dx, dweight, dbias;
  if (output_mask[0]) {
    const Tensor g = has_weight ? dk::mul(grad_out, *weight) : grad_out;
    const Tensor mean_g = dk::mean(g, dims, /*keepdim=*/true);
    const Tensor mean_gx = dk::mean(dk::mul(g, xhat), dims, /*keepdim=*/true);
    dx = dk::mul(dk::sub(dk::sub(g, mean_g), dk::mul(xhat, mean_gx)), stat_rstd);
  }
  // Sums over the outer dims (none when the whole input is normalized).
  auto sumOuter = [&](const Tensor& t) { return outer.empty() ? t : dk::sum(t, IntArrayRef(outer), false); };
  if (output_mask[1] && has_weight) dweight = sumOuter(dk::mul(grad_out, xhat));
  if (output_mask[2] && bias && bias->defined()) dbias = sumOuter(grad_out);
  return {dx, dweight, dbias};
}

// ---------------------------------------------------------------- masked_fill

namespace {

// The mask as a Bool tensor (nonzero is true), as PyTorch accepts masks of other dtypes.
Tensor boolMask(const Tensor& mask) { return mask.scalar_type() == kBool ? mask : mask.to(kBool); }

}  // namespace

// self where mask is false, value where it is true; the result keeps self's dtype and shape
// (mask broadcasts to self).
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  Tensor fill = dk::full({}, value, self.scalar_type(), std::nullopt, self.device());
  return dk::where(boolMask(mask), fill, self);
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  DK_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
           value.dim(), " dimension(s).");
  return dk::where(boolMask(mask), value.to(self.scalar_type()), self);
}

// ---------------------------------------------------------------- var and std

namespace {

// sum((x - mean)^2) / (N - 1 if unbiased else N) over `dim` (every dim when none or empty); 0 / 0
// (one element, unbiased) is NaN, as in PyTorch.
Tensor variance(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  DK_CHECK(isFloatingType(self.scalar_type()), "std and var only support floating point and complex dtypes");
  meta::DimMask mask = meta::makeDimMask(dim, self.dim());
  int64_t n = 1;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (mask[static_cast<size_t>(d)]) n *= self.size(d);
  Tensor centered = dk::sub(self, dk::mean(self, dim, /*keepdim=*/true));
  Tensor squares = dk::sum(dk::mul(centered, centered), dim, keepdim);
  return dk::div(squares, Scalar(static_cast<double>(n - (unbiased ? 1 : 0))));
}

}  // namespace

Tensor var(const Tensor& self, bool unbiased) { return variance(self, std::nullopt, unbiased, false); }

Tensor var(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return variance(self, dim, unbiased, keepdim);
}

Tensor std(const Tensor& self, bool unbiased) { return dk::sqrt(variance(self, std::nullopt, unbiased, false)); }

Tensor std(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return dk::sqrt(variance(self, dim, unbiased, keepdim));
}

// ---------------------------------------------------------------- baddbmm

// beta * self + alpha * bmm(batch1, batch2); with beta 0 self is not read (its NaNs do not
// show), as in PyTorch.
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  Tensor product = dk::bmm(batch1, batch2);
  if (!(alpha.isIntegral() && alpha.toLong() == 1) && !(alpha.isFloatingPoint() && alpha.toDouble() == 1.0))
    product = dk::mul(product, alpha);
  const bool beta_zero = beta.isFloatingPoint() ? beta.toDouble() == 0.0 : beta.toLong() == 0;
  // Self's shape and dtype still take part; its values do not (a NaN in self is not 0 * NaN).
  if (beta_zero) return dk::add(product, dk::zeros_like(self));
  return dk::add(product, beta.toDouble() == 1.0 ? self : dk::mul(self, beta));
}

}  // namespace dk::native
