// The layers of a CNN and a transformer through the dispatcher: im2col/col2im, convolution
// (conv1d, conv2d, grouped, dilated, strided, transposed), max_pool2d, avg_pool2d, batch_norm and
// _scaled_dot_product_attention. Values are checked against direct float64 loops written here
// and against sums PyTorch 1.13.1 printed for the same inputs (sin/cos of 0, 1, 2, ...);
// errors are PyTorch's words; Meta gives the shapes. Gradients are in
// tests/test_autograd_gradcheck.cpp.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "dk/dk.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

// sin (or cos) of 0, 1, 2, ... in the given shape, float64: the inputs PyTorch was given.
Tensor waves(const Sizes& sizes, bool use_cos = false) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Values v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = use_cos ? std::cos(double(i)) : std::sin(double(i));
  return make(v, sizes, kDouble);
}

double sumOf(const Tensor& t) { return dk::sum(t).item<double>(); }

// Direct 2-d convolution in float64 (the definition, for checking the im2col route).
Values directConv2d(const Tensor& x, const Tensor& w, const Values& bias, int64_t sh, int64_t sw, int64_t ph,
                    int64_t pw, int64_t dh, int64_t dw, int64_t groups) {
  Values in = read(x), k = read(w);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t co = w.size(0), cg = w.size(1), kh = w.size(2), kw = w.size(3);
  const int64_t oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1, ow = (wd + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  Values out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < co; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double acc = bias.empty() ? 0 : bias[static_cast<size_t>(o)];
          const int64_t g = o / (co / groups);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t iy = y * sh - ph + i * dh, ix = xx * sw - pw + j * dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += in[static_cast<size_t>(((b * c + g * cg + ci) * h + iy) * wd + ix)] *
                       k[static_cast<size_t>(((o * cg + ci) * kh + i) * kw + j)];
              }
          out.push_back(acc);
        }
  return out;
}

}  // namespace

TEST_CASE("nn layers: im2col and col2im") {
  Tensor x = iota({1, 1, 4, 4});
  Tensor cols = dk::im2col(x, {2, 2}, {1, 1}, {0, 0}, {1, 1});
  CHECK(cols.sizes() == Sizes{1, 4, 9});
  Values col_values = read(cols);
  CHECK(sameValues(Values(col_values.begin(), col_values.begin() + 12), {0, 1, 2, 4, 5, 6, 8, 9, 10, 1, 2, 3}));
  // col2im adds every column back: each input position counts the windows that read it.
  Tensor counts = dk::col2im(dk::ones({1, 4, 9}), {4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1});
  CHECK(sameValues(read(counts), {1, 2, 2, 1, 2, 4, 4, 2, 2, 4, 4, 2, 1, 2, 2, 1}));
  // Padding reads zeros; unbatched [C, H, W] works too.
  Tensor padded = dk::im2col(iota({1, 2, 2}), {2, 2}, {1, 1}, {1, 1}, {1, 1});
  CHECK(padded.sizes() == Sizes{4, 9});
  Values padded_values = read(padded);
  CHECK(sameValues(Values(padded_values.begin(), padded_values.begin() + 9), {0, 0, 0, 0, 0, 1, 0, 2, 3}));
  CHECK_THROWS_WITH(dk::im2col(x, {0, 2}, {1, 1}, {0, 0}, {1, 1}),
                    "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 2");
  CHECK_THROWS_WITH(dk::im2col(x, {2, 2}, {1, 1}, {-1, 0}, {1, 1}),
                    "padding should be non-negative, but got pad_height: -1 pad_width: 0");
  CHECK_THROWS_WITH(dk::im2col(x, {5, 2}, {1, 1}, {0, 0}, {1, 1}),
                    "Given input with spatial size (4, 4), kernel_size=(5, 2), dilation=(1, 1), padding=(0, 0), "
                    "calculated shape of the array of sliding blocks as (0, 3), but its components must be at least "
                    "one.");
  CHECK_THROWS_WITH(dk::im2col(dk::zeros({1, 0, 4, 4}), {2, 2}, {1, 1}, {0, 0}, {1, 1}),
                    "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions "
                    "for input, but got: [1, 0, 4, 4]");
  CHECK_THROWS_WITH(dk::col2im(dk::ones({1, 5, 9}), {4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}),
                    "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
                    "input.size(1)=5 and kernel_size=(2, 2).");
  CHECK_THROWS_WITH(dk::col2im(dk::ones({1, 4, 9}), {5, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}),
                    "Given output_size=(5, 4), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), "
                    "expected size of input's dimension 2 to match the calculated number of sliding blocks 4 * 3 = "
                    "12, but got input.size(2)=9.");
}

