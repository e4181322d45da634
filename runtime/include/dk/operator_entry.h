// dk/operator_entry.h: one operator's registrations, its computed dispatch table, and the
// extraction of a call's key set.
#pragma once

#include <array>
#include <atomic>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dk/array_ref.h"
#include "dk/function_schema.h"
#include "dk/ivalue.h"
#include "dk/kernel_function.h"
#include "dk/local_dispatch_key_set.h"

namespace dk {

// A kernel as registered: where, by whom, and what it claims about its signature.
struct AnnotatedKernel {
  DispatchKey key = DispatchKey::Undefined;  // runtime or alias key it was registered at
  // Note [Retired kernels]: tables publish the address of this KernelFunction. When the
  // registration goes away the shared_ptr moves to the dispatcher's retired list instead of
  // being freed, because a call on another thread may still be running it. Registration is
  // a cold path; each deregistration retires one small object.
  std::shared_ptr<const KernelFunction> kernel;
  std::optional<CppSignature> cpp_signature;
  std::optional<FunctionSchema> inferred_schema;
  std::string debug;
  uint64_t id = 0;  // identifies the registration for its RAII handle
  bool is_default = false;  // one of the fallbacks a fresh process has (not listed as a backend)
};

// How a table slot was filled (SEMANTICS.md section 3); printed by dumpComputedTable.
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
}  // namespace detail

class OperatorEntry {
 public:
  explicit OperatorEntry(OperatorName name);

  const OperatorName& operator_name() const { return name_; }
  bool hasSchema() const { return schema_.has_value(); }
  const FunctionSchema& schema() const;
  const std::string& schemaDebug() const;
  // An operator exists from its first def or kernel until its last one is gone.
  bool isPresent() const { return schema_.has_value() || !kernels_.empty(); }

  // ---- hot path ----

  // ((argument keys | tls.included) - tls.excluded) & non-fallthrough keys.
  // Fast: two TLS loads at a fixed offset, one mask load chosen by the highest backend bit
  // (Note [Fallthrough mask]), a few ALU ops.
  DispatchKeySet computeDispatchKeySet(DispatchKeySet argument_keys) const {
    const LocalDispatchKeySet& tls = detail::tls_local_dispatch_key_set;
    uint64_t ks = (argument_keys.raw_repr() | tls.included.raw_repr()) & ~tls.excluded.raw_repr();
    int backend = DispatchKeySet::highestBackendIndex(ks);
    return DispatchKeySet::fromRaw(ks & non_fallthrough_keys_[backend].load(std::memory_order_relaxed));
  }

  // computeDispatchKeySet and lookup fused, so the backend index is scanned once.
  const KernelFunction& lookupForArguments(DispatchKeySet argument_keys, DispatchKeySet* ks_out) const {
    const LocalDispatchKeySet& tls = detail::tls_local_dispatch_key_set;
    uint64_t ks = (argument_keys.raw_repr() | tls.included.raw_repr()) & ~tls.excluded.raw_repr();
    unsigned backend = static_cast<unsigned>(DispatchKeySet::highestBackendIndex(ks));
    ks &= non_fallthrough_keys_[backend].load(std::memory_order_relaxed);
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

  // Bit (nargs-1-i) set when argument i is a Tensor, Tensor?, Tensor[] or Tensor?[].
  uint64_t dispatchArgumentBitmap() const { return dispatch_arg_bitmap_.load(std::memory_order_relaxed); }
  static uint64_t computeDispatchArgumentBitmap(const FunctionSchema& schema);

  // ---- cold path: introspection (callers hold the dispatcher's mutex) ----
  std::string dumpState() const;
  std::string dumpComputedTable() const;
  std::vector<DispatchKey> keysWithValidSlot() const;  // runtime keys, not fallthrough
  bool hasKernelForDispatchKey(DispatchKey k) const;
  bool hasComputedKernelForDispatchKey(DispatchKey k) const;
  const std::list<AnnotatedKernel>& kernels() const { return kernels_; }
  std::optional<CppSignature> cppSignature() const;  // from the oldest C++ kernel
  std::string cppSignatureDebug() const;

 private:
  friend class Dispatcher;

  struct SchemaRegistration {
    FunctionSchema schema;
    std::string debug;
  };
  struct SlotInfo {
    SlotSource source = SlotSource::Missing;
    const AnnotatedKernel* from = nullptr;  // null for missing/ambiguous slots
  };

  // Everything below is written only under the dispatcher's mutex.
  const AnnotatedKernel* firstKernelAt(DispatchKey k) const;
  bool hasBackendKernelFor(DispatchKey runtime_key) const;
  bool hasQuantizedOrSparseKernel() const;
  SlotInfo computeDispatchTableEntry(DispatchKey k, const AnnotatedKernel* backend_fallback) const;
  // Recomputes every slot and the fallthrough masks from the registrations.
  void updateDispatchTable(const std::array<const AnnotatedKernel*, kDispatchTableSize>& fallbacks);

  OperatorName name_;
  std::optional<SchemaRegistration> schema_;
  std::list<AnnotatedKernel> kernels_;  // newest first; nodes never move while listed
  uint64_t warned_override_keys_ = 0;    // keys whose override warning was given (one bit per DispatchKey)

  std::atomic<uint64_t> dispatch_arg_bitmap_{0};
  // Note [Fallthrough mask]
  // Keys whose slot is a fallthrough are dropped from the call's key set before the lookup.
  // The autograd functionality is shared by all backends, so the mask is kept per backend:
  // a fallthrough at AutogradCPU clears AutogradFunctionality only in mask[CPU].
  std::array<std::atomic<uint64_t>, kNumBackends> non_fallthrough_keys_;
  std::array<std::atomic<const KernelFunction*>, kDispatchTableSize> dispatch_table_;
  std::array<SlotInfo, kDispatchTableSize> slot_info_{};
};

}  // namespace dk
