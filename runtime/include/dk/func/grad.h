// dk/func/grad.h: function-level autograd that composes with vmap (Note [grad transform]).
//
//   auto loss = [&](const std::vector<dk::Tensor>& in) {  // in: weight, x, target
//     return std::vector<dk::Tensor>{dk::mse_loss(dk::matmul(in[1], in[0]), in[2])};
//   };
//   // Per-example gradients of the weight: grad inside vmap over x and target.
//   auto per_sample = dk::func::vmap(dk::func::grad(loss, {0}), {std::nullopt, 0, 0});
//   dk::Tensor g = per_sample({w, xs, ys})[0];  // [batch, ...w's shape]
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "dk/func/vmap.h"
#include "dk/tensor/tensor.h"

namespace dk::func {

// Note [grad transform]
// grad(f, argnums) is a function returning the gradient of f's output (a one-element tensor)
// with respect to each input in argnums. It runs f in a new grad layer of the thread's dynamic
// layer stack (Note [Dynamic layer stack]): the inputs in argnums are wrapped at the layer's
// level and require grad, the operators f calls on them are recorded in that level's graph, and
// the backward runs in the layer, so the layers around it see it as ordinary operators:
// vmap(grad(f)) gives per-example gradients, grad(grad(f)) a second derivative. Grad mode is on
// inside whatever it is outside. An input f's output does not depend on gets zeros.
//
// has_aux: f returns its loss first and auxiliary outputs after it; they are returned after the
// gradients (unwrapped, not differentiated).
TensorsFn grad(TensorsFn f, std::vector<int64_t> argnums = {0}, bool has_aux = false);

// One tensor in, its gradient out.
std::function<Tensor(const Tensor&)> grad(std::function<Tensor(const Tensor&)> f);

// vjp(f, primals): f's outputs at primals, and a function from cotangents (one per output, of its
// shape) to the vector-Jacobian products, one per primal. vjp_fn may be called after vjp has
// returned, any number of times, also under vmap (jacrev does).
struct VjpResult {
  std::vector<Tensor> outputs;
  TensorsFn vjp_fn;
};
VjpResult vjp(const TensorsFn& f, const std::vector<Tensor>& primals);

// jacrev(f, argnums): the Jacobian of f's single output with respect to each input in argnums,
// each of shape output.sizes() + input.sizes(): vmap of vjp_fn over the rows of the identity.
TensorsFn jacrev(TensorsFn f, std::vector<int64_t> argnums = {0});
std::function<Tensor(const Tensor&)> jacrev(std::function<Tensor(const Tensor&)> f);

}  // namespace dk::func
