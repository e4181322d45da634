// dk/dispatch/dispatch_mode.h: dispatch modes, the boxed interception of every operator (the Python
// key), like PyTorch's TorchDispatchMode.
//
// Note [Dispatch modes]
// Each thread has a stack of modes. While it is non-empty the Python key is in the thread's
// included set, so every call lands in the Python slot (below autograd, above the backends).
// That slot's kernel (a default backend fallback) pops the top mode for as long as its handler
// runs and calls it boxed. Inside the handler, op.callBoxed(stack) reaches the next mode, or
// the real kernels once the stack is empty; op.redispatchBoxed(ks, stack) with the key set the
// handler was given skips the remaining modes. Nested modes compose in stack order; a handler
// that throws leaves the stack as it was.
#pragma once

#include <memory>
#include <vector>

#include "dk/dispatch/dispatcher.h"

namespace dk {

class DispatchMode {
 public:
  virtual ~DispatchMode();
  // `ks` is the call's key set without the Python key. The handler must leave the operator's
  // returns on `stack` in place of its arguments, usually by calling op.callBoxed(stack).
  virtual void dispatch(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) = 0;
};

// Pushes a mode onto this thread's stack; pops it on scope exit.
class DispatchModeGuard {
 public:
  explicit DispatchModeGuard(std::shared_ptr<DispatchMode> mode);
  ~DispatchModeGuard();
  DispatchModeGuard(const DispatchModeGuard&) = delete;
  DispatchModeGuard& operator=(const DispatchModeGuard&) = delete;

 private:
  std::shared_ptr<DispatchMode> mode_;
};

// This thread's modes, bottom first.
std::vector<std::shared_ptr<DispatchMode>> currentDispatchModes();

namespace detail {
// The Python slot's kernel (Note [Dispatch modes]); registered by the dispatcher at startup.
void pythonDispatchModeFallback(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack);
}  // namespace detail

}  // namespace dk
