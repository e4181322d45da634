// Helpers of the derivatives.yaml formulas (dk/autograd/formulas.h), written with dk operators.
#include "dk/autograd/formulas.h"

#include <algorithm>

#include "dk/core/grad_mode.h"
#include "dk/generated/ops/_to_copy.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/col2im.h"
#include "dk/generated/ops/cumsum.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/eq.h"
#include "dk/generated/ops/exp.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/gather.h"
#include "dk/generated/ops/gt.h"
#include "dk/generated/ops/lt.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mean.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/native_layer_norm_backward.h"
#include "dk/generated/ops/native_layer_norm_backward_native.h"
#include "dk/generated/ops/neg.h"
#include "dk/generated/ops/ones_like.h"
#include "dk/generated/ops/permute.h"
#include "dk/generated/ops/pow.h"
#include "dk/generated/ops/reshape.h"
#include "dk/generated/ops/rsqrt.h"
#include "dk/generated/ops/scatter_add.h"
#include "dk/generated/ops/select.h"
#include "dk/generated/ops/slice.h"
#include "dk/generated/ops/stack.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/t.h"
#include "dk/generated/ops/tanh.h"
#include "dk/generated/ops/unsqueeze.h"
#include "dk/generated/ops/where.h"
#include "dk/generated/ops/zeros.h"
#include "dk/generated/ops/zeros_like.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::autograd::formulas {

namespace {

constexpr int64_t kReductionNone = 0;
constexpr int64_t kReductionMean = 1;

Tensor zerosOf(const std::vector<int64_t>& sizes, ScalarType dtype, Device device) {
  return dk::zeros(sizes, dtype, std::nullopt, device);
}

// `value` as a 0-dim tensor of t's dtype and device: a comparison or where broadcasts it, with no
// tensor of t's size to allocate and fill.
Tensor scalarLike(const Tensor& t, const Scalar& value) {
  return dk::full({}, value, t.scalar_type(), std::nullopt, t.device());
}

// [0, 1, ..., n) shaped to broadcast along `dim` of an `ndim`-dim tensor.
Tensor positionsAlong(int64_t n, int64_t dim, int64_t ndim, Device device) {
  std::vector<int64_t> shape(static_cast<size_t>(ndim), 1);
  shape[static_cast<size_t>(dim)] = n;
  return dk::reshape(dk::arange(0, n, 1, ScalarType::Long, std::nullopt, device), shape);
}

// 1 where `index` differs from `value`, 0 where it equals it, in `dtype` (masks out ignored
// targets and padding rows).
Tensor zeroWhereEqual(const Tensor& index, int64_t value, ScalarType dtype) {
  Tensor zeros = zerosOf(index.sizes(), dtype, index.device());
  return dk::where(dk::eq(index, value), zeros, dk::ones_like(zeros));
}

// The reduced dims, wrapped and sorted; every dim when `dim` is none or empty; none of a 0-dim
// tensor (whose dim 0 / -1 names the tensor itself).
std::vector<int64_t> reducedDims(const std::optional<std::vector<int64_t>>& dim, int64_t ndim) {
  std::vector<int64_t> dims;
  if (ndim == 0) return dims;
  if (!dim || dim->empty()) {
    for (int64_t d = 0; d < ndim; ++d) dims.push_back(d);
  } else {
    for (int64_t d : *dim) dims.push_back(maybe_wrap_dim(d, ndim));
    std::sort(dims.begin(), dims.end());
  }
  return dims;
}

}  // namespace

Tensor maybe_multiply(const Tensor& t, const Scalar& s) {
  if (s == Scalar(1)) return t;
  return dk::mul(t, s);
}

Tensor sgn(const Tensor& self) {
  Tensor zero = dk::zeros_like(self);
  Tensor one = dk::ones_like(self);
  return dk::where(dk::gt(self, zero), one, dk::where(dk::lt(self, zero), dk::neg(one), zero));
}

