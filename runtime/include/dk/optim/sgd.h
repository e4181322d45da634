// dk/optim/sgd.h: stochastic gradient descent with momentum, dampening, weight decay and
// Nesterov momentum, PyTorch's update rule exactly:
//   g = grad + weight_decay * p
//   buf = g (first step), else momentum * buf + (1 - dampening) * g
//   g = nesterov ? g + momentum * buf : buf          (when momentum != 0)
//   p = p - lr * g
#pragma once

#include <vector>

#include "dk/optim/optimizer.h"

namespace dk::optim {

// libtorch's option builder: SGDOptions(0.1).momentum(0.9).nesterov(true).
class SGDOptions {
 public:
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double v) { lr_ = v; return *this; }
  SGDOptions& momentum(double v) { momentum_ = v; return *this; }
  SGDOptions& dampening(double v) { dampening_ = v; return *this; }
  SGDOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  SGDOptions& nesterov(bool v) { nesterov_ = v; return *this; }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }

 private:
  double lr_;
  double momentum_ = 0;
  double dampening_ = 0;
  double weight_decay_ = 0;
  bool nesterov_ = false;
};

class SGD : public Optimizer {
 public:
  // Errors (PyTorch's): "Invalid learning rate: -1", "Invalid momentum value: -1", "Invalid
  // weight_decay value: -1", "Nesterov momentum requires a momentum and zero dampening".
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  const SGDOptions& options() const { return options_; }

 private:
  SGDOptions options_;
  std::vector<Tensor> momentum_buffers_;  // one per parameter, undefined until its first step
};

}  // namespace dk::optim
