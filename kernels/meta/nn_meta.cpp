// Meta kernels of the neural-network operators: _softmax, _log_softmax, mse_loss, nll_loss,
// embedding.
#include "dk/generated/ops/_log_softmax_native.h"
#include "dk/generated/ops/_softmax_native.h"
#include "dk/generated/ops/embedding_native.h"
#include "dk/generated/ops/mse_loss_native.h"
#include "dk/generated/ops/nll_loss_native.h"
#include "meta_output.h"
#include "shape_functions.h"

namespace dk::native {

Tensor _softmax_meta(const Tensor& self, int64_t dim, bool half_to_float) {
  return meta::emptyMeta(meta::softmax("_softmax", self, dim, half_to_float).output);
}

Tensor _log_softmax_meta(const Tensor& self, int64_t dim, bool half_to_float) {
  return meta::emptyMeta(meta::softmax("_log_softmax", self, dim, half_to_float).output);
}

Tensor mse_loss_meta(const Tensor& self, const Tensor& target, int64_t reduction) {
  meta::checkDevicesAllowingCpuScalars("dk::mse_loss", {{"self", self}, {"target", target}});
  return meta::emptyMeta(meta::mseLoss(self, target, reduction));
}

Tensor nll_loss_meta(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                     int64_t reduction, int64_t /*ignore_index*/) {
  return meta::emptyMeta(meta::nllLoss(self, target, weight, reduction));
}

Tensor embedding_meta(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/,
                      bool /*scale_grad_by_freq*/, bool /*sparse*/) {
  return meta::emptyMeta(meta::embedding(weight, indices));
}

}  // namespace dk::native
