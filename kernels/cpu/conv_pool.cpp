// CPU kernels of the sliding-window operators: im2col and col2im (the pieces convolution is
// built from, kernels/composite/nn_layers.cpp), max_pool2d_with_indices, avg_pool2d and
// avg_pool2d_backward. Shapes and argument errors come from kernels/meta/conv_shapes.h. Inputs
// are read contiguous (a copy when they are not) and outputs are allocated contiguous; every
// loop runs plane by plane (one (n, c) image), rows outermost, so reads and writes stream.
#include <algorithm>
#include <cmath>
#include <limits>

#include "dk/core/parallel.h"
#include "dk/generated/ops/avg_pool2d_backward_native.h"
#include "dk/generated/ops/avg_pool2d_native.h"
#include "dk/generated/ops/col2im_native.h"
#include "dk/generated/ops/im2col_native.h"
#include "dk/generated/ops/max_pool2d_with_indices_native.h"
#include "dk/tensor/empty_tensor.h"
#include "meta/conv_shapes.h"
#include "tensor_iterator.h"

namespace dk::native {

namespace {

// The kernel position (ki, kj) of window (oy, ox) reads input row oy * sh - ph + ki * dh, column
// ox * sw - pw + kj * dw. Calls fn(column index in the block matrix, input offset or -1 for padding)
// for every element of one plane's block matrix row `row` = ki * kw + kj.
template <class Fn>
void forEachBlockElement(const meta::Window2d& w, int64_t height, int64_t width, int64_t oh, int64_t ow, int64_t ki,
                         int64_t kj, Fn&& fn) {
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int64_t iy = oy * w.sh - w.ph + ki * w.dh;
    const bool row_inside = iy >= 0 && iy < height;
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t ix = ox * w.sw - w.pw + kj * w.dw;
      fn(oy * ow + ox, row_inside && ix >= 0 && ix < width ? iy * width + ix : -1);
    }
  }
}

}  // namespace

// Every kernel-sized block of the (padded) input as a column: row (c * kh + ki) * kw + kj of the
// result holds, for each block, the input element at kernel position (ki, kj) of channel c.
// Each output row is written window row by window row: the windows whose column falls inside
// the input form one run (a plain copy at stride 1), with zeros on either side for the padding.
// Planes are independent and split over the threads.
Tensor im2col_cpu(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                  IntArrayRef stride) {
  meta::Im2colSpec spec = meta::im2col(self, kernel_size, dilation, padding, stride);
  Tensor out = detail::empty_contiguous(spec.sizes, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  Tensor in = contiguousCpu(self);
  const meta::Window2d& w = spec.window;
  const int64_t height = spec.height, width = spec.width, oh = spec.out_height, ow = spec.out_width;
  const int64_t plane = height * width, blocks = oh * ow;
  DK_DISPATCH_FLOATING_TYPES(self.dtype(), "im2col", [&] {
    const auto* src = in.data_ptr<scalar_t>();
    auto* dst = out.data_ptr<scalar_t>();
    const int64_t per_plane = w.kh * w.kw * blocks;
    parallel_for(0, spec.batch * spec.channels, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(per_plane, 1)),
                 [&](int64_t first, int64_t last) {
      for (int64_t p = first; p < last; ++p) {
        const scalar_t* image = src + p * plane;
        for (int64_t ki = 0; ki < w.kh; ++ki) {
          for (int64_t kj = 0; kj < w.kw; ++kj) {
            scalar_t* row = dst + (p * w.kh * w.kw + ki * w.kw + kj) * blocks;
            // Window columns ox with 0 <= ox * sw - pw + kj * dw < width: [lo, hi).
            const int64_t shift = kj * w.dw - w.pw;
            const int64_t lo = std::min(ow, shift >= 0 ? 0 : (-shift + w.sw - 1) / w.sw);
            const int64_t hi = std::max(lo, std::min(ow, width - shift <= 0 ? 0 : (width - shift - 1) / w.sw + 1));
            for (int64_t oy = 0; oy < oh; ++oy) {
              scalar_t* out_row = row + oy * ow;
              const int64_t iy = oy * w.sh - w.ph + ki * w.dh;
              if (iy < 0 || iy >= height) {
                std::fill(out_row, out_row + ow, scalar_t(0));
                continue;
              }
              std::fill(out_row, out_row + lo, scalar_t(0));
              const scalar_t* in_row = image + iy * width;
              if (w.sw == 1 && hi > lo) {
                std::copy(in_row + (lo + shift), in_row + (hi + shift), out_row + lo);
              } else {
                for (int64_t ox = lo; ox < hi; ++ox) out_row[ox] = in_row[ox * w.sw + shift];
              }
              std::fill(out_row + hi, out_row + ow, scalar_t(0));
            }
          }
        }
      }
    });
  });
  return out;
}

