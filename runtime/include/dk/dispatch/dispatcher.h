// dk/dispatch/dispatcher.h: the process-wide operator registry, operator handles, and the call paths.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dk/dispatch/function_schema.h"
#include "dk/dispatch/ivalue.h"
#include "dk/dispatch/kernel_function.h"
#include "dk/dispatch/kernel_reclamation.h"
#include "dk/dispatch/observer.h"
#include "dk/dispatch/operator_entry.h"

namespace dk {

template <class Sig>
class TypedOperatorHandle;

// Undoes one registration when destroyed (RAII). Movable, not copyable.
class RegistrationHandleRAII {
 public:
  RegistrationHandleRAII() = default;
  explicit RegistrationHandleRAII(std::function<void()> onDestruction) : on_destruction_(std::move(onDestruction)) {}
  RegistrationHandleRAII(RegistrationHandleRAII&& o) noexcept : on_destruction_(std::exchange(o.on_destruction_, nullptr)) {}
  RegistrationHandleRAII& operator=(RegistrationHandleRAII&& o) noexcept {
    reset();
    on_destruction_ = std::exchange(o.on_destruction_, nullptr);
    return *this;
  }
  ~RegistrationHandleRAII() { reset(); }
  void reset() {
    if (on_destruction_) std::exchange(on_destruction_, nullptr)();
  }

 private:
  std::function<void()> on_destruction_;
};

namespace detail {
// Note [Dispatch slow path]
// One flag gates every optional per-call feature (the dispatch trace, observers). Calls read
// the operator's own copy (Note [Per-operator slow-path flag]): when it is clear a call pays
// one compare and one well-predicted branch. This is the process-wide value the copies follow;
// Dispatcher::setSlowPathEnabled changes both.
extern std::atomic<bool> dispatch_slow_path_enabled;
inline bool dispatchSlowPathEnabled() { return dispatch_slow_path_enabled.load(std::memory_order_relaxed); }
}  // namespace detail

// Turns the dispatch trace on or off (DK_SHOW_DISPATCH_TRACE=1 turns it on at startup).
void setDispatchTraceEnabled(bool enabled);
bool isDispatchTraceEnabled();

class OperatorHandle {
 public:
  const OperatorName& operator_name() const { return entry_->operator_name(); }
  const FunctionSchema& schema() const { return entry_->schema(); }
  bool hasSchema() const;

  void callBoxed(Stack* stack) const;
  void callBoxed(Stack& stack) const { callBoxed(&stack); }
  // No extraction, no TLS read: the caller's key set picks the slot.
  void redispatchBoxed(DispatchKeySet ks, Stack* stack) const;

  // A handle typed with the C++ signature; checks it against the operator's (once, here).
  template <class Sig>
  TypedOperatorHandle<Sig> typed() const;

  bool hasKernelForDispatchKey(DispatchKey k) const;
  bool hasComputedKernelForDispatchKey(DispatchKey k) const;
  std::string dumpState() const;
  std::string dumpComputedTable() const;

  bool operator==(const OperatorHandle& o) const { return entry_ == o.entry_; }
  OperatorEntry& entry() const { return *entry_; }

 protected:
  friend class Dispatcher;
  explicit OperatorHandle(OperatorEntry* entry) : entry_(entry) {}
  OperatorEntry* entry_;
};

template <class R, class... Args>
class TypedOperatorHandle<R(Args...)> : public OperatorHandle {
 public:
  // Extract keys from the tensor arguments and TLS, index the table, call. The slow-path
  // flag is tested first: after the table's acquire load the compiler would have to reload
  // the entry pointer to test it.
  R call(Args... args) const {
    if (__builtin_expect(entry_->slowPathEnabled(), 0)) return callSlow(std::forward<Args>(args)...);
    DispatchKeySet argument_keys;
    detail::accumulateKeySet(argument_keys, args...);
    const OperatorEntry* entry = entry_;
    detail::CallDepthScope in_call(entry);  // Note [Call depth scope]
    DispatchKeySet ks;
    const KernelFunction& kernel = entry->lookupForArguments(argument_keys, &ks);
    return kernel.template call<R, Args...>(*this, ks, std::forward<Args>(args)...);
  }
  // Index the table with the caller's key set (a layer's own key already removed).
  R redispatch(DispatchKeySet ks, Args... args) const {
    if (__builtin_expect(entry_->slowPathEnabled(), 0)) {
      return callTraced(entry_->lookup(ks), ks, detail::CallKind::Redispatch, std::forward<Args>(args)...);
    }
    return entry_->lookup(ks).template call<R, Args...>(*this, ks, std::forward<Args>(args)...);
  }

