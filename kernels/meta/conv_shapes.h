// kernels/meta/conv_shapes.h: the shape functions (kernels/meta/shape_functions.h explains the
// idea) of the sliding-window operators: im2col, col2im, max_pool2d_with_indices, avg_pool2d and
// its backward. CPU, CUDA and Meta call these, so they agree on output sizes and on the errors
// (PyTorch 1.13.1's words).
#pragma once

#include <cstdint>
#include <vector>

#include "dk/core/core_types.h"
#include "dk/tensor/tensor.h"
#include "dk/util/array_ref.h"

namespace dk::meta {

// A 2-D window: kernel, dilation, padding and stride, each (height, width).
struct Window2d {
  int64_t kh, kw;
  int64_t dh = 1, dw = 1;
  int64_t ph = 0, pw = 0;
  int64_t sh = 1, sw = 1;
};

// im2col: input [N, C, H, W] or [C, H, W] -> [N, C * kh * kw, oh * ow] (or without N); the
// input's dtype, floating only. Errors: "kernel size should be greater than zero, but got
// kernel_height: 0 kernel_width: 2", the same for dilation and stride, "padding should be
// non-negative, but got pad_height: -1 pad_width: 0", "Expected 3D or 4D (batch mode) tensor with
// possibly 0 batch size and other non-zero dimensions for input, but got: [1, 0, 4, 4]", "Given
// input with spatial size (4, 4), kernel_size=(5, 2), dilation=(1, 1), padding=(0, 0),
// calculated shape of the array of sliding blocks as (0, 3), but its components must be at
// least one."
struct Im2colSpec {
  Window2d window;
  int64_t batch, channels, height, width, out_height, out_width;
  bool batched;
  std::vector<int64_t> sizes;  // of the result
};
Im2colSpec im2col(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                  IntArrayRef stride);
// col2im: input [N, C * kh * kw, L] or [C * kh * kw, L] -> [N, C, H, W] (or without N) with
// (H, W) = output_size. Errors as im2col's, and "Expected size of input's dimension 1 to be
// divisible by the product of kernel_size, but got input.size(1)=5 and kernel_size=(2, 2).",
// "Given output_size=(5, 4), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1),
// expected size of input's dimension 2 to match the calculated number of sliding blocks 4 * 3 =
// 12, but got input.size(2)=9."
Im2colSpec col2im(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                  IntArrayRef padding, IntArrayRef stride);

// max_pool2d_with_indices and avg_pool2d: input [N, C, H, W] or [C, H, W] -> [N, C, oh, ow]
// (or without N), PyTorch's output size rule (ceil_mode lets the last window start inside the
// input or its left padding only). `op` names the operator in the argument errors:
// "max_pool2d: kernel_size must either be a single int, or a tuple of two ints", "stride should
// not be zero", "pad should be at most half of kernel size, but got pad=2 and kernel_size=2",
// "kernel size should be greater than zero, but got kH: 0 kW: 0", "Expected 3D or 4D (batch
// mode) tensor with optional 0 dim batch size for input, but got:[1, 0, 4, 4]", "Given input
// size: (1x1x1). Calculated output size: (1x0x0). Output size is too small". max_pool2d takes
// floating inputs, avg_pool2d all but Bool.
struct PoolSpec {
  Window2d window;
  int64_t planes, height, width, out_height, out_width;  // planes: N * C
  std::vector<int64_t> sizes;                            // of the result
};
PoolSpec maxPool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation, bool ceil_mode);
PoolSpec avgPool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                   bool ceil_mode, std::optional<int64_t> divisor_override);

// avg_pool2d_backward: avg_pool2d's spec for self, and grad_output must have its output's
// sizes ("avg_pool2d_backward: expected grad_output of size [1, 1, 2, 2], but got [1, 1, 3, 3]").
PoolSpec avgPool2dBackward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           std::optional<int64_t> divisor_override);

// The divisor of avg_pool2d's window starting at (h0, w0) (PyTorch's rule: the window clipped to
// the padded input when count_include_pad, to the input itself otherwise; divisor_override
// wins).
int64_t avgPoolDivisor(const Window2d& w, int64_t h0, int64_t w0, int64_t height, int64_t width,
                       bool count_include_pad, std::optional<int64_t> divisor_override);

}  // namespace dk::meta
