// Dispatch modes: the per-thread mode stack and the Python slot's kernel.
#include "dk/dispatch/dispatch_mode.h"

#include <algorithm>

namespace dk {

namespace {
// One pushed mode and the guard that owns its place on the stack.
struct ModeEntry {
  std::shared_ptr<DispatchMode> mode;
  const DispatchModeGuard* guard;
};
// This thread's pushed modes, outermost first. Allocated by the first guard and freed when the
// stack is empty again, so the thread-local is a plain pointer: a thread_local with a destructor
// needs a guard variable that the compiler places in the general TLS model, a __tls_get_addr
// call per access. Both thread-locals here use the initial-exec model, as tls_dispatch_keys
// does: an access is a load at a fixed offset from the thread pointer. (The two cost a
// forwarding mode's call about 130 instructions.)
constinit thread_local std::vector<ModeEntry>* tls_modes __attribute__((tls_model("initial-exec"))) = nullptr;

std::vector<ModeEntry>& modeStack() {
  if (tls_modes == nullptr) tls_modes = new std::vector<ModeEntry>();
  return *tls_modes;
}
bool noModes() { return tls_modes == nullptr || tls_modes->empty(); }
void freeModeStackIfEmpty() {
  if (tls_modes != nullptr && tls_modes->empty()) {
    delete tls_modes;
    tls_modes = nullptr;
  }
}

// The modes popped while their handler runs, innermost first: a list threaded through the
// fallback's stack frames (no allocation per call). A guard destroyed meanwhile (the handler
// ended its own mode's scope) clears its entry here, so the mode is not put back.
struct RunningMode {
  ModeEntry entry;
  RunningMode* outer;
};
constinit thread_local RunningMode* tls_running __attribute__((tls_model("initial-exec"))) = nullptr;

// The Python key is included exactly while this thread has modes.
void syncPythonKey() {
  auto& included = detail::tls_dispatch_keys.included;
  included = noModes() ? included.remove(DispatchKey::Python) : included.add(DispatchKey::Python);
}
}  // namespace

DispatchMode::~DispatchMode() = default;

DispatchModeGuard::DispatchModeGuard(std::shared_ptr<DispatchMode> mode) : mode_(std::move(mode)) {
  DK_CHECK(mode_ != nullptr, "DispatchModeGuard needs a mode, got null");
  modeStack().push_back({mode_, this});
  syncPythonKey();
}

DispatchModeGuard::~DispatchModeGuard() {
  // Guards are scoped, so this guard's entry is normally on top; it is found wherever it is.
  std::vector<ModeEntry>& modes = modeStack();
  auto it = std::find_if(modes.rbegin(), modes.rend(), [&](const ModeEntry& e) { return e.guard == this; });
  if (it != modes.rend()) {
    modes.erase(std::next(it).base());
  } else {
    for (RunningMode* running = tls_running; running != nullptr; running = running->outer)
      if (running->entry.guard == this) running->entry.guard = nullptr;
  }
  freeModeStackIfEmpty();
  syncPythonKey();
}

std::vector<std::shared_ptr<DispatchMode>> currentDispatchModes() {
  std::vector<std::shared_ptr<DispatchMode>> out;
  if (noModes()) return out;
  out.reserve(tls_modes->size());
  for (const ModeEntry& e : *tls_modes) out.push_back(e.mode);
  return out;
}

namespace detail {
void pythonDispatchModeFallback(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  DispatchKeySet below = ks.remove(DispatchKey::Python);
  if (noModes()) {
    // A tensor with no storage whose own key set holds the Python key (a fake tensor, Note
    // [Fake tensors]) exists only for a mode to run: a kernel would find no data.
    const size_t n = op.schema().arguments().size();
    for (size_t i = stack->size() - n; i < stack->size(); ++i) {
      const IValue& v = (*stack)[i];
      DK_CHECK(!v.isTensor() || !v.toTensor().key_set().has(DispatchKey::Python) ||
                   v.toTensor().unsafeGetTensorImpl()->has_storage(),
               op.operator_name(), ": argument ", i - (stack->size() - n), " is a fake tensor (it has no data) and no "
               "dispatch mode is running; call it under FakeTensorMode, or on real tensors");
    }
    // Otherwise the Python key was included by hand, with no mode: nothing to intercept.
    op.redispatchBoxed(below, stack);
    return;
  }
  // Pop the top mode while its handler runs; put it back however the handler ends, unless
  // the handler destroyed the mode's guard.
  struct Restore : RunningMode {
    explicit Restore(ModeEntry e) : RunningMode{std::move(e), tls_running} { tls_running = this; }
    ~Restore() {
      tls_running = outer;
      if (entry.guard != nullptr) modeStack().push_back(std::move(entry));
      else freeModeStackIfEmpty();
      syncPythonKey();
    }
  } restore{std::move(tls_modes->back())};
  tls_modes->pop_back();
  syncPythonKey();
  // The entry holds a reference, so the mode stays alive even if its guard goes meanwhile.
  restore.entry.mode->dispatch(op, below, stack);
}
}  // namespace detail

}  // namespace dk
