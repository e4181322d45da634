// The dispatch modes that ship with the library (dk/layers/modes.h).
#include "dk/layers/modes.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace dk {

namespace {
size_t argumentCount(const OperatorHandle& op, const Stack& stack) {
  return op.hasSchema() ? std::min(op.schema().arguments().size(), stack.size()) : stack.size();
}

std::string shapeText(const std::vector<int64_t>& sizes) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << "]";
  return out.str();
}
}  // namespace

std::string describeIValueShape(const IValue& v) {
  if (v.isTensor()) {
    Tensor t = v.toTensor();
    if (!t.defined()) return "undefined";
    return std::string(toString(t.dtype())) + shapeText(t.sizes());
  }
  if (v.isList()) {
    std::ostringstream out;
    out << "[";
    const auto& elements = v.toListElements();
    for (size_t i = 0; i < elements.size(); ++i) out << (i ? ", " : "") << describeIValueShape(elements[i]);
    out << "]";
    return out.str();
  }
  std::ostringstream out;
  out << v;
  return out.str();
}

// ---------------------------------------------------------------- OpCounter

void OpCounter::dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_[op.operator_name().toString()];
  }
  op.callBoxed(stack);
}

int64_t OpCounter::count(const std::string& op_name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = counts_.find(op_name);
  return it == counts_.end() ? 0 : it->second;
}

int64_t OpCounter::total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t n = 0;
  for (const auto& [name, c] : counts_) n += c;
  return n;
}

std::map<std::string, int64_t> OpCounter::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void OpCounter::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  counts_.clear();
}

std::string OpCounter::str() const {
  std::ostringstream out;
  for (const auto& [name, c] : counts()) out << name << ": " << c << "\n";
  return out.str();
}

// ---------------------------------------------------------------- GraphRecorder

namespace {
GraphRecorder::Value tensorValue(const Tensor& t) {
  GraphRecorder::Value value;
  value.is_tensor = true;
  if (t.defined()) {
    value.sizes = t.sizes();
    value.dtype = std::string(toString(t.dtype()));
  }
  return value;
}

// The value of a wrapped number, read directly (a call would reach the modes again).
std::string wrappedNumberText(const Tensor& t) {
  const void* data = t.unsafeGetTensorImpl()->data();
  if (data == nullptr) return "?";
  std::ostringstream out;
  switch (t.dtype()) {
    case ScalarType::Double: out << *static_cast<const double*>(data); break;
    case ScalarType::Float: out << *static_cast<const float*>(data); break;
    case ScalarType::Long: out << *static_cast<const int64_t*>(data); break;
    case ScalarType::Int: out << *static_cast<const int32_t*>(data); break;
    case ScalarType::Bool: out << (*static_cast<const bool*>(data) ? "True" : "False"); break;
    default: out << "a " << toString(t.dtype()) << " number"; break;
  }
  return out.str();
}

bool holdsTensor(const IValue& v) {
  if (v.isTensor()) return true;
  if (!v.isList()) return false;
  for (const IValue& e : v.toListElements())
    if (e.isTensor()) return true;
  return false;
}
}  // namespace

GraphRecorder::Value GraphRecorder::newInput(const IValue& v) {
  Value value = tensorValue(v.toTensor());
  value.input = next_input_++;
  value.producer = "%in" + std::to_string(value.input);
  producer_of_[v.toTensor().unsafeGetTensorImpl()] = value;
  keep_alive_.push_back(v);
  return value;
}

GraphRecorder::Value GraphRecorder::describe(const IValue& v) {
  if (v.isTensor()) {
    auto it = producer_of_.find(v.toTensor().unsafeGetTensorImpl());
    if (it == producer_of_.end() && v.toTensor().unsafeGetTensorImpl()->is_wrapped_number()) {
      // A Scalar argument carried as a 0-dim tensor (wrapScalar): a constant, shown as its value.
      Value value = tensorValue(v.toTensor());
      value.constant = v;
      value.producer = wrappedNumberText(v.toTensor());
      return value;
    }
    if (it == producer_of_.end()) return newInput(v);
    Value value = it->second;
    const Value shape = tensorValue(v.toTensor());  // the tensor as it is now
    value.sizes = shape.sizes;
    value.dtype = shape.dtype;
    return value;
  }
  Value value;
  if (v.isList() && holdsTensor(v)) {
    value.is_list = true;
    value.constant = v;  // the list's element type, for rebuilding it
    std::string text = "[";
    for (const IValue& e : v.toListElements()) {
      value.elements.push_back(describe(e));
      text += (value.elements.size() > 1 ? ", " : "") + value.elements.back().producer;
    }
    value.producer = text + "]";
    return value;
  }
  std::ostringstream out;
  out << v;
  value.producer = out.str();
  value.constant = v;
  return value;
}

void GraphRecorder::addInput(const Tensor& t) {
  std::lock_guard<std::mutex> lock(mutex_);
  DK_CHECK(t.defined() && producer_of_.count(t.unsafeGetTensorImpl()) == 0,
           "GraphRecorder::addInput: the tensor is undefined or already in the graph");
  newInput(IValue(t));
}

