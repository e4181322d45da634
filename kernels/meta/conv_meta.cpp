// Meta kernels of im2col, col2im, max_pool2d_with_indices, avg_pool2d and avg_pool2d_backward:
// kernels/meta/conv_shapes.h's checks and sizes, outputs on the meta device.
#include "conv_shapes.h"
#include "dk/generated/ops/avg_pool2d_backward_native.h"
#include "dk/generated/ops/avg_pool2d_native.h"
#include "dk/generated/ops/col2im_native.h"
#include "dk/generated/ops/im2col_native.h"
#include "dk/generated/ops/max_pool2d_with_indices_native.h"
#include "meta_output.h"

namespace dk::native {

Tensor im2col_meta(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                   IntArrayRef stride) {
  return meta::emptyMeta(meta::im2col(self, kernel_size, dilation, padding, stride).sizes, self.dtype());
}

Tensor col2im_meta(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                   IntArrayRef padding, IntArrayRef stride) {
  return meta::emptyMeta(meta::col2im(self, output_size, kernel_size, dilation, padding, stride).sizes, self.dtype());
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_meta(const Tensor& self, IntArrayRef kernel_size,
                                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                        bool ceil_mode) {
  meta::PoolSpec spec = meta::maxPool2d(self, kernel_size, stride, padding, dilation, ceil_mode);
  return {meta::emptyMeta(spec.sizes, self.dtype()), meta::emptyMeta(spec.sizes, kLong)};
}

Tensor avg_pool2d_meta(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                       bool ceil_mode, bool /*count_include_pad*/, std::optional<int64_t> divisor_override) {
  return meta::emptyMeta(meta::avgPool2d(self, kernel_size, stride, padding, ceil_mode, divisor_override).sizes,
                         self.dtype());
}

Tensor avg_pool2d_backward_meta(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool /*count_include_pad*/,
                                std::optional<int64_t> divisor_override) {
  meta::avgPool2dBackward(grad_output, self, kernel_size, stride, padding, ceil_mode, divisor_override);  // checks
  return meta::emptyMeta(self.sizes(), grad_output.dtype());
}

}  // namespace dk::native
