// Observers, the dispatch trace, and the slow-path flag that gates both.
#include "dk/dispatch/observer.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "dk/dispatch/dispatcher.h"

namespace dk {

namespace detail {
std::atomic<bool> dispatch_slow_path_enabled{false};
}  // namespace detail

std::string_view toString(detail::CallKind kind) {
  switch (kind) {
    case detail::CallKind::Call: return "call";
    case detail::CallKind::Redispatch: return "redispatch";
    case detail::CallKind::CallBoxed: return "callBoxed";
    case detail::CallKind::RedispatchBoxed: return "redispatchBoxed";
  }
  return "call";
}

namespace {
struct RegisteredObserver {
  ObserverHandle handle;
  Observer observer;
  bool thread_local_only;
  std::thread::id owner;
};
}  // namespace

struct detail::CallObserverScope::Snapshot {
  std::vector<RegisteredObserver> observers;
};

namespace {
std::atomic<bool> g_trace_enabled{false};
std::mutex g_observer_mutex;
std::shared_ptr<const detail::CallObserverScope::Snapshot> g_snapshot;  // guarded by g_observer_mutex
ObserverHandle g_next_handle = 1;                                         // guarded by g_observer_mutex
std::atomic<uint64_t> g_sequence_nr{0};
thread_local int tls_depth = 0;

void refreshSlowPathFlag() {
  bool observers = g_snapshot && !g_snapshot->observers.empty();
  Dispatcher::singleton().setSlowPathEnabled(g_trace_enabled.load() || observers);
}

const bool g_trace_from_env = [] {
  const char* env = std::getenv("DK_SHOW_DISPATCH_TRACE");
  bool on = env != nullptr && std::string_view(env) != "" && std::string_view(env) != "0";
  if (on) setDispatchTraceEnabled(true);
  return on;
}();

ObserverHandle addObserver(Observer observer, bool thread_local_only) {
  std::lock_guard<std::mutex> lock(g_observer_mutex);
  auto next = std::make_shared<detail::CallObserverScope::Snapshot>();
  if (g_snapshot) next->observers = g_snapshot->observers;
  ObserverHandle handle = g_next_handle++;
  next->observers.push_back({handle, std::move(observer), thread_local_only, std::this_thread::get_id()});
  g_snapshot = std::move(next);
  refreshSlowPathFlag();
  return handle;
}
}  // namespace

void setDispatchTraceEnabled(bool enabled) {
  std::lock_guard<std::mutex> lock(g_observer_mutex);
  g_trace_enabled.store(enabled);
  refreshSlowPathFlag();
}
bool isDispatchTraceEnabled() { return g_trace_enabled.load(); }

ObserverHandle addGlobalObserver(Observer observer) { return addObserver(std::move(observer), false); }
ObserverHandle addThreadLocalObserver(Observer observer) { return addObserver(std::move(observer), true); }

void removeObserver(ObserverHandle handle) {
  std::lock_guard<std::mutex> lock(g_observer_mutex);
  if (!g_snapshot) return;
  auto next = std::make_shared<detail::CallObserverScope::Snapshot>(*g_snapshot);
  auto& list = next->observers;
  list.erase(std::remove_if(list.begin(), list.end(), [&](const auto& o) { return o.handle == handle; }), list.end());
  g_snapshot = std::move(next);
  refreshSlowPathFlag();
}

namespace detail {

CallObserverScope::CallObserverScope(const OperatorHandle& op, DispatchKeySet ks, CallKind kind)
    : op_(op), ks_(ks), kind_(kind), trace_(g_trace_enabled.load(std::memory_order_relaxed)) {
  {
    std::lock_guard<std::mutex> lock(g_observer_mutex);
    observers_ = g_snapshot;
  }
  if (observers_) {
    const auto me = std::this_thread::get_id();
    for (const auto& o : observers_->observers) {
      if (o.thread_local_only && o.owner != me) continue;
      wants_inputs_ |= o.observer.needs_inputs;
      wants_outputs_ |= o.observer.needs_outputs;
    }
  }
}

void CallObserverScope::enter(const Stack* inputs) {
  entered_ = true;
  depth_ = tls_depth++;
  if (trace_) {
    std::ostringstream line;
    line << std::string(static_cast<size_t>(depth_) * 2, ' ') << "[" << toString(kind_) << "] op=["
         << op_.operator_name() << "], key=[" << toString(ks_.highestPriorityTypeId()) << "]\n";
    std::cerr << line.str();
  }
  if (!observers_ || observers_->observers.empty()) return;
  sequence_nr_ = g_sequence_nr.fetch_add(1, std::memory_order_relaxed);
  if (inputs && wants_inputs_) {
    inputs_ = *inputs;
    has_inputs_ = true;
  }
  const auto me = std::this_thread::get_id();
  ObservedCall call{op_, ks_, kind_, sequence_nr_, depth_, has_inputs_ ? &inputs_ : nullptr, nullptr, false};
  for (const auto& o : observers_->observers) {
    if (o.thread_local_only && o.owner != me) continue;
    if (o.observer.on_enter) o.observer.on_enter(call);
  }
}

void CallObserverScope::returned(const Stack* outputs) {
  returned_ = true;
  outputs_ = outputs;
  // Exit callbacks run here, while `outputs` is alive.
  if (observers_ && !observers_->observers.empty()) {
    const auto me = std::this_thread::get_id();
    ObservedCall call{op_, ks_, kind_, sequence_nr_, depth_, has_inputs_ ? &inputs_ : nullptr, outputs, false};
    for (const auto& o : observers_->observers) {
      if (o.thread_local_only && o.owner != me) continue;
      if (o.observer.on_exit) o.observer.on_exit(call);
    }
  }
}

CallObserverScope::~CallObserverScope() {
  if (!entered_) return;
  --tls_depth;
  if (returned_ || !observers_ || observers_->observers.empty()) return;
  // The kernel raised: exit callbacks still run, marked as failed.
  const auto me = std::this_thread::get_id();
  ObservedCall call{op_, ks_, kind_, sequence_nr_, depth_, has_inputs_ ? &inputs_ : nullptr, nullptr, true};
  for (const auto& o : observers_->observers) {
    if (o.thread_local_only && o.owner != me) continue;
    if (!o.observer.on_exit) continue;
    try {
      o.observer.on_exit(call);
    } catch (...) {
      // An observer must not replace the kernel's exception.
    }
  }
}

}  // namespace detail
}  // namespace dk
