// dk/autograd/engine.h: running the backward graph (Note [Backward engine] in engine.cpp).
#pragma once

#include <functional>
#include <optional>

#include "dk/autograd/node.h"
#include "dk/tensor/tensor.h"

namespace dk::autograd {

// The core: feeds root_grads[i] into roots[i] and runs every node the gradients reach, each
// once all its inputs have arrived, on the calling thread. With `outputs` empty it runs the
// whole reachable graph (AccumulateGrad nodes fill .grad) and returns nothing; otherwise it runs
// only the nodes on a path to an output edge, runs no node of an output edge unless another
// output needs it, and returns the gradient arriving at each output edge (undefined when none
// arrives), after that node's tensor hooks. Nodes run with grad mode on under create_graph,
// off otherwise; unless keep_graph each node releases its saved variables once it has run.
variable_list execute(const edge_list& roots, variable_list root_grads, bool keep_graph, bool create_graph,
                      const edge_list& outputs = {});

// Accumulates the gradients of `tensors` (weighted by `grad_tensors`; a missing or undefined
// one means ones for a one-element tensor) into the .grad of the leaves of their graph.
// retain_graph defaults to create_graph.
void backward(const variable_list& tensors, const variable_list& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);
// The same, accumulating only into the .grad of `inputs` (leaves or not; PyTorch's
// backward(inputs=...)). Errors: "'inputs' argument to backward() cannot be empty.", "One of
// the differentiated Tensors does not require grad".
void backward(const variable_list& tensors, const variable_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph, const variable_list& inputs);

// The gradients of `outputs` (weighted by `grad_outputs`) with respect to each of `inputs`,
// returned rather than accumulated into .grad. An input the outputs do not depend on gets an
// undefined tensor when allow_unused, else an error. retain_graph defaults to create_graph.
// Runs `callback` when the backward pass running on this thread has run every node (before
// backward() or grad() returns; not when it fails), after the callbacks queued before it; a callback
// may queue more. PyTorch's Variable._execution_engine.queue_callback: DataParallel waits for its
// gradient all-reduces this way. Outside a backward pass: "Final callbacks can only be installed
// during backward pass."
void queue_callback(std::function<void()> callback);

variable_list grad(const variable_list& outputs, const variable_list& inputs, const variable_list& grad_outputs = {},
                   std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                   bool allow_unused = false);

}  // namespace dk::autograd
