// dk/layers/profiler.h: a scoped operator profiler built on observers (Note [Observers]).
//
//   dk::profiler::Profiler prof;          // starts recording every operator call
//   ... run the model ...
//   prof.stop();
//   std::cout << prof.table();            // calls, total and average time, share per operator
//   prof.writeChromeTrace("trace.json");  // open in Perfetto or chrome://tracing
//
// Times are inclusive: an operator's time includes the operators it calls (a composite, or
// an autograd kernel and its redispatch), which appear as nested ranges in the trace.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dk/dispatch/observer.h"

namespace dk::profiler {

struct Event {
  std::string name;        // "dk::add.Tensor"
  std::string key;         // the runtime key the call used, e.g. "AutogradCPU"
  std::string kind;        // "call", "redispatch", ...
  uint64_t sequence_nr;
  int depth;
  uint32_t thread;         // small per-profiler thread number
  int64_t start_ns;        // since the profiler started
  int64_t duration_ns;
};

struct OperatorStats {
  int64_t calls = 0;
  int64_t total_ns = 0;
};

// Marks a range of the current thread in the trace of every running profiler, as PyTorch's
// record_function does: { dk::profiler::RecordFunction range("my step"); ... }. It appears as an
// event of kind `kind` ("user" by default; the distributed worker's collectives are
// "communication"). With no profiler running it costs one atomic load.
class RecordFunction {
 public:
  explicit RecordFunction(std::string name, std::string kind = "user");
  ~RecordFunction();
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  struct Open;
  std::string name_;
  std::string kind_;
  std::vector<Open> open_;  // one per profiler running when the range began
};

class Profiler {
 public:
  Profiler();  // starts recording (a global observer: every thread)
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  void stop();  // stops recording; idempotent
  std::vector<Event> events() const;  // completed calls, in order of completion
  std::map<std::string, OperatorStats> stats() const;  // per operator overload
  // A table sorted by total time: Operator, Calls, Total (us), Avg (us), Share (% of wall time
  // between start and stop, inclusive times so nested calls add up to more than 100%).
  std::string table() const;
  // Chrome trace event format ("X" complete events, microseconds).
  std::string chromeTrace() const;
  void writeChromeTrace(const std::string& path) const;

  // What the observer callbacks and RecordFunction record into, shared with them so that a
  // callback still running on another thread when the profiler is destroyed finds it alive.
  struct State;

 private:
  int64_t now() const;

  std::shared_ptr<State> state_;
  std::unique_ptr<ScopedObserver> observer_;
};

}  // namespace dk::profiler
