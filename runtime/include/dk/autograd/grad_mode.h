// dk/autograd/grad_mode.h: setting grad mode for a scope, either way (NoGradGuard, in
// dk/local_dispatch_key_set.h, only turns it off). The engine runs nodes under
// AutoGradMode(create_graph); a node that runs a nested forward and backward (reentrant
// backward, as activation checkpointing does) turns it back on with AutoGradMode(true).
#pragma once

#include "dk/local_dispatch_key_set.h"

namespace dk::autograd {

class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

}  // namespace dk::autograd
