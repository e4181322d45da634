// dk/autograd/saved_variable.h: a tensor a node keeps for its backward.
//
// Note [Saved variables]
// A SavedVariable remembers the tensor and the value of its version counter at save time
// (Note [Version counter]); unpack() checks the version is unchanged, so a backward never
// silently reads a value an in-place operation overwrote:
//
//   one of the variables needed for gradient computation has been modified by an inplace
//   operation: [Float [2, 3]], which is output 0 of MulBackward0, is at version 2; expected
//   version 1 instead.
//
// (the "which is output ..." part names the saved tensor's own grad_fn and is left out for a
// leaf). An input of the node is kept as the tensor itself. An output of the node (is_output)
// would hold the node through its own grad_fn, a reference cycle, so it is kept as an alias
// without autograd metadata (same storage, geometry and version counter); unpack(node) gives it
// its history back as output output_nr of `node`. release_variables() calls reset_data(); a
// later unpack raises the "backward through the graph a second time" error. A SavedVariable
// made from an undefined tensor unpacks to an undefined tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dk/autograd/node.h"
#include "dk/tensor/tensor.h"

namespace dk::autograd {

class SavedVariable {
 public:
  SavedVariable() = default;
  // `is_output`: `variable` is an output of the node that saves it.
  SavedVariable(const Tensor& variable, bool is_output);

  // The saved tensor, after the version check. `saved_for` is the node that saved it: needed
  // to rebuild the history of a saved output (Note [Saved variables]).
  Tensor unpack(const std::shared_ptr<Node>& saved_for = nullptr) const;

  // Frees the saved tensor (release_variables).
  void reset_data();

  bool was_released() const { return !data_.defined() && !was_default_constructed_; }
  uint32_t saved_version() const { return saved_version_; }

 private:
  [[noreturn]] void throwModifiedInplace(uint32_t current_version, const std::shared_ptr<Node>& grad_fn) const;

  Tensor data_;
  // A saved output's grad_fn, held weakly (it is usually the node that saved it).
  std::weak_ptr<Node> weak_grad_fn_;
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool was_default_constructed_ = true;
  bool is_output_ = false;       // data_ is a history-free alias of the saved tensor
  bool requires_grad_ = false;
  bool is_leaf_ = true;
};

// A dtype and shape as the error messages print them: "Float [2, 3]".
std::string describe_tensor(const Tensor& t);

// The error raised when unpacking a released SavedVariable (as PyTorch words it).
inline constexpr const char* ERR_BACKWARD_TWICE =
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward.";

}  // namespace dk::autograd
