// dk/func/make_graph.h: graph capture, a function as a graph of pure operators (Note [Graph
// capture]).
//
//   dk::func::Graph g = dk::func::make_graph(f, {x, w});  // x, w: examples (only shapes matter)
//   std::cout << g.str();          // graph(%in0: Float[8, 4], %in1: Float[4, 2]): ... return (%5)
//   g.dot();                       // Graphviz
//   std::vector<dk::Tensor> y = g({x2, w2});  // replayed on real tensors: f's results
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dk/func/vmap.h"
#include "dk/layers/modes.h"

namespace dk::func {

// Note [Graph capture]
// make_graph(f, example_inputs) runs f once functionalized (Note [Functionalization]) on fake
// tensors shaped like the examples (Note [Fake tensors]) with a GraphRecorder between the two:
// the recorder sits below Functionalize, so it sees the functional operators the program turns
// into (no in-place operator, no view), and above the fake mode, so the arguments it records are
// the program's own (devices included) while nothing is computed or allocated. Each node keeps
// its operator overload and its arguments: outside inputs by position, other nodes' outputs, and
// constants. Replaying the graph calls each node's operator on real tensors in order; inputs f
// wrote are written (copy_) with their final values after the nodes, as functionalize does.
// Every tensor f uses must come from its inputs or be made inside it: a tensor captured from
// outside is real, and the fake mode refuses it with an error that says so.
class Graph {
 public:
  using Value = GraphRecorder::Value;
  using Node = GraphRecorder::Node;

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Value>& inputs() const { return inputs_; }
  const std::vector<Value>& outputs() const { return outputs_; }
  // (input position, the value it ends with) for each input the function writes.
  const std::vector<std::pair<size_t, Value>>& input_writes() const { return input_writes_; }

  // graph(%in0: Float[2, 3]):
  //   %0 = dk::mul(%in0: Float[2, 3], 2) -> Float[2, 3]
  //   return (%0)
  std::string str() const;
  std::string dot() const;  // digraph for Graphviz
  // Runs the graph on `inputs` (as many as the examples): the function's outputs.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;

 private:
  friend Graph make_graph(const TensorsFn& f, const std::vector<Tensor>& example_inputs);
  std::shared_ptr<GraphRecorder> recorder_;
  std::vector<Node> nodes_;
  std::vector<Value> inputs_;
  std::vector<Value> outputs_;
  std::vector<std::pair<size_t, Value>> input_writes_;
};

Graph make_graph(const TensorsFn& f, const std::vector<Tensor>& example_inputs);

}  // namespace dk::func
