// Dispatch modes: the per-thread mode stack and the Python slot's kernel.
#include "dk/dispatch_mode.h"

#include <algorithm>

namespace dk {

namespace {
thread_local std::vector<std::shared_ptr<DispatchMode>> tls_modes;

// The Python key is included exactly while this thread has modes.
void syncPythonKey() {
  auto& included = detail::tls_dispatch_keys.included;
  included = tls_modes.empty() ? included.remove(DispatchKey::Python) : included.add(DispatchKey::Python);
}
}  // namespace

DispatchMode::~DispatchMode() = default;

DispatchModeGuard::DispatchModeGuard(std::shared_ptr<DispatchMode> mode) : mode_(std::move(mode)) {
  DK_CHECK(mode_ != nullptr, "DispatchModeGuard needs a mode, got null");
  tls_modes.push_back(mode_);
  syncPythonKey();
}

DispatchModeGuard::~DispatchModeGuard() {
  // Guards are scoped, so this mode is normally on top; remove its last occurrence anyway.
  auto it = std::find(tls_modes.rbegin(), tls_modes.rend(), mode_);
  if (it != tls_modes.rend()) tls_modes.erase(std::next(it).base());
  syncPythonKey();
}

std::vector<std::shared_ptr<DispatchMode>> currentDispatchModes() { return tls_modes; }

namespace detail {
void pythonDispatchModeFallback(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  DispatchKeySet below = ks.remove(DispatchKey::Python);
  if (tls_modes.empty()) {
    // The Python key was included by hand, with no mode: nothing to intercept.
    op.redispatchBoxed(below, stack);
    return;
  }
  // Pop the top mode while its handler runs; put it back however the handler ends.
  struct Restore {
    std::shared_ptr<DispatchMode> mode;
    ~Restore() {
      tls_modes.push_back(std::move(mode));
      syncPythonKey();
    }
  } restore{tls_modes.back()};
  tls_modes.pop_back();
  syncPythonKey();
  restore.mode->dispatch(op, below, stack);
}
}  // namespace detail

}  // namespace dk
