// dk/autograd/history.h: how a forward call records itself in the backward graph.
//
// An autograd kernel (hand-written, or generated per operator) follows one pattern:
//
//   std::shared_ptr<MulBackward0> node;
//   if (compute_requires_grad(self, other)) {              // grad mode on, some input requires grad
//     node = std::make_shared<MulBackward0>();
//     node->set_next_edges(collect_next_edges(self, other));  // where the input gradients go
//     node->self_ = SavedVariable(self, false);               // what backward needs
//   }
//   Tensor result;
//   { AutoDispatchBelowADInplaceOrView guard; result = ops::mul_Tensor::redispatch(ks & after_autograd_keyset, ...); }
//   if (node) set_history(result, node);                     // result becomes output 0 of node
//
// In-place kernels call check_inplace(self, requires_grad) first and rebase_history(self, node) last.
#pragma once

#include <memory>
#include <optional>

#include "dk/autograd/autograd_meta.h"
#include "dk/autograd/node.h"
#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/tensor.h"
#include "dk/util/array_ref.h"

namespace dk::autograd {

// The leaf's AccumulateGrad, made on first use and referenced weakly by the leaf (Note
// [Autograd metadata]); null for a tensor that is not a leaf requiring grad.
std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

// Where a gradient for `t` goes: (grad_fn, output_nr) for a non-leaf, (AccumulateGrad, 0) for a
// leaf that requires grad, an invalid edge otherwise.
Edge gradient_edge(const Tensor& t);

namespace detail {
inline void collectNextEdges(edge_list& out, const Tensor& t) { out.push_back(gradient_edge(t)); }
inline void collectNextEdges(edge_list& out, const std::optional<Tensor>& t) {
  out.push_back(t ? gradient_edge(*t) : Edge());
}
inline void collectNextEdges(edge_list& out, ArrayRef<Tensor> ts) {
  for (const Tensor& t : ts) out.push_back(gradient_edge(t));
}
inline void collectNextEdges(edge_list& out, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) out.push_back(gradient_edge(t));
}

inline bool anyRequiresGrad(const Tensor& t) { return t.requires_grad(); }
inline bool anyRequiresGrad(const std::optional<Tensor>& t) { return t && t->requires_grad(); }
inline bool anyRequiresGrad(ArrayRef<Tensor> ts) {
  for (const Tensor& t : ts) {
    if (t.requires_grad()) return true;
  }
  return false;
}
inline bool anyRequiresGrad(const std::vector<Tensor>& ts) { return anyRequiresGrad(ArrayRef<Tensor>(ts)); }
}  // namespace detail

// One edge per tensor, in argument order (a list contributes one per element): the next edges
// of a node whose forward inputs these are. Undefined tensors give invalid edges.
template <class... Args>
edge_list collect_next_edges(const Args&... tensors) {
  edge_list out;
  (detail::collectNextEdges(out, tensors), ...);
  return out;
}

// Whether a forward call on these tensors records history: grad mode is on and one of them
// requires grad.
template <class... Args>
bool compute_requires_grad(const Args&... tensors) {
  if (!GradMode::is_enabled()) return false;
  return (detail::anyRequiresGrad(tensors) || ...);
}

// Makes `output` the next output of `node`: records its input metadata and sets its grad_fn and
// output_nr. Undefined outputs keep their place in the numbering. Only floating point outputs
// can have history: "set_history: an output of dtype Long cannot require grad (only floating
// point outputs are differentiable)".
void set_history(const Tensor& output, const std::shared_ptr<Node>& node);
void set_history(const std::vector<Tensor>& outputs, const std::shared_ptr<Node>& node);

// set_history for a tensor an in-place call changed: hooks registered so far stay with the old
// grad_fn, the retain_grad hook moves to `node` (Note [Tensor hooks]).
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node);

// Refuses an in-place change that would lose history, while grad mode is on and the call
// records (`requires_grad`): of a leaf that requires grad ("a leaf Variable that requires grad
// is being used in an in-place operation."), of a view of one ("a view of a leaf Variable that
// requires grad is being used in an in-place operation."), of an output of an operator that
// returns several views. Always refuses an in-place change of an inference tensor outside
// InferenceMode ("Inplace update to inference tensor outside InferenceMode is not allowed.").
void check_inplace(const Tensor& self, bool requires_grad = true);

// Note [Views and in-place]
// A view (made by a view operator through its ADInplaceOrView kernel, as_view in
// dk/autograd/functions.h) shares its base's storage and version counter. An in-place operation
// on a view changes the base too, so rebase_history(view, node) gives the *base* a new grad_fn,
// CopySlices: its backward takes the base's gradient, runs `node` on the slice the view covers,
// writes the result back into that slice, and sends the whole to the base's previous history.
// The view's own grad_fn is then rebuilt from the base's (AsStridedBackward0: the view's
// gradient placed into zeros of the base's shape). The same rebuild happens lazily, through
// current_grad_fn, to every other view of that base whose version counter moved since its
// grad_fn was set: an in-place change of a base or of one view reaches all views.

// The grad_fn of `t`, rebuilt first if `t` is a view whose base changed in place since
// (Note [Views and in-place]). What Tensor::grad_fn and gradient_edge use.
std::shared_ptr<Node> current_grad_fn(const Tensor& t);

}  // namespace dk::autograd
