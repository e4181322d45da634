// dk/core/local_dispatch_key_set.h: the thread-local included/excluded key sets and their guards.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dk/core/dispatch_key_set.h"

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
// The internal key a thread carries in its included set until its first call registers it
// with the kernel reclaimer (Note [Kernel reclamation]). It is never excluded, and the public
// views of the thread's sets do not show it.
inline constexpr uint64_t kThreadRegistrationBit = functionalityBit(DispatchKey::ThreadRegistration);

struct ThreadDispatchKeys {
  DispatchKeySet included;
  uint64_t allowed;  // ~excluded
  // How many dispatcher calls this thread is inside (Note [Kernel reclamation]); written only
  // by its own thread, read by the reclaimer.
  uint64_t call_depth;

  DispatchKeySet excluded() const { return DispatchKeySet::fromRaw(~allowed); }
};
extern constinit thread_local ThreadDispatchKeys tls_dispatch_keys __attribute__((tls_model("initial-exec")));

// Note [Call depth scope]
// Every call (typed, generated or boxed; not redispatch, which runs inside the call that gave
// it its key set) counts itself in before it reads the operator's table and out when the
// kernel returns or throws, so the reclaimer can tell when a thread holds no kernel
// (Note [Kernel reclamation]). Fast: on x86-64 the count in is one `incq` at a fixed offset
// from the thread pointer, sharing the TLS offset the key-set computation loads anyway; the
// count out is that offset's reload and one `decq`, written in assembly so the compiler does
// not keep the offset in a callee-saved register across the kernel call (which would cost a
// push and a pop). The asm also passes the operator entry through a register operand, which
// orders the count before every read of the table without a compiler barrier. Elsewhere
// (other targets, ThreadSanitizer) the count is a relaxed load and store in, and a release
// store out.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DK_CALL_DEPTH_GENERIC 1
#endif
#endif
#else
#define DK_CALL_DEPTH_GENERIC 1
#endif

class CallDepthScope {
 public:
  template <class Entry>
  explicit CallDepthScope(Entry*& entry) {
#ifndef DK_CALL_DEPTH_GENERIC
    asm volatile("incq %0" : "+m"(tls_dispatch_keys.call_depth), "+r"(entry));
#else
    uint64_t& depth = tls_dispatch_keys.call_depth;
    __atomic_store_n(&depth, __atomic_load_n(&depth, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    (void)entry;
#endif
  }
  ~CallDepthScope() {
#ifndef DK_CALL_DEPTH_GENERIC
    asm volatile(
        "movq _ZN2dk6detail17tls_dispatch_keysE@gottpoff(%%rip), %%r11\n\t"
        "decq %%fs:%c0(%%r11)"
        :
        : "i"(offsetof(ThreadDispatchKeys, call_depth))
        : "r11", "memory");
#else
    uint64_t& depth = tls_dispatch_keys.call_depth;
    __atomic_store_n(&depth, __atomic_load_n(&depth, __ATOMIC_RELAXED) - 1, __ATOMIC_RELEASE);
#endif
  }
  CallDepthScope(const CallDepthScope&) = delete;
  CallDepthScope& operator=(const CallDepthScope&) = delete;
};

// Registers the calling thread with the reclaimer if its first call has not yet done so
// (kernel_reclamation.cpp); the slow call paths call it so that traces never show the
// ThreadRegistration hop.
void registerThisThread();
inline void ensureThreadRegistered() {
  if (__builtin_expect((tls_dispatch_keys.included.raw_repr() & kThreadRegistrationBit) != 0, 0)) registerThisThread();
}

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
  return {detail::tls_dispatch_keys.included.remove(DispatchKey::ThreadRegistration),
          detail::tls_dispatch_keys.excluded()};
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
  detail::KeySetChange change_;  // Note [Guards undo only their own change]
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
  detail::KeySetChange change_;  // Note [Guards undo only their own change]
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

}  // namespace dk
