// dk/optim/adam.h: Adam (with optional L2 weight decay and AMSGrad), PyTorch's update rule
// exactly, per parameter at step t:
//   g = grad + weight_decay * p
//   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
//   v_hat = amsgrad ? max(v_hat, v) : v
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v_hat) / sqrt(1 - beta2^t) + eps)
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "dk/optim/optimizer.h"

namespace dk::optim {

// libtorch's option builder: AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9).
class AdamOptions {
 public:
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  AdamOptions& lr(double v) { lr_ = v; return *this; }
  AdamOptions& betas(const std::tuple<double, double>& v) { betas_ = v; return *this; }
  AdamOptions& eps(double v) { eps_ = v; return *this; }
  AdamOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  AdamOptions& amsgrad(bool v) { amsgrad_ = v; return *this; }
  double lr() const { return lr_; }
  const std::tuple<double, double>& betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool amsgrad() const { return amsgrad_; }

 private:
  double lr_;
  std::tuple<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = 0;
  bool amsgrad_ = false;
};

class Adam : public Optimizer {
 public:
  // Errors (PyTorch's): "Invalid learning rate: -1", "Invalid epsilon value: -1", "Invalid beta
  // parameter at index 0: 1", "Invalid weight_decay value: -1".
  Adam(std::vector<Tensor> params, AdamOptions options = AdamOptions());
  void step() override;
  const AdamOptions& options() const { return options_; }

 private:
  struct State {
    int64_t step = 0;
    Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  };
  AdamOptions options_;
  std::vector<State> state_;  // one per parameter
};

}  // namespace dk::optim
