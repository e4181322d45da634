// One operator: registrations, the computed dispatch table (docs/semantics.md section 3), dumps.
#include "dk/dispatch/operator_entry.h"

#include <algorithm>
#include <sstream>

#include "dk/dispatch/dispatcher.h"

namespace dk {

std::string_view slotSourceLabel(SlotSource s) {
  switch (s) {
    case SlotSource::Missing: return "missing";
    case SlotSource::Kernel: return "kernel";
    case SlotSource::DefaultBackendKernel: return "default backend kernel";
    case SlotSource::MathKernel: return "math kernel";
    case SlotSource::AmbiguousAutogradOther: return "ambiguous autogradother";
    case SlotSource::AutogradKernel: return "autograd kernel";
    case SlotSource::BackendFallback: return "backend fallback";
  }
  return "unknown";
}

namespace {
// Shared special kernels; their addresses are published in tables, so they live forever.
const KernelFunction& missingKernel() {
  static const KernelFunction* const k = new KernelFunction(KernelFunction::makeMissing());
  return *k;
}
const KernelFunction& ambiguousAutogradOtherKernel() {
  static const KernelFunction* const k = new KernelFunction(KernelFunction::makeAmbiguousAutogradOther());
  return *k;
}
}  // namespace

OperatorEntry::OperatorEntry(OperatorName name) : name_(std::move(name)) {
  for (auto& mask : non_fallthrough_keys_) mask.store(~uint64_t{0}, std::memory_order_relaxed);
  const KernelFunction* missing = &missingKernel();
  for (auto& slot : dispatch_table_) slot.store(missing, std::memory_order_relaxed);
}

OperatorEntry::~OperatorEntry() { delete schema_.load(std::memory_order_relaxed); }

const FunctionSchema& OperatorEntry::buildSchema() const {
  DK_CHECK(has_schema_ && schema_data_ != nullptr, "operator '", name_,
           "' has no schema: only kernels were registered for it, no def() with its schema");
  auto built = std::make_unique<const FunctionSchema>(schema_data::toFunctionSchema(*schema_data_, name_));
  const FunctionSchema* published = nullptr;
  if (schema_.compare_exchange_strong(published, built.get(), std::memory_order_acq_rel, std::memory_order_acquire))
    return *built.release();
  return *published;  // another thread built it first; ours is dropped
}

const std::string& OperatorEntry::schemaDebug() const {
  static const std::string none = "(none)";
  return has_schema_ ? *schema_debug_ : none;
}

void OperatorEntry::setSchema(FunctionSchema schema, std::shared_ptr<const std::string> debug, uint64_t bitmap) {
  delete schema_.exchange(new FunctionSchema(std::move(schema)), std::memory_order_acq_rel);
  schema_data_ = nullptr;
  schema_debug_ = std::move(debug);
  has_schema_ = true;
  dispatch_arg_bitmap_.store(bitmap, std::memory_order_relaxed);
  checked_inference_ = nullptr;
}

void OperatorEntry::setSchema(const schema_data::SchemaData& data, std::shared_ptr<const std::string> debug,
                              uint64_t bitmap) {
  delete schema_.exchange(nullptr, std::memory_order_acq_rel);
  schema_data_ = &data;
  schema_debug_ = std::move(debug);
  has_schema_ = true;
  dispatch_arg_bitmap_.store(bitmap, std::memory_order_relaxed);
  checked_inference_ = nullptr;
}

void OperatorEntry::clearSchema() {
  delete schema_.exchange(nullptr, std::memory_order_acq_rel);
  schema_data_ = nullptr;
  schema_debug_.reset();
  has_schema_ = false;
  dispatch_arg_bitmap_.store(0, std::memory_order_relaxed);
  checked_inference_ = nullptr;
}

void OperatorEntry::addKernel(AnnotatedKernel kernel, const Fallbacks& fallbacks) {
  const DispatchKey key = kernel.key;
  kernels_.push_front(std::move(kernel));
  updateSlotsFor(key, fallbacks);
}

std::shared_ptr<const KernelFunction> OperatorEntry::removeKernel(uint64_t id, const Fallbacks& fallbacks,
                                                                  const FallbackOnlyTable& fallback_only) {
  auto it = std::find_if(kernels_.begin(), kernels_.end(), [&](const AnnotatedKernel& a) { return a.id == id; });
  if (it == kernels_.end()) return nullptr;
  std::shared_ptr<const KernelFunction> removed = std::move(it->kernel);
  const DispatchKey key = it->key;
  kernels_.erase(it);
  if (kernels_.empty()) {
    publish(fallback_only);
  } else {
    updateSlotsFor(key, fallbacks);
  }
  return removed;
}

bool OperatorEntry::inferenceChecked(SchemaInferenceFn fn) const {
  if (checked_inference_ == fn) return true;
  return std::any_of(kernels_.begin(), kernels_.end(), [&](const AnnotatedKernel& a) { return a.infer_schema == fn; });
}

bool OperatorEntry::claimOverrideWarning(DispatchKey k) {
  const uint64_t bit = uint64_t{1} << static_cast<int>(k);
  const bool first = (warned_override_keys_ & bit) == 0;
  warned_override_keys_ |= bit;
  return first;
}

uint64_t OperatorEntry::computeDispatchArgumentBitmap(const FunctionSchema& schema) {
  const auto& args = schema.arguments();
  DK_CHECK(args.size() <= 64, "operator '", schema.operator_name(), "' has ", args.size(),
           " arguments; the dispatcher supports at most 64");
  uint64_t bitmap = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].type.isTensorLike()) bitmap |= uint64_t{1} << (args.size() - 1 - i);
  }
  return bitmap;
}

