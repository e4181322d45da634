// The scoped operator profiler (dk/layers/profiler.h).
#include "dk/layers/profiler.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <thread>

#include "dk/dispatch/dispatcher.h"

namespace dk::profiler {

struct Profiler::State {
  std::mutex mutex;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int64_t stop_ns = -1;
  std::map<std::thread::id, uint32_t> threads;
  std::map<std::pair<uint32_t, uint64_t>, int64_t> open;  // (thread, sequence_nr) -> start
  std::vector<Event> events;

  int64_t now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  }
  uint32_t threadNumber() {  // caller holds mutex
    auto [it, inserted] = threads.emplace(std::this_thread::get_id(), static_cast<uint32_t>(threads.size()));
    return it->second;
  }
};

namespace {
// The profilers recording now, for RecordFunction (Profiler's constructor adds, stop() removes).
std::atomic<int> g_running{0};
std::mutex g_running_mutex;
std::vector<std::weak_ptr<Profiler::State>>& runningStates() {
  static std::vector<std::weak_ptr<Profiler::State>> states;  // guarded by g_running_mutex
  return states;
}
}  // namespace

struct RecordFunction::Open {
  std::shared_ptr<Profiler::State> state;
  int64_t start_ns;
};

RecordFunction::RecordFunction(std::string name, std::string kind) {
  if (g_running.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(g_running_mutex);
  for (const auto& weak : runningStates()) {
    if (auto state = weak.lock()) open_.push_back(Open{state, state->now()});
  }
  name_ = std::move(name);
  kind_ = std::move(kind);
}

RecordFunction::~RecordFunction() {
  for (Open& o : open_) {
    int64_t end = o.state->now();
    std::lock_guard<std::mutex> lock(o.state->mutex);
    if (o.state->stop_ns >= 0) continue;
    o.state->events.push_back(Event{name_, "", kind_, 0, 0, o.state->threadNumber(), o.start_ns, end - o.start_ns});
  }
}

Profiler::Profiler() : state_(std::make_shared<State>()) {
  {
    std::lock_guard<std::mutex> lock(g_running_mutex);
    runningStates().push_back(state_);
    g_running.fetch_add(1);
  }
  Observer observer;
  observer.on_enter = [state = state_](const ObservedCall& call) {
    int64_t t = state->now();
    std::lock_guard<std::mutex> lock(state->mutex);
    if (state->stop_ns >= 0) return;
    state->open[{state->threadNumber(), call.sequence_nr}] = t;
  };
  observer.on_exit = [state = state_](const ObservedCall& call) {
    int64_t t = state->now();
    std::lock_guard<std::mutex> lock(state->mutex);
    auto it = state->open.find({state->threadNumber(), call.sequence_nr});
    if (it == state->open.end()) return;  // entered before the profiler started
    state->events.push_back(Event{call.op.operator_name().toString(),
                                  std::string(toString(call.key_set.highestPriorityTypeId())),
                                  std::string(toString(call.kind)), call.sequence_nr, call.depth,
                                  it->first.first, it->second, t - it->second});
    state->open.erase(it);
  };
  observer_ = std::make_unique<ScopedObserver>(std::move(observer));
}

Profiler::~Profiler() { stop(); }

void Profiler::stop() {
  if (!observer_) return;
  observer_.reset();
  {
    std::lock_guard<std::mutex> lock(g_running_mutex);
    auto& states = runningStates();
    states.erase(std::remove_if(states.begin(), states.end(),
                                [&](const std::weak_ptr<State>& w) { return w.expired() || w.lock() == state_; }),
                 states.end());
    g_running.fetch_sub(1);
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->stop_ns = state_->now();
}

int64_t Profiler::now() const { return state_->now(); }

std::vector<Event> Profiler::events() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->events;
}

std::map<std::string, OperatorStats> Profiler::stats() const {
  std::map<std::string, OperatorStats> out;
  for (const Event& e : events()) {
    auto& s = out[e.name];
    ++s.calls;
    s.total_ns += e.duration_ns;
  }
  return out;
}

std::string Profiler::table() const {
  auto per_op = stats();
  std::vector<std::pair<std::string, OperatorStats>> rows(per_op.begin(), per_op.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total_ns != b.second.total_ns ? a.second.total_ns > b.second.total_ns : a.first < b.first;
  });
  int64_t wall_ns;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    wall_ns = state_->stop_ns >= 0 ? state_->stop_ns : state_->now();
  }
  size_t width = 8;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  std::ostringstream out;
  out << std::left << std::setw(static_cast<int>(width)) << "Operator" << std::right << std::setw(10) << "Calls"
      << std::setw(14) << "Total (us)" << std::setw(12) << "Avg (us)" << std::setw(10) << "Share" << "\n";
  out << std::string(width + 46, '-') << "\n";
  out << std::fixed;
  for (const auto& [name, s] : rows) {
    double total_us = static_cast<double>(s.total_ns) / 1000.0;
    double share = wall_ns > 0 ? 100.0 * static_cast<double>(s.total_ns) / static_cast<double>(wall_ns) : 0.0;
    out << std::left << std::setw(static_cast<int>(width)) << name << std::right << std::setw(10) << s.calls
        << std::setw(14) << std::setprecision(1) << total_us << std::setw(12) << std::setprecision(2)
        << total_us / static_cast<double>(s.calls) << std::setw(9) << std::setprecision(1) << share << "%\n";
  }
  return out.str();
}

namespace {
std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string Profiler::chromeTrace() const {
  std::ostringstream out;
  out << "{\"traceEvents\": [\n";
  auto all = events();
  // Parents before children at equal start times, so viewers nest them.
  std::stable_sort(all.begin(), all.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.depth < b.depth;
  });
  out << std::fixed << std::setprecision(3);
  for (size_t i = 0; i < all.size(); ++i) {
    const Event& e = all[i];
    out << "  {\"name\": \"" << jsonEscape(e.name) << "\", \"cat\": \"operator\", \"ph\": \"X\", \"ts\": "
        << static_cast<double>(e.start_ns) / 1000.0 << ", \"dur\": " << static_cast<double>(e.duration_ns) / 1000.0
        << ", \"pid\": 0, \"tid\": " << e.thread << ", \"args\": {\"key\": \"" << e.key << "\", \"kind\": \""
        << e.kind << "\", \"seq\": " << e.sequence_nr << "}}" << (i + 1 < all.size() ? "," : "") << "\n";
  }
  out << "], \"displayTimeUnit\": \"ns\"}\n";
  return out.str();
}

void Profiler::writeChromeTrace(const std::string& path) const {
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  DK_CHECK(out.good(), "profiler: cannot open '", path, "' for writing");
  out << chromeTrace();
}

}  // namespace dk::profiler
