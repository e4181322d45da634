// The shape functions of im2col, col2im, max_pool2d_with_indices and avg_pool2d
// (kernels/meta/conv_shapes.h).
#include "conv_shapes.h"

#include <algorithm>
#include <sstream>

#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"
#include "shape_functions.h"

namespace dk::meta {

namespace {

std::string sizesText(IntArrayRef sizes) {
  std::ostringstream out;
  out << sizes;
  return out.str();
}

// im2col/col2im: every window argument has two values (int[2] accepts one, meaning both).
int64_t pick(IntArrayRef values, size_t i) { return values.size() == 1 ? values[0] : values[i]; }

Window2d unfoldWindow(IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  for (IntArrayRef a : {kernel_size, dilation, padding, stride})
    DK_CHECK(a.size() == 1 || a.size() == 2, "It is expected each window argument to have 2 elements, but got ",
             a.size());
  Window2d w{pick(kernel_size, 0), pick(kernel_size, 1), pick(dilation, 0), pick(dilation, 1),
             pick(padding, 0),     pick(padding, 1),     pick(stride, 0),   pick(stride, 1)};
  DK_CHECK(w.kh > 0 && w.kw > 0, "kernel size should be greater than zero, but got kernel_height: ", w.kh,
           " kernel_width: ", w.kw);
  DK_CHECK(w.dh > 0 && w.dw > 0, "dilation should be greater than zero, but got dilation_height: ", w.dh,
           " dilation_width: ", w.dw);
  DK_CHECK(w.ph >= 0 && w.pw >= 0, "padding should be non-negative, but got pad_height: ", w.ph,
           " pad_width: ", w.pw);
  DK_CHECK(w.sh > 0 && w.sw > 0, "stride should be greater than zero, but got stride_height: ", w.sh,
           " stride_width: ", w.sw);
  return w;
}

// Sliding blocks along one dim of `size` (may be < 1: the caller reports it).
int64_t blocks(int64_t size, int64_t k, int64_t d, int64_t p, int64_t s) { return (size + 2 * p - (d * (k - 1) + 1)) / s + 1; }

// PyTorch's pooling_output_shape for one dim.
int64_t poolOutput(int64_t size, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  DK_CHECK(stride != 0, "stride should not be zero");
  DK_CHECK(pad <= k / 2, "pad should be at most half of kernel size, but got pad=", pad, " and kernel_size=", k);
  int64_t numerator = size + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Division rounding toward negative infinity.
  int64_t q = numerator / stride;
  if ((numerator % stride != 0) && ((numerator < 0) != (stride < 0))) --q;
  int64_t out = q + 1;
  if (ceil_mode && (out - 1) * stride >= size + pad) --out;
  return out;
}

PoolSpec poolShape(const char* op, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const std::string name(op);
  DK_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
           name, ": kernel_size must either be a single int, or a tuple of two ints");
  DK_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 2,
           name, ": stride must either be omitted, a single int, or a tuple of two ints");
  DK_CHECK(padding.size() == 1 || padding.size() == 2,
           name, name == "max_pool2d" ? ": padding must be either be a single int, or a tuple of two ints"
                                      : ": padding must either be a single int, or a tuple of two ints");
  DK_CHECK(dilation.size() == 1 || dilation.size() == 2,
           name, ": dilation must be either a single int, or a tuple of two ints");
  Window2d w{pick(kernel_size, 0), pick(kernel_size, 1), pick(dilation, 0), pick(dilation, 1), pick(padding, 0),
             pick(padding, 1),     0,                    0};
  w.sh = stride.empty() ? w.kh : pick(stride, 0);
  w.sw = stride.empty() ? w.kw : pick(stride, 1);
  if (name == "max_pool2d") DK_CHECK(self.dim() == 3 || self.dim() == 4, "non-empty 3D or 4D (batch mode) tensor expected for input");
  const int64_t h = self.size(-2), wd = self.size(-1);
  const int64_t c = self.size(-3), n = self.dim() == 4 ? self.size(-4) : 1;
  PoolSpec spec{w, n * c, h, wd, poolOutput(h, w.kh, w.ph, w.sh, w.dh, ceil_mode),
                poolOutput(wd, w.kw, w.pw, w.sw, w.dw, ceil_mode), {}};
  DK_CHECK(w.kw > 0 && w.kh > 0, "kernel size should be greater than zero, but got kH: ", w.kh, " kW: ", w.kw);
  DK_CHECK(w.sw > 0 && w.sh > 0, "stride should be greater than zero, but got dH: ", w.sh, " dW: ", w.sw);
  DK_CHECK(w.dw > 0 && w.dh > 0, "dilation should be greater than zero, but got dilationH: ", w.dh,
           " dilationW: ", w.dw);
  bool valid = (self.dim() == 3 && self.size(0) != 0 && self.size(1) != 0 && self.size(2) != 0) ||
               (self.dim() == 4 && self.size(1) != 0 && self.size(2) != 0 && self.size(3) != 0);
  DK_CHECK(valid, "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
           sizesText(self.sizes()));
  DK_CHECK(w.kw / 2 >= w.pw && w.kh / 2 >= w.ph,
           "pad should be smaller than or equal to half of kernel size, but got padW = ", w.pw, ", padH = ", w.ph,
           ", kW = ", w.kw, ", kH = ", w.kh);
  DK_CHECK(spec.out_width >= 1 && spec.out_height >= 1, "Given input size: (", c, "x", h, "x", wd,
           "). Calculated output size: (", c, "x", spec.out_height, "x", spec.out_width, "). Output size is too small");
  spec.sizes = self.sizes();
  spec.sizes[spec.sizes.size() - 2] = spec.out_height;
  spec.sizes[spec.sizes.size() - 1] = spec.out_width;
  return spec;
}

}  // namespace

