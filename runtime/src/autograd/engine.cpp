// The backward engine: runs a backward graph from its roots (Note [Backward engine]).
#include "dk/autograd/engine.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dk/autograd/accumulate_grad.h"
#include "dk/autograd/autograd_meta.h"
#include "dk/autograd/history.h"
#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/generated/ops/_to_copy.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/ones_like.h"
#include "dk/generated/ops/stack.h"
#include "dk/generated/ops/sum.h"
#include "dk/util/error.h"

namespace dk::autograd {

// Note [Backward engine]
// One call of execute() is one graph task, run to the end on the calling thread (a node may
// itself call backward: that nested task simply runs inside it).
//
// 1. Dependencies: a walk from the roots counts, for every reachable node, the edges that
//    point to it. A node runs once that many gradients have arrived (each parent sends one per
//    edge, undefined or not), so every node runs at most once, after all its parents.
// 2. Capture mode (autograd::grad): the nodes at the requested edges get "captures"; a node is
//    *needed* when one of its next nodes is needed or captures. Only needed nodes run; a
//    capturing node that is not needed is visited (its tensor hooks run, then its input is
//    captured) but not run, so AccumulateGrad never runs and .grad is untouched.
// 3. Gradients for the same input of a node are summed (dk::add) in that node's input
//    buffer while it waits.
// 4. Running a node: its tensor hooks and retain_grad hooks see the gradients first (Note
//    [Tensor hooks]); then apply(); the gradients it returns are checked against what the
//    receiving nodes expect (Note [Gradient validation]); then, unless keep_graph, the node
//    releases its saved variables.
// 5. Leaves last (Note [Accumulation at the end]): an AccumulateGrad that is ready has its hooks
//    run, but its gradient is only stored once every other node of the task has run. A backward
//    that fails part way therefore leaves every leaf's .grad as it was.
//
// Note [Engine order]
// Among the nodes that are ready, the one with the highest sequence number runs first (the
// one made last in the forward pass), ties in the order they became ready; AccumulateGrad has
// the largest sequence number, so a leaf's hooks run as soon as its gradient is complete. The
// order is deterministic; results never depend on it except through hooks with side effects.
//
// Note [Accumulation at the end]
// AccumulateGrad nodes have no next edges, so nothing downstream waits for them: the task keeps
// each one with its (hooked) gradient and runs them all after the last other node, in the order
// they became ready. If any node throws first, none runs, and no leaf's .grad changes. What a
// failed backward does leave behind is what ran before the error: tensor hooks (user code),
// the retained gradients of non-leaves (retain_grad), and the saved variables the nodes that
// ran released (unless retain_graph), as in PyTorch.
//
// Note [Gradient validation]
// Each gradient a node returns for a valid edge is compared with the InputMetadata of the
// input it feeds (when that node recorded some): a gradient whose shape the expected shape
// broadcasts to is summed down to it (dk::sum); any other shape is an error,
//   Function MulBackward0 returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2, 3]
// a gradient on another device is an error, and one of another dtype is converted
// (dk::_to_copy). A node returning the wrong number of gradients is an error:
//   Function MulBackward0 returned an invalid number of gradients - expected 2, but got 1

namespace {

std::string formatSizes(IntArrayRef sizes) {
  std::ostringstream out;
  out << "[";
  const char* separator = "";
  for (int64_t size : sizes) {
    out << separator << size;
    separator = ", ";
  }
  out << "]";
  return out.str();
}

// Whether `shape` broadcasts to `desired`.
bool isExpandableTo(IntArrayRef shape, IntArrayRef desired) {
  if (shape.size() > desired.size()) return false;
  size_t leading = desired.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != desired[leading + i] && shape[i] != 1) return false;
  }
  return true;
}

// Sums `grad` down to `shape` (which broadcasts to grad's shape): the broadcast dims keep a
// size of 1, the leading dims go.
Tensor sumTo(const Tensor& grad, IntArrayRef shape) {
  auto leading = static_cast<int64_t>(grad.dim() - static_cast<int64_t>(shape.size()));
  std::vector<int64_t> broadcast_dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t dim = leading + static_cast<int64_t>(i);
    if (shape[i] == 1 && grad.size(dim) != 1) broadcast_dims.push_back(dim);
  }
  Tensor result = grad;
  if (!broadcast_dims.empty()) result = dk::sum(result, IntArrayRef(broadcast_dims), /*keepdim=*/true);
  if (leading > 0) {
    std::vector<int64_t> leading_dims;
    for (int64_t d = 0; d < leading; ++d) leading_dims.push_back(d);
    result = dk::sum(result, IntArrayRef(leading_dims), /*keepdim=*/false);
  }
  return result;
}

