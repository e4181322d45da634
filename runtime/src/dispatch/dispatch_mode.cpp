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
thread_local std::vector<ModeEntry> tls_modes;
// The modes popped while their handler runs, innermost first: a list threaded through the
// fallback's stack frames (no allocation per call). A guard destroyed meanwhile (the handler
// ended its own mode's scope) clears its entry here, so the mode is not put back.
struct RunningMode {
  ModeEntry entry;
  RunningMode* outer;
};
constinit thread_local RunningMode* tls_running = nullptr;

// The Python key is included exactly while this thread has modes.
void syncPythonKey() {
  auto& included = detail::tls_dispatch_keys.included;
  included = tls_modes.empty() ? included.remove(DispatchKey::Python) : included.add(DispatchKey::Python);
}
}  // namespace

DispatchMode::~DispatchMode() = default;

DispatchModeGuard::DispatchModeGuard(std::shared_ptr<DispatchMode> mode) : mode_(std::move(mode)) {
  DK_CHECK(mode_ != nullptr, "DispatchModeGuard needs a mode, got null");
  tls_modes.push_back({mode_, this});
  syncPythonKey();
}

DispatchModeGuard::~DispatchModeGuard() {
  // Guards are scoped, so this guard's entry is normally on top; it is found wherever it is.
  auto it = std::find_if(tls_modes.rbegin(), tls_modes.rend(), [&](const ModeEntry& e) { return e.guard == this; });
  if (it != tls_modes.rend()) {
    tls_modes.erase(std::next(it).base());
  } else {
    for (RunningMode* running = tls_running; running != nullptr; running = running->outer)
      if (running->entry.guard == this) running->entry.guard = nullptr;
  }
  syncPythonKey();
}

std::vector<std::shared_ptr<DispatchMode>> currentDispatchModes() {
  std::vector<std::shared_ptr<DispatchMode>> out;
  out.reserve(tls_modes.size());
  for (const ModeEntry& e : tls_modes) out.push_back(e.mode);
  return out;
}

namespace detail {
void pythonDispatchModeFallback(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  DispatchKeySet below = ks.remove(DispatchKey::Python);
  if (tls_modes.empty()) {
    // The Python key was included by hand, with no mode: nothing to intercept.
    op.redispatchBoxed(below, stack);
    return;
  }
  // Pop the top mode while its handler runs; put it back however the handler ends, unless
  // the handler destroyed the mode's guard.
  struct Restore : RunningMode {
    explicit Restore(ModeEntry e) : RunningMode{std::move(e), tls_running} { tls_running = this; }
    ~Restore() {
      tls_running = outer;
      if (entry.guard != nullptr) tls_modes.push_back(std::move(entry));
      syncPythonKey();
    }
  } restore{std::move(tls_modes.back())};
  tls_modes.pop_back();
  syncPythonKey();
  // The entry holds a reference, so the mode stays alive even if its guard goes meanwhile.
  restore.entry.mode->dispatch(op, below, stack);
}
}  // namespace detail

}  // namespace dk
