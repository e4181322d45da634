// dk/autograd/accumulate_grad.h: the node that ends every path to a leaf and stores its grad.
//
// Note [Gradient accumulation]
// The first gradient a leaf receives becomes its grad as is when nothing else holds it (the
// engine hands over its only reference, so stealing it is safe; a view qualifies when it is
// contiguous and nothing else holds its base or storage, as the transpose of a weight gradient
// that mm_mat2_backward computes transposed: linear's weights keep their gradient without a
// copy), else a copy (dk::clone), so
// that a later in-place change of x.grad cannot reach a tensor the user or another node still
// holds. Each later gradient is added: grad = grad + incoming (dk::add, out of place; PyTorch
// adds in place when grad mode is off, so a handle to the old grad taken before a second
// backward keeps the old value here). Outside create_graph the engine runs with grad mode off,
// so the stored grad has no history; under create_graph the sum is recorded, which is what
// higher-order gradients through x.grad need. retain_grad stores gradients the same way.
#pragma once

#include <string>

#include "dk/autograd/node.h"
#include "dk/tensor/tensor.h"

namespace dk::autograd {

class AccumulateGrad final : public Node {
 public:
  // `variable` must be a leaf (sequence number: the largest, so it runs as soon as it is ready).
  explicit AccumulateGrad(Tensor variable);

  variable_list apply(variable_list grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  // Runs the hooks registered on the leaf (Note [Tensor hooks]).
  void call_tensor_pre_hooks(variable_list& grads) override;

  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

// `grad` when the caller holds its only reference, else a copy (Note [Gradient accumulation]).
Tensor take_or_copy_gradient(const Tensor& grad);
// Adds `incoming` into `slot` (undefined: stores it; see take_or_copy_gradient).
void accumulate_into(Tensor& slot, const Tensor& incoming);

}  // namespace dk::autograd