 private:
  __attribute__((noinline)) R callSlow(Args... args) const {
    detail::ensureThreadRegistered();  // so traces never show the ThreadRegistration hop
    DispatchKeySet argument_keys;
    detail::accumulateKeySet(argument_keys, args...);
    const OperatorEntry* entry = entry_;
    detail::CallDepthScope in_call(entry);  // Note [Call depth scope]
    DispatchKeySet ks;
    const KernelFunction& kernel = entry->lookupForArguments(argument_keys, &ks);
    return callTraced(kernel, ks, detail::CallKind::Call, std::forward<Args>(args)...);
  }
  // Out of line, so the fast path needs no stack frame for it (Note [Dispatch slow path]).
  // Boxes inputs and outputs only when an observer asked for them (Note [Observers]).
  __attribute__((noinline)) R callTraced(const KernelFunction& kernel, DispatchKeySet ks, detail::CallKind kind,
                                         Args... args) const {
    detail::CallObserverScope scope(*this, ks, kind);
    if (scope.wantsInputs()) {
      Stack inputs;
      inputs.reserve(sizeof...(Args));
      (inputs.push_back(BoxingTraitsFor<Args>::box(args)), ...);
      scope.enter(&inputs);
    } else {
      scope.enter(nullptr);
    }
    if constexpr (std::is_void_v<R>) {
      kernel.template call<R, Args...>(*this, ks, std::forward<Args>(args)...);
      scope.returned(nullptr);
    } else {
      R result = kernel.template call<R, Args...>(*this, ks, std::forward<Args>(args)...);
      if (scope.wantsOutputs()) {
        Stack outputs;
        R copy = result;
        ReturnTraits<R>::push(outputs, std::move(copy));
        scope.returned(&outputs);
      } else {
        scope.returned(nullptr);
      }
      return result;
    }
  }

  friend class OperatorHandle;
  explicit TypedOperatorHandle(OperatorHandle h) : OperatorHandle(h) {}
};

class Dispatcher {
 public:
  static Dispatcher& singleton();

  // Operators with a schema.
  std::optional<OperatorHandle> findSchema(const OperatorName& name);
  OperatorHandle findSchemaOrThrow(std::string_view name, std::string_view overload);
  // Operators with a schema or only kernels.
  std::optional<OperatorHandle> findOp(const OperatorName& name);
  std::vector<OperatorName> getAllOpNames() const;  // sorted
  // Every registration at `k` (direct kernels and backend fallback), as "op: debug" lines.
  std::vector<std::string> getRegistrationsForDispatchKey(DispatchKey k) const;

  // ---- registration (what Library calls); each returns the handle that undoes it ----
  RegistrationHandleRAII registerLibrary(const std::string& ns, const std::string& debug);
  // `expected_bitmap`: the dispatch-argument bitmap the caller computed (generated code);
  // a registration whose bitmap differs from the schema's is refused.
  RegistrationHandleRAII registerDef(FunctionSchema schema, const std::string& debug,
                                     std::optional<uint64_t> expected_bitmap = std::nullopt);
  RegistrationHandleRAII registerImpl(const OperatorName& name, DispatchKey key, KernelFunction kernel,
                                      std::optional<CppSignature> cpp_signature,
                                      SchemaInferenceFn infer_schema, std::string debug);
  RegistrationHandleRAII registerFallback(DispatchKey key, KernelFunction kernel, std::string debug);

