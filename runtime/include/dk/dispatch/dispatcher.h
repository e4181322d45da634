// dk/dispatch/dispatcher.h: the process-wide operator registry, operator handles, and the call paths.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
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
struct PendingDef;       // Note [Entries made on first use]
struct PendingDefBatch;

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
  friend class KernelFunction;  // KernelFunction::callBoxed(OperatorEntry*, ...)
  explicit OperatorHandle(OperatorEntry* entry) : entry_(entry) {}
  OperatorEntry* entry_;
};

namespace detail {
template <class Op, class Sig>
class GeneratedOperatorHandle;
}  // namespace detail

template <class R, class... Args>
class TypedOperatorHandle<R(Args...)> : public OperatorHandle {
 public:
  // Extract keys from the tensor arguments and TLS, index the table, call. The slow-path
  // flag is tested first: after the table's acquire load the compiler would have to reload
  // the entry pointer to test it.
  R call(Args... args) const {
    if (__builtin_expect(entry_->slowPathEnabled(), 0)) return callSlow(std::forward<Args>(args)...);
    return callFast(entry_, std::forward<Args>(args)...);
  }
  // Index the table with the caller's key set (a layer's own key already removed).
  R redispatch(DispatchKeySet ks, Args... args) const {
    if (__builtin_expect(entry_->slowPathEnabled(), 0)) {
      return callTraced(entry_->lookup(ks), ks, detail::CallKind::Redispatch, std::forward<Args>(args)...);
    }
    return redispatchFast(entry_, ks, std::forward<Args>(args)...);
  }

 private:
  template <class Op, class Sig>
  friend class detail::GeneratedOperatorHandle;

  // The hot path, after the slow-path check; the generated ops::X::call shares it (Note
  // [Generated operator handles]). Static, on the entry: no handle object is read.
  static R callFast(OperatorEntry* entry, Args... args) {
    DispatchKeySet argument_keys;
    detail::accumulateKeySet(argument_keys, args...);
    detail::CallDepthScope in_call(entry);  // Note [Call depth scope]
    DispatchKeySet ks;
    const KernelFunction& kernel = entry->lookupForArguments(argument_keys, &ks);
    return kernel.template call<R, Args...>(entry, ks, std::forward<Args>(args)...);
  }
  static R redispatchFast(OperatorEntry* entry, DispatchKeySet ks, Args... args) {
    return entry->lookup(ks).template call<R, Args...>(entry, ks, std::forward<Args>(args)...);
  }