// The adjoint of im2col: every column element added back to the input position it was read from.
Tensor col2im_cpu(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                  IntArrayRef padding, IntArrayRef stride) {
  meta::Im2colSpec spec = meta::col2im(self, output_size, kernel_size, dilation, padding, stride);
  Tensor out = detail::empty_contiguous(spec.sizes, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  Tensor in = contiguousCpu(self);
  const meta::Window2d& w = spec.window;
  const int64_t plane = spec.height * spec.width, blocks = spec.out_height * spec.out_width;
  DK_DISPATCH_FLOATING_TYPES(self.dtype(), "col2im", [&] {
    using acc_t = opmath_t<scalar_t>;
    std::vector<acc_t> sums(static_cast<size_t>(plane));
    const auto* src = in.data_ptr<scalar_t>();
    auto* dst = out.data_ptr<scalar_t>();
    for (int64_t p = 0; p < spec.batch * spec.channels; ++p) {
      std::fill(sums.begin(), sums.end(), acc_t(0));
      for (int64_t ki = 0; ki < w.kh; ++ki) {
        for (int64_t kj = 0; kj < w.kw; ++kj) {
          const scalar_t* row = src + (p * w.kh * w.kw + ki * w.kw + kj) * blocks;
          forEachBlockElement(w, spec.height, spec.width, spec.out_height, spec.out_width, ki, kj,
                              [&](int64_t col, int64_t at) {
                                if (at >= 0) sums[static_cast<size_t>(at)] += static_cast<acc_t>(row[col]);
                              });
        }
      }
      for (int64_t i = 0; i < plane; ++i) dst[p * plane + i] = static_cast<scalar_t>(sums[static_cast<size_t>(i)]);
    }
  });
  return out;
}

// The largest element of each window (NaN wins) and its position in the plane (row * W + col).
std::tuple<Tensor, Tensor> max_pool2d_with_indices_cpu(const Tensor& self, IntArrayRef kernel_size,
                                                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                       bool ceil_mode) {
  meta::PoolSpec spec = meta::maxPool2d(self, kernel_size, stride, padding, dilation, ceil_mode);
  Tensor out = detail::empty_contiguous(spec.sizes, self.dtype(), self.device());
  Tensor indices = detail::empty_contiguous(spec.sizes, kLong, self.device());
  if (out.numel() == 0) return {out, indices};
  Tensor in = contiguousCpu(self);
  const meta::Window2d& w = spec.window;
  const int64_t plane = spec.height * spec.width, out_plane = spec.out_height * spec.out_width;
  DK_DISPATCH_FLOATING_TYPES(self.dtype(), "max_pool2d", [&] {
    using acc_t = opmath_t<scalar_t>;
    const auto* src = in.data_ptr<scalar_t>();
    auto* dst = out.data_ptr<scalar_t>();
    auto* idx = indices.data_ptr<int64_t>();
    for (int64_t p = 0; p < spec.planes; ++p) {
      const scalar_t* image = src + p * plane;
      for (int64_t oy = 0; oy < spec.out_height; ++oy) {
        int64_t y0 = oy * w.sh - w.ph;
        const int64_t y1 = std::min(y0 + (w.kh - 1) * w.dh + 1, spec.height);
        while (y0 < 0) y0 += w.dh;
        for (int64_t ox = 0; ox < spec.out_width; ++ox) {
          int64_t x0 = ox * w.sw - w.pw;
          const int64_t x1 = std::min(x0 + (w.kw - 1) * w.dw + 1, spec.width);
          while (x0 < 0) x0 += w.dw;
          int64_t best = y0 * spec.width + x0;
          acc_t best_value = -std::numeric_limits<acc_t>::infinity();
          for (int64_t y = y0; y < y1; y += w.dh) {
            for (int64_t x = x0; x < x1; x += w.dw) {
              const auto v = static_cast<acc_t>(image[y * spec.width + x]);
              if (v > best_value || std::isnan(v)) {
                best_value = v;
                best = y * spec.width + x;
              }
            }
          }
          dst[p * out_plane + oy * spec.out_width + ox] = static_cast<scalar_t>(best_value);
          idx[p * out_plane + oy * spec.out_width + ox] = best;
        }
      }
    }
  });
  return {out, indices};
}

namespace {

// Calls fn(input offset in the plane, output offset in the plane, divisor) for every (input,
// window) pair of avg_pool2d.
template <class Fn>
void forEachAvgWindow(const meta::PoolSpec& spec, bool count_include_pad, std::optional<int64_t> divisor_override,
                      Fn&& fn) {
  const meta::Window2d& w = spec.window;
  for (int64_t oy = 0; oy < spec.out_height; ++oy) {
    const int64_t y0 = oy * w.sh - w.ph;
    for (int64_t ox = 0; ox < spec.out_width; ++ox) {
      const int64_t x0 = ox * w.sw - w.pw;
      const int64_t divisor =
          meta::avgPoolDivisor(w, y0, x0, spec.height, spec.width, count_include_pad, divisor_override);
      const int64_t y1 = std::min(y0 + w.kh, spec.height), x1 = std::min(x0 + w.kw, spec.width);
      for (int64_t y = std::max<int64_t>(y0, 0); y < y1; ++y)
        for (int64_t x = std::max<int64_t>(x0, 0); x < x1; ++x) fn(y * spec.width + x, oy * spec.out_width + ox, divisor);
    }
  }
}

}  // namespace

// The mean of each window (the sum over the divisor PyTorch's rule gives; integer dtypes divide
// with truncation).
Tensor avg_pool2d_cpu(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  meta::PoolSpec spec = meta::avgPool2d(self, kernel_size, stride, padding, ceil_mode, divisor_override);
  Tensor out = detail::empty_contiguous(spec.sizes, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  Tensor in = contiguousCpu(self);
  const int64_t plane = spec.height * spec.width, out_plane = spec.out_height * spec.out_width;
  DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(self.dtype(), "avg_pool2d", [&] {
    using acc_t = std::conditional_t<std::is_integral_v<scalar_t>, int64_t, opmath_t<scalar_t>>;
    std::vector<acc_t> sums(static_cast<size_t>(out_plane));
    std::vector<int64_t> divisors(static_cast<size_t>(out_plane));
    const auto* src = in.data_ptr<scalar_t>();
    auto* dst = out.data_ptr<scalar_t>();
    for (int64_t p = 0; p < spec.planes; ++p) {
      std::fill(sums.begin(), sums.end(), acc_t(0));
      const scalar_t* image = src + p * plane;
      forEachAvgWindow(spec, count_include_pad, divisor_override, [&](int64_t at, int64_t o, int64_t divisor) {
        sums[static_cast<size_t>(o)] += static_cast<acc_t>(image[at]);
        divisors[static_cast<size_t>(o)] = divisor;
      });
      for (int64_t o = 0; o < out_plane; ++o) {
        const auto i = static_cast<size_t>(o);
        // A window entirely in the padding has no element (and so no divisor recorded): 0.
        dst[p * out_plane + o] = divisors[i] == 0 ? scalar_t(0)
                                                  : static_cast<scalar_t>(sums[i] / static_cast<acc_t>(divisors[i]));
        divisors[i] = 0;
      }
    }
  });
  return out;
}

// Each window's gradient, over its divisor, added to every input element of the window.
Tensor avg_pool2d_backward_cpu(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  meta::PoolSpec spec =
      meta::avgPool2dBackward(grad_output, self, kernel_size, stride, padding, ceil_mode, divisor_override);
  Tensor grad_input = detail::empty_contiguous(self.sizes(), grad_output.dtype(), self.device());
  if (grad_input.numel() == 0) return grad_input;
  Tensor grad = contiguousCpu(grad_output);
  const int64_t plane = spec.height * spec.width, out_plane = spec.out_height * spec.out_width;
  DK_DISPATCH_FLOATING_TYPES(grad_output.dtype(), "avg_pool2d_backward", [&] {
    using acc_t = opmath_t<scalar_t>;
    std::vector<acc_t> sums(static_cast<size_t>(plane));
    const auto* g = grad.data_ptr<scalar_t>();
    auto* dst = grad_input.data_ptr<scalar_t>();
    for (int64_t p = 0; p < spec.planes; ++p) {
      std::fill(sums.begin(), sums.end(), acc_t(0));
      const scalar_t* grad_plane = g + p * out_plane;
      forEachAvgWindow(spec, count_include_pad, divisor_override, [&](int64_t at, int64_t o, int64_t divisor) {
        sums[static_cast<size_t>(at)] += static_cast<acc_t>(grad_plane[o]) / static_cast<acc_t>(divisor);
      });
      for (int64_t i = 0; i < plane; ++i) dst[p * plane + i] = static_cast<scalar_t>(sums[static_cast<size_t>(i)]);
    }
  });
  return grad_input;
}

}  // namespace dk::native