Tensor pow_backward(const Tensor& grad, const Tensor& self, const Scalar& exponent) {
  if (exponent.toDouble() == 0.0) return dk::zeros_like(self);
  // exponent - 1 in double: an integer exponent may be INT64_MIN, and the power is taken in
  // floating point anyway (self is floating when it has a gradient).
  Scalar reduced = exponent.toDouble() - 1.0;
  return dk::mul(dk::mul(grad, dk::pow(self, reduced)), exponent);
}

Tensor max_min_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool is_max, bool for_self) {
  const Tensor& mine = for_self ? self : other;
  const Tensor& theirs = for_self ? other : self;
  // PyTorch's formula: half the gradient on ties, none where this input loses, all of it
  // otherwise, so a NaN on either side (no tie, no loser) sends the whole gradient to both.
  Tensor loses = is_max ? dk::lt(mine, theirs) : dk::gt(mine, theirs);
  Tensor shared = dk::where(dk::eq(mine, theirs), dk::div(grad, 2), grad);
  return dk::where(loses, dk::zeros_like(shared), shared);
}

Tensor threshold_backward(const Tensor& grad, const Tensor& x, const Scalar& threshold) {
  return dk::where(dk::gt(x, scalarLike(x, threshold)), grad, scalarLike(grad, 0));
}

Tensor gelu_second_derivative(const Tensor& x, std::string_view approximate) {
  if (approximate == "tanh") {
    // gelu = x/2 (1 + tanh u), u = k (x + c x^3): gelu'' = (1 - t^2) (u' - x t u'^2 + x u''/2).
    constexpr double k = 0.79788456080286535588;  // sqrt(2 / pi)
    constexpr double c = 0.044715;
    Tensor x2 = dk::mul(x, x);
    Tensor t = dk::tanh(dk::mul(dk::add(x, dk::mul(dk::mul(x2, x), c)), k));
    Tensor du = dk::mul(dk::add(dk::mul(x2, 3 * c), 1.0), k);
    Tensor d2u = dk::mul(x, 6 * c * k);
    Tensor sech2 = dk::sub(dk::ones_like(t), dk::mul(t, t));
    Tensor inner = dk::add(dk::sub(du, dk::mul(dk::mul(x, t), dk::mul(du, du))), dk::mul(dk::mul(x, d2u), 0.5));
    return dk::mul(sech2, inner);
  }
  DK_CHECK(approximate == "none", "approximate argument must be either none or tanh.");
  // gelu = x Phi(x): gelu'' = phi(x) (2 - x^2), phi the standard normal density.
  constexpr double inv_sqrt_2pi = 0.39894228040143267794;
  Tensor x2 = dk::mul(x, x);
  Tensor pdf = dk::mul(dk::exp(dk::mul(x2, -0.5)), inv_sqrt_2pi);
  return dk::mul(pdf, dk::sub(dk::full(x.sizes(), 2.0, x.scalar_type(), std::nullopt, x.device()), x2));
}

Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max) {
  Tensor zero = scalarLike(grad, 0);
  Tensor out = grad;
  if (min) out = dk::where(dk::lt(self, scalarLike(self, *min)), zero, out);
  if (max) out = dk::where(dk::gt(self, scalarLike(self, *max)), zero, out);
  return out;
}

Tensor sum_backward(const Tensor& grad, const std::vector<int64_t>& sizes,
                    const std::optional<std::vector<int64_t>>& dim, bool keepdim) {
  Tensor g = grad;
  const auto ndim = static_cast<int64_t>(sizes.size());
  if (!keepdim && ndim > 0) {
    for (int64_t d : reducedDims(dim, ndim)) g = dk::unsqueeze(g, d);
  }
  return g.expand(sizes);
}

Tensor mean_backward(const Tensor& grad, const std::vector<int64_t>& sizes,
                     const std::optional<std::vector<int64_t>>& dim, bool keepdim) {
  int64_t count = 1;
  for (int64_t d : reducedDims(dim, static_cast<int64_t>(sizes.size()))) count *= sizes[static_cast<size_t>(d)];
  return dk::div(sum_backward(grad, sizes, dim, keepdim), static_cast<double>(count));
}