TEST_CASE("nn layers: conv2d and conv1d") {
  // Grouped, strided, padded and dilated at once; PyTorch printed these for the same inputs.
  Tensor x = waves({2, 4, 5, 6}), w = waves({6, 2, 3, 3}, true);
  Tensor b = make({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {6}, kDouble);
  Tensor y = dk::conv2d(x, w, b, {2, 1}, {1, 2}, {1, 2}, 2);
  CHECK(y.sizes() == Sizes{2, 6, 3, 6});
  CHECK(sumOf(y) == Approx(77.00686267795228).epsilon(1e-12));
  CHECK(y.select(0, 1).select(0, 5).select(0, 2).select(0, 3).item<double>() == Approx(0.847079634433979));
  CHECK(sameValues(read(y), directConv2d(x, w, read(b), 2, 1, 1, 2, 1, 2, 2), 1e-12));
  // Plain float32, no bias, against the direct loops.
  Tensor xf = dk::_to_copy(waves({1, 3, 6, 6}), kFloat), wf = dk::_to_copy(waves({4, 3, 3, 3}, true), kFloat);
  CHECK(sameValues(read(dk::conv2d(xf, wf)), directConv2d(xf, wf, {}, 1, 1, 0, 0, 1, 1, 1), 1e-5));
  // Unbatched input.
  CHECK(dk::conv2d(waves({4, 5, 6}), w, b, {2, 1}, {1, 2}, {1, 2}, 2).sizes() == Sizes{6, 3, 6});
  Tensor y1 = dk::conv1d(waves({2, 3, 7}), waves({4, 3, 2}, true), std::nullopt, {2}, {1});
  CHECK(y1.sizes() == Sizes{2, 4, 4});
  CHECK(sumOf(y1) == Approx(-0.9099362076782445).epsilon(1e-12));
  CHECK(y1.select(0, 1).select(0, 3).select(0, 2).item<double>() == Approx(-2.00563732868292));
  // Transposed: PyTorch's values, and the adjoint of the forward convolution.
  Tensor yt = dk::convolution(waves({2, 4, 3, 3}), waves({4, 3, 3, 2}, true), std::nullopt, {2, 2}, {1, 1}, {1, 1},
                              true, {1, 1}, 1);
  CHECK(yt.sizes() == Sizes{2, 3, 6, 5});
  CHECK(sumOf(yt) == Approx(2.176115574128672).epsilon(1e-12));
  Tensor u = waves({1, 3, 6, 5}), v = waves({1, 4, 3, 3}, true), k = waves({4, 3, 3, 2});
  double forward = sumOf(dk::mul(dk::conv2d(u, k, std::nullopt, {2, 2}, {1, 1}), v));
  double adjoint = sumOf(dk::mul(u, dk::convolution(v, k, std::nullopt, {2, 2}, {1, 1}, {1, 1}, true, {1, 1}, 1)));
  CHECK(forward == Approx(adjoint).epsilon(1e-12));
  // PyTorch's errors.
  CHECK_THROWS_WITH(dk::conv2d(waves({1, 2, 5, 5}), waves({4, 3, 3, 3})),
                    "Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 channels, but "
                    "got 2 channels instead");
  CHECK_THROWS_WITH(dk::conv2d(waves({1, 3, 5, 5}), waves({3, 1, 3, 3}), std::nullopt, {1}, {0}, {1}, 2),
                    "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size "
                    "[[3, 1, 3, 3]] instead");
  CHECK_THROWS_WITH(dk::conv2d(waves({1, 3, 5, 5}), waves({4, 3, 3, 3}), dk::zeros({3}, kDouble)),
                    "Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, but got "
                    "bias of size [3] instead");
  CHECK_THROWS_WITH(dk::conv2d(waves({1, 3, 2, 2}), waves({4, 3, 3, 3})),
                    "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be "
                    "greater than actual input size");
  CHECK_THROWS_WITH(dk::conv2d(waves({1, 3, 5, 5}), waves({4, 3, 3, 3}), std::nullopt, {0}),
                    "non-positive stride is not supported");
  CHECK_THROWS_WITH(dk::conv2d(waves({1, 3, 5, 5}), waves({4, 3, 3, 3}), std::nullopt, {1}, {-1}),
                    "negative padding is not supported");
  CHECK_THROWS_WITH(dk::conv2d(waves({3, 5, 5, 5, 5}), waves({4, 3, 3, 3})),
                    "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 5, 5, 5, 5]");
  CHECK_THROWS_WITH(dk::convolution(waves({1, 3, 5, 5}), waves({4, 3, 3, 3}), std::nullopt, {1, 1, 1}, {0}, {1},
                                    false, {0}, 1),
                    "expected stride to be a single integer value or a list of 2 values to match the convolution "
                    "dimensions, but got stride=[1, 1, 1]");
  // Meta: shapes only.
  Tensor m = dk::empty({2, 4, 5, 6}, TensorOptions().device(kMeta));
  CHECK(dk::conv2d(m, dk::empty({6, 2, 3, 3}, TensorOptions().device(kMeta)), std::nullopt, {2, 1}, {1, 2}, {1, 2}, 2)
            .sizes() == Sizes{2, 6, 3, 6});
}

TEST_CASE("nn layers: max_pool2d and avg_pool2d") {
  Tensor x = iota({1, 1, 4, 4});
  CHECK(sameValues(read(dk::max_pool2d(x, {2, 2})), {5, 7, 13, 15}));
  auto [ceil_values, ceil_indices] = dk::max_pool2d_with_indices(x, {3, 3}, {2, 2}, {0, 0}, {1, 1}, true);
  CHECK(sameValues(read(ceil_values), {10, 11, 14, 15}));
  CHECK(sameValues(read(ceil_indices), {10, 11, 14, 15}));
  // Padding never wins; dilation spreads the window; NaN wins.
  CHECK(sameValues(read(dk::max_pool2d(dk::neg(x), {2, 2}, {2, 2}, {1, 1})), {0, -1, -3, -4, -5, -7, -12, -13, -15}));
  CHECK(sameValues(read(dk::max_pool2d(x, {2, 2}, {1, 1}, {0, 0}, {2, 2})), {10, 11, 14, 15}));
  Tensor with_nan = make({1, std::numeric_limits<double>::quiet_NaN(), 3, 4}, {1, 2, 2});
  CHECK(std::isnan(dk::max_pool2d(with_nan, {2, 2}).item<double>()));
  CHECK(sameValues(read(dk::avg_pool2d(x, {2, 2})), {2.5, 4.5, 10.5, 12.5}));
  CHECK(sameValues(read(dk::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, true)),
                   {1.1111111640930176, 2.6666667461395264, 1.6666666269302368, 5.666666507720947, 10.0, 5.5,
                    4.166666507720947, 7.0, 3.75},
                   1e-6));
  CHECK(sameValues(read(dk::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, true, false)),
                   {2.5, 4.0, 5.0, 8.5, 10.0, 11.0, 12.5, 14.0, 15.0}));
  CHECK(sameValues(read(dk::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, false, true, 2)), {5, 12, 25.5, 45}));
  CHECK(sameValues(read(dk::avg_pool2d(waves({1, 1, 5, 5}), {3, 3}, {2, 2}, {1, 1}, true, false)),
                   {-0.09921719701354195, 0.5431362944727817, 0.19644856115426934, -0.40332776113501434,
                    -0.19441719954417228, 0.36852351454632104, 0.5279963531889338, -0.33645068837430286,
                    -0.5882272008226296},
                   1e-12));
  CHECK(sameValues(read(dk::avg_pool2d(make({1, 2, 3, 4}, {1, 2, 2}, kLong), {2, 2})), {2}));  // truncates
  // PyTorch's errors.
  CHECK_THROWS_WITH(dk::max_pool2d(x, {2, 2}, {2, 2}, {2, 2}), "pad should be at most half of kernel size, but got pad=2 and kernel_size=2");
  CHECK_THROWS_WITH(dk::max_pool2d(x, {0, 0}), "stride should not be zero");
  CHECK_THROWS_WITH(dk::max_pool2d(x, {2, 2}, {1, 1}, {0, 0}, {0, 0}),
                    "dilation should be greater than zero, but got dilationH: 0 dilationW: 0");
  CHECK_THROWS_WITH(dk::max_pool2d(dk::zeros({1, 0, 4, 4}), {2, 2}),
                    "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                    "got:[1, 0, 4, 4]");
  CHECK_THROWS_WITH(dk::max_pool2d(dk::zeros({1, 1, 1, 1}), {2, 2}),
                    "Given input size: (1x1x1). Calculated output size: (1x0x0). Output size is too small");
  CHECK_THROWS_WITH(dk::max_pool2d(x, {2, 2, 2}), "max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  CHECK_THROWS_WITH(dk::max_pool2d(make({1, 2, 3, 4}, {1, 2, 2}, kLong), {2, 2}), "max_pool2d: unsupported dtype Long");
  CHECK_THROWS_WITH(dk::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, false, true, 0), "divisor must be not zero");
  CHECK_THROWS_WITH(dk::avg_pool2d(dk::zeros({4, 4}), {2, 2}),
                    "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  Tensor m = dk::empty({2, 3, 7, 7}, TensorOptions().device(kMeta));
  CHECK(dk::max_pool2d(m, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true).sizes() == Sizes{2, 3, 4, 4});
  CHECK(dk::avg_pool2d(m, {2, 2}).sizes() == Sizes{2, 3, 3, 3});
}

TEST_CASE("nn layers: batch_norm") {
  // PyTorch's values (float32, training, momentum 0.1, eps 1e-5).
  Tensor x = dk::_to_copy(waves({4, 3, 2, 2}), kFloat);
  Tensor running_mean = dk::zeros({3}), running_var = dk::ones({3});
  Tensor weight = make({1, 2, 3}, {3}), bias = make({0.5, 0, -0.5}, {3});
  Tensor y = dk::batch_norm(x, weight, bias, running_mean, running_var, true, 0.1, 1e-5, false);
  CHECK(y.select(0, 1).select(0, 2).select(0, 0).select(0, 1).item<double>() == Approx(2.102491617202759).epsilon(1e-5));
  CHECK(sameValues(read(running_mean), {0.023263931274414062, -0.03834481164813042, 0.02686375193297863}, 1e-6));
  CHECK(sameValues(read(running_var), {0.9487049579620361, 0.9333903789520264, 0.9457305669784546}, 1e-6));
  // Per channel, the output has the bias as mean.
  CHECK(sameValues(read(dk::mean(y, {0, 2, 3})), {0.5, 0, -0.5}, 1e-5));
  Tensor eval = dk::batch_norm(x, weight, bias, running_mean, running_var, false, 0.1, 1e-5, false);
  CHECK(eval.select(0, 1).select(0, 2).select(0, 0).select(0, 1).item<double>() == Approx(1.9980933666229248).epsilon(1e-5));
  CHECK(sameValues(read(running_mean), {0.023263931274414062, -0.03834481164813042, 0.02686375193297863}, 1e-6));
  // One value per channel: aten::batch_norm (unlike nn.functional) allows it; the running
  // variance's unbiasing factor 1 / 0 makes it nan, and the output is 0 (x - mean = 0).
  Tensor single_mean = dk::zeros({3}), single_var = dk::ones({3});
  Tensor single = dk::batch_norm(make({1, 2, 3}, {1, 3}), std::nullopt, std::nullopt, single_mean, single_var, true, 0.5,
                                 1e-5, false);
  CHECK(sameValues(read(single), {0, 0, 0}, 0));
  CHECK(sameValues(read(single_mean), {0.5, 1, 1.5}, 0));
  CHECK(std::isnan(single_var.select(0, 0).item<double>()));
  // An empty batch leaves the running statistics as they were.
  Tensor empty = dk::batch_norm(dk::zeros({0, 3}), std::nullopt, std::nullopt, single_mean, single_var, true, 0.5, 1e-5,
                                false);
  CHECK(empty.sizes() == std::vector<int64_t>{0, 3});
  CHECK(sameValues(read(single_mean), {0.5, 1, 1.5}, 0));
  CHECK_THROWS_WITH(dk::batch_norm(dk::ones({2, 3}), std::nullopt, std::nullopt, dk::zeros({2}), dk::ones({3}), true,
                                   0.1, 1e-5, false),
                    "running_mean should contain 3 elements not 2");
  CHECK_THROWS_WITH(dk::batch_norm(dk::ones({2, 3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt, false,
                                   0.1, 1e-5, false),
                    "running_mean must be defined in evaluation mode");
}

TEST_CASE("nn layers: _scaled_dot_product_attention") {
  Tensor q = waves({2, 3, 4}), k = waves({2, 3, 4}, true), v = waves({2, 3, 6});
  auto [out, weights] = dk::_scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, false, true);
  CHECK(out.sizes() == Sizes{2, 3, 6});
  CHECK(weights.sizes() == Sizes{2, 3, 3});
  // Causal: nothing attends to a later position; each row is a distribution; out = weights v.
  Values w = read(weights);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i) {
      double row = 0;
      for (int64_t j = 0; j < 3; ++j) {
        double value = w[static_cast<size_t>((b * 3 + i) * 3 + j)];
        if (j > i) CHECK(value == 0);
        row += value;
      }
      CHECK(row == Approx(1));
    }
  CHECK(sameValues(read(out), read(dk::matmul(weights, v)), 1e-12));
  // The scores are q k^T / sqrt(4): the first row of a causal mask takes only position 0.
  CHECK(w[0] == 1);
  // A bool mask keeps the true positions, a float mask adds.
  Tensor keep = make({1, 0, 1, 1, 1, 1, 0, 1, 1}, {3, 3}, kBool);
  Tensor masked = std::get<1>(dk::_scaled_dot_product_attention(q, k, v, keep));
  CHECK(read(masked)[1] == 0);
  CHECK(read(masked)[6] == 0);
  Tensor additive = dk::zeros({3, 3}, kDouble);
  Tensor plain = std::get<1>(dk::_scaled_dot_product_attention(q, k, v, additive));
  Tensor unmasked = std::get<1>(dk::_scaled_dot_product_attention(q, k, v));
  CHECK(sameValues(read(plain), read(unmasked)));
  CHECK_THROWS_WITH(dk::_scaled_dot_product_attention(q, k, v, keep, 0.0, false, true),
                    "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
}

namespace {

// layer_norm of each row of `x` (rows of n elements) in float64, straight from the definition:
// output, mean and rstd.
struct LayerNormReference {
  Values out, mean, rstd;
};
LayerNormReference layerNormReference(const Values& x, int64_t n, const Values& w, const Values& b, double eps) {
  LayerNormReference r;
  for (size_t row = 0; row * static_cast<size_t>(n) < x.size(); ++row) {
    double mu = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mu += x[row * n + j];
    mu /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) var += (x[row * n + j] - mu) * (x[row * n + j] - mu);
    const double rs = 1 / std::sqrt(var / static_cast<double>(n) + eps);
    for (int64_t j = 0; j < n; ++j) {
      double y = (x[row * n + j] - mu) * rs;
      if (!w.empty()) y *= w[static_cast<size_t>(j)];
      if (!b.empty()) y += b[static_cast<size_t>(j)];
      r.out.push_back(y);
    }
    r.mean.push_back(mu);
    r.rstd.push_back(rs);
  }
  return r;
}

// The gradients of sum(layer_norm(x) * g) by the definition (float64): dx, dweight, dbias.
std::array<Values, 3> layerNormBackwardReference(const Values& x, const Values& g, int64_t n, const Values& w,
                                                 double eps) {
  LayerNormReference f = layerNormReference(x, n, {}, {}, eps);
  std::array<Values, 3> out{Values(x.size()), Values(static_cast<size_t>(n)), Values(static_cast<size_t>(n))};
  for (size_t row = 0; row < f.mean.size(); ++row) {
    double mean_gw = 0, mean_gwx = 0;
    for (int64_t j = 0; j < n; ++j) {
      const size_t k = row * n + j;
      const double gw = g[k] * (w.empty() ? 1.0 : w[static_cast<size_t>(j)]);
      mean_gw += gw / static_cast<double>(n);
      mean_gwx += gw * f.out[k] / static_cast<double>(n);
    }
    for (int64_t j = 0; j < n; ++j) {
      const size_t k = row * n + j;
      const double gw = g[k] * (w.empty() ? 1.0 : w[static_cast<size_t>(j)]);
      out[0][k] = f.rstd[row] * (gw - mean_gw - f.out[k] * mean_gwx);
      out[1][static_cast<size_t>(j)] += g[k] * f.out[k];
      out[2][static_cast<size_t>(j)] += g[k];
    }
  }
  return out;
}

Values wavesValues(int64_t n, double phase) {
  Values v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 2 * std::sin(0.7 * double(i) + phase) + 0.25;
  return v;
}

}  // namespace

TEST_CASE("nn layers: native_layer_norm, fused on the CPU") {
  // PyTorch's values (float32): sin(0, 1, ...) as [2, 3, 4], weight [1, 2, 3, 4], bias [0.5, 0, -0.5, 1].
  Tensor x = dk::_to_copy(waves({2, 3, 4}), kFloat);
  Tensor w = make({1, 2, 3, 4}, {4}), b = make({0.5, 0, -0.5, 1}, {4});
  auto [out, mean, rstd] = dk::native_layer_norm(x, {4}, w, b, 1e-5);
  CHECK(mean.sizes() == Sizes{2, 3, 1});
  CHECK(rstd.sizes() == Sizes{2, 3, 1});
  CHECK(sumOf(out) == Approx(7.256169319152832).epsilon(1e-5));
  const Values means = read(mean), rstds = read(rstd);
  CHECK(sameValues(Values(means.begin(), means.begin() + 2), {0.4729720950126648, -0.33453893661499023}, 1e-6));
  CHECK(sameValues(Values(rstds.begin(), rstds.begin() + 2), {2.4617559909820557, 1.6041812896728516}, 1e-6));
  Tensor g = dk::_to_copy(waves({2, 3, 4}, true), kFloat);
  auto [dx, dw, db] = dk::native_layer_norm_backward(g, x, {4}, mean, rstd, w, b, {true, true, true});
  CHECK(sumOf(dk::mul(dx, iota({2, 3, 4}))) == Approx(-12.285335540771484).epsilon(1e-5));
  CHECK(sameValues(read(dw), {-2.2740461826324463, -0.4033856689929962, 0.2123480886220932, 3.8485419750213623}, 1e-5));
  CHECK(sameValues(read(db), {0.4951328635215759, -0.0026115775108337402, -0.4979550242424011, -0.5354808568954468},
                   1e-5));
  // Only what the mask asks for is computed.
  auto [dx2, dw2, db2] = dk::native_layer_norm_backward(g, x, {4}, mean, rstd, w, b, {false, true, false});
  CHECK(!dx2.defined());
  CHECK(!db2.defined());
  CHECK(sameValues(read(dw2), read(dw)));
  CHECK(std::get<1>(dk::native_layer_norm(x, {3, 4}, std::nullopt, std::nullopt, 1e-5)).sizes() == Sizes{2, 1, 1});
  // PyTorch's errors.
  CHECK_THROWS_WITH(dk::native_layer_norm(x, {4}, dk::_to_copy(w, kDouble), b, 1e-5),
                    "expected scalar type Float but found Double");
  CHECK_THROWS_WITH(dk::layer_norm(x, {4}, make({1, 2, 3}, {3})),
                    "Expected weight to be of same shape as normalized_shape, but got weight of shape [3] and "
                    "normalized_shape = [4]");
  CHECK_THROWS_WITH(dk::layer_norm(x, {}), Catch::Contains("Expected normalized_shape to be at least 1-dimensional"));
  CHECK_THROWS_WITH(dk::layer_norm(dk::ones({2, 3}, kLong), {3}), "LayerNormKernelImpl: unsupported dtype Long");
}

TEST_CASE("nn layers: native_layer_norm matches the definition for every floating dtype, shape and layout") {
  struct Case {
    Sizes sizes;
    Sizes normalized;
    bool affine;
  };
  // Rows shorter and longer than a vector, not multiples of it, several normalized dims, no rows.
  const std::vector<Case> cases = {{{5, 37}, {37}, true},     {{3, 8}, {8}, false},      {{2, 3, 4, 5}, {4, 5}, true},
                                   {{7, 1}, {1}, true},       {{4, 300}, {300}, false},  {{0, 6}, {6}, true},
                                   {{2, 1029}, {1029}, true}, {{6}, {6}, true}};
  for (ScalarType dtype : {kFloat, kDouble, kHalf, kBFloat16}) {
    const double tol = dtype == kDouble ? 1e-12 : dtype == kFloat ? 2e-5 : dtype == kHalf ? 4e-3 : 3e-2;
    for (const Case& c : cases) {
      INFO("dtype " << dtype << " sizes " << IntArrayRef(c.sizes) << " normalized " << IntArrayRef(c.normalized));
      const int64_t numel = computeNumel(c.sizes), n = computeNumel(c.normalized);
      // Values as the dtype holds them, so the reference sees the same inputs.
      Values xv = read(make(wavesValues(numel, 0.3), c.sizes, dtype));
      Values gv = read(make(wavesValues(numel, 1.1), c.sizes, dtype));
      Values wv = c.affine ? read(make(wavesValues(n, 2.0), {n}, dtype)) : Values{};
      Values bv = c.affine ? read(make(wavesValues(n, 0.9), {n}, dtype)) : Values{};
      Tensor x = make(xv, c.sizes, dtype), g = make(gv, c.sizes, dtype);
      std::optional<Tensor> w, b;
      if (c.affine) {
        w = make(wv, c.normalized, dtype);
        b = make(bv, c.normalized, dtype);
      }
      auto [out, mean, rstd] = dk::native_layer_norm(x, c.normalized, w, b, 1e-5);
      LayerNormReference ref = layerNormReference(xv, n, wv, bv, 1e-5);
      CHECK(out.dtype() == dtype);
      CHECK(mean.dtype() == dtype);
      CHECK(sameValues(read(out), ref.out, tol));
      CHECK(sameValues(read(mean), ref.mean, tol));
      CHECK(sameValues(read(rstd), ref.rstd, tol));
      std::array<Values, 3> grads = layerNormBackwardReference(xv, gv, n, wv, 1e-5);
      auto [dx, dw, db] = dk::native_layer_norm_backward(g, x, c.normalized, mean, rstd, w, b, {true, true, true});
      // Half's and BFloat16's saved mean and rstd are rounded, which the gradient feels.
      const double grad_tol = dtype == kDouble || dtype == kFloat ? tol * 10 : tol * 8;
      CHECK(sameValues(read(dx), grads[0], grad_tol));
      CHECK(dw.defined() == c.affine);
      if (c.affine) {
        CHECK(sameValues(read(dw), grads[1], grad_tol * 4));
        CHECK(sameValues(read(db), grads[2], grad_tol * 4));
      }
    }
  }
  SECTION("a strided input gives the contiguous input's values") {
    Tensor x = make(wavesValues(6 * 40, 0.1), {6, 40});
    Tensor xt = dk::t(dk::t(x).contiguous());  // same values, column-major
    REQUIRE(!xt.is_contiguous());
    CHECK(sameValues(read(dk::layer_norm(xt, {40})), read(dk::layer_norm(x, {40}))));
  }
}

TEST_CASE("nn layers: native_layer_norm gives the same bits on 1 and 2 threads", "[concurrency]") {
  // 96 rows of 1,000 (several chunks of parallel work); 40 x 2,500 for the column-split
  // weight and bias gradients.
  const int threads = dk::get_num_threads();
  for (const Sizes& sizes : {Sizes{96, 1000}, Sizes{40, 2500}}) {
    const int64_t n = sizes[1];
    Tensor x = make(wavesValues(computeNumel(sizes), 0.2), sizes), g = make(wavesValues(computeNumel(sizes), 0.5), sizes);
    Tensor w = make(wavesValues(n, 1.5), {n}), b = make(wavesValues(n, 0.7), {n});
    std::vector<Values> results[2];
    for (int t : {1, 2}) {
      dk::set_num_threads(t);
      auto [out, mean, rstd] = dk::native_layer_norm(x, {n}, w, b, 1e-5);
      auto [dx, dw, db] = dk::native_layer_norm_backward(g, x, {n}, mean, rstd, w, b, {true, true, true});
      results[t - 1] = {read(out), read(mean), read(rstd), read(dx), read(dw), read(db)};
    }
    dk::set_num_threads(threads);
    for (size_t i = 0; i < results[0].size(); ++i) CHECK(results[0][i] == results[1][i]);
  }
}

TEST_CASE("nn layers: native_layer_norm on Meta gives the shapes") {
  Tensor x = detail::empty_contiguous({4, 5, 6}, kFloat, Device(DeviceType::Meta));
  auto [out, mean, rstd] = dk::native_layer_norm(x, {5, 6}, std::nullopt, std::nullopt, 1e-5);
  CHECK(out.sizes() == Sizes{4, 5, 6});
  CHECK(mean.sizes() == Sizes{4, 1, 1});
  CHECK(rstd.device().type == DeviceType::Meta);
}

TEST_CASE("nn layers: a convolution whose columns exceed the budget runs a chunk of images at a time") {
  // 1 x 1 kernel, 2 -> 3 channels, 700 x 900 images: 1.26M column elements per image, so each of
  // the 3 images is its own chunk (Note [Convolution columns]). out[n, o] = sum_c w[o, c] x[n, c] + b[o].
  const int64_t n = 3, c = 2, o = 3, h = 700, w = 900;
  Tensor x = dk::_to_copy(waves({n, c, h, w}), kFloat);
  Tensor weight = make({0.5, -1, 2, 0.25, -0.75, 1.5}, {o, c, 1, 1}), bias = make({0.1, 0.2, -0.3}, {o});
  x.requires_grad_();
  Tensor out = dk::conv2d(x, weight, bias);
  REQUIRE(out.sizes() == Sizes{n, o, h, w});
  const Values xv = read(x.detach()), ov = read(out.detach()), wv = read(weight), bv = read(bias);
  bool all_match = true;
  for (int64_t b = 0; b < n && all_match; ++b)
    for (int64_t k = 0; k < o; ++k)
      for (int64_t p = 0; p < h * w; p += 997) {  // a sample of positions in every image and channel
        double want = bv[static_cast<size_t>(k)];
        for (int64_t ci = 0; ci < c; ++ci)
          want += wv[static_cast<size_t>(k * c + ci)] * xv[static_cast<size_t>((b * c + ci) * h * w + p)];
        const double got = ov[static_cast<size_t>((b * o + k) * h * w + p)];
        if (std::abs(got - want) > 1e-5 * std::max(1.0, std::abs(want))) {
          all_match = false;
          INFO("image " << b << " channel " << k << " position " << p << ": " << got << " vs " << want);
          CHECK(got == Approx(want));
          break;
        }
      }
  CHECK(all_match);
  // The gradient reaches every image: d sum(out) / d x[n, c] = sum_o w[o, c].
  dk::sum(out).backward();
  const Values gv = read(x.grad());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < c; ++ci) {
      const double want = wv[static_cast<size_t>(ci)] + wv[static_cast<size_t>(c + ci)] + wv[static_cast<size_t>(2 * c + ci)];
      CHECK(gv[static_cast<size_t>((b * c + ci) * h * w + 12345)] == Approx(want));
      CHECK(gv[static_cast<size_t>((b * c + ci + 1) * h * w - 1)] == Approx(want));
    }
}
