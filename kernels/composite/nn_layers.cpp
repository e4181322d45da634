// Composite (CompositeImplicitAutograd) layers of a CNN and a transformer: convolution (and
// conv1d, conv2d), max_pool2d, batch_norm and _scaled_dot_product_attention. Each is written
// with other dk operators (im2col/col2im and matmul for convolution), so it runs on every
// backend that has those, and its gradient is theirs. Checks and messages are PyTorch's.
//
// Convolution as matrix products: im2col lays every kernel-sized block of the padded input out as
// a column ([N, C * kh * kw, L], L blocks), so the output of group g is
// weight_g [Cout/g, C/g * kh * kw] times the group's rows of the columns. A transposed
// convolution is the adjoint: weight_g^T times the input gives columns, and col2im adds them
// into the (larger) output.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "dk/core/grad_mode.h"
#include "dk/generated/ops/_scaled_dot_product_attention_native.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/batch_norm_native.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/col2im.h"
#include "dk/generated/ops/conv1d_native.h"
#include "dk/generated/ops/conv2d_native.h"
#include "dk/generated/ops/convolution.h"
#include "dk/generated/ops/convolution_native.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/dropout.h"
#include "dk/generated/ops/eq.h"
#include "dk/generated/ops/im2col.h"
#include "dk/generated/ops/masked_fill.h"
#include "dk/generated/ops/matmul.h"
#include "dk/generated/ops/max_pool2d_native.h"
#include "dk/generated/ops/max_pool2d_with_indices.h"
#include "dk/generated/ops/mean.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/reshape.h"
#include "dk/generated/ops/rsqrt.h"
#include "dk/generated/ops/split.h"
#include "dk/generated/ops/softmax.h"
#include "dk/generated/ops/squeeze.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/transpose.h"
#include "dk/generated/ops/tril.h"
#include "dk/generated/ops/unsqueeze.h"
#include "dk/generated/ops/var.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

bool given(const std::optional<Tensor>& t) { return t && t->defined(); }

// The value of a per-dim argument for spatial dim i (one value stands for every dim).
int64_t perDim(IntArrayRef values, size_t i) { return values.size() == 1 ? values[0] : values[i]; }

// A spatial argument of `n` dims checked for its length ("expected stride to be a single integer
// value or a list of 2 values to match the convolution dimensions, but got stride=[1, 1, 1]").
std::vector<int64_t> spatial(const char* name, IntArrayRef values, size_t n) {
  DK_CHECK(values.size() == 1 || values.size() == n, "expected ", name,
           " to be a single integer value or a list of ", n, " values to match the convolution dimensions, but got ",
           name, "=", values);
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = perDim(values, i);
  return out;
}