DispatchKeySet OperatorEntry::getDispatchKeySetBoxed(const Stack& stack) const {
  uint64_t bits = dispatchArgumentBitmap();
  // Positions beyond the stack cannot be read; the kernel reports the short stack.
  if (stack.size() < 64) bits &= (uint64_t{1} << stack.size()) - 1;
  DispatchKeySet ks;
  const size_t top = stack.size() - 1;  // only read when bits != 0, so the stack is non-empty
  while (bits != 0) {
    ks = ks | detail::boxedArgumentKeySet(stack[top - static_cast<size_t>(std::countr_zero(bits))]);
    bits &= bits - 1;
  }
  return computeDispatchKeySet(ks);
}

const AnnotatedKernel* OperatorEntry::firstKernelAt(DispatchKey k) const {
  for (const AnnotatedKernel& a : kernels_)
    if (a.key == k) return &a;
  return nullptr;
}

// "A backend kernel exists for K": a CompositeExplicitAutograd kernel exists, or K is an autograd
// key whose backend has a direct kernel (AutogradCPU: CPU; AutogradOther: any Quantized or Sparse
// key). For any other key there is no such backend, so the math kernel fills it (as in c10:
// with a CPU and a CompositeImplicitAutograd kernel, QuantizedCPU takes the math kernel).
bool OperatorEntry::hasQuantizedOrSparseKernel() const {
  for (const AnnotatedKernel& a : kernels_)
    if (autogradother_backends.has(a.key)) return true;
  return false;
}

bool OperatorEntry::hasBackendKernelFor(DispatchKey k) const {
  if (firstKernelAt(DispatchKey::CompositeExplicitAutograd)) return true;
  if (k == DispatchKey::AutogradOther) return hasQuantizedOrSparseKernel();
  if (isPerBackendRuntimeKey(k) && toFunctionalityKey(k) == DispatchKey::AutogradFunctionality) {
    DispatchKey backend_key = toRuntimePerBackendKey(DispatchKey::Dense, *toBackendComponent(k));
    return firstKernelAt(backend_key) != nullptr;
  }
  return false;
}