Tensor value_selecting_reduction_backward(const Tensor& grad, int64_t dim, const Tensor& indices,
                                          const std::vector<int64_t>& sizes, bool keepdim) {
  const auto ndim = static_cast<int64_t>(sizes.size());
  if (ndim == 0) return grad;
  int64_t d = maybe_wrap_dim(dim, ndim);
  Tensor g = keepdim ? grad : dk::unsqueeze(grad, d);
  Tensor index = keepdim ? indices : dk::unsqueeze(indices, d);
  // The selected positions are distinct along d (one per reduction, a permutation for sort), so
  // adding into zeros places each gradient once.
  return dk::scatter_add(zerosOf(sizes, grad.scalar_type(), grad.device()), d, index, g);
}

Tensor index_select_backward(const Tensor& grad, const std::vector<int64_t>& sizes, int64_t dim,
                             const Tensor& index) {
  if (sizes.empty()) return grad;  // a 0-dim self: index picked it (once)
  int64_t d = maybe_wrap_dim(dim, static_cast<int64_t>(sizes.size()));
  // index laid along d and expanded over grad: scatter_add then adds each selected slice back.
  std::vector<int64_t> along(sizes.size(), 1);
  along[static_cast<size_t>(d)] = index.numel();
  Tensor spread = dk::reshape(index, along).expand(grad.sizes());
  return dk::scatter_add(zerosOf(sizes, grad.scalar_type(), grad.device()), d, spread, grad);
}

Tensor gather_backward(const Tensor& grad, const std::vector<int64_t>& sizes, int64_t dim, const Tensor& index) {
  return dk::scatter_add(zerosOf(sizes, grad.scalar_type(), grad.device()), dim, index, grad);
}

Tensor im2col_backward(const Tensor& grad, const std::vector<int64_t>& input_sizes, const std::vector<int64_t>& kernel_size,
                       const std::vector<int64_t>& dilation, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& stride) {
  const size_t n = input_sizes.size();
  return dk::col2im(grad, {input_sizes[n - 2], input_sizes[n - 1]}, kernel_size, dilation, padding, stride);
}

Tensor max_pool2d_indices_backward(const Tensor& grad, const std::vector<int64_t>& input_sizes, const Tensor& indices) {
  // Plane by plane ([N * C, H * W]), each output's gradient added at the input position its
  // index names (overlapping windows may name one position several times).
  const size_t n = input_sizes.size();
  const int64_t plane = input_sizes[n - 2] * input_sizes[n - 1];
  int64_t planes = 1;
  for (size_t i = 0; i + 2 < n; ++i) planes *= input_sizes[i];
  Tensor g = dk::reshape(grad, {planes, -1});
  Tensor flat = dk::scatter_add(zerosOf({planes, plane}, grad.scalar_type(), grad.device()), 1,
                                dk::reshape(indices, {planes, -1}), g);
  return dk::reshape(flat, input_sizes);
}

Tensor var_backward(const Tensor& grad, const Tensor& self, const std::optional<std::vector<int64_t>>& dim,
                    bool unbiased, bool keepdim) {
  const std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  int64_t count = 1;
  std::vector<int64_t> dims = reducedDims(dim, self.dim());
  for (int64_t d : dims) count *= sizes[static_cast<size_t>(d)];
  Tensor centered = dk::sub(self, dk::mean(self, dims, /*keepdim=*/true));
  Tensor g = sum_backward(grad, sizes, dim, keepdim);
  return dk::mul(dk::mul(g, centered), 2.0 / static_cast<double>(count - (unbiased ? 1 : 0)));
}

Tensor std_backward(const Tensor& result, const Tensor& grad, const Tensor& self,
                    const std::optional<std::vector<int64_t>>& dim, bool unbiased, bool keepdim) {
  Tensor scaled = dk::div(grad, dk::mul(result, 2));
  Tensor grad_var = dk::where(dk::eq(result, 0), dk::zeros_like(scaled), scaled);
  return var_backward(grad_var, self, dim, unbiased, keepdim);
}