// Note [Gradient validation]; `who` is the node's name ("GraphRoot" for the root gradients).
void validateGradients(const std::string& who, const edge_list& edges, variable_list& grads) {
  if (grads.size() != edges.size()) {
    DK_ERROR("Function ", who, " returned an invalid number of gradients - expected ", edges.size(), ", but got ",
             grads.size());
  }
  for (size_t i = 0; i < edges.size(); ++i) {
    const Edge& edge = edges[i];
    Tensor& grad = grads[i];
    if (!edge.is_valid() || !grad.defined() || edge.input_nr >= edge.function->num_inputs()) continue;
    const InputMetadata& expected = edge.function->input_metadata(edge.input_nr);
    if (!expected.defined) continue;
    if (grad.sizes() != expected.sizes) {
      if (!isExpandableTo(expected.sizes, grad.sizes())) {
        DK_ERROR("Function ", who, " returned an invalid gradient at index ", i, " - got ", formatSizes(grad.sizes()),
                 " but expected shape compatible with ", formatSizes(expected.sizes));
      }
      grad = sumTo(grad, expected.sizes);
    }
    if (grad.device() != expected.device) {
      DK_ERROR("Function ", who, " returned an invalid gradient at index ", i, " - expected device ", expected.device,
               " but got ", grad.device());
    }
    if (grad.dtype() != expected.dtype) grad = dk::_to_copy(grad, expected.dtype);
  }
}

// Adds `grad` at input `input_nr` of a waiting node's buffer (Note [Backward engine], 3).
void addToBuffer(variable_list& buffer, const Node& node, uint32_t input_nr, Tensor grad) {
  size_t size = std::max<size_t>(node.num_inputs(), input_nr + 1);
  if (buffer.size() < size) buffer.resize(size);
  Tensor& slot = buffer[input_nr];
  if (!grad.defined()) return;
  if (!slot.defined()) {
    slot = std::move(grad);
  } else {
    slot = dk::add(slot, grad);
  }
}

class GraphTask {
 public:
  GraphTask(bool keep_graph, const edge_list& outputs) : keep_graph_(keep_graph), capture_mode_(!outputs.empty()) {
    captured_.resize(outputs.size());
  }

  variable_list run(const edge_list& roots, variable_list root_grads, const edge_list& outputs) {
    std::vector<Node*> root_nodes;
    for (const Edge& root : roots) {
      if (root.is_valid()) root_nodes.push_back(root.function.get());
    }
    computeDependencies(root_nodes);
    if (capture_mode_) computeExecInfo(root_nodes, outputs);

    validateGradients("GraphRoot", roots, root_grads);
    for (size_t i = 0; i < roots.size(); ++i) {
      if (!roots[i].is_valid()) continue;
      addToBuffer(not_ready_[roots[i].function.get()], *roots[i].function, roots[i].input_nr, std::move(root_grads[i]));
    }
    std::unordered_set<Node*> seeded;
    for (const Edge& root : roots) {
      Node* fn = root.function.get();
      if (fn == nullptr || !seeded.insert(fn).second) continue;
      if (dependencies_.count(fn) != 0 || !shouldExecute(fn)) continue;  // waits for its parents, or is not needed
      pushReady(root.function, takeBuffer(fn));
    }

    while (!ready_.empty()) {
      std::pop_heap(ready_.begin(), ready_.end(), ReadyOrder());
      ReadyNode next = std::move(ready_.back());
      ready_.pop_back();
      evaluate(next.node, std::move(next.grads));
    }
    // Note [Accumulation at the end]: the whole graph ran; now the leaves.
    for (ReadyNode& leaf : leaves_) leaf.node->apply(std::move(leaf.grads));
    return std::move(captured_);
  }

 private:
  struct ReadyNode {
    std::shared_ptr<Node> node;
    variable_list grads;
    uint64_t sequence_nr;
    uint64_t arrival;
  };
  // A max-heap: highest sequence number first, then first arrived (Note [Engine order]).
  struct ReadyOrder {
    bool operator()(const ReadyNode& a, const ReadyNode& b) const {
      if (a.sequence_nr != b.sequence_nr) return a.sequence_nr < b.sequence_nr;
      return a.arrival > b.arrival;
    }
  };
  struct ExecInfo {
    bool needed = false;
    std::vector<std::pair<uint32_t, size_t>> captures;  // (input_nr, index into outputs)
  };

  void computeDependencies(const std::vector<Node*>& roots) {
    std::unordered_set<Node*> seen(roots.begin(), roots.end());
    std::vector<Node*> stack(seen.begin(), seen.end());
    while (!stack.empty()) {
      Node* fn = stack.back();
      stack.pop_back();
      for (const Edge& edge : fn->next_edges()) {
        Node* next = edge.function.get();
        if (next == nullptr) continue;
        ++dependencies_[next];
        if (seen.insert(next).second) stack.push_back(next);
      }
    }
  }