OperatorEntry::SlotInfo OperatorEntry::computeDispatchTableEntry(DispatchKey k,
                                                                 const AnnotatedKernel* backend_fallback) const {
  // An operator with no kernels (a fresh def) only has the backend fallbacks: skip the rules.
  if (kernels_.empty()) return backend_fallback ? SlotInfo{SlotSource::BackendFallback, backend_fallback} : SlotInfo{};
  // 1. a kernel registered directly at k
  if (const AnnotatedKernel* direct = firstKernelAt(k)) return {SlotSource::Kernel, direct};
  auto covered = [&](DispatchKey alias) { return k == DispatchKey::Undefined || keyCovers(alias, k); };
  // 2-3. the explicit composites fill backend slots (and slot 0)
  for (DispatchKey alias : {DispatchKey::CompositeExplicitAutogradNonFunctional, DispatchKey::CompositeExplicitAutograd}) {
    if (covered(alias)) {
      if (const AnnotatedKernel* a = firstKernelAt(alias)) return {SlotSource::DefaultBackendKernel, a};
    }
  }
  // 4. the implicit composite, unless the backend has a kernel of its own
  if (covered(DispatchKey::CompositeImplicitAutograd)) {
    if (const AnnotatedKernel* a = firstKernelAt(DispatchKey::CompositeImplicitAutograd)) {
      if (k == DispatchKey::AutogradOther && hasQuantizedOrSparseKernel()) {
        return {SlotSource::AmbiguousAutogradOther, nullptr};
      }
      if (!hasBackendKernelFor(k)) return {SlotSource::MathKernel, a};
    }
  }
  // 5. the autograd alias
  if (keyCovers(DispatchKey::Autograd, k)) {
    if (const AnnotatedKernel* a = firstKernelAt(DispatchKey::Autograd)) return {SlotSource::AutogradKernel, a};
  }
  // 6. a backend fallback
  if (backend_fallback) return {SlotSource::BackendFallback, backend_fallback};
  return {SlotSource::Missing, nullptr};
}

const KernelFunction* OperatorEntry::slotKernel(const SlotInfo& info) {
  if (info.source == SlotSource::AmbiguousAutogradOther) return &ambiguousAutogradOtherKernel();
  return info.from ? info.from->kernel.get() : &missingKernel();
}

void FallbackOnlyTable::computeMasks() {
  masks.fill(~uint64_t{0});
  for (int slot = 0; slot < kDispatchTableSize; ++slot) {
    if (!table[slot]->isFallthrough()) continue;
    const DispatchKey k = runtimeKeyForTableIndex(slot);
    if (k == DispatchKey::Undefined) continue;
    const uint64_t functionality = functionalityBit(toFunctionalityKey(k));
    if (auto backend = toBackendComponent(k)) {
      masks[static_cast<int>(*backend)] &= ~functionality;
    } else {
      for (uint64_t& m : masks) m &= ~functionality;
    }
  }
}

void OperatorEntry::computeTable(const Fallbacks& fallbacks, FallbackOnlyTable& out) const {
  for (int slot = 0; slot < kDispatchTableSize; ++slot)
    out.table[slot] = slotKernel(computeDispatchTableEntry(runtimeKeyForTableIndex(slot), fallbacks[slot]));
  out.computeMasks();
}

FallbackOnlyTable OperatorEntry::computeFallbackOnlyTable(const Fallbacks& fallbacks) {
  FallbackOnlyTable out;
  OperatorEntry(OperatorName{}).computeTable(fallbacks, out);
  return out;
}

// What the whole table should hold: the shared fallback-only table while the entry has no
// kernels, else a full recomputation into `computed`.
const FallbackOnlyTable& OperatorEntry::wantedTable(const Fallbacks& fallbacks, const FallbackOnlyTable& fallback_only,
                                                    FallbackOnlyTable& computed) const {
  if (kernels_.empty()) return fallback_only;
  computeTable(fallbacks, computed);
  return computed;
}

void OperatorEntry::updateDispatchTable(const Fallbacks& fallbacks, const FallbackOnlyTable& fallback_only) {
  FallbackOnlyTable computed;
  publish(wantedTable(fallbacks, fallback_only, computed));
}

void OperatorEntry::publish(const FallbackOnlyTable& t) {
  for (int slot = 0; slot < kDispatchTableSize; ++slot) dispatch_table_[slot].store(t.table[slot], std::memory_order_release);
  for (int b = 0; b < kNumBackends; ++b) non_fallthrough_keys_[b].store(t.masks[b], std::memory_order_relaxed);
}

