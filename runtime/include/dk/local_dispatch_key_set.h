// dk/local_dispatch_key_set.h: the thread-local included/excluded key sets and their guards.
#pragma once

#include "dk/dispatch_key_set.h"

namespace dk {

// Note [Thread-local key sets]
// Every call computes ((args' keys | included) - excluded). Both sets live in one
// constant-initialized thread_local with the initial-exec TLS model, and excluded is stored
// as its complement ("allowed"), so the whole computation is one OR and one AND, each with the
// thread-local word as a memory operand at a fixed offset from the thread pointer: no init
// guard, no call, no NOT. `excluded` holds functionality bits only (operator- ignores backend
// bits anyway), so `allowed` always has every backend bit.
struct LocalDispatchKeySet {
  DispatchKeySet included;
  DispatchKeySet excluded;
};

namespace detail {
struct ThreadDispatchKeys {
  DispatchKeySet included;
  uint64_t allowed;  // ~excluded

  DispatchKeySet excluded() const { return DispatchKeySet::fromRaw(~allowed); }
  void set_excluded(DispatchKeySet excluded) { allowed = ~excluded.raw_repr(); }
};
extern constinit thread_local ThreadDispatchKeys tls_dispatch_keys __attribute__((tls_model("initial-exec")));

// Note [Guards undo only their own change]
// A guard that edits the thread's key sets remembers which keys it actually added or removed
// (a key already in the wanted state is not its change) and on exit reverts exactly those. It
// never restores a snapshot: guards destroyed out of order (a guard held in a heap object, or
// a mode that ends another's scope) would otherwise re-add keys whose own guard is gone.
class KeySetChange {
 public:
  KeySetChange() = default;
  // Includes `include`, stops including `uninclude`, excludes `exclude` and stops excluding
  // `unexclude` (functionality bits only for the last two), recording what changed.
  static KeySetChange apply(DispatchKeySet include, DispatchKeySet uninclude, DispatchKeySet exclude,
                            DispatchKeySet unexclude);
  void undo() const;

 private:
  uint64_t included_added_ = 0, included_removed_ = 0, excluded_added_ = 0, excluded_removed_ = 0;
};
}  // namespace detail

inline LocalDispatchKeySet tls_local_dispatch_key_set() {
  return {detail::tls_dispatch_keys.included, detail::tls_dispatch_keys.excluded()};
}
// Per-backend keys are judged by their functionality bit (the TLS sets hold no backend bits).
inline bool tls_is_dispatch_key_included(DispatchKey k) {
  return detail::tls_dispatch_keys.included.has(toFunctionalityKey(k));
}
inline bool tls_is_dispatch_key_excluded(DispatchKey k) {
  return detail::tls_dispatch_keys.excluded().has(toFunctionalityKey(k));
}

// Adds the keys of `ks` to the included set; on exit removes only the keys it added.
class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet ks);
  explicit IncludeDispatchKeyGuard(DispatchKey k) : IncludeDispatchKeyGuard(DispatchKeySet(k)) {}
  ~IncludeDispatchKeyGuard();
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet added_;
};

// Adds the functionality keys of `ks` to the excluded set; on exit removes only those it added.
class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet ks);
  explicit ExcludeDispatchKeyGuard(DispatchKey k) : ExcludeDispatchKeyGuard(DispatchKeySet(k)) {}
  ~ExcludeDispatchKeyGuard();
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet added_;
};

// Calls made in scope skip every autograd key (what an autograd kernel does before it
// redispatches to the backend).
class AutoDispatchBelowAutograd {
 public:
  AutoDispatchBelowAutograd() : guard_(autograd_dispatch_keyset) {}

 private:
  ExcludeDispatchKeyGuard guard_;
};

// Calls made in scope skip the autograd keys and ADInplaceOrView.
class AutoDispatchBelowADInplaceOrView {
 public:
  AutoDispatchBelowADInplaceOrView()
      : guard_(autograd_dispatch_keyset | DispatchKeySet(DispatchKey::ADInplaceOrView)) {}

 private:
  ExcludeDispatchKeyGuard guard_;
};

// Grad mode: when off, autograd kernels do not record history.
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
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

}  // namespace dk
