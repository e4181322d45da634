// dk/optim/optimizer.h: the base of dk's optimizers (libtorch's torch::optim::Optimizer, one
// parameter group). An optimizer holds the parameters it updates; step() reads their .grad()
// and changes them in place, under NoGradGuard, with dk operators (so it runs on every backend
// the parameters live on); zero_grad() clears the gradients between steps.
//
//   dk::optim::SGD sgd(model_parameters, dk::optim::SGDOptions(0.1).momentum(0.9));
//   for (...) { sgd.zero_grad(); loss(...).backward(); sgd.step(); }
#pragma once

#include <cstdint>
#include <vector>

#include "dk/tensor/tensor.h"

namespace dk::optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (parameters without one are skipped).
  virtual void step() = 0;
  // Zeroes every parameter's gradient (as libtorch 1.13 does), or drops it with set_to_none.
  void zero_grad(bool set_to_none = false);

  const std::vector<Tensor>& parameters() const { return params_; }

 protected:
  std::vector<Tensor> params_;
};

}  // namespace dk::optim