Im2colSpec im2col(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                  IntArrayRef stride) {
  Window2d w = unfoldWindow(kernel_size, dilation, padding, stride);
  bool valid = (self.dim() == 3 && self.size(0) != 0 && self.size(1) != 0 && self.size(2) != 0) ||
               (self.dim() == 4 && self.size(1) != 0 && self.size(2) != 0 && self.size(3) != 0);
  DK_CHECK(valid, "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions "
                  "for input, but got: ", sizesText(self.sizes()));
  checkDtypeIn("im2col", self.dtype(), kFloatingDtypes);
  const bool batched = self.dim() == 4;
  const int64_t n = batched ? self.size(0) : 1, c = self.size(-3), h = self.size(-2), wd = self.size(-1);
  const int64_t oh = blocks(h, w.kh, w.dh, w.ph, w.sh), ow = blocks(wd, w.kw, w.dw, w.pw, w.sw);
  DK_CHECK(oh >= 1 && ow >= 1, "Given input with spatial size (", h, ", ", wd, "), kernel_size=(", w.kh, ", ", w.kw,
           "), dilation=(", w.dh, ", ", w.dw, "), padding=(", w.ph, ", ", w.pw,
           "), calculated shape of the array of sliding blocks as (", oh, ", ", ow,
           "), but its components must be at least one.");
  std::vector<int64_t> sizes{c * w.kh * w.kw, oh * ow};
  if (batched) sizes.insert(sizes.begin(), n);
  return {w, n, c, h, wd, oh, ow, batched, sizes};
}

Im2colSpec col2im(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                  IntArrayRef padding, IntArrayRef stride) {
  DK_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ", output_size.size());
  Window2d w = unfoldWindow(kernel_size, dilation, padding, stride);
  bool valid = (self.dim() == 2 && self.size(0) != 0 && self.size(1) != 0) ||
               (self.dim() == 3 && self.size(1) != 0 && self.size(2) != 0);
  DK_CHECK(valid, "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                  "dimensions for input, but got: ", sizesText(self.sizes()));
  checkDtypeIn("col2im", self.dtype(), kFloatingDtypes);
  const int64_t rows = self.size(-2), cols = self.size(-1);
  DK_CHECK(rows % (w.kh * w.kw) == 0, "Expected size of input's dimension 1 to be divisible by the product of "
                                      "kernel_size, but got input.size(1)=", rows, " and kernel_size=(", w.kh, ", ",
           w.kw, ").");
  const int64_t h = output_size[0], wd = output_size[1];
  const int64_t oh = blocks(h, w.kh, w.dh, w.ph, w.sh), ow = blocks(wd, w.kw, w.dw, w.pw, w.sw);
  DK_CHECK(oh >= 1 && ow >= 1 && oh * ow == cols, "Given output_size=(", h, ", ", wd, "), kernel_size=(", w.kh, ", ",
           w.kw, "), dilation=(", w.dh, ", ", w.dw, "), padding=(", w.ph, ", ", w.pw, "), stride=(", w.sh, ", ", w.sw,
           "), expected size of input's dimension 2 to match the calculated number of sliding blocks ",
           std::max<int64_t>(oh, 0), " * ", std::max<int64_t>(ow, 0), " = ", std::max<int64_t>(oh, 0) * std::max<int64_t>(ow, 0),
           ", but got input.size(2)=", cols, ".");
  const bool batched = self.dim() == 3;
  const int64_t n = batched ? self.size(0) : 1, c = rows / (w.kh * w.kw);
  std::vector<int64_t> sizes{c, h, wd};
  if (batched) sizes.insert(sizes.begin(), n);
  return {w, n, c, h, wd, oh, ow, batched, sizes};
}

PoolSpec maxPool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation, bool ceil_mode) {
  PoolSpec spec = poolShape("max_pool2d", self, kernel_size, stride, padding, dilation, ceil_mode);
  checkDtypeIn("max_pool2d", self.dtype(), kFloatingDtypes);
  return spec;
}

PoolSpec avgPool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                   bool ceil_mode, std::optional<int64_t> divisor_override) {
  DK_CHECK(!divisor_override || *divisor_override != 0, "divisor must be not zero");
  if (self.dim() < 3) maybe_wrap_dim(-3, self.dim());  // PyTorch's error for a 2-D input
  const int64_t one[] = {1};
  PoolSpec spec = poolShape("avg_pool2d", self, kernel_size, stride, padding, IntArrayRef(one, 1), ceil_mode);
  checkDtypeIn("avg_pool2d", self.dtype(), kAllDtypesExceptBool);
  return spec;
}

PoolSpec avgPool2dBackward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           std::optional<int64_t> divisor_override) {
  PoolSpec spec = avgPool2d(self, kernel_size, stride, padding, ceil_mode, divisor_override);
  DK_CHECK(grad_output.sizes() == spec.sizes, "avg_pool2d_backward: expected grad_output of size ",
           IntArrayRef(spec.sizes), ", but got ", grad_output.sizes());
  return spec;
}

int64_t avgPoolDivisor(const Window2d& w, int64_t h0, int64_t w0, int64_t height, int64_t width,
                       bool count_include_pad, std::optional<int64_t> divisor_override) {
  if (divisor_override) return *divisor_override;
  int64_t h1 = std::min(h0 + w.kh, height + w.ph), w1 = std::min(w0 + w.kw, width + w.pw);
  if (count_include_pad) return (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, height);
  w1 = std::min(w1, width);
  return (h1 - h0) * (w1 - w0);
}

}  // namespace dk::meta
