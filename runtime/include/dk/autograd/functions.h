// dk/autograd/functions.h: what the generated autograd code (AutogradFunctions.h,
// RegisterAutograd.cpp, RegisterADInplaceOrView.cpp) calls, besides history.h.
//
// Note [Generated autograd]
// codegen/dest/autograd.py turns schemas/derivatives.yaml into three layers:
//  - a backward node class per entry (MulBackward0) whose members are what the formulas read,
//    saved at forward time (tensors as SavedVariables, sizes and scalars by value), and whose
//    apply() runs the formula of each input that needs a gradient. Inputs map to the node's
//    outputs through IndexRanges: one slot per tensor, one per element of a Tensor[];
//  - an Autograd kernel per operator: compute_requires_grad over the differentiable inputs,
//    make the node and save, redispatch with ks & after_autograd_keyset, then set_history on the
//    differentiable outputs (rebase_history for in-place). Functional operators redispatch under
//    AutoDispatchBelowADInplaceOrView (nothing for that key to do); in-place, out= and view
//    operators under AutoDispatchBelowAutograd, so that their ADInplaceOrView kernel runs;
//  - ADInplaceOrView kernels: in-place and out= operators bump the version counter of what they
//    wrote (increment_version), views record their output as a view (as_view).
// Operators with tensor outputs and no entry record a NotImplementedNode; out= operators refuse
// inputs that require grad (check_out_not_requiring_grad).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dk/autograd/node.h"
#include "dk/autograd/saved_variable.h"
#include "dk/tensor/tensor.h"
#include "dk/util/array_ref.h"

namespace dk::autograd {

// Stores a formula's result at its input's slots: one tensor into a one-slot range, a list into
// a range of its size ("copy_range: ..." on a size mismatch).
void copy_range(variable_list& out, IndexRange range, const Tensor& t);
void copy_range(variable_list& out, IndexRange range, const std::vector<Tensor>& ts);

// Refuses, before anything is written, an in-place or out= change of an inference tensor outside
// InferenceMode ("Inplace update to inference tensor outside InferenceMode is not allowed. ...").
// ADInplaceOrView is in every thread's included set outside InferenceMode, so every in-place
// and out= call reaches this check, whatever keys its arguments carry.
void check_version_bump_allowed(const Tensor& t);

// Bumps the version counter of a tensor an in-place or out= operator wrote (Note [Version
// counter] in dk/tensor/tensor.h); undefined tensors are skipped.
void increment_version(const Tensor& t);

// Makes `view` (the output of a view operator on `base`) a view for autograd: it shares base's
// storage and version counter, remembers its base, and its grad_fn is rebuilt from the base's
// history when an in-place operation changes either (Note [Views and in-place]). It records how
// the view was made (Note [View creation meta] in dk/autograd/autograd_meta.h): views made under
// NoGradGuard or InferenceMode, and those of an operator returning several views (split,
// unbind), cannot be modified in place while autograd records. Views of inference tensors are
// left alone (they are inference tensors too).
void as_view(const Tensor& base, const Tensor& view, bool multi_output = false);
void as_view(const Tensor& base, const std::vector<Tensor>& views, bool multi_output = true);

namespace detail {

// out= operators do not record: "add.out(): functions with out=... arguments don't support
// automatic differentiation, but one of the arguments requires grad."
void check_out_not_requiring_grad(const char* op, bool requires_grad);

// A copy of `t` made below autograd, for a node that needs the value an in-place operator is
// about to overwrite.
Tensor clone_for_backward(const Tensor& t);

std::vector<SavedVariable> save_list(ArrayRef<Tensor> ts);
std::vector<Tensor> unpack_list(const std::vector<SavedVariable>& saved);
std::optional<Tensor> unpack_optional(const SavedVariable& saved);
inline void release(SavedVariable& v) { v.reset_data(); }
inline void release(std::vector<SavedVariable>& vs) {
  for (SavedVariable& v : vs) v.reset_data();
}

std::vector<std::vector<int64_t>> args_sizes(ArrayRef<Tensor> ts);

// Owning copies of the view types the dispatcher passes, for saving past the call.
inline std::optional<std::vector<int64_t>> owned(std::optional<IntArrayRef> v) {
  return v ? std::optional<std::vector<int64_t>>(v->vec()) : std::nullopt;
}
inline std::optional<std::string> owned(std::optional<std::string_view> v) {
  return v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
}

}  // namespace detail

}  // namespace dk::autograd
