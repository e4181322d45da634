// dk/dispatch/operator_entry.h: one operator's registrations, its computed dispatch table, and the
// extraction of a call's key set.
#pragma once

#include <array>
#include <atomic>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dk/core/local_dispatch_key_set.h"
#include "dk/dispatch/function_schema.h"
#include "dk/dispatch/schema_data.h"
#include "dk/dispatch/ivalue.h"
#include "dk/dispatch/kernel_function.h"
#include "dk/dispatch/registration_site.h"
#include "dk/util/array_ref.h"

namespace dk {

// A kernel as registered: where, by whom, and what it claims about its signature.
struct AnnotatedKernel {
  DispatchKey key = DispatchKey::Undefined;  // runtime or alias key it was registered at
  // Tables publish the address of this KernelFunction. When the registration goes away the
  // shared_ptr moves to the dispatcher's retired kernels, which free it once no call can still
  // be running it (Note [Kernel reclamation]).
  std::shared_ptr<const KernelFunction> kernel;
  std::optional<CppSignature> cpp_signature;
  // Builds the schema the kernel's C++ type implies, for the checks against the def'd schema
  // and for dumps; a function pointer rather than a stored schema, which would cost each
  // registration an allocation-heavy FunctionSchema it rarely needs. Null for boxed kernels.
  SchemaInferenceFn infer_schema = nullptr;
  std::string debug;
  RegistrationSite site;  // the registration call (Library's impl/fallback); not known() otherwise
  uint64_t id = 0;  // identifies the registration for its RAII handle
  bool is_default = false;  // one of the fallbacks a fresh process has (not listed as a backend)
};

// How a table slot was filled (docs/semantics.md section 3); printed by dumpComputedTable.
enum class SlotSource : uint8_t {
  Missing,
  Kernel,
  DefaultBackendKernel,
  MathKernel,
  AmbiguousAutogradOther,
  AutogradKernel,
  BackendFallback,
};
std::string_view slotSourceLabel(SlotSource s);  // "kernel", "default backend kernel", ...

namespace detail {
// Note [Unboxed key extraction]
// The unboxed path reads only tensor-typed arguments, chosen by C++ type at compile time:
// the schema's dispatch-argument bitmap is what this selects, so no bitmap is read here.
inline void accumulateKeySet(DispatchKeySet&) {}
template <class T, class... Rest>
inline void accumulateKeySet(DispatchKeySet& ks, const T& arg, const Rest&... rest) {
  using D = std::remove_cv_t<std::remove_reference_t<T>>;
  if constexpr (std::is_same_v<D, Tensor>) {
    ks = ks | arg.key_set();
  } else if constexpr (std::is_same_v<D, std::optional<Tensor>>) {
    if (arg) ks = ks | arg->key_set();
  } else if constexpr (std::is_same_v<D, ArrayRef<Tensor>> || std::is_same_v<D, std::vector<Tensor>>) {
    for (const Tensor& t : arg) ks = ks | t.key_set();
  } else if constexpr (std::is_same_v<D, ArrayRef<std::optional<Tensor>>> ||
                       std::is_same_v<D, std::vector<std::optional<Tensor>>>) {
    for (const auto& t : arg)
      if (t) ks = ks | t->key_set();
  }
  accumulateKeySet(ks, rest...);
}

// The boxed path's counterpart for one dispatch argument: a Tensor's key set, or the union over
// the tensors of a Tensor[] or Tensor?[] list; nothing for None. Shared by
// getDispatchKeySetBoxed and dk::explain, so both read arguments the same way.
inline DispatchKeySet boxedArgumentKeySet(const IValue& v) {
  DispatchKeySet ks;
  if (v.isTensor()) {
    ks = v.tensorKeySetUnchecked();
  } else if (v.isList()) {
    for (const IValue& e : v.toListElements())
      if (e.isTensor()) ks = ks | e.tensorKeySetUnchecked();
  }
  return ks;
}
}  // namespace detail

// The table and fallthrough masks of an operator that has no kernels, only the backend
// fallbacks: the same for every such operator, so the dispatcher computes it once per fallback
// change and a fresh def copies it (startup defines thousands of operators this way).
struct FallbackOnlyTable {
  std::array<const KernelFunction*, kDispatchTableSize> table{};
  std::array<uint64_t, kNumBackends> masks{};
  void computeMasks();  // from `table`: Note [Fallthrough mask]
};

class OperatorEntry {
 public:
  explicit OperatorEntry(OperatorName name);
  ~OperatorEntry();
  // An entry whose slow-path flag is set for good: detail::unresolved_operator_entry.
  struct AlwaysSlow {};
  OperatorEntry(OperatorName name, AlwaysSlow) : OperatorEntry(std::move(name)) { setSlowPath(true); }