GraphRecorder::Value GraphRecorder::valueOf(const Tensor& t) {
  std::lock_guard<std::mutex> lock(mutex_);
  return describe(IValue(t));
}

void GraphRecorder::dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  size_t n = argumentCount(op, *stack);
  Node node;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    node.id = static_cast<int>(nodes_.size());
    node.op = op.operator_name().name;
    node.handle = op;
    for (size_t i = stack->size() - n; i < stack->size(); ++i) node.inputs.push_back(describe((*stack)[i]));
  }
  size_t below = stack->size() - n;
  op.callBoxed(stack);
  std::lock_guard<std::mutex> lock(mutex_);
  int output_index = 0;
  for (size_t i = below; i < stack->size(); ++i) {
    const IValue& v = (*stack)[i];
    auto record = [&](const IValue& out) {
      Value value;
      if (out.isTensor()) {
        value = tensorValue(out.toTensor());
        value.node = node.id;
        value.output = output_index;
        // Appended piece by piece: "literal" + std::string trips GCC 12's -Wrestrict at -O3.
        value.producer = "%";
        value.producer += std::to_string(node.id);
        if (output_index) {
          value.producer += '.';
          value.producer += std::to_string(output_index);
        }
        producer_of_[out.toTensor().unsafeGetTensorImpl()] = value;
        keep_alive_.push_back(out);
      } else {
        std::ostringstream text;
        text << out;
        value.producer = text.str();
        value.constant = out;
      }
      ++output_index;
      node.outputs.push_back(std::move(value));
    };
    if (v.isList()) {
      for (const IValue& e : v.toListElements()) record(e);
    } else {
      record(v);
    }
  }
  nodes_.push_back(std::move(node));
}

std::vector<GraphRecorder::Node> GraphRecorder::nodes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nodes_;
}

namespace {
std::string valueText(const GraphRecorder::Value& v) {
  if (v.is_list) {
    std::string text = "[";
    for (size_t i = 0; i < v.elements.size(); ++i) text += (i ? ", " : "") + valueText(v.elements[i]);
    return text + "]";
  }
  if (!v.is_tensor || (v.input < 0 && v.node < 0)) return v.producer;  // literals, wrapped numbers
  return v.producer + ": " + v.dtype + shapeText(v.sizes);
}
}  // namespace

std::string GraphRecorder::str() const {
  std::ostringstream out;
  for (const Node& node : nodes()) {
    out << "%" << node.id << " = " << node.op << "(";
    for (size_t i = 0; i < node.inputs.size(); ++i) out << (i ? ", " : "") << valueText(node.inputs[i]);
    out << ") -> ";
    if (node.outputs.size() != 1) out << "(";
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const Value& v = node.outputs[i];
      out << (i ? ", " : "") << (v.is_tensor ? v.dtype + shapeText(v.sizes) : v.producer);
    }
    if (node.outputs.size() != 1) out << ")";
    out << "\n";
  }
  return out.str();
}

std::string GraphRecorder::dot() const {
  std::ostringstream out;
  out << "digraph dk {\n  node [shape=box, fontname=\"monospace\"];\n";
  std::set<int> inputs_declared;
  for (const Node& node : nodes()) {
    out << "  n" << node.id << " [label=\"%" << node.id << " " << node.op << "\"];\n";
    std::vector<Value> edges;  // the node's tensor inputs, list elements included
    for (const Value& v : node.inputs) {
      if (v.is_list) edges.insert(edges.end(), v.elements.begin(), v.elements.end());
      if (v.is_tensor) edges.push_back(v);
    }
    for (const Value& v : edges) {
      if (!v.is_tensor || (v.input < 0 && v.node < 0)) continue;
      const std::string label = v.dtype + shapeText(v.sizes);
      if (v.input >= 0) {
        if (inputs_declared.insert(v.input).second)
          out << "  in" << v.input << " [shape=ellipse, label=\"%in" << v.input << "\"];\n";
        out << "  in" << v.input << " -> n" << node.id << " [label=\"" << label << "\"];\n";
      } else {
        out << "  n" << v.node << " -> n" << node.id << " [label=\"" << label << "\"];\n";
      }
    }
  }
  out << "}\n";
  return out.str();
}

void GraphRecorder::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  nodes_.clear();
  keep_alive_.clear();
  producer_of_.clear();
  next_input_ = 0;
}

// ---------------------------------------------------------------- RankLogger

RankLogger::RankLogger(const std::string& path, Options options)
    : path_(path), options_(options), out_(path, std::ios::out | std::ios::trunc), start_(std::chrono::steady_clock::now()) {
  DK_CHECK(out_.good(), "RankLogger: cannot open '", path, "' for writing");
}

std::shared_ptr<RankLogger> RankLogger::forRank(const std::string& prefix, int rank, Options options) {
  return std::make_shared<RankLogger>(prefix + ".rank" + std::to_string(rank) + ".log", options);
}

namespace {
std::mutex g_annotators_mutex;
std::map<std::string, RankLogger::Annotator, std::less<>> g_annotators;  // guarded by g_annotators_mutex
}  // namespace