// Note [Slots a registration changes]
// A kernel added or removed at runtime key k changes what computeDispatchTableEntry gives for
// three slots at most: k's own (rule 1), the autograd slot of k's backend when k is a dense
// backend key (rule 4 asks whether that backend has a kernel), and AutogradOther when k is a
// quantized or sparse key (rule 4 asks the same of those). Every other rule reads only alias
// keys or the backend fallbacks. So a registration at a runtime key recomputes those slots, and
// one at an alias key, which covers many slots, recomputes the table. The fallthrough masks are
// rebuilt from the table (one pass over its pointers) when a changed slot gains or loses a
// fallthrough, and kept otherwise. An entry's first kernel takes
// the same path: without kernels every slot holds what the rules give for an empty list (the
// backend fallback or missing), which no other slot's rules change for one runtime-key kernel.
// A test in test_dispatch_table compares the result with a full recomputation after every step
// of random registrations and deregistrations.
void OperatorEntry::updateSlotsFor(DispatchKey key, const Fallbacks& fallbacks) {
  if (isAliasDispatchKey(key)) {
    FallbackOnlyTable computed;
    computeTable(fallbacks, computed);
    publish(computed);
    return;
  }
  std::array<int, 3> slots{};
  size_t n = 0;
  slots[n++] = tableIndexForRuntimeKey(key);
  if (isPerBackendRuntimeKey(key) && toFunctionalityKey(key) == DispatchKey::Dense) {
    slots[n++] = tableIndexForRuntimeKey(
        toRuntimePerBackendKey(DispatchKey::AutogradFunctionality, *toBackendComponent(key)));
  }
  if (autogradother_backends.has(key)) slots[n++] = tableIndexForRuntimeKey(DispatchKey::AutogradOther);
  recomputeSlots(ArrayRef<int>(slots.data(), n), fallbacks);
}

void OperatorEntry::updateSlot(int slot, const Fallbacks& fallbacks, const FallbackOnlyTable& fallback_only) {
  if (kernels_.empty()) {
    publish(fallback_only);
    return;
  }
  recomputeSlots(ArrayRef<int>(&slot, 1), fallbacks);
}

// Copies the published table, recomputes `slots` and publishes the result. The masks depend
// only on which slots hold a fallthrough, so they are rebuilt only when a changed slot's kernel
// became or stopped being one.
void OperatorEntry::recomputeSlots(ArrayRef<int> slots, const Fallbacks& fallbacks) {
  FallbackOnlyTable t;
  for (int s = 0; s < kDispatchTableSize; ++s) t.table[s] = dispatch_table_[s].load(std::memory_order_relaxed);
  bool fallthrough_changed = false;
  for (int slot : slots) {
    const KernelFunction* now = slotKernel(computeDispatchTableEntry(runtimeKeyForTableIndex(slot), fallbacks[slot]));
    fallthrough_changed = fallthrough_changed || t.table[slot]->isFallthrough() != now->isFallthrough();
    t.table[slot] = now;
  }
  if (fallthrough_changed) {
    t.computeMasks();
  } else {
    for (int b = 0; b < kNumBackends; ++b) t.masks[b] = non_fallthrough_keys_[b].load(std::memory_order_relaxed);
  }
  publish(t);
}

std::optional<std::string> OperatorEntry::findStaleSlot(const Fallbacks& fallbacks,
                                                         const FallbackOnlyTable& fallback_only) const {
  FallbackOnlyTable computed;
  const FallbackOnlyTable& want = wantedTable(fallbacks, fallback_only, computed);
  for (int slot = 0; slot < kDispatchTableSize; ++slot) {
    if (dispatch_table_[slot].load(std::memory_order_relaxed) != want.table[slot])
      return detail::concat("slot ", slot, " (", runtimeKeyForTableIndex(slot), ") holds another kernel than a full "
                            "recomputation gives");
  }
  for (int b = 0; b < kNumBackends; ++b) {
    if (non_fallthrough_keys_[b].load(std::memory_order_relaxed) != want.masks[b])
      return detail::concat("the fallthrough mask of backend ", b, " differs from a full recomputation");
  }
  return std::nullopt;
}

std::optional<CppSignature> OperatorEntry::cppSignature() const {
  for (auto it = kernels_.rbegin(); it != kernels_.rend(); ++it)
    if (it->cpp_signature) return it->cpp_signature;
  return std::nullopt;
}

std::string OperatorEntry::cppSignatureDebug() const {
  for (auto it = kernels_.rbegin(); it != kernels_.rend(); ++it)
    if (it->cpp_signature) return it->debug;
  return "(none)";
}

bool OperatorEntry::hasKernelForDispatchKey(DispatchKey k) const { return firstKernelAt(k) != nullptr; }