  const OperatorName& operator_name() const { return name_; }
  bool hasSchema() const { return has_schema_; }
  // Built on first use for a def from schema data (Note [Schemas built on first use]); after
  // that, one acquire load.
  const FunctionSchema& schema() const {
    if (const FunctionSchema* s = schema_.load(std::memory_order_acquire)) return *s;
    return buildSchema();
  }
  const std::string& schemaDebug() const;
  // An operator exists from its first def or kernel until its last one is gone.
  bool isPresent() const { return has_schema_ || !kernels_.empty(); }

  // ---- hot path ----

  // ((argument keys | tls.included) - tls.excluded) & non-fallthrough keys.
  // Fast: one OR and one AND with thread-local operands (Note [Thread-local key sets]), one
  // mask load chosen by the highest backend bit (Note [Fallthrough mask]).
  DispatchKeySet computeDispatchKeySet(DispatchKeySet argument_keys) const {
    const detail::ThreadDispatchKeys& tls = detail::tls_dispatch_keys;
    uint64_t ks = (argument_keys.raw_repr() | tls.included.raw_repr()) & tls.allowed;
    return DispatchKeySet::fromRaw(andFallthroughMask(ks, DispatchKeySet::highestBackendIndex(ks)));
  }

  // computeDispatchKeySet and lookup fused, so the backend bit is scanned once.
  const KernelFunction& lookupForArguments(DispatchKeySet argument_keys, DispatchKeySet* ks_out) const {
    const detail::ThreadDispatchKeys& tls = detail::tls_dispatch_keys;
    uint64_t ks = (argument_keys.raw_repr() | tls.included.raw_repr()) & tls.allowed;
    const uint64_t backend = DispatchKeySet::highestBackendIndex(ks);
    ks = andFallthroughMask(ks, backend);
    *ks_out = DispatchKeySet::fromRaw(ks);
    return *dispatch_table_[DispatchKeySet::tableIndexFor(ks, backend)].load(std::memory_order_acquire);
  }
  // Reads the stack positions the schema's dispatch-argument bitmap selects.
  DispatchKeySet getDispatchKeySetBoxed(const Stack& stack) const;

  // Fast: one index computation (Note [Dispatch table index]) and one acquire load, which
  // is a plain load on x86.
  const KernelFunction& lookup(DispatchKeySet ks) const {
    return *dispatch_table_[ks.getDispatchTableIndex()].load(std::memory_order_acquire);
  }

  // Note [Per-operator slow-path flag]
  // Whether calls of this operator take the slow path (trace, observers: Note [Dispatch slow
  // path]). Every entry keeps its own copy of the process-wide flag, next to its table, so the
  // check needs no other cache line and no address load: on x86 it is one cmpb with the entry
  // register as base and one branch (GCC does not fold an atomic load into a compare, so the
  // relaxed byte load is written as the compare itself; a byte load is atomic on x86).
  bool slowPathEnabled() const {
#if defined(__x86_64__) && defined(__GNUC__)
    bool on;
    asm("cmpb $0, %1" : "=@ccne"(on) : "m"(*reinterpret_cast<const volatile uint8_t*>(&slow_path_)));
    return on;
#else
    return slow_path_.load(std::memory_order_relaxed) != 0;
#endif
  }

