// Graph capture (Note [Graph capture]).
#include "dk/func/make_graph.h"

#include <sstream>

#include "dk/func/functionalize.h"
#include "dk/generated/ops/copy_ops.h"
#include "dk/layers/fake_tensor.h"

namespace dk::func {

namespace {

// The value `v` stands for, given the graph's inputs and the outputs computed so far.
IValue materialize(const Graph::Value& v, const std::vector<Tensor>& inputs, const std::vector<std::vector<IValue>>& results) {
  if (v.is_list) {
    std::vector<IValue> elements;
    for (const Graph::Value& e : v.elements) elements.push_back(materialize(e, inputs, results));
    return IValue::makeList(v.constant.listElementType(), std::move(elements));
  }
  if (v.input >= 0) {
    DK_CHECK(static_cast<size_t>(v.input) < inputs.size(), "Graph: the graph reads input ", v.input, " of ", inputs.size());
    return IValue(inputs[static_cast<size_t>(v.input)]);
  }
  if (v.node >= 0) return results[static_cast<size_t>(v.node)][static_cast<size_t>(v.output)];
  if (v.is_tensor && !v.constant.isTensor()) return IValue(Tensor());  // an undefined tensor
  return v.constant;  // a literal, or a wrapped number
}

std::string tensorText(const Graph::Value& v) {
  std::string text = v.producer + ": " + v.dtype + "[";
  for (size_t i = 0; i < v.sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(v.sizes[i]);
  return text + "]";
}

}  // namespace

Graph make_graph(const TensorsFn& f, const std::vector<Tensor>& example_inputs) {
  Graph graph;
  graph.recorder_ = std::make_shared<GraphRecorder>();
  auto fake = std::make_shared<FakeTensorMode>();
  std::vector<Tensor> fakes;
  for (const Tensor& x : example_inputs) {
    DK_CHECK(x.defined(), "make_graph: example input ", fakes.size(), " is undefined");
    fakes.push_back(FakeTensorMode::fromTensor(x));
    graph.recorder_->addInput(fakes.back());
    graph.inputs_.push_back(graph.recorder_->valueOf(fakes.back()));
  }
  std::vector<Tensor> outputs, written;
  {
    DispatchModeGuard fake_guard(fake);
    DispatchModeGuard record_guard(graph.recorder_);  // on top: records, then the fake mode runs
    outputs = runFunctionalized(f, fakes, &written);
  }
  graph.nodes_ = graph.recorder_->nodes();
  for (const Tensor& out : outputs) graph.outputs_.push_back(out.defined() ? graph.recorder_->valueOf(out) : Graph::Value{});
  for (size_t i = 0; i < written.size(); ++i)
    if (written[i].defined()) graph.input_writes_.emplace_back(i, graph.recorder_->valueOf(written[i]));
  return graph;
}

std::vector<Tensor> Graph::operator()(const std::vector<Tensor>& inputs) const {
  DK_CHECK(inputs.size() == inputs_.size(), "Graph: expected ", inputs_.size(), " inputs, got ", inputs.size());
  std::vector<std::vector<IValue>> results;
  results.reserve(nodes_.size());
  for (const Node& node : nodes_) {
    Stack stack;
    for (const Value& v : node.inputs) stack.push_back(materialize(v, inputs, results));
    node.handle->callBoxed(&stack);
    std::vector<IValue> flat;  // returned lists counted element by element, as the recorder does
    for (const IValue& r : stack) {
      if (r.isList()) {
        for (const IValue& e : r.toListElements()) flat.push_back(e);
      } else {
        flat.push_back(r);
      }
    }
    results.push_back(std::move(flat));
  }
  std::vector<Tensor> outputs;
  for (const Value& v : outputs_) outputs.push_back(materialize(v, inputs, results).toTensor());
  for (const auto& [i, v] : input_writes_) ops::copy_::call(inputs[i], materialize(v, inputs, results).toTensor(), false);
  return outputs;
}

std::string Graph::str() const {
  std::ostringstream out;
  out << "graph(";
  for (size_t i = 0; i < inputs_.size(); ++i) out << (i ? ", " : "") << tensorText(inputs_[i]);
  out << "):\n";
  std::istringstream lines(recorder_ ? recorder_->str() : "");
  for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
  for (const auto& [i, v] : input_writes_) out << "  %in" << i << " <- " << v.producer << "\n";
  out << "  return (";
  for (size_t i = 0; i < outputs_.size(); ++i) out << (i ? ", " : "") << outputs_[i].producer;
  out << ")\n";
  return out.str();
}

std::string Graph::dot() const { return recorder_ ? recorder_->dot() : "digraph dk {\n}\n"; }

}  // namespace dk::func