  // Checks a typed handle's C++ signature against the operator's; throws on mismatch.
  void checkSignature(const OperatorHandle& op, const CppSignature& sig, const FunctionSchema& inferred) const;

  // The text of the "Could not run" / "no tensor arguments" errors for a call at `ks`.
  std::string missingKernelMessage(const OperatorHandle& op, DispatchKeySet ks) const;

  // Turns the slow path (Note [Dispatch slow path]) on or off for every operator, present and
  // future; observer.cpp calls it when the trace or the set of observers changes.
  void setSlowPathEnabled(bool on);

  // Deregistered kernels not yet freed: a call may still have been running them
  // (Note [Kernel reclamation]). They are freed in batches as deregistrations go on.
  size_t retiredKernelCount() const;
  // Frees every deregistered kernel that no call can still be running, without waiting for a
  // batch to fill; returns how many remain (those a call on some thread was inside of).
  size_t reclaimRetiredKernels();

  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;
  ~Dispatcher();

 private:
  friend class OperatorHandle;
  Dispatcher();
  class OperatorRegistry;

  // A new entry for `name`, which the caller (holding mutex_) has looked up and not found.
  OperatorEntry& createEntry(const OperatorName& name);
  OperatorEntry* lookupEntry(const OperatorName& name) const;  // lock-free
  void deregisterDef(OperatorEntry& entry);
  void deregisterImpl(OperatorEntry& entry, uint64_t id);
  void deregisterFallback(DispatchKey key, uint64_t id);
  void updateAllTables();  // after a fallback change; caller holds mutex_
  std::array<const AnnotatedKernel*, kDispatchTableSize> fallbackPointers() const;

  mutable std::mutex mutex_;  // serialises every writer; readers never take it on calls
  std::unique_ptr<OperatorRegistry> registry_;
  std::array<std::optional<AnnotatedKernel>, kDispatchTableSize> backend_fallbacks_;
  FallbackOnlyTable fallback_only_;  // follows backend_fallbacks_ (updateAllTables)
  std::vector<std::pair<std::string, std::string>> libraries_;  // (namespace, debug) of DK_LIBRARY blocks
  detail::RetiredKernels retired_kernels_;  // Note [Kernel reclamation]
  uint64_t next_registration_id_ = 1;
};

template <class Sig>
TypedOperatorHandle<Sig> OperatorHandle::typed() const {
  using Traits = detail::function_traits<Sig>;
  static_assert(!Traits::takes_key_set, "typed<>() takes the operator's signature, without DispatchKeySet");
  Dispatcher::singleton().checkSignature(*this, CppSignature::make<Sig>(), detail::SchemaInferrer<Sig>::infer());
  return TypedOperatorHandle<Sig>(*this);
}

namespace detail {
// Note [Generated operator handles]
// The generated ops::X::call and ::redispatch reach their operator through this cache: the
// first call finds the schema and checks the C++ signature (typed<>()), then publishes the
// handle; every later call is one load and a well-predicted branch, with no guard variable
// and no out-of-line call, so the generated function needs no stack frame of its own.
// Op is a generated operator struct (name, overload_name, signature).
template <class Op>
struct GeneratedOperatorHandle {
  using Handle = TypedOperatorHandle<typename Op::signature>;
  static const Handle& get() {
    const Handle* h = published.load(std::memory_order_acquire);
    return __builtin_expect(h != nullptr, 1) ? *h : find();
  }

 private:
  __attribute__((noinline, cold)) static const Handle& find() {
    static const Handle handle =
        Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name).template typed<typename Op::signature>();
    published.store(&handle, std::memory_order_release);
    return handle;
  }
  static inline std::atomic<const Handle*> published{nullptr};
};
}  // namespace detail

}  // namespace dk
