// Nodes whose backward raises.
#include "dk/autograd/not_implemented.h"

#include "dk/util/error.h"

namespace dk::autograd {

variable_list ErrorNode::apply(variable_list /*grads*/) { throw Error(message_); }

NotImplementedNode::NotImplementedNode(const std::string& op_name, edge_list next_edges)
    : ErrorNode("derivative for " + op_name + " is not implemented", std::move(next_edges)) {}

variable_list NotImplementedNode::apply(variable_list /*grads*/) { throw NotImplementedError(message_); }

}  // namespace dk::autograd
