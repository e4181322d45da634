// CUDA kernels of the neural-network operators: _softmax, _log_softmax, mse_loss, nll_loss,
// embedding.
#include "../meta/shape_functions.h"
#include "cuda_utils.h"
#include "device_guard.h"
#include "dk/generated/ops/_log_softmax_native.h"
#include "dk/generated/ops/_softmax_native.h"
#include "dk/generated/ops/embedding_native.h"
#include "dk/generated/ops/mse_loss_native.h"
#include "dk/generated/ops/nll_loss_native.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

Tensor softmaxCuda(const char* op, bool log, const Tensor& self, int64_t dim, bool half_to_float) {
  meta::SoftmaxSpec spec = meta::softmax(op, self, dim, half_to_float);
  Tensor out = cuda::emptyCuda(spec.output.sizes, spec.output.dtype, self.device());
  if (out.numel() == 0) return out;
  Tensor in = cuda::contiguousCuda(self);
  // The input as [outer, dim_size, inner] around the softmax dim (a 0-dim input is [1, 1, 1]).
  int64_t outer = 1, dim_size = 1, inner = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    int64_t size = self.size(d);
    if (d < spec.dim) outer *= size;
    else if (d == spec.dim) dim_size = size;
    else inner *= size;
  }
  // Few long lines are split across blocks, whose partial results go to a workspace (Note
  // [CUDA softmax plans] in softmax_plan.h).
  cuda::launch::Dtype in_dtype = cuda::toLaunchDtype(self.dtype());
  int num_sms = cuda::multiprocessorCount(out.device());
  int64_t workspace_bytes = cuda::launch::softmaxWorkspaceBytes(in_dtype, outer, dim_size, inner, num_sms);
  Tensor workspace = workspace_bytes > 0 ? cuda::emptyCuda({workspace_bytes}, kByte, out.device()) : Tensor();
  cuda::launch::softmax(log, in_dtype, cuda::toLaunchDtype(out.dtype()), out.data_ptr(), in.data_ptr(), outer,
                        dim_size, inner, num_sms, workspace.defined() ? workspace.data_ptr() : nullptr);
  return out;
}

// The geometry reducing every element of a contiguous tensor into one.
cuda::launch::ReduceGeometry reduceAll(const Tensor& contiguous) {
  cuda::launch::ReduceGeometry g;
  g.num_outputs = 1;
  g.reduced_ndim = 1;
  g.reduced_sizes[0] = contiguous.numel();
  g.reduced_strides[0] = 1;
  g.reduce_numel = contiguous.numel();
  return g;
}

}  // namespace

Tensor _softmax_cuda(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmaxCuda("_softmax", /*log=*/false, self, dim, half_to_float);
}

Tensor _log_softmax_cuda(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmaxCuda("_log_softmax", /*log=*/true, self, dim, half_to_float);
}

Tensor mse_loss_cuda(const Tensor& self, const Tensor& target, int64_t reduction) {
  meta::checkDevicesAllowingCpuScalars("dk::mse_loss", {{"self", self}, {"target", target}});
  meta::OutputSpec spec = meta::mseLoss(self, target, reduction);
  Device device = cuda::computeDevice({&self, &target});
  cuda::DeviceGuard guard(device);  // self, the guarded argument, may be a CPU scalar
  cuda::PointwiseInput a = cuda::pointwiseInput(self, spec.dtype);
  cuda::PointwiseInput b = cuda::pointwiseInput(target, spec.dtype);
  std::vector<int64_t> sizes = inferBroadcastShape(self.sizes(), target.sizes());
  Tensor squared = cuda::emptyCuda(sizes, spec.dtype, device);
  if (squared.numel() > 0) {
    cuda::launch::binary(cuda::launch::BinaryOp::SquaredDiff, cuda::toLaunchDtype(spec.dtype),
                         cuda::makeGeometry(sizes, {&squared, &a.tensor, &b.tensor}), squared.data_ptr(), a.input,
                         b.input, cuda::launch::ScalarArg{1, 1});
  }
  if (meta::parseLossReduction("mse_loss", reduction) == meta::LossReduction::None) return squared;
  Tensor out = cuda::emptyCuda({}, spec.dtype, device);
  auto op = reduction == static_cast<int64_t>(meta::LossReduction::Mean) ? cuda::launch::ReduceOp::Mean
                                                                          : cuda::launch::ReduceOp::Sum;
  cuda::reduceCuda(op, squared, reduceAll(squared), out.data_ptr(), nullptr);
  return out;
}

Tensor nll_loss_cuda(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                     int64_t reduction, int64_t ignore_index) {
  meta::OutputSpec spec = meta::nllLoss(self, target, weight, reduction);
  Device device = cuda::resolveDevice(self.device());
  Tensor input = cuda::contiguousCuda(self);
  Tensor targets = cuda::contiguousCuda(target);
  Tensor weights = weight && weight->defined() ? cuda::contiguousCuda(*weight) : Tensor();
  Tensor out = cuda::emptyCuda(spec.sizes, spec.dtype, device);
  int64_t batch = self.dim() == 2 ? self.size(0) : 1;
  Tensor flag = cuda::errorFlag(device);
  Tensor workspace;
  if (reduction != 0) workspace = cuda::emptyCuda({cuda::launch::nllLossWorkspaceBytes(batch)}, kByte, device);
  cuda::launch::nllLoss(cuda::toLaunchDtype(self.dtype()), cuda::toLaunchDtype(target.dtype()),
                        static_cast<int>(reduction), out.data_ptr(), input.data_ptr(), targets.data_ptr(),
                        weights.defined() ? weights.data_ptr() : nullptr, batch, self.size(-1), ignore_index,
                        flag.data_ptr<int64_t>(), workspace.defined() ? workspace.data_ptr() : nullptr);
  cuda::checkErrorFlag(flag, [](int64_t t) { return detail::concat("Target ", t, " is out of bounds."); });
  return out;
}

Tensor embedding_cuda(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/,
                      bool /*scale_grad_by_freq*/, bool /*sparse*/) {
  meta::OutputSpec spec = meta::embedding(weight, indices);
  Device device = cuda::resolveDevice(weight.device());
  Tensor index = cuda::contiguousCuda(indices);
  Tensor out = cuda::emptyCuda(spec.sizes, spec.dtype, device);
  if (out.numel() == 0) {
    // Nothing to gather (a table of 0-wide rows), but out-of-range indices raise as on CPU.
    cuda::checkIndicesOnDevice(index, weight.size(0), [](int64_t) { return std::string("index out of range in self"); });
    return out;
  }
  Tensor flag = cuda::errorFlag(device);
  cuda::launch::embedding(cuda::toLaunchDtype(weight.dtype()), cuda::toLaunchDtype(index.dtype()), out.data_ptr(),
                          weight.data_ptr(), weight.stride(0), weight.stride(1), weight.size(0), weight.size(1),
                          index.data_ptr(), index.numel(), flag.data_ptr<int64_t>());
  cuda::checkErrorFlag(flag, [](int64_t) { return std::string("index out of range in self"); });
  return out;
}

}  // namespace dk::native