Tensor cumsum_backward(const Tensor& grad, int64_t dim, ScalarType input_dtype) {
  Tensor g = grad.scalar_type() == input_dtype ? grad : dk::_to_copy(grad, input_dtype);
  if (g.dim() == 0 || g.numel() == 0) return g;
  // Output j sums inputs 0..j, so input i gets the sum of grad over j >= i: the total less the
  // running sum before i.
  int64_t d = maybe_wrap_dim(dim, g.dim());
  Tensor total = dk::sum(g, {d}, /*keepdim=*/true);
  return dk::add(dk::sub(total, dk::cumsum(g, d)), g);
}

Tensor unsqueeze_to(const Tensor& grad, const std::vector<int64_t>& sizes) { return dk::reshape(grad, sizes); }

Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& input, const Tensor& value) {
  // x == x is false exactly at NaN.
  Tensor input_nan = dk::eq(dk::eq(input, input), Scalar(false));
  Tensor value_nan = dk::eq(dk::eq(value, value), Scalar(false));
  Tensor mask = dk::where(value_nan, input_nan, dk::eq(input, value));
  Tensor count = dk::sum(mask, kLong);
  Tensor share = dk::div(grad, count);
  return dk::where(mask, share, zerosOf(input.sizes(), grad.scalar_type(), grad.device()));
}

Tensor sum_to(const Tensor& grad, const std::vector<int64_t>& sizes) {
  if (grad.sizes() == sizes) return grad;
  const int64_t leading = grad.dim() - static_cast<int64_t>(sizes.size());
  DK_CHECK(leading >= 0, "sum_to: cannot sum a gradient of ", grad.dim(), " dims to ", sizes.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < leading; ++d) dims.push_back(d);
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t d = leading + static_cast<int64_t>(i);
    if (sizes[i] == 1 && grad.size(d) != 1) dims.push_back(d);
  }
  Tensor out = dims.empty() ? grad : dk::sum(grad, IntArrayRef(dims), /*keepdim=*/true);
  return dk::reshape(out, sizes);
}

Tensor permute_backwards(const Tensor& grad, const std::vector<int64_t>& dims) {
  std::vector<int64_t> inverse(dims.size());
  const auto ndim = static_cast<int64_t>(dims.size());
  for (int64_t i = 0; i < ndim; ++i) inverse[static_cast<size_t>(maybe_wrap_dim(dims[static_cast<size_t>(i)], ndim))] = i;
  return dk::permute(grad, inverse);
}

Tensor unsqueeze_to(const Tensor& grad, int64_t dim, const std::vector<int64_t>& sizes) {
  if (sizes.empty()) return dk::reshape(grad, sizes);
  int64_t d = maybe_wrap_dim(dim, static_cast<int64_t>(sizes.size()));
  return sizes[static_cast<size_t>(d)] == 1 ? dk::unsqueeze(grad, d) : grad;
}

Tensor select_backward(const Tensor& grad, const std::vector<int64_t>& sizes, int64_t dim, int64_t index) {
  Tensor out = zerosOf(sizes, grad.scalar_type(), grad.device());
  dk::select(out, dim, index).copy_(grad);
  return out;
}

Tensor slice_backward(const Tensor& grad, const std::vector<int64_t>& sizes, int64_t dim,
                      std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  Tensor out = zerosOf(sizes, grad.scalar_type(), grad.device());
  dk::slice(out, dim, start, end, step).copy_(grad);
  return out;
}

