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

GraphRecorder::Value GraphRecorder::describe(const IValue& v) {
  Value value;
  if (v.isTensor()) {
    Tensor t = v.toTensor();
    value.is_tensor = true;
    if (t.defined()) {
      value.sizes = t.sizes();
      value.dtype = std::string(toString(t.dtype()));
    }
    auto it = producer_of_.find(t.unsafeGetTensorImpl());
    if (it != producer_of_.end()) {
      value.producer = it->second;
    } else {
      value.producer = "%in" + std::to_string(next_input_++);
      producer_of_[t.unsafeGetTensorImpl()] = value.producer;
      keep_alive_.push_back(v);
    }
    return value;
  }
  std::ostringstream out;
  out << v;
  value.producer = out.str();
  return value;
}

void GraphRecorder::dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  size_t n = argumentCount(op, *stack);
  Node node;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    node.id = static_cast<int>(nodes_.size());
    node.op = op.operator_name().name;
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
        Tensor t = out.toTensor();
        value.is_tensor = true;
        if (t.defined()) {
          value.sizes = t.sizes();
          value.dtype = std::string(toString(t.dtype()));
        }
        // Appended piece by piece: "literal" + std::string trips GCC 12's -Wrestrict at -O3.
        value.producer = "%";
        value.producer += std::to_string(node.id);
        if (output_index) {
          value.producer += '.';
          value.producer += std::to_string(output_index);
        }
        producer_of_[t.unsafeGetTensorImpl()] = value.producer;
        keep_alive_.push_back(out);
      } else {
        std::ostringstream text;
        text << out;
        value.producer = text.str();
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
  if (!v.is_tensor) return v.producer;
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
  std::map<std::string, bool> inputs_declared;
  for (const Node& node : nodes()) {
    out << "  n" << node.id << " [label=\"%" << node.id << " " << node.op << "\"];\n";
    for (const Value& v : node.inputs) {
      if (!v.is_tensor) continue;
      std::string producer = v.producer.substr(1);  // drop '%'
      std::string label = v.dtype + shapeText(v.sizes);
      if (producer.rfind("in", 0) == 0) {
        if (!inputs_declared[producer]) {
          out << "  " << producer << " [shape=ellipse, label=\"%" << producer << "\"];\n";
          inputs_declared[producer] = true;
        }
        out << "  " << producer << " -> n" << node.id << " [label=\"" << label << "\"];\n";
      } else {
        out << "  n" << producer.substr(0, producer.find('.')) << " -> n" << node.id << " [label=\"" << label
            << "\"];\n";
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
