// Tensors saved for backward, with the version check (Note [Saved variables]).
#include "dk/autograd/saved_variable.h"

#include <sstream>

#include "dk/autograd/autograd_meta.h"
#include "dk/util/error.h"

namespace dk::autograd {

namespace {

// What a node keeps of its own output without holding itself through the output's grad_fn
// (TensorImpl::shallow_copy_without_history). No base: the storage is shared already, and
// holding the base would hold the base's autograd metadata, whose grad_fn (CopySlices after an
// in-place change of this view) holds the node that saves this alias: a reference cycle.
Tensor aliasWithoutHistory(const Tensor& t) { return Tensor(t.unsafeGetTensorImpl()->shallow_copy_without_history()); }

}  // namespace

std::string describe_tensor(const Tensor& t) {
  std::ostringstream out;
  out << t.dtype() << " [";
  const char* separator = "";
  for (int64_t size : t.sizes()) {
    out << separator << size;
    separator = ", ";
  }
  out << "]";
  return out.str();
}

SavedVariable::SavedVariable(const Tensor& variable, bool is_output) {
  if (!variable.defined()) return;  // unpacks to an undefined tensor
  DK_CHECK(!variable.is_inference(),
           "Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal "
           "tensor and use it in autograd.");
  was_default_constructed_ = false;
  saved_version_ = variable.unsafeGetTensorImpl()->version();
  output_nr_ = variable.output_nr();
  requires_grad_ = variable.requires_grad();
  is_leaf_ = variable.is_leaf();
  // A leaf has no grad_fn to make a cycle with, so even a leaf output is kept as is.
  is_output_ = is_output && !is_leaf_;
  if (is_output_) {
    weak_grad_fn_ = variable.grad_fn();
    data_ = aliasWithoutHistory(variable);
  } else {
    data_ = variable;
  }
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& saved_for) const {
  if (!data_.defined()) {
    if (was_default_constructed_) return Tensor();
    throw Error(ERR_BACKWARD_TWICE);
  }
  std::shared_ptr<Node> grad_fn;
  if (is_output_) {
    grad_fn = saved_for ? saved_for : weak_grad_fn_.lock();
  } else {
    grad_fn = data_.grad_fn();
  }
  uint32_t current_version = data_.unsafeGetTensorImpl()->version();
  if (current_version != saved_version_) throwModifiedInplace(current_version, grad_fn);
  if (!is_output_) return data_;

  // A fresh alias each time, so that what the caller does to its metadata stays its own.
  Tensor variable = aliasWithoutHistory(data_);
  if (requires_grad_ && grad_fn) {
    AutogradMeta& meta = materialize_autograd_meta(variable);
    meta.grad_fn_ = std::move(grad_fn);
    meta.output_nr_ = output_nr_;
  }
  return variable;
}

void SavedVariable::reset_data() {
  data_ = Tensor();
  weak_grad_fn_.reset();
}

void SavedVariable::throwModifiedInplace(uint32_t current_version, const std::shared_ptr<Node>& grad_fn) const {
  std::ostringstream message;
  message << "one of the variables needed for gradient computation has been modified by an inplace operation: ["
          << describe_tensor(data_) << "]";
  if (grad_fn) message << ", which is output " << output_nr_ << " of " << grad_fn->name() << ",";
  message << " is at version " << current_version << "; expected version " << saved_version_ << " instead.";
  throw Error(message.str());
}

}  // namespace dk::autograd
