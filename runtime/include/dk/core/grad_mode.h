// dk/core/grad_mode.h: grad mode and inference mode, the per-thread switches autograd reads.
// Both are thread-local state beside the key sets of dk/core/local_dispatch_key_set.h;
// InferenceMode also changes those sets.
#pragma once

#include "dk/core/local_dispatch_key_set.h"

namespace dk {

// Grad mode: when off, autograd kernels do not record history.
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Sets grad mode for a scope, either way; restores the previous value. The engine runs nodes
// under AutoGradMode(create_graph); a node that runs a nested forward and backward (reentrant
// backward, as activation checkpointing does) turns it back on with AutoGradMode(true).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

// Turns grad mode off in scope; restores the previous value.
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// Inference mode: grad mode off, the autograd keys excluded, ADInplaceOrView no longer in the
// included set, and tensors created in scope carry neither key (so their calls never reach an
// autograd or ADInplaceOrView slot). Normal tensors keep their ADInplaceOrView key, so in-place
// changes of them still bump their version counter and views of them still record their base
// (with the creation meta that refuses a later in-place change in grad mode). Outside
// InferenceMode an in-place change of an inference tensor is refused. InferenceMode(false)
// undoes all of that in scope.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled();

 private:
  bool prev_enabled_;
  bool prev_grad_mode_;
  detail::KeySetChange change_;  // Note [Guards undo only their own change]
};

namespace autograd {
using dk::AutoGradMode;  // its earlier home, dk/autograd/grad_mode.h
}  // namespace autograd

}  // namespace dk
