// Backward graph nodes (Note [Backward graph]): sequence numbers, input metadata, hooks,
// names, and iterative destruction.
#include "dk/autograd/node.h"

#include <cxxabi.h>

#include <cstdlib>
#include <typeinfo>

#include "dk/autograd/accumulate_grad.h"

namespace dk::autograd {

namespace {
thread_local uint64_t next_sequence_number = 0;
}  // namespace

uint64_t next_sequence_nr() { return next_sequence_number++; }

Node::Node(edge_list next_edges) : Node(next_sequence_nr(), std::move(next_edges)) {}

Node::Node(uint64_t sequence_nr, edge_list next_edges) : sequence_nr_(sequence_nr), next_edges_(std::move(next_edges)) {}

Node::~Node() {
  // Freeing a chain recursively (node -> next node -> ...) overflows the stack for long graphs.
  // Instead, take the edges of every next node this one holds the last reference to before it
  // dies, and free them from a local stack; the next node's own destructor then finds no edges.
  edge_list pending = std::move(next_edges_);
  while (!pending.empty()) {
    std::shared_ptr<Node> next = std::move(pending.back().function);
    pending.pop_back();
    if (next && next.use_count() == 1) {
      for (Edge& edge : next->next_edges_) pending.push_back(std::move(edge));
      next->next_edges_.clear();
    }
  }
}

std::string Node::name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string full = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  // Drop the namespaces (and "(anonymous namespace)::"), but not those inside template arguments.
  size_t end = full.find('<');
  size_t cut = full.rfind("::", end == std::string::npos ? std::string::npos : end);
  return cut == std::string::npos ? full : full.substr(cut + 2);
}

uint32_t Node::add_input_metadata(const Tensor& output) {
  auto input_nr = static_cast<uint32_t>(input_metadata_.size());
  input_metadata_.push_back(output.defined() ? InputMetadata(output) : InputMetadata());
  return input_nr;
}

std::weak_ptr<RetainedGrad> Node::pop_retains_grad_hook(uint32_t input_nr) {
  auto it = retains_grad_hooks_.find(input_nr);
  if (it == retains_grad_hooks_.end()) return {};
  std::weak_ptr<RetainedGrad> slot = std::move(it->second);
  retains_grad_hooks_.erase(it);
  return slot;
}

void Node::call_tensor_pre_hooks(variable_list& grads) {
  // Indexing: a hook may register hooks on this node.
  for (size_t i = 0; i < tensor_pre_hooks_.size(); ++i) {
    std::shared_ptr<TensorHookList> list = tensor_pre_hooks_[i];
    if (list->input_nr < grads.size() && grads[list->input_nr].defined()) {
      grads[list->input_nr] = list->run(std::move(grads[list->input_nr]));
    }
  }
  for (auto& [input_nr, weak_slot] : retains_grad_hooks_) {
    if (input_nr >= grads.size() || !grads[input_nr].defined()) continue;
    if (std::shared_ptr<RetainedGrad> slot = weak_slot.lock()) retain_gradient(*slot, grads[input_nr]);
  }
}

void retain_gradient(RetainedGrad& slot, const Tensor& grad) { accumulate_into(slot.grad, grad); }

}  // namespace dk::autograd