  // ks & the fallthrough mask of `backend` (Note [Fallthrough mask]). On x86 the AND takes the
  // mask as its memory operand: GCC does not fold an atomic load into an AND, and an aligned
  // 8-byte load is atomic there (the same reasoning as slowPathEnabled).
  uint64_t andFallthroughMask(uint64_t ks, uint64_t backend) const {
#if defined(__x86_64__) && defined(__GNUC__)
    // (The operand is the atomic itself: through a volatile pointer GCC would compute the
    // address with a separate lea.)
    asm("andq %1, %0" : "+r"(ks) : "m"(non_fallthrough_keys_[backend]));
    return ks;
#else
    return ks & non_fallthrough_keys_[backend].load(std::memory_order_relaxed);
#endif
  }

  // Bit (nargs-1-i) set when argument i is a Tensor, Tensor?, Tensor[] or Tensor?[].
  uint64_t dispatchArgumentBitmap() const { return dispatch_arg_bitmap_.load(std::memory_order_relaxed); }
  static uint64_t computeDispatchArgumentBitmap(const FunctionSchema& schema);

  // ---- cold path: introspection (callers hold the dispatcher's mutex) ----
  using Fallbacks = std::array<const AnnotatedKernel*, kDispatchTableSize>;  // by table slot
  std::string dumpState() const;
  // How each slot was filled is recomputed from the registrations (Note [Slot sources]).
  std::string dumpComputedTable(const Fallbacks& fallbacks) const;
  std::vector<DispatchKey> keysWithValidSlot(const Fallbacks& fallbacks) const;  // runtime keys, not fallthrough
  bool hasKernelForDispatchKey(DispatchKey k) const;
  bool hasComputedKernelForDispatchKey(DispatchKey k) const;
  // The slot of runtime key k as dk::explain says it: its rule (the dump's words), the kernel's
  // name and where it was registered ("autograd kernel: wrapper_..., registered at FILE:LINE").
  std::string describeSlot(DispatchKey k, const Fallbacks& fallbacks) const;
  const std::list<AnnotatedKernel>& kernels() const { return kernels_; }
  std::optional<CppSignature> cppSignature() const;  // from the oldest C++ kernel
  std::string cppSignatureDebug() const;
  const AnnotatedKernel* firstKernelAt(DispatchKey k) const;  // the newest kernel registered at k

  // ---- registration (the dispatcher calls these under its mutex, after its checks) ----
  static FallbackOnlyTable computeFallbackOnlyTable(const Fallbacks& fallbacks);
  // `bitmap` is computeDispatchArgumentBitmap(schema), computed (and checked) before any change.
  void setSchema(FunctionSchema schema, std::shared_ptr<const std::string> debug, uint64_t bitmap);
  // `data` outlives the registration (the generator's tables are static).
  void setSchema(const schema_data::SchemaData& data, std::shared_ptr<const std::string> debug, uint64_t bitmap);
  void clearSchema();
  // The newest registration wins its key; the table is recomputed and published.
  void addKernel(AnnotatedKernel kernel, const Fallbacks& fallbacks);
  // Unpublishes the kernel with this registration id and returns it (null when none has it),
  // to be retired by the caller (Note [Kernel reclamation]).
  std::shared_ptr<const KernelFunction> removeKernel(uint64_t id, const Fallbacks& fallbacks,
                                                     const FallbackOnlyTable& fallback_only);
  // Whether a kernel made by `fn` was checked against this entry's schema: one listed here
  // (every listed kernel was checked, by its registration or by the def after it), or the
  // last one that passed (kept until the schema changes, for a kernel that comes and goes).
  bool inferenceChecked(SchemaInferenceFn fn) const;
  void setCheckedInference(SchemaInferenceFn fn) { checked_inference_ = fn; }
  // True the first time an override at k is reported for this operator (it warns once).
  bool claimOverrideWarning(DispatchKey k);
  // True the first time a Meta call of this operator finds no Meta kernel (it warns once).
  bool claimMissingMetaWarning() const { return !warned_missing_meta_.exchange(true); }
  // Recomputes every slot and the fallthrough masks from the registrations; an entry without
  // kernels copies `fallback_only` instead.
  void updateDispatchTable(const Fallbacks& fallbacks, const FallbackOnlyTable& fallback_only);
  // Recomputes one slot (a backend fallback changed there) and the fallthrough masks.
  void updateSlot(int slot, const Fallbacks& fallbacks, const FallbackOnlyTable& fallback_only);
  // For tests: why the published table or masks differ from a full recomputation, or nullopt.
  std::optional<std::string> findStaleSlot(const Fallbacks& fallbacks, const FallbackOnlyTable& fallback_only) const;
  void setSlowPath(bool on) { slow_path_.store(on ? 1 : 0, std::memory_order_relaxed); }

