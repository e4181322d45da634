#include "dk/optim/adam.h"

#include <cmath>
#include <utility>

#include "dk/core/grad_mode.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/maximum.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/sqrt.h"
#include "dk/generated/ops/zeros_like.h"
#include "dk/util/error.h"

namespace dk::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Optimizer(std::move(params)), options_(options), state_(params_.size()) {
  auto [beta1, beta2] = options_.betas();
  DK_CHECK(options_.lr() >= 0, "Invalid learning rate: ", options_.lr());
  DK_CHECK(options_.eps() >= 0, "Invalid epsilon value: ", options_.eps());
  DK_CHECK(beta1 >= 0 && beta1 < 1, "Invalid beta parameter at index 0: ", beta1);
  DK_CHECK(beta2 >= 0 && beta2 < 1, "Invalid beta parameter at index 1: ", beta2);
  DK_CHECK(options_.weight_decay() >= 0, "Invalid weight_decay value: ", options_.weight_decay());
}

void Adam::step() {
  NoGradGuard no_grad;
  auto [beta1, beta2] = options_.betas();
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    State& s = state_[i];
    if (s.step == 0) {
      s.exp_avg = dk::zeros_like(p);
      s.exp_avg_sq = dk::zeros_like(p);
      if (options_.amsgrad()) s.max_exp_avg_sq = dk::zeros_like(p);
    }
    ++s.step;
    Tensor grad = p.grad();
    if (options_.weight_decay() != 0) grad = dk::add(grad, p, options_.weight_decay());
    s.exp_avg.mul_(beta1);
    s.exp_avg.add_(grad, 1 - beta1);
    s.exp_avg_sq.mul_(beta2);
    s.exp_avg_sq.add_(dk::mul(grad, grad), 1 - beta2);
    const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(s.step));
    const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(s.step));
    Tensor second = s.exp_avg_sq;
    if (options_.amsgrad()) {
      s.max_exp_avg_sq = dk::maximum(s.max_exp_avg_sq, s.exp_avg_sq);
      second = s.max_exp_avg_sq;
    }
    Tensor denom = dk::add(dk::div(dk::sqrt(second), std::sqrt(bias_correction2)), options_.eps());
    p.add_(dk::div(s.exp_avg, denom), -options_.lr() / bias_correction1);
  }
}

}  // namespace dk::optim
