// dk/func/vmap.h: vectorizing map (Note [vmap]).
//
//   auto batched_dot = dk::func::vmap([](const std::vector<dk::Tensor>& xs) {
//     return std::vector<dk::Tensor>{dk::sum(dk::mul(xs[0], xs[1]))};
//   });
//   std::vector<dk::Tensor> dots = batched_dot({a, b});  // a, b: [batch, n] -> [batch]
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dk/dispatch/dispatcher.h"
#include "dk/func/dynamic_layer.h"
#include "dk/tensor/tensor.h"

namespace dk::func {

// Where an input's or an output's batch dim is; nullopt: not mapped (an input passed to every
// call as it is; an output returned as it is).
using BatchDim = std::optional<int64_t>;

using TensorsFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Note [vmap]
// vmap(f, in_dims, out_dims) is a function that runs f once over inputs carrying a batch dim
// and gives what stacking f's per-example results would. Each mapped input is wrapped as a
// batched tensor of a new level (Note [Batched tensors]) whose batch dim is hidden from f; the
// operators f calls on it run their batching rules at FuncTorchBatched, or, for an operator
// with no rule, a fallback that calls it once per batch element and stacks the results (it
// warns once per operator, so the slow path is visible). Each output's batch dim is then
// moved to out_dims; an output f made without touching a mapped input is broadcast over the
// batch, as in functorch.
//
// in_dims and out_dims hold one entry per input and output, or a single entry for all; a dim
// may be negative (from the end). Inputs must agree on the batch size. vmap nests: the inner
// vmap's level is one more than the outer's. `randomness` says what random operators do inside
// (Note [vmap randomness]).
TensorsFn vmap(TensorsFn f, std::vector<BatchDim> in_dims = {0}, std::vector<BatchDim> out_dims = {0},
               Randomness randomness = Randomness::Error);

// One tensor in, one out.
std::function<Tensor(const Tensor&)> vmap(std::function<Tensor(const Tensor&)> f, BatchDim in_dim = 0,
                                          BatchDim out_dim = 0, Randomness randomness = Randomness::Error);

// The for-loop fallback at FuncTorchBatched (Note [vmap]): the operator once per batch element,
// the results stacked. Batching rules call it for the cases they do not cover.
void forLoopBatchingFallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack);

// The level of the innermost vmap running on this thread (0 outside any).
int64_t currentVmapLevel();

// Whether the fallback warns (once per operator) when an operator without a batching rule runs
// one batch element at a time. On by default; returns the previous setting.
bool setVmapFallbackWarningEnabled(bool enabled);

}  // namespace dk::func