 private:
  struct SlotInfo {
    SlotSource source = SlotSource::Missing;
    const AnnotatedKernel* from = nullptr;  // null for missing/ambiguous slots
  };

  // Everything below is written only under the dispatcher's mutex.
  bool hasBackendKernelFor(DispatchKey runtime_key) const;
  bool hasQuantizedOrSparseKernel() const;
  SlotInfo computeDispatchTableEntry(DispatchKey k, const AnnotatedKernel* backend_fallback) const;
  void computeTable(const Fallbacks& fallbacks, FallbackOnlyTable& out) const;
  static const KernelFunction* slotKernel(const SlotInfo& info);
  // After a kernel at `key` was added or removed: Note [Slots a registration changes].
  void updateSlotsFor(DispatchKey key, const Fallbacks& fallbacks);
  void recomputeSlots(ArrayRef<int> slots, const Fallbacks& fallbacks);
  const FallbackOnlyTable& wantedTable(const Fallbacks& fallbacks, const FallbackOnlyTable& fallback_only,
                                       FallbackOnlyTable& computed) const;
  void publish(const FallbackOnlyTable& t);
  const FunctionSchema& buildSchema() const;

  // Read by every call: first, so the table sits at offset 0 and the masks and the slow-path
  // flag on the cache lines right after it.
  std::array<std::atomic<const KernelFunction*>, kDispatchTableSize> dispatch_table_;
  // Note [Fallthrough mask]
  // Keys whose slot is a fallthrough are dropped from the call's key set before the lookup.
  // The autograd functionality is shared by all backends, so the mask is kept per backend:
  // a fallthrough at AutogradCPU clears AutogradFunctionality only in mask[CPU].
  std::array<std::atomic<uint64_t>, kNumBackends> non_fallthrough_keys_;
  std::atomic<uint8_t> slow_path_{0};  // Note [Per-operator slow-path flag]
  std::atomic<uint64_t> dispatch_arg_bitmap_{0};

  // Note [Slot sources]
  // Written only under the dispatcher's mutex. How a slot was filled (kernel, math kernel,
  // fallback, ...) is not stored: the dumps recompute it with computeDispatchTableEntry, which
  // gives what the table holds because every change recomputes, under the same mutex, every
  // slot whose rules it can affect (Note [Slots a registration changes]).
  // Keeping it would cost every operator 16 bytes per slot.
  OperatorName name_;
  // Note [Schemas built on first use]
  // A def from the generator's schema data (Note [Pre-built schemas]) keeps a pointer to the
  // tables; the FunctionSchema is built the first time something asks for it (a boxed call
  // reading argument names, a dump, a signature check) and published with a compare-and-swap,
  // so concurrent first readers agree on one copy without a lock. Most operators of a large
  // library are never asked: startup then touches only the entry, not a schema's vectors and
  // strings (with PyTorch's 2,493 operators, the pages those took cost more time than building
  // them). The site string is shared by every def of a Library.
  bool has_schema_ = false;
  const schema_data::SchemaData* schema_data_ = nullptr;
  mutable std::atomic<const FunctionSchema*> schema_{nullptr};  // owned
  std::shared_ptr<const std::string> schema_debug_;
  std::list<AnnotatedKernel> kernels_;  // newest first; nodes never move while listed
  SchemaInferenceFn checked_inference_ = nullptr;
  uint64_t warned_override_keys_ = 0;    // keys whose override warning was given (one bit per DispatchKey)
  mutable std::atomic<bool> warned_missing_meta_{false};  // the no-Meta-kernel warning was given
};

}  // namespace dk