  // Note [Backward engine], 2: a post-order walk, so a node is judged after all its next nodes.
  void computeExecInfo(const std::vector<Node*>& roots, const edge_list& outputs) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].is_valid()) exec_info_[outputs[i].function.get()].captures.emplace_back(outputs[i].input_nr, i);
    }
    std::unordered_set<Node*> visited;
    std::vector<std::pair<Node*, size_t>> stack;  // (node, next edge to look at)
    for (Node* root : roots) {
      if (!visited.insert(root).second) continue;
      stack.emplace_back(root, 0);
      while (!stack.empty()) {
        Node* fn = stack.back().first;
        size_t edge_index = stack.back().second++;
        const edge_list& edges = fn->next_edges();
        if (edge_index < edges.size()) {
          Node* next = edges[edge_index].function.get();
          if (next != nullptr && visited.insert(next).second) stack.emplace_back(next, 0);
          continue;
        }
        stack.pop_back();
        for (const Edge& edge : edges) {
          if (edge.is_valid() && shouldExecute(edge.function.get())) {
            exec_info_[fn].needed = true;
            break;
          }
        }
      }
    }
  }

  bool shouldExecute(Node* fn) const {
    if (!capture_mode_) return true;
    auto it = exec_info_.find(fn);
    return it != exec_info_.end() && (it->second.needed || !it->second.captures.empty());
  }

  variable_list takeBuffer(Node* fn) {
    variable_list buffer;
    auto it = not_ready_.find(fn);
    if (it != not_ready_.end()) {
      buffer = std::move(it->second);
      not_ready_.erase(it);
    }
    if (buffer.size() < fn->num_inputs()) buffer.resize(fn->num_inputs());
    return buffer;
  }

  void pushReady(std::shared_ptr<Node> fn, variable_list grads) {
    uint64_t sequence_nr = fn->sequence_nr();
    ready_.push_back(ReadyNode{std::move(fn), std::move(grads), sequence_nr, arrivals_++});
    std::push_heap(ready_.begin(), ready_.end(), ReadyOrder());
  }

  void evaluate(const std::shared_ptr<Node>& fn, variable_list grads) {
    fn->call_tensor_pre_hooks(grads);
    if (capture_mode_) {
      const ExecInfo& info = exec_info_.at(fn.get());
      for (const auto& [input_nr, output_index] : info.captures) {
        if (input_nr < grads.size()) captured_[output_index] = grads[input_nr];
      }
      if (!info.needed) return;
    }
    const Node& node = *fn;
    if (typeid(node) == typeid(AccumulateGrad)) {  // Note [Accumulation at the end]; a final class
      if (leaves_.empty()) leaves_.reserve(8);  // one allocation for a typical graph's leaves
      leaves_.push_back(ReadyNode{fn, std::move(grads), fn->sequence_nr(), 0});
      return;
    }

    variable_list outputs = fn->apply(std::move(grads));
    const edge_list& edges = fn->next_edges();
    validateGradients(fn->name(), edges, outputs);
    if (!keep_graph_) fn->release_variables();

    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& edge = edges[i];
      if (!edge.is_valid()) continue;
      Node* next = edge.function.get();
      auto dependency = dependencies_.find(next);
      DK_CHECK(dependency != dependencies_.end(), "autograd engine: dependency not found for ", next->name());
      bool ready = --dependency->second == 0;
      if (ready) dependencies_.erase(dependency);
      if (!shouldExecute(next)) continue;
      addToBuffer(not_ready_[next], *next, edge.input_nr, std::move(outputs[i]));
      if (ready) pushReady(edge.function, takeBuffer(next));
    }
  }

  bool keep_graph_;
  bool capture_mode_;
  std::unordered_map<Node*, int64_t> dependencies_;
  std::unordered_map<Node*, variable_list> not_ready_;
  std::unordered_map<Node*, ExecInfo> exec_info_;
  std::vector<ReadyNode> ready_;
  std::vector<ReadyNode> leaves_;  // AccumulateGrad nodes waiting for the end of the task
  uint64_t arrivals_ = 0;
  variable_list captured_;
};

