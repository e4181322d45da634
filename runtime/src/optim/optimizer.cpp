#include "dk/optim/optimizer.h"

#include <utility>

#include "dk/core/grad_mode.h"
#include "dk/util/error.h"

namespace dk::optim {

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  for (const Tensor& p : params_) DK_CHECK(p.defined(), "optimizer got an undefined parameter");
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Tensor& p : params_) {
    Tensor& grad = p.mutable_grad();
    if (!grad.defined()) continue;
    if (set_to_none) grad = Tensor();
    else grad.zero_();
  }
}

}  // namespace dk::optim