Tensor split_backward(const variable_list& grads, int64_t split_size, int64_t dim, const std::vector<int64_t>& sizes,
                      ScalarType dtype, Device device) {
  int64_t d = maybe_wrap_dim(dim, static_cast<int64_t>(sizes.size()));
  const int64_t length = sizes[static_cast<size_t>(d)];
  std::vector<Tensor> parts;
  parts.reserve(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined()) {
      parts.push_back(grads[i]);
      continue;
    }
    std::vector<int64_t> part = sizes;
    part[static_cast<size_t>(d)] = std::min(split_size, length - static_cast<int64_t>(i) * split_size);
    parts.push_back(zerosOf(part, dtype, device));
  }
  return dk::cat(parts, d);
}

Tensor unbind_backward(const variable_list& grads, int64_t dim, const std::vector<int64_t>& sizes, ScalarType dtype,
                       Device device) {
  int64_t d = maybe_wrap_dim(dim, static_cast<int64_t>(sizes.size()));
  std::vector<int64_t> part = sizes;
  part.erase(part.begin() + d);
  std::vector<Tensor> parts;
  parts.reserve(grads.size());
  for (const Tensor& g : grads) parts.push_back(g.defined() ? g : zerosOf(part, dtype, device));
  return dk::stack(parts, d);
}

std::vector<Tensor> cat_tensors_backward(const Tensor& grad, const std::vector<std::vector<int64_t>>& sizes,
                                         int64_t dim) {
  int64_t d = maybe_wrap_dim(dim, grad.dim());
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  int64_t offset = 0;
  for (const std::vector<int64_t>& s : sizes) {
    // A 1-d empty input is skipped by cat (PyTorch's legacy rule): its gradient is empty too.
    if (s.size() == 1 && s[0] == 0) {
      out.push_back(zerosOf({0}, grad.scalar_type(), grad.device()));
      continue;
    }
    int64_t length = s[static_cast<size_t>(d)];
    out.push_back(dk::slice(grad, d, offset, offset + length, 1));
    offset += length;
  }
  return out;
}

Tensor softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim, ScalarType input_dtype) {
  Tensor g = dk::mul(output, dk::sub(grad, dk::sum(dk::mul(grad, output), {dim}, /*keepdim=*/true)));
  return g.scalar_type() == input_dtype ? g : dk::_to_copy(g, input_dtype);
}

Tensor log_softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim, ScalarType input_dtype) {
  Tensor g = dk::sub(grad, dk::mul(dk::exp(output), dk::sum(grad, {dim}, /*keepdim=*/true)));
  return g.scalar_type() == input_dtype ? g : dk::_to_copy(g, input_dtype);
}

