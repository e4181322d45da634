// dk/autograd/not_implemented.h: nodes whose backward raises, for operators that record history
// but have no derivative.
#pragma once

#include <string>
#include <utility>

#include "dk/autograd/node.h"

namespace dk::autograd {

// Raises dk::Error(message) when backward reaches it.
class ErrorNode : public Node {
 public:
  explicit ErrorNode(std::string message, edge_list next_edges = {})
      : Node(std::move(next_edges)), message_(std::move(message)) {}
  variable_list apply(variable_list grads) override;
  std::string name() const override { return "Error"; }

 protected:
  std::string message_;
};

// The grad_fn of an operator without a derivative formula: building the graph works, running
// backward through it raises dk::NotImplementedError "derivative for <op> is not implemented".
class NotImplementedNode final : public ErrorNode {
 public:
  explicit NotImplementedNode(const std::string& op_name, edge_list next_edges = {});
  variable_list apply(variable_list grads) override;
  std::string name() const override { return "NotImplemented"; }
};

}  // namespace dk::autograd