  __attribute__((noinline)) R callSlow(Args... args) const {
    detail::ensureThreadRegistered();  // so traces never show the ThreadRegistration hop
    DispatchKeySet argument_keys;
    detail::accumulateKeySet(argument_keys, args...);
    OperatorEntry* entry = entry_;
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
      kernel.template call<R, Args...>(entry_, ks, std::forward<Args>(args)...);
      scope.returned(nullptr);
    } else {
      R result = kernel.template call<R, Args...>(entry_, ks, std::forward<Args>(args)...);
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
  // Operators that have kernels but no schema: an impl for a name no library defines (a typo,
  // or a library that was not linked), as PyTorch's findDanglingImpls. Sorted by name.
  std::vector<OperatorHandle> findDanglingImpls() const;
  // dk::explain's text (dk/explain.h) for `args` on this thread; `redispatch_keys` for a
  // redispatch, which skips the argument and thread sets.
  std::string explain(const OperatorHandle& op, const Stack& args,
                      std::optional<DispatchKeySet> redispatch_keys = std::nullopt);
  // Every registration at `k` (direct kernels and backend fallback), as "op: debug" lines.
  std::vector<std::string> getRegistrationsForDispatchKey(DispatchKey k) const;

  // ---- registration (what Library calls); each returns the handle that undoes it ----
  RegistrationHandleRAII registerLibrary(const std::string& ns, const std::string& debug);
  // `expected_bitmap`: the dispatch-argument bitmap the caller computed (generated code);
  // a registration whose bitmap differs from the schema's is refused.
  RegistrationHandleRAII registerDef(FunctionSchema schema, const std::string& debug,
                                     std::optional<uint64_t> expected_bitmap = std::nullopt);
  // The same, with a debug string shared by many defs (a Library's site).
  RegistrationHandleRAII registerDef(FunctionSchema schema, std::shared_ptr<const std::string> debug,
                                     std::optional<uint64_t> expected_bitmap = std::nullopt);
  // Defs from the generator's schema data, in namespace `ns` (a name written qualified must
  // name it: Library::def checks), with one handle for all of them. Their entries are made on
  // first lookup (Note [Entries made on first use]) and their FunctionSchemas on first use
  // (Note [Schemas built on first use]), so `schemas` must outlive the registration. Each
  // dispatch_bitmap is checked against its arguments as above; one refused def refuses all.
  RegistrationHandleRAII registerDefs(std::span<const schema_data::SchemaData> schemas, std::string_view ns,
                                      std::shared_ptr<const std::string> debug);
  RegistrationHandleRAII registerImpl(const OperatorName& name, DispatchKey key, KernelFunction kernel,
                                      std::optional<CppSignature> cpp_signature,
                                      SchemaInferenceFn infer_schema, std::string debug, RegistrationSite site = {});
  // `site`: the registration call (Library passes it), for dk::explain and the dump.
  RegistrationHandleRAII registerFallback(DispatchKey key, KernelFunction kernel, std::string debug,
                                          RegistrationSite site = {});
  // A backend fallback the library ships with (as the Python key's dispatch-mode fallback): it
  // is marked default, so the "Could not run" errors do not list its key among an operator's
  // backends. For the library's own layers (vmap's for-loop fallback at FuncTorchBatched).
  RegistrationHandleRAII registerDefaultFallback(DispatchKey key, KernelFunction kernel, std::string debug);

  // Checks a typed handle's C++ signature against the operator's; throws on mismatch.
  void checkSignature(const OperatorHandle& op, const CppSignature& sig, const FunctionSchema& inferred) const;

  // The text of the "Could not run" / "no tensor arguments" errors for a call at `ks`.
  std::string missingKernelMessage(const OperatorHandle& op, DispatchKeySet ks) const;

  // Turns the slow path (Note [Dispatch slow path]) on or off for every operator, present and
  // future; observer.cpp calls it when the trace or the set of observers changes.
  void setSlowPathEnabled(bool on);

  // For tests of the incremental table updates (Note [Slots a registration changes]): why
  // `op`'s published table or fallthrough masks differ from a full recomputation, or nullopt.
  std::optional<std::string> findStaleDispatchTable(const OperatorHandle& op) const;

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

  // The members below are called with mutex_ held.
  // The entry named `name`, made now if a pending def has the name; null if there is none.
  OperatorEntry* lookupEntry(const OperatorName& name);
  // A new entry for `name`, which the caller has looked up and not found.
  OperatorEntry& createEntry(const OperatorName& name);
  OperatorEntry& makeEntry(PendingDef& def);  // the entry of a pending def, made on first lookup
  void initEntry(OperatorEntry& entry);  // a new entry's table and slow-path flag
  // The checks every def passes before anything changes. `schema` is the parsed schema, or
  // null for `data`'s; `existing` the entry of that name, `pending_debug` the site of a
  // pending def of that name.
  void checkDef(const OperatorName& name, const FunctionSchema* schema, const schema_data::SchemaData* data,
                uint64_t bitmap, std::optional<uint64_t> expected_bitmap, const std::string& debug,
                const OperatorEntry* existing, const std::string* pending_debug);
  void withdrawDefs(PendingDefBatch& batch);
  void deregisterDef(OperatorEntry& entry);
  void deregisterImpl(OperatorEntry& entry, uint64_t id);
  void deregisterFallback(DispatchKey key, uint64_t id);
  RegistrationHandleRAII addFallback(DispatchKey key, KernelFunction kernel, std::string debug, bool is_default,
                                     RegistrationSite site = {});
  // Fills the fallback slot at `key` with a new registration and returns its id (under mutex_,
  // or from the constructor).
  uint64_t setFallbackSlot(DispatchKey key, KernelFunction kernel, std::string debug, bool is_default,
                           RegistrationSite site = {});
  // After a fallback change at `changed` (every slot when nullopt); caller holds mutex_.
  void updateAllTables(std::optional<DispatchKey> changed = std::nullopt);
  const OperatorEntry::Fallbacks& fallbackPointers() const;  // the backend fallbacks by slot, or null

  mutable std::mutex mutex_;  // serialises every writer; readers never take it on calls
  std::unique_ptr<OperatorRegistry> registry_;
  std::array<std::optional<AnnotatedKernel>, kDispatchTableSize> backend_fallbacks_;
  FallbackOnlyTable fallback_only_;  // follows backend_fallbacks_ (updateAllTables)
  OperatorEntry::Fallbacks fallback_pointers_{};  // likewise: &*backend_fallbacks_[slot] or null
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
// The entry every generated operator handle starts at: it belongs to no operator and its
// slow-path flag is always set, so the first call takes the slow path, which finds the real
// entry (Note [Generated operator handles]). It is constructed before any other static
// object of the library (init_priority) and is never in the dispatcher's registry, so
// Dispatcher::setSlowPathEnabled never clears its flag.
extern OperatorEntry unresolved_operator_entry;

// Note [Generated operator handles]
// The generated ops::X::call and ::redispatch reach their operator through this cache of its
// entry. It starts at unresolved_operator_entry, whose slow-path flag is set: the first call
// takes the slow path, which finds the schema, checks the C++ signature once (typed<>()) and
// publishes the real entry. Every later call reads the entry with one load and then runs
// exactly the typed handle's code (TypedOperatorHandle::callFast): the slow-path check that
// a typed call makes anyway also stands for "not found yet", so a generated call costs what
// a typed handle's call costs, with no null test, guard variable or out-of-line call, and no
// stack frame of its own. Op is a generated operator struct (name, overload_name, signature).
template <class Op, class Sig = typename Op::signature>
class GeneratedOperatorHandle;

template <class Op, class R, class... Args>
class GeneratedOperatorHandle<Op, R(Args...)> {
  using Handle = TypedOperatorHandle<R(Args...)>;

 public:
  static R call(Args... args) {
    OperatorEntry* entry = entry_.load(std::memory_order_acquire);
    if (__builtin_expect(entry->slowPathEnabled(), 0)) return callSlow(std::forward<Args>(args)...);
    return Handle::callFast(entry, std::forward<Args>(args)...);
  }
  static R redispatch(DispatchKeySet ks, Args... args) {
    OperatorEntry* entry = entry_.load(std::memory_order_acquire);
    if (__builtin_expect(entry->slowPathEnabled(), 0)) return redispatchSlow(ks, std::forward<Args>(args)...);
    return Handle::redispatchFast(entry, ks, std::forward<Args>(args)...);
  }
  // The typed handle of the operator (found on first use; throws when it has no schema).
  static const Handle& handle() {
    static const Handle found =
        Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name).template typed<R(Args...)>();
    entry_.store(&found.entry(), std::memory_order_release);
    return found;
  }

 private:
  // Not found yet, or the operator's slow path is on (trace, observers): the typed handle's
  // call makes its own slow-path check.
  __attribute__((noinline, cold)) static R callSlow(Args... args) { return handle().call(std::forward<Args>(args)...); }
  __attribute__((noinline, cold)) static R redispatchSlow(DispatchKeySet ks, Args... args) {
    return handle().redispatch(ks, std::forward<Args>(args)...);
  }
  static inline std::atomic<OperatorEntry*> entry_{&unresolved_operator_entry};
};
}  // namespace detail

}  // namespace dk
