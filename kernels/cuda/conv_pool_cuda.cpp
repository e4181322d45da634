// CUDA kernels of im2col, col2im, max_pool2d_with_indices, avg_pool2d and avg_pool2d_backward:
// shapes and argument errors from kernels/meta/conv_shapes.h (as CPU and Meta), contiguous
// inputs, one launch each (kernels/cuda/conv_pool.cu).
#include "../meta/conv_shapes.h"
#include "cuda_utils.h"
#include "device_guard.h"
#include "dk/generated/ops/avg_pool2d_backward_native.h"
#include "dk/generated/ops/avg_pool2d_native.h"
#include "dk/generated/ops/col2im_native.h"
#include "dk/generated/ops/im2col_native.h"
#include "dk/generated/ops/max_pool2d_with_indices_native.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

cuda::launch::Window2d launchWindow(const meta::Window2d& w) {
  return cuda::launch::Window2d{w.kh, w.kw, w.dh, w.dw, w.ph, w.pw, w.sh, w.sw};
}

}  // namespace

Tensor im2col_cuda(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                   IntArrayRef stride) {
  meta::Im2colSpec spec = meta::im2col(self, kernel_size, dilation, padding, stride);
  Device device = cuda::resolveDevice(self.device());
  Tensor out = cuda::emptyCuda(spec.sizes, self.dtype(), device);
  Tensor in = cuda::contiguousCuda(self);
  cuda::launch::im2col(cuda::toLaunchDtype(self.dtype()), out.data_ptr(), in.data_ptr(), launchWindow(spec.window),
                       spec.batch * spec.channels, spec.height, spec.width, spec.out_height, spec.out_width);
  return out;
}

Tensor col2im_cuda(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                   IntArrayRef padding, IntArrayRef stride) {
  meta::Im2colSpec spec = meta::col2im(self, output_size, kernel_size, dilation, padding, stride);
  Device device = cuda::resolveDevice(self.device());
  Tensor out = cuda::emptyCuda(spec.sizes, self.dtype(), device);
  Tensor in = cuda::contiguousCuda(self);
  cuda::launch::col2im(cuda::toLaunchDtype(self.dtype()), out.data_ptr(), in.data_ptr(), launchWindow(spec.window),
                       spec.batch * spec.channels, spec.height, spec.width, spec.out_height, spec.out_width);
  return out;
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_cuda(const Tensor& self, IntArrayRef kernel_size,
                                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                        bool ceil_mode) {
  meta::PoolSpec spec = meta::maxPool2d(self, kernel_size, stride, padding, dilation, ceil_mode);
  Device device = cuda::resolveDevice(self.device());
  Tensor out = cuda::emptyCuda(spec.sizes, self.dtype(), device);
  Tensor indices = cuda::emptyCuda(spec.sizes, kLong, device);
  Tensor in = cuda::contiguousCuda(self);
  cuda::launch::maxPool2d(cuda::toLaunchDtype(self.dtype()), out.data_ptr(), indices.data_ptr<int64_t>(),
                          in.data_ptr(), launchWindow(spec.window), spec.planes, spec.height, spec.width,
                          spec.out_height, spec.out_width);
  return {out, indices};
}

Tensor avg_pool2d_cuda(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                       bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  meta::PoolSpec spec = meta::avgPool2d(self, kernel_size, stride, padding, ceil_mode, divisor_override);
  Device device = cuda::resolveDevice(self.device());
  Tensor out = cuda::emptyCuda(spec.sizes, self.dtype(), device);
  Tensor in = cuda::contiguousCuda(self);
  cuda::launch::avgPool2d(cuda::toLaunchDtype(self.dtype()), out.data_ptr(), in.data_ptr(), launchWindow(spec.window),
                          spec.planes, spec.height, spec.width, spec.out_height, spec.out_width, count_include_pad,
                          divisor_override.value_or(0));
  return out;
}

Tensor avg_pool2d_backward_cuda(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                std::optional<int64_t> divisor_override) {
  meta::PoolSpec spec =
      meta::avgPool2dBackward(grad_output, self, kernel_size, stride, padding, ceil_mode, divisor_override);
  Device device = cuda::resolveDevice(self.device());
  Tensor grad_input = cuda::emptyCuda(self.sizes(), grad_output.dtype(), device);
  Tensor grad = cuda::contiguousCuda(grad_output);
  cuda::launch::avgPool2dBackward(cuda::toLaunchDtype(grad_output.dtype()), grad_input.data_ptr(), grad.data_ptr(),
                                  launchWindow(spec.window), spec.planes, spec.height, spec.width, spec.out_height,
                                  spec.out_width, count_include_pad, divisor_override.value_or(0));
  return grad_input;
}

}  // namespace dk::native
