#include "dk/optim/sgd.h"

#include <utility>

#include "dk/core/grad_mode.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/clone.h"
#include "dk/util/error.h"

namespace dk::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer(std::move(params)), options_(options), momentum_buffers_(params_.size()) {
  DK_CHECK(options_.lr() >= 0, "Invalid learning rate: ", options_.lr());
  DK_CHECK(options_.momentum() >= 0, "Invalid momentum value: ", options_.momentum());
  DK_CHECK(options_.weight_decay() >= 0, "Invalid weight_decay value: ", options_.weight_decay());
  DK_CHECK(!options_.nesterov() || (options_.momentum() > 0 && options_.dampening() == 0),
           "Nesterov momentum requires a momentum and zero dampening");
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    Tensor d_p = p.grad();
    if (options_.weight_decay() != 0) d_p = dk::add(d_p, p, options_.weight_decay());
    if (options_.momentum() != 0) {
      Tensor& buf = momentum_buffers_[i];
      if (!buf.defined()) {
        buf = dk::clone(d_p);
      } else {
        buf.mul_(options_.momentum());
        buf.add_(d_p, 1 - options_.dampening());
      }
      d_p = options_.nesterov() ? dk::add(d_p, buf, options_.momentum()) : buf;
    }
    p.add_(d_p, -options_.lr());
  }
}

}  // namespace dk::optim