// The root gradients of backward/grad: the given ones (shape-checked), else ones for
// one-element outputs that require grad (PyTorch's _make_grads).
variable_list makeRootGrads(const variable_list& outputs, const variable_list& grad_outputs) {
  DK_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "got ", outputs.size(), " tensors and ",
           grad_outputs.size(), " gradients");
  variable_list grads;
  grads.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& output = outputs[i];
    DK_CHECK(output.defined(), "element ", i, " of tensors is undefined");
    Tensor grad = i < grad_outputs.size() ? grad_outputs[i] : Tensor();
    if (grad.defined()) {
      DK_CHECK(grad.sizes() == output.sizes(), "Mismatch in shape: grad_output[", i, "] has a shape of ",
               formatSizes(grad.sizes()), " and output[", i, "] has a shape of ", formatSizes(output.sizes()), ".");
    } else if (output.requires_grad()) {
      DK_CHECK(output.numel() == 1, "grad can be implicitly created only for scalar outputs");
      grad = dk::ones_like(output);
    }
    grads.push_back(std::move(grad));
  }
  return grads;
}

edge_list rootEdges(const variable_list& outputs) {
  edge_list roots;
  roots.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    DK_CHECK(outputs[i].requires_grad(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
    roots.push_back(gradient_edge(outputs[i]));
  }
  return roots;
}

}  // namespace

namespace {
// The final callbacks of the backward passes running on this thread, innermost last (a node may
// run a backward pass of its own).
thread_local std::vector<std::vector<std::function<void()>>*> tls_final_callbacks;

struct FinalCallbacks {
  std::vector<std::function<void()>> callbacks;
  FinalCallbacks() { tls_final_callbacks.push_back(&callbacks); }
  ~FinalCallbacks() { tls_final_callbacks.pop_back(); }
  FinalCallbacks(const FinalCallbacks&) = delete;
  FinalCallbacks& operator=(const FinalCallbacks&) = delete;
  void run() {
    for (size_t i = 0; i < callbacks.size(); ++i) {  // a callback may queue more
      std::function<void()> callback = std::move(callbacks[i]);
      callback();
    }
  }
};
}  // namespace

void queue_callback(std::function<void()> callback) {
  DK_CHECK(!tls_final_callbacks.empty(), "Final callbacks can only be installed during backward pass.");
  tls_final_callbacks.back()->push_back(std::move(callback));
}

variable_list execute(const edge_list& roots, variable_list root_grads, bool keep_graph, bool create_graph,
                      const edge_list& outputs) {
  DK_CHECK(root_grads.size() == roots.size(), "autograd engine: got ", roots.size(), " roots and ", root_grads.size(),
           " root gradients");
  AutoGradMode grad_mode(create_graph);
  FinalCallbacks final_callbacks;
  GraphTask task(keep_graph, outputs);
  variable_list result = task.run(roots, std::move(root_grads), outputs);
  final_callbacks.run();
  return result;
}

void backward(const variable_list& tensors, const variable_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph) {
  variable_list grads = makeRootGrads(tensors, grad_tensors);
  edge_list roots = rootEdges(tensors);
  execute(roots, std::move(grads), retain_graph.value_or(create_graph), create_graph);
}

void backward(const variable_list& tensors, const variable_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph, const variable_list& inputs) {
  DK_CHECK(!inputs.empty(), "'inputs' argument to backward() cannot be empty.");
  variable_list grads = grad(tensors, inputs, grad_tensors, retain_graph, create_graph, /*allow_unused=*/true);
  for (size_t i = 0; i < inputs.size(); ++i) {
    // A non-leaf that retains its grad already got it from its retain_grad hook.
    if (grads[i].defined() && !inputs[i].retains_grad()) accumulate_into(inputs[i].mutable_grad(), grads[i]);
  }
}

variable_list grad(const variable_list& outputs, const variable_list& inputs, const variable_list& grad_outputs,
                   std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  DK_CHECK(!inputs.empty(), "grad requires non-empty inputs.");
  variable_list grads = makeRootGrads(outputs, grad_outputs);
  edge_list roots = rootEdges(outputs);
  edge_list output_edges;
  output_edges.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    DK_CHECK(input.requires_grad(), "One of the differentiated Tensors does not require grad");
    AutogradMeta* meta = get_autograd_meta(input);
    if (std::shared_ptr<Node> grad_fn = current_grad_fn(input)) {
      output_edges.emplace_back(std::move(grad_fn), meta->output_nr_);
    } else {
      // A leaf no graph reaches has no accumulator: it gets no gradient (and none is made).
      std::lock_guard<std::mutex> lock(meta->mutex_);
      output_edges.emplace_back(meta->grad_accumulator_.lock(), 0);
    }
  }
  variable_list result =
      execute(roots, std::move(grads), retain_graph.value_or(create_graph), create_graph, output_edges);
  if (!allow_unused) {
    for (const Tensor& g : result) {
      DK_CHECK(g.defined(),
               "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True "
               "if this is the desired behavior.");
    }
  }
  return result;
}

}  // namespace dk::autograd