// PyTorch's convolution argument checks (check_shape_forward), before any work.
void checkConvolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                      const std::vector<int64_t>& dilation, bool transposed, const std::vector<int64_t>& output_padding,
                      int64_t groups) {
  for (int64_t s : stride) DK_CHECK(s > 0, "non-positive stride is not supported");
  for (int64_t p : padding) DK_CHECK(p >= 0, "negative padding is not supported");
  for (int64_t p : output_padding) DK_CHECK(p >= 0, "negative output_padding is not supported");
  for (int64_t d : dilation) DK_CHECK(d > 0, "dilation should be greater than zero");
  DK_CHECK(groups > 0, "non-positive groups is not supported");
  const int64_t k = weight.dim();
  DK_CHECK(input.dim() == k, "Expected ", k, "-dimensional input for ", k, "-dimensional weight ", weight.sizes(),
           ", but got ", input.dim(), "-dimensional input of size ", input.sizes(), " instead");
  DK_CHECK(weight.size(0) >= groups, "Given groups=", groups, ", expected weight to be at least ", groups,
           " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  // (PyTorch prints these sizes in double brackets.)
  DK_CHECK(weight.size(0) % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
           " at dimension 0, but got weight of size [", weight.sizes(), "] instead");
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  if (!transposed) {
    DK_CHECK(input.size(1) == weight.size(1) * groups, "Given groups=", groups, ", weight of size ", weight.sizes(),
             ", expected input", input.sizes(), " to have ", weight.size(1) * groups, " channels, but got ",
             input.size(1), " channels instead");
  } else {
    DK_CHECK(input.size(1) == weight.size(0), "Given transposed=1, weight of size ", weight.sizes(),
             ", expected input", input.sizes(), " to have ", weight.size(0), " channels, but got ", input.size(1),
             " channels instead");
  }
  if (given(bias))
    DK_CHECK(bias->dim() == 1 && bias->size(0) == out_channels, "Given weight of size ", weight.sizes(),
             ", expected bias to be 1-dimensional with ", out_channels, " elements, but got bias of size ",
             bias->sizes(), " instead");
  if (!transposed) {
    // The padded input must hold the dilated kernel.
    bool fits = true;
    std::string padded = "(", kernel = "(";
    for (int64_t i = 2; i < k; ++i) {
      const auto d = static_cast<size_t>(i - 2);
      const int64_t size = input.size(i) + 2 * padding[d];
      const int64_t span = dilation[d] * (weight.size(i) - 1) + 1;
      fits = fits && size >= span;
      padded += (i > 2 ? " x " : "") + std::to_string(size);
      kernel += (i > 2 ? " x " : "") + std::to_string(span);
    }
    DK_CHECK(fits, "Calculated padded input size per channel: ", padded, "). Kernel size: ", kernel,
             "). Kernel size can't be greater than actual input size");
  }
}

// Note [Convolution columns]
// im2col of a whole batch is large (8 images of 64 channels at 56 x 56 with a 3 x 3 kernel: 58 MB
// of float columns, written once and read once). Fresh memory that size costs a page fault per
// 4 KiB page and does not stay in any cache, so the batch is convolved a chunk of images at a
// time, each chunk's columns under kColumnBudget elements (8 MiB of float), a size the allocator
// reuses from one chunk to the next, and the chunks' outputs are joined with cat. Gradients flow
// through split, im2col, matmul and cat as before.
constexpr int64_t kColumnBudget = int64_t{1} << 21;

// 2-D convolution of a batched [N, C, H, W] input (the other cases reshape to this).
Tensor convolution2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                     const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                     const std::vector<int64_t>& dilation, bool transposed, const std::vector<int64_t>& output_padding,
                     int64_t groups) {
  const int64_t n = input.size(0), h = input.size(2), w = input.size(3);
  const int64_t kh = weight.size(2), kw = weight.size(3);
  const std::vector<int64_t> kernel{kh, kw};
  Tensor out;
  if (!transposed) {
    const int64_t out_channels = weight.size(0), group_out = out_channels / groups;
    const int64_t rows = weight.size(1) * kh * kw;  // per group
    const int64_t oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
    const int64_t ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
    Tensor filters = dk::reshape(weight, {groups, group_out, rows});
    // Images per im2col: the columns of a chunk stay under kColumnBudget elements (Note
    // [Convolution columns]).
    const int64_t per_image = std::max<int64_t>(1, groups * rows * oh * ow);
    const int64_t chunk = std::clamp<int64_t>(kColumnBudget / per_image, 1, std::max<int64_t>(n, 1));
    auto convolveImages = [&](const Tensor& images) {
      const int64_t count = images.size(0);
      Tensor columns = dk::im2col(images, kernel, dilation, padding, stride);  // [count, C * kh * kw, L]
      Tensor grouped = dk::reshape(columns, {count, groups, rows, oh * ow});
      return dk::reshape(dk::matmul(filters, grouped), {count, out_channels, oh, ow});  // [count, g, Cout/g, L]
    };
    if (chunk >= n) {
      out = convolveImages(input);
    } else {
      // One split (its backward joins the pieces' gradients once), not a slice per chunk.
      std::vector<Tensor> parts;
      for (const Tensor& images : dk::split(input, chunk, 0)) parts.push_back(convolveImages(images));
      out = dk::cat(parts, 0);
    }
  } else {
    const int64_t in_channels = weight.size(0), group_in = in_channels / groups;
    const int64_t group_out = weight.size(1), out_channels = group_out * groups;
    const int64_t oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1;
    const int64_t ow = (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1;
    DK_CHECK(output_padding[0] < std::max(stride[0], dilation[0]) && output_padding[1] < std::max(stride[1], dilation[1]),
             "output padding must be smaller than either stride or dilation, but got output_padding=",
             IntArrayRef(output_padding), ", stride=", IntArrayRef(stride), ", dilation=", IntArrayRef(dilation));
    // weight [C_in, Cout/g, kh, kw] -> per group [Cout/g * kh * kw, C_in/g].
    Tensor filters = dk::transpose(dk::reshape(weight, {groups, group_in, group_out * kh * kw}), 1, 2);
    Tensor grouped = dk::reshape(input, {n, groups, group_in, h * w});
    Tensor columns = dk::reshape(dk::matmul(filters, grouped), {n, out_channels * kh * kw, h * w});
    out = dk::col2im(columns, {oh, ow}, kernel, dilation, padding, stride);
  }
  if (given(bias)) out = dk::add(out, dk::reshape(*bias, {1, -1, 1, 1}));
  return out;
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                   int64_t groups) {
  const int64_t k = weight.dim();
  DK_CHECK(k == 3 || k == 4, "convolution: dk supports 1-d and 2-d convolutions (a 3-d or 4-d weight), but got a ",
           k, "-d weight");
  const auto spatial_dims = static_cast<size_t>(k - 2);
  std::vector<int64_t> s = spatial("stride", stride, spatial_dims), p = spatial("padding", padding, spatial_dims);
  std::vector<int64_t> d = spatial("dilation", dilation, spatial_dims);
  std::vector<int64_t> op = spatial("output_padding", output_padding, spatial_dims);
  checkConvolution(input, weight, bias, s, p, d, transposed, op, groups);
  if (k == 4) return convolution2d(input, weight, bias, s, p, d, transposed, op, groups);
  // 1-d: a 2-d convolution over [N, C, 1, L] with a [.., .., 1, k] kernel.
  auto with1 = [](const std::vector<int64_t>& v, int64_t first) { return std::vector<int64_t>{first, v[0]}; };
  Tensor out = convolution2d(dk::unsqueeze(input, 2), dk::unsqueeze(weight, 2), bias, with1(s, 1), with1(p, 0),
                             with1(d, 1), transposed, with1(op, 0), groups);
  return dk::squeeze(out, 2);
}

namespace {

// conv1d and conv2d: an unbatched input ([C, *]) gains a batch dim of 1 and loses it after.
Tensor convNd(int64_t spatial_dims, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const char* name = spatial_dims == 1 ? "conv1d" : "conv2d";
  DK_CHECK(input.dim() == spatial_dims + 1 || input.dim() == spatial_dims + 2, "Expected ", spatial_dims + 1, "D (unbatched) or ",
           spatial_dims + 2, "D (batched) input to ", name, ", but got input of size: ", input.sizes());
  const bool batched = input.dim() == spatial_dims + 2;
  const int64_t zero[] = {0};
  Tensor x = batched ? input : dk::unsqueeze(input, 0);
  Tensor out = dk::convolution(x, weight, bias, stride, padding, dilation, false, IntArrayRef(zero, 1), groups);
  return batched ? out : dk::squeeze(out, 0);
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return convNd(1, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return convNd(2, input, weight, bias, stride, padding, dilation, groups);
}

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(dk::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

// Normalizes each channel (dim 1) by the batch's statistics (training) or the running ones
// (evaluation). Training also updates the running statistics in place, outside autograd:
// running = (1 - momentum) * running + momentum * batch statistic, the variance unbiased.
Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training,
                  double momentum, double eps, bool /*cudnn_enabled*/) {
  DK_CHECK(input.dim() >= 2, "batch_norm: expected a 2-d or larger input, but got input of size ", input.sizes());
  const int64_t channels = input.size(1);
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  const std::optional<Tensor>* params[] = {&weight, &bias, &running_mean, &running_var};
  for (int i = 0; i < 4; ++i)
    if (given(*params[i]))
      DK_CHECK((*params[i])->numel() == channels, names[i], " should contain ", channels, " elements not ",
               (*params[i])->numel());
  std::vector<int64_t> dims{0}, shape(static_cast<size_t>(input.dim()), 1);
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  shape[1] = channels;
  Tensor mean, var;
  if (training) {
    // One value per channel is allowed here, as in aten::batch_norm: the running variance becomes
    // nan (0 * the infinite unbiasing factor). nn.functional.batch_norm rejects it in Python, as
    // torch.nn.functional does. An empty batch leaves the running statistics alone.
    const int64_t per_channel = channels == 0 ? 0 : input.numel() / channels;
    mean = dk::mean(input, IntArrayRef(dims), /*keepdim=*/true);
    var = dk::var(input, IntArrayRef(dims), /*unbiased=*/false, /*keepdim=*/true);
    if (per_channel > 0 && (given(running_mean) || given(running_var))) {
      NoGradGuard no_grad;
      const double unbias = static_cast<double>(per_channel) / static_cast<double>(per_channel - 1);
      if (given(running_mean)) {
        Tensor updated = dk::add(dk::mul(*running_mean, 1 - momentum), dk::mul(dk::reshape(mean, {channels}), momentum));
        running_mean->copy_(updated);
      }
      if (given(running_var)) {
        Tensor batch_var = dk::mul(dk::reshape(var, {channels}), unbias * momentum);
        running_var->copy_(dk::add(dk::mul(*running_var, 1 - momentum), batch_var));
      }
    }
  } else {
    DK_CHECK(given(running_mean), "running_mean must be defined in evaluation mode");
    DK_CHECK(given(running_var), "running_var must be defined in evaluation mode");
    mean = dk::reshape(*running_mean, shape);
    var = dk::reshape(*running_var, shape);
  }
  Tensor out = dk::mul(dk::sub(input, mean), dk::rsqrt(dk::add(var, eps)));
  if (given(weight)) out = dk::mul(out, dk::reshape(*weight, shape));
  if (given(bias)) out = dk::add(out, dk::reshape(*bias, shape));
  return out;
}

// PyTorch 1.13's attention: softmax(q k^T / sqrt(E) + mask) v, the mask a bool one (true keeps
// a position) or an additive float one, is_causal hiding the future (a lower-triangular mask);
// dropout on the weights when dropout_p > 0. Returns (output, weights), the weights whatever
// need_attn_weights says, as 1.13's does.
std::tuple<Tensor, Tensor> _scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                         const std::optional<Tensor>& attn_mask, double dropout_p,
                                                         bool /*need_attn_weights*/, bool is_causal) {
  DK_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2,
           "_scaled_dot_product_attention: query, key and value must have at least 2 dims");
  DK_CHECK(!(is_causal && given(attn_mask)),
           "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  Tensor scores = dk::matmul(dk::mul(query, scale), dk::transpose(key, -2, -1));
  const double minus_inf = -std::numeric_limits<double>::infinity();
  if (is_causal) {
    Tensor keep = dk::tril(dk::ones({query.size(-2), key.size(-2)}, kBool, std::nullopt, query.device()));
    scores = dk::masked_fill(scores, dk::eq(keep, Scalar(false)), minus_inf);
  }
  if (given(attn_mask)) {
    if (attn_mask->scalar_type() == kBool) scores = dk::masked_fill(scores, dk::eq(*attn_mask, Scalar(false)), minus_inf);
    else scores = dk::add(scores, *attn_mask);
  }
  Tensor weights = dk::softmax(scores, -1);
  if (dropout_p > 0) weights = dk::dropout(weights, dropout_p, true);
  return {dk::matmul(weights, value), weights};
}

}  // namespace dk::native