bool OperatorEntry::hasComputedKernelForDispatchKey(DispatchKey k) const {
  DK_CHECK(!isAliasDispatchKey(k), "hasComputedKernelForDispatchKey takes a runtime key, not the alias key ", k);
  const KernelFunction* kernel = dispatch_table_[tableIndexForRuntimeKey(k)].load(std::memory_order_acquire);
  return kernel != &missingKernel() && kernel->isValid();
}

std::vector<DispatchKey> OperatorEntry::keysWithValidSlot(const Fallbacks& fallbacks) const {
  std::vector<DispatchKey> keys;
  for (int slot = 0; slot < kDispatchTableSize; ++slot) {
    const SlotInfo info = computeDispatchTableEntry(runtimeKeyForTableIndex(slot), fallbacks[slot]);
    if (info.source == SlotSource::Missing) continue;
    if (info.from && (info.from->kernel->isFallthrough() || info.from->is_default)) continue;
    keys.push_back(runtimeKeyForTableIndex(slot));
  }
  return keys;
}

std::string OperatorEntry::dumpState() const {
  std::ostringstream out;
  out << "name: " << name_ << "\n";
  out << "schema: " << (has_schema_ ? schema().str() : std::string("(none)")) << "\n";
  out << "debug: " << schemaDebug() << "\n";
  // Kernels grouped by key: runtime keys in table order, then alias keys; within a key
  // newest first, older ones inactive.
  std::vector<DispatchKey> keys;
  for (int slot = 0; slot < kDispatchTableSize; ++slot) keys.push_back(runtimeKeyForTableIndex(slot));
  for (int k = static_cast<int>(DispatchKey::Autograd); k < static_cast<int>(DispatchKey::EndOfAliasKeys); ++k)
    keys.push_back(static_cast<DispatchKey>(k));
  for (DispatchKey key : keys) {
    bool first = true;
    for (const AnnotatedKernel& a : kernels_) {
      if (a.key != key) continue;
      out << toString(key) << (isAliasDispatchKey(key) ? "[alias]" : "") << (first ? "" : " (inactive)") << ": "
          << a.debug << " :: " << (a.infer_schema ? a.infer_schema().str() : std::string("(none)")) << " [ "
          << (a.kernel->isFallthrough() ? "fallthrough " : "boxed ") << (a.kernel->hasUnboxed() ? "unboxed " : "")
          << "]\n";
      first = false;
    }
  }
  return out.str();
}

std::string OperatorEntry::describeSlot(DispatchKey k, const Fallbacks& fallbacks) const {
  const SlotInfo info = computeDispatchTableEntry(k, fallbacks[static_cast<size_t>(tableIndexForRuntimeKey(k))]);
  if (info.source == SlotSource::Missing) return "missing: no kernel and no fallback (the call raises \"Could not run\")";
  if (info.source == SlotSource::AmbiguousAutogradOther) return "ambiguous autogradother (the call raises)";
  // The kernel's name, unless its debug string is only its Library's site ("registered at ...").
  const std::string& debug = info.from->debug;
  const bool named = debug.rfind("registered at ", 0) != 0;
  std::string text = std::string(slotSourceLabel(info.source));
  if (info.from->kernel->isFallthrough()) text += ", fallthrough";
  if (named) text += ": " + debug;
  if (info.from->site.known()) text += ", registered at " + info.from->site.toString();
  else if (!named) text += ", " + debug;
  else if (info.from->is_default) text += " (built in)";
  return text;
}

std::string OperatorEntry::dumpComputedTable(const Fallbacks& fallbacks) const {
  std::ostringstream out;
  for (int slot = 0; slot < kDispatchTableSize; ++slot) {
    const SlotInfo info = computeDispatchTableEntry(runtimeKeyForTableIndex(slot), fallbacks[slot]);
    if (info.source == SlotSource::Missing) continue;
    if (runtimeKeyForTableIndex(slot) == DispatchKey::ThreadRegistration) continue;  // internal
    out << toString(runtimeKeyForTableIndex(slot)) << ": ";
    if (info.source == SlotSource::AmbiguousAutogradOther) {
      out << "ambiguous_autogradother [ambiguous autogradother]\n";
      continue;
    }
    out << (info.from->kernel->isFallthrough() ? "fallthrough " : "") << info.from->debug << " ["
        << slotSourceLabel(info.source) << "]\n";
  }
  return out.str();
}

}  // namespace dk