void RankLogger::setAnnotator(const std::string& op_namespace, Annotator annotator) {
  std::lock_guard<std::mutex> lock(g_annotators_mutex);
  g_annotators[op_namespace] = std::move(annotator);
}

void RankLogger::dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  size_t n = argumentCount(op, *stack);
  std::ostringstream line;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    line << line_++ << " " << op.operator_name() << "(";
  }
  for (size_t i = stack->size() - n, k = 0; i < stack->size(); ++i, ++k) {
    line << (k ? ", " : "") << describeIValueShape((*stack)[i]);
  }
  line << ")";
  Annotator annotator;
  {
    const std::string& name = op.operator_name().name;
    std::string_view ns = std::string_view(name).substr(0, name.find("::"));
    std::lock_guard<std::mutex> lock(g_annotators_mutex);
    auto it = g_annotators.find(ns);
    if (it != g_annotators.end()) annotator = it->second;
  }
  if (annotator) {
    std::string note = annotator(op, *stack, stack->size() - n);
    if (!note.empty()) line << " [" << note << "]";
  }
  if (options_.timestamps) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_);
    line << " @" << us.count() << "us";
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    out_ << line.str() << "\n";
  }
  op.callBoxed(stack);
}

void RankLogger::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  out_.flush();
}

// ---------------------------------------------------------------- AllocationTracker

namespace {
std::mutex g_trackers_mutex;
std::set<AllocationTracker*> g_trackers;  // guarded by g_trackers_mutex
thread_local std::vector<std::string> tls_allocation_labels;

// Installed as the tensor release hook while some tracker is alive (Note [Tensor release observers]).
void notifyTrackersOfRelease(const TensorImpl* impl) {
  std::lock_guard<std::mutex> lock(g_trackers_mutex);
  for (AllocationTracker* t : g_trackers) t->released(impl);
}
}  // namespace

AllocationTracker::Scope::Scope(std::string label) { tls_allocation_labels.push_back(std::move(label)); }
AllocationTracker::Scope::~Scope() { tls_allocation_labels.pop_back(); }

AllocationTracker::AllocationTracker() {
  std::lock_guard<std::mutex> lock(g_trackers_mutex);
  g_trackers.insert(this);
  if (g_trackers.size() == 1) detail::setTensorReleaseHook(&notifyTrackersOfRelease);
}

AllocationTracker::~AllocationTracker() {
  std::lock_guard<std::mutex> lock(g_trackers_mutex);
  g_trackers.erase(this);
  if (g_trackers.empty()) detail::setTensorReleaseHook(nullptr);
}

void AllocationTracker::dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  size_t n = argumentCount(op, *stack);
  std::set<const void*> input_storage;
  auto note_input = [&](const IValue& v) {
    if (v.isTensor()) {
      Tensor t = v.toTensor();
      if (t.defined() && t.has_storage()) input_storage.insert(t.storage().data());
      input_storage.insert(t.unsafeGetTensorImpl());
    }
  };
  for (size_t i = stack->size() - n; i < stack->size(); ++i) {
    const IValue& v = (*stack)[i];
    if (v.isList()) {
      for (const IValue& e : v.toListElements()) note_input(e);
    } else {
      note_input(v);
    }
  }
  size_t below = stack->size() - n;
  op.callBoxed(stack);
  std::string label = tls_allocation_labels.empty() ? "" : tls_allocation_labels.back();
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t call = calls_++;
  auto record = [&](const IValue& v) {
    if (!v.isTensor()) return;
    Tensor t = v.toTensor();
    if (!t.defined() || input_storage.count(t.unsafeGetTensorImpl())) return;
    if (t.has_storage() && input_storage.count(t.storage().data())) return;  // a view or in-place result
    Allocation a{op.operator_name().toString(), call, label, t.sizes(), std::string(toString(t.dtype())),
                 static_cast<int64_t>(t.nbytes())};
    live_[t.unsafeGetTensorImpl()] = {order_++, std::move(a)};
  };
  for (size_t i = below; i < stack->size(); ++i) {
    const IValue& v = (*stack)[i];
    if (v.isList()) {
      for (const IValue& e : v.toListElements()) record(e);
    } else {
      record(v);
    }
  }
}

void AllocationTracker::released(const TensorImpl* impl) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_.erase(impl);
}

std::vector<AllocationTracker::Allocation> AllocationTracker::alive() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<uint64_t, Allocation>> ordered;
  for (const auto& [impl, entry] : live_) ordered.push_back(entry);
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Allocation> out;
  for (auto& [order, a] : ordered) out.push_back(std::move(a));
  return out;
}

int64_t AllocationTracker::aliveBytes() const {
  int64_t total = 0;
  for (const Allocation& a : alive()) total += a.nbytes;
  return total;
}

std::string AllocationTracker::report() const {
  std::ostringstream out;
  for (const Allocation& a : alive()) {
    out << a.op << " (call " << a.call;
    if (!a.label.empty()) out << ", in '" << a.label << "'";
    out << "): " << a.dtype << shapeText(a.sizes) << ", " << a.nbytes << " bytes\n";
  }
  return out.str();
}

}  // namespace dk
