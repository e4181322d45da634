// dk/autograd/node.h: a node of the backward graph, and the edges between nodes.
//
// Note [Backward graph]
// Each differentiable forward call that records history makes one Node (MulBackward0, ...).
// The node's *inputs* are the gradients of the forward call's outputs (one per output,
// described by InputMetadata, recorded by set_history); its *outputs* are the gradients of the
// forward call's inputs, one per next edge. Edge{function, input_nr} says which input of which
// node an output feeds: the grad_fn of a non-leaf input, the AccumulateGrad of a leaf input,
// or nothing (an invalid edge) for an input that does not require grad. A node holds its next
// nodes strongly and nothing holds a node back, so the graph is a DAG owned from its outputs:
// freeing the last tensor of a graph frees the graph. Destruction is iterative, so a long
// chain of nodes cannot overflow the stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dk/autograd/autograd_meta.h"
#include "dk/tensor/tensor.h"

namespace dk::autograd {

using variable_list = std::vector<Tensor>;

struct Edge {
  Edge() = default;
  Edge(std::shared_ptr<Node> function, uint32_t input_nr) : function(std::move(function)), input_nr(input_nr) {}
  bool is_valid() const { return function != nullptr; }
  bool operator==(const Edge& o) const { return function == o.function && input_nr == o.input_nr; }

  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
};
using edge_list = std::vector<Edge>;

// What a node expects of the gradient arriving at one of its inputs: the forward output's
// dtype, device and sizes. The engine checks every gradient a node returns against the
// metadata of the input it feeds (Note [Gradient validation] in engine.cpp).
struct InputMetadata {
  InputMetadata() = default;  // an undefined forward output: nothing is checked
  explicit InputMetadata(const Tensor& t) : dtype(t.dtype()), device(t.device()), sizes(t.sizes()), defined(t.defined()) {}

  ScalarType dtype = ScalarType::Undefined;
  Device device = Device(DeviceType::CPU);
  std::vector<int64_t> sizes;
  bool defined = false;
};

// The outputs of a node that belong to one forward input, [begin, end): one per tensor, one per
// element of a Tensor[] (Note [Generated autograd] in dk/autograd/functions.h).
struct IndexRange {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
};

// Hands out consecutive IndexRanges, one per differentiable input in argument order.
class IndexRangeGenerator {
 public:
  IndexRange range(size_t count) {
    IndexRange r{next_, next_ + count};
    next_ += count;
    return r;
  }
  size_t size() const { return next_; }

 private:
  size_t next_ = 0;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  // Takes the next sequence number of this thread (later nodes run first when several are
  // ready; Note [Engine order] in engine.cpp).
  explicit Node(edge_list next_edges = {});
  Node(uint64_t sequence_nr, edge_list next_edges);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Computes the gradients of the forward inputs (one per next edge; undefined where an
  // output is not needed) from those of the forward outputs (one per input). Called by the
  // engine, with the grad mode of the backward pass (on only under create_graph).
  virtual variable_list apply(variable_list grads) = 0;
  variable_list operator()(variable_list grads) { return apply(std::move(grads)); }

  // For error messages: by default the class name without namespaces ("MulBackward0").
  virtual std::string name() const;

  // Frees what the node saved for backward (its SavedVariables). The engine calls it after
  // running the node unless retain_graph; unpacking a released SavedVariable then raises the
  // "backward through the graph a second time" error.
  virtual void release_variables() {}

  // ---- outputs: the next edges
  const edge_list& next_edges() const { return next_edges_; }
  const Edge& next_edge(size_t i) const { return next_edges_.at(i); }
  size_t num_outputs() const { return next_edges_.size(); }
  void set_next_edges(edge_list next_edges) { next_edges_ = std::move(next_edges); }
  void add_next_edge(Edge edge) { next_edges_.push_back(std::move(edge)); }
  // Whether output i is wanted: its edge is valid (the forward input requires grad).
  bool should_compute_output(size_t i) const { return i < next_edges_.size() && next_edges_[i].is_valid(); }
  // Whether any output in these ranges is wanted.
  bool should_compute_output(std::initializer_list<IndexRange> ranges) const {
    for (const IndexRange& r : ranges) {
      for (size_t i = r.begin; i < r.end; ++i) {
        if (should_compute_output(i)) return true;
      }
    }
    return false;
  }
  bool should_compute_output(const IndexRange& range) const { return should_compute_output({range}); }

  // ---- inputs: one per forward output
  // Records a forward output (undefined for a missing one); returns its input number.
  uint32_t add_input_metadata(const Tensor& output);
  size_t num_inputs() const { return input_metadata_.size(); }
  const InputMetadata& input_metadata(size_t i) const { return input_metadata_.at(i); }

  uint64_t sequence_nr() const { return sequence_nr_; }

  // ---- hooks (Note [Tensor hooks])
  void add_tensor_pre_hook(std::shared_ptr<TensorHookList> hooks) { tensor_pre_hooks_.push_back(std::move(hooks)); }
  void set_retains_grad_hook(uint32_t input_nr, std::weak_ptr<RetainedGrad> slot) {
    retains_grad_hooks_[input_nr] = std::move(slot);
  }
  // Removes and returns the retain_grad slot of input `input_nr` (empty if none).
  std::weak_ptr<RetainedGrad> pop_retains_grad_hook(uint32_t input_nr);
  // Runs the tensor hooks, then the retain_grad hooks, on the gradients the node received.
  // AccumulateGrad overrides it to read its leaf's hooks.
  virtual void call_tensor_pre_hooks(variable_list& grads);

 protected:
  uint64_t sequence_nr_;
  edge_list next_edges_;
  std::vector<InputMetadata> input_metadata_;
  std::vector<std::shared_ptr<TensorHookList>> tensor_pre_hooks_;
  std::map<uint32_t, std::weak_ptr<RetainedGrad>> retains_grad_hooks_;
};

// Stores `grad` as the retained gradient of `slot`: the first one as is when nothing else
// holds it (else a copy), later ones summed (Note [Gradient accumulation] in accumulate_grad.h).
void retain_gradient(RetainedGrad& slot, const Tensor& grad);

// The next sequence number of this thread (what a new Node takes).
uint64_t next_sequence_nr();

}  // namespace dk::autograd