Tensor mse_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction) {
  Tensor diff = dk::sub(self, target);
  double scale = reduction == kReductionMean ? 2.0 / static_cast<double>(diff.numel()) : 2.0;
  return dk::mul(dk::mul(diff, grad), scale);
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index) {
  const bool batched = self.dim() == 2;
  const int64_t classes = self.size(batched ? 1 : 0);
  const int64_t n = batched ? self.size(0) : 1;
  const ScalarType dtype = self.scalar_type();
  Tensor tgt = dk::reshape(target, {n});
  // [n, C]: true at each row's target class.
  Tensor chosen = dk::eq(dk::unsqueeze(tgt, 1), positionsAlong(classes, 1, 2, self.device()));
  Tensor row_weight = zeroWhereEqual(tgt, ignore_index, dtype);
  if (weight && weight->defined()) {
    Tensor w = dk::reshape(*weight, {1, classes});
    row_weight = dk::mul(row_weight, dk::sum(dk::where(chosen, w, zerosOf({1, classes}, dtype, self.device())), {1}));
  }
  Tensor coef = dk::neg(row_weight);  // d(-w x[target]) / dx[target]
  if (reduction == kReductionNone) {
    coef = dk::mul(coef, dk::reshape(grad, {n}));
  } else {
    coef = dk::mul(coef, grad);
    if (reduction == kReductionMean) coef = dk::div(coef, dk::sum(row_weight));
  }
  // Ignored rows get no gradient, not 0 / 0: with every target ignored the mean's divisor is 0,
  // and PyTorch's gradient is still all zeros there.
  Tensor counted = dk::unsqueeze(dk::where(dk::eq(tgt, ignore_index), dk::zeros_like(coef), coef), 1);
  Tensor out = dk::where(chosen, counted, zerosOf({n, classes}, dtype, self.device()));
  return batched ? out : dk::reshape(out, self.sizes());
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, const std::vector<int64_t>& weight_sizes,
                          int64_t padding_idx, bool scale_grad_by_freq) {
  DK_CHECK(weight_sizes.size() == 2, "embedding_backward: the weight must be 2-d");
  const int64_t rows = weight_sizes[0];
  const int64_t width = weight_sizes[1];
  const int64_t n = indices.numel();
  const ScalarType dtype = grad.scalar_type();
  Tensor index = dk::reshape(indices, {n});
  if (index.scalar_type() != kLong) index = dk::_to_copy(index, kLong);
  Tensor g = dk::reshape(grad, {n, width});
  if (padding_idx >= 0) g = dk::mul(g, dk::unsqueeze(zeroWhereEqual(index, padding_idx, dtype), 1));
  if (scale_grad_by_freq) {
    // Each lookup's gradient divided by how often its row was looked up.
    Tensor counts = dk::scatter_add(zerosOf({rows}, dtype, grad.device()), 0, index, dk::ones_like(index, dtype));
    g = dk::div(g, dk::unsqueeze(dk::gather(counts, 0, index), 1));
  }
  // Row index[i] of the result gets lookup i's gradient added.
  return dk::scatter_add(zerosOf({rows, width}, dtype, grad.device()), 0, dk::unsqueeze(index, 1).expand({n, width}),
                         g);
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad, const Tensor& input,
                                                       const std::vector<int64_t>& normalized_shape,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const std::optional<Tensor>& weight,
                                                       const std::optional<Tensor>& bias, double eps,
                                                       std::array<bool, 3> grad_input_mask) {
  if (!grad.defined()) return {};
  if (GradMode::is_enabled()) {
    std::vector<int64_t> dims;
    for (int64_t d = input.dim() - static_cast<int64_t>(normalized_shape.size()); d < input.dim(); ++d) dims.push_back(d);
    const Tensor mean_graph = dk::mean(input, dims, /*keepdim=*/true);
    const Tensor centered = dk::sub(input, mean_graph);
    const Tensor rstd_graph = dk::rsqrt(dk::add(dk::mean(dk::mul(centered, centered), dims, /*keepdim=*/true), eps));
    return native::native_layer_norm_backward(grad, input, normalized_shape, mean_graph, rstd_graph, weight, bias,
                                              grad_input_mask);
  }
  return dk::native_layer_norm_backward(grad, input, normalized_shape, mean, rstd, weight, bias, grad_input_mask);
}

namespace {
// Strides of a 2-d matrix stored column by column (the transpose of a contiguous one).
bool columnMajor(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  return sizes.size() == 2 && strides.size() == 2 && strides[0] == 1 && strides[1] == sizes[0] && sizes[1] > 1;
}
}  // namespace

Tensor mm_mat1_backward(const Tensor& grad, const Tensor& mat2, const std::vector<int64_t>& mat1_sizes,
                        const std::vector<int64_t>& mat1_strides, const Scalar& alpha) {
  if (columnMajor(mat1_sizes, mat1_strides)) return maybe_multiply(dk::t(dk::mm(mat2, dk::t(grad))), alpha);
  return maybe_multiply(dk::mm(grad, dk::t(mat2)), alpha);
}

Tensor mm_mat2_backward(const Tensor& grad, const Tensor& mat1, const std::vector<int64_t>& mat2_sizes,
                        const std::vector<int64_t>& mat2_strides, const Scalar& alpha) {
  if (columnMajor(mat2_sizes, mat2_strides)) return maybe_multiply(dk::t(dk::mm(dk::t(grad), mat1)), alpha);
  return maybe_multiply(dk::mm(dk::t(mat1), grad), alpha);
}

}  // namespace dk::autograd::formulas
