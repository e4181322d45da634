// dk/dispatch/observer.h: callbacks at operator entry and exit, for profilers, loggers and tests.
//
// Note [Observers]
// An observer is a pair of callbacks run around every call, redispatch and boxed call,
// on every thread (global observers) or on the thread that added it (thread-local ones).
// With none registered, a call pays only the slow-path branch of Note [Dispatch slow path].
// An observer that asks for inputs or outputs receives them boxed; unboxed calls box them
// only then. Adding and removing observers is thread-safe.
#pragma once

#include <cstdint>
#include <functional>

#include "dk/core/dispatch_key_set.h"
#include "dk/dispatch/ivalue.h"

namespace dk {

class OperatorHandle;

namespace detail {
enum class CallKind : uint8_t { Call, Redispatch, CallBoxed, RedispatchBoxed };
}  // namespace detail
std::string_view toString(detail::CallKind kind);  // "call", "redispatch", "callBoxed", "redispatchBoxed"

// What an observer is told about one call.
struct ObservedCall {
  const OperatorHandle& op;
  DispatchKeySet key_set;     // the set the slot was chosen by
  detail::CallKind kind;
  uint64_t sequence_nr;       // process-wide, increasing, one per observed call
  int depth;                  // nesting depth on this thread: 0 for an outermost call
  const Stack* inputs;        // boxed arguments, when some observer asked for them (else null)
  const Stack* outputs;       // boxed returns at exit, when asked for and the call returned
  bool threw;                 // at exit: the kernel raised
};

struct Observer {
  std::function<void(const ObservedCall&)> on_enter;  // may be empty
  std::function<void(const ObservedCall&)> on_exit;   // may be empty
  bool needs_inputs = false;
  bool needs_outputs = false;
};

using ObserverHandle = uint64_t;
ObserverHandle addGlobalObserver(Observer observer);
ObserverHandle addThreadLocalObserver(Observer observer);  // only calls made on this thread
void removeObserver(ObserverHandle handle);                 // either kind; from any thread

// Removes its observer when destroyed.
class ScopedObserver {
 public:
  ScopedObserver(Observer observer, bool thread_local_only = false)
      : handle_(thread_local_only ? addThreadLocalObserver(std::move(observer)) : addGlobalObserver(std::move(observer))) {}
  ~ScopedObserver() { removeObserver(handle_); }
  ScopedObserver(const ScopedObserver&) = delete;
  ScopedObserver& operator=(const ScopedObserver&) = delete;

 private:
  ObserverHandle handle_;
};

namespace detail {
// Runs the trace and the observers around one call (the dispatcher's slow path).
class CallObserverScope {
 public:
  CallObserverScope(const OperatorHandle& op, DispatchKeySet ks, CallKind kind);
  ~CallObserverScope();
  CallObserverScope(const CallObserverScope&) = delete;
  CallObserverScope& operator=(const CallObserverScope&) = delete;

  struct Snapshot;  // the registered observers at one moment (defined in observer.cpp)

  bool wantsInputs() const { return wants_inputs_; }
  bool wantsOutputs() const { return wants_outputs_; }
  // Call once, after setting inputs (if wanted), right before the kernel runs.
  void enter(const Stack* inputs);
  // Call when the kernel returned (outputs may be null when not wanted).
  void returned(const Stack* outputs);

 private:
  const OperatorHandle& op_;
  DispatchKeySet ks_;
  CallKind kind_;
  bool trace_;
  bool wants_inputs_ = false;
  bool wants_outputs_ = false;
  bool entered_ = false;
  bool returned_ = false;
  uint64_t sequence_nr_ = 0;
  int depth_ = 0;
  Stack inputs_;
  bool has_inputs_ = false;
  const Stack* outputs_ = nullptr;
  std::shared_ptr<const Snapshot> observers_;
};
}  // namespace detail

}  // namespace dk
