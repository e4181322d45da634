// The dispatcher: the operator registry, registration under one mutex, errors users read,
// and the dispatch trace.
#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/dispatch_mode.h"
#include "dk/dispatch/operator_registry.h"

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>

namespace dk {

// ===================== the dispatcher =====================

Dispatcher& Dispatcher::singleton() {
  static Dispatcher dispatcher;
  return dispatcher;
}

Dispatcher::Dispatcher() : registry_(std::make_unique<OperatorRegistry>()) {
  // The defaults a fresh process has (docs/semantics.md section 3): BackendSelect and
  // ADInplaceOrView fall through, and every autograd key has the autograd fallback.
  //
  // Note [Autograd fallback]
  // The autograd fallback goes on below autograd, so an operator with only a backend kernel
  // works on tensors that require grad; its result simply has no gradient history. Going on
  // below a key is what a fallthrough does, so the fallback is a fallthrough kernel: calls
  // skip the autograd slot through the fallthrough mask and pay nothing for it.
  auto install = [&](DispatchKey k, const KernelFunction& kernel, std::string_view debug) {
    setFallbackSlot(k, kernel, std::string(debug), /*is_default=*/true);
  };
  // The key file's default fallthroughs (`fallback:`): BackendSelect, ADInplaceOrView, the
  // autograd keys (Note [Autograd fallback]) and the autocast keys (operators without an
  // autocast policy pass through them, Note [Autocast]); a per-backend functionality's at each
  // backend's key.
  const KernelFunction fallthrough = KernelFunction::makeFallthrough();
  for (const detail::DefaultFallthrough& f : detail::kDefaultFallthroughs) {
    if (!isPerBackendFunctionality(f.functionality)) {
      install(f.functionality, fallthrough, f.name);
      continue;
    }
    for (int b = 0; b < kNumBackends; ++b)
      install(toRuntimePerBackendKey(f.functionality, static_cast<BackendComponent>(b)), fallthrough, f.name);
  }
  // The Python slot runs the thread's dispatch modes (Note [Dispatch modes]).
  install(DispatchKey::Python, KernelFunction::makeFromBoxedFunction(&detail::pythonDispatchModeFallback),
          "dispatch_mode_fallback (default)");
  // Every thread's first call registers it with the kernel reclaimer (Note [Kernel reclamation]).
  install(DispatchKey::ThreadRegistration, KernelFunction::makeFromBoxedFunction(&detail::threadRegistrationFallback),
          "thread_registration (default)");
  updateAllTables();  // no operators yet: computes fallback_only_
}

Dispatcher::~Dispatcher() = default;

OperatorEntry* Dispatcher::lookupEntry(const OperatorName& name) {
  const NameKey key = NameKey::of(name);
  OperatorRegistry::Found found = registry_->find(key, key.hash());
  if (found.pending != nullptr) return &makeEntry(*found.pending);
  return found.entry;
}

void Dispatcher::initEntry(OperatorEntry& e) {
  e.updateDispatchTable(OperatorEntry::Fallbacks{}, fallback_only_);  // no kernels yet: fallback_only_ is its table
  // The process-wide flag is stored before the entries are walked under mutex_, which this
  // caller holds: a new entry cannot miss a change (Note [Per-operator slow-path flag]).
  e.setSlowPath(detail::dispatch_slow_path_enabled.load());
}

OperatorEntry& Dispatcher::createEntry(const OperatorName& name) {
  OperatorEntry& e = registry_->insertEntry(name);
  initEntry(e);
  return e;
}

OperatorEntry& Dispatcher::makeEntry(PendingDef& def) {
  OperatorEntry& e = registry_->replacePending(def);
  initEntry(e);
  e.setSchema(*def.data, def.batch->debug, def.bitmap);
  def.entry = &e;
  return e;
}

std::optional<OperatorHandle> Dispatcher::findSchema(const OperatorName& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  OperatorEntry* e = lookupEntry(name);
  if (e == nullptr || !e->hasSchema()) return std::nullopt;
  return OperatorHandle(e);
}

OperatorHandle Dispatcher::findSchemaOrThrow(std::string_view name, std::string_view overload) {
  auto op = findSchema(OperatorName{std::string(name), std::string(overload)});
  if (!op) {
    bool impl_only = findOp(OperatorName{std::string(name), std::string(overload)}).has_value();
    OperatorName full{std::string(name), std::string(overload)};
    DK_ERROR("Could not find schema for ", full,
             impl_only ? ": kernels were registered for it, but no def() with its schema"
                       : ": no operator with this name and overload is registered");
  }
  return *op;
}

std::optional<OperatorHandle> Dispatcher::findOp(const OperatorName& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  OperatorEntry* e = lookupEntry(name);
  if (e == nullptr || !e->isPresent()) return std::nullopt;
  return OperatorHandle(e);
}

std::vector<OperatorName> Dispatcher::getAllOpNames() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<OperatorName> names;
  for (const auto& e : registry_->entries())
    if (e->isPresent()) names.push_back(e->operator_name());
  for (const PendingDef* def : registry_->pendingDefs()) names.push_back(def->key().name());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<OperatorHandle> Dispatcher::findDanglingImpls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<OperatorHandle> dangling;
  for (const auto& e : registry_->entries())
    if (e->isPresent() && !e->hasSchema()) dangling.push_back(OperatorHandle(e.get()));
  std::sort(dangling.begin(), dangling.end(), [](const OperatorHandle& a, const OperatorHandle& b) {
    return a.operator_name() < b.operator_name();
  });
  return dangling;
}

std::vector<std::string> Dispatcher::getRegistrationsForDispatchKey(DispatchKey k) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& e : registry_->entries()) {
    for (const AnnotatedKernel& a : e->kernels())
      if (a.key == k) out.push_back(detail::concat(e->operator_name(), ": ", a.debug));
  }
  if (!isAliasDispatchKey(k)) {
    const auto& fallback = backend_fallbacks_[tableIndexForRuntimeKey(k)];
    if (fallback) out.push_back(detail::concat("(fallback): ", fallback->debug));
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t Dispatcher::retiredKernelCount() const { return retired_kernels_.size(); }

size_t Dispatcher::reclaimRetiredKernels() { return retired_kernels_.reclaim(); }

const OperatorEntry::Fallbacks& Dispatcher::fallbackPointers() const { return fallback_pointers_; }

std::optional<std::string> Dispatcher::findStaleDispatchTable(const OperatorHandle& op) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return op.entry().findStaleSlot(fallbackPointers(), fallback_only_);
}

void Dispatcher::setSlowPathEnabled(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  detail::dispatch_slow_path_enabled.store(on);
  for (const auto& e : registry_->entries()) e->setSlowPath(on);
}

void Dispatcher::updateAllTables(std::optional<DispatchKey> changed) {
  for (int i = 0; i < kDispatchTableSize; ++i)
    fallback_pointers_[i] = backend_fallbacks_[i] ? &*backend_fallbacks_[i] : nullptr;
  const OperatorEntry::Fallbacks& fallbacks = fallback_pointers_;
  fallback_only_ = OperatorEntry::computeFallbackOnlyTable(fallbacks);
  if (!changed) {
    for (const auto& e : registry_->entries()) e->updateDispatchTable(fallbacks, fallback_only_);
    return;
  }
  // A fallback is read by its own slot only (rule 6): Note [Slots a registration changes].
  const int slot = tableIndexForRuntimeKey(*changed);
  for (const auto& e : registry_->entries()) e->updateSlot(slot, fallbacks, fallback_only_);
}

// ---- libraries ----

RegistrationHandleRAII Dispatcher::registerLibrary(const std::string& ns, const std::string& debug) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [existing_ns, existing_debug] : libraries_) {
    DK_CHECK(existing_ns != ns, "Only a single DK_LIBRARY can be used to register the namespace '", ns,
             "'; but there is a duplicate DK_LIBRARY ", debug, " (the first one is ", existing_debug,
             "). If you want several places to define operators in one namespace, use DK_LIBRARY_FRAGMENT.");
  }
  libraries_.emplace_back(ns, debug);
  return RegistrationHandleRAII([this, ns] {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(libraries_.begin(), libraries_.end(), [&](const auto& l) { return l.first == ns; });
    if (it != libraries_.end()) libraries_.erase(it);
  });
}

// ---- schemas ----

namespace {
// 0b1101 without the prefix; "0" for no dispatch arguments.
std::string bitmapText(uint64_t bits) {
  if (bits == 0) return "0";
  std::string text;
  for (; bits != 0; bits >>= 1) text.insert(text.begin(), (bits & 1) ? '1' : '0');
  return text;
}
}  // namespace

void Dispatcher::checkDef(const OperatorName& name, const FunctionSchema* schema, const schema_data::SchemaData* data,
                          uint64_t bitmap, std::optional<uint64_t> expected_bitmap, const std::string& debug,
                          const OperatorEntry* existing, const std::string* pending_debug) {
  // Schema data is built into a FunctionSchema only for an error or a kernel's check.
  std::optional<FunctionSchema> built;
  auto full = [&]() -> const FunctionSchema& {
    if (schema != nullptr) return *schema;
    if (!built) built = schema_data::toFunctionSchema(*data, name);
    return *built;
  };
  // Every check comes before any change: a rejected registration changes nothing.
  if ((existing && existing->hasSchema()) || pending_debug) {
    DK_ERROR("Tried to register an operator (", full(), ") with the same name and overload name multiple times. "
             "Each overload's schema should only be registered with a single call to def(). "
             "Duplicate registration: ", debug, ". Original registration: ",
             pending_debug ? *pending_debug : existing->schemaDebug());
  }
  if (expected_bitmap && *expected_bitmap != bitmap) {
    DK_ERROR(name, ": the generated dispatch-argument bitmap 0b", bitmapText(*expected_bitmap),
             " does not match the schema's 0b", bitmapText(bitmap), " (", full(), "); ", debug,
             ". Regenerate the operator code from the YAML");
  }
  if (existing) {
    for (const AnnotatedKernel& a : existing->kernels()) {
      if (!a.infer_schema) continue;
      FunctionSchema inferred = a.infer_schema();
      if (auto why = findSchemaDifference(inferred, full())) {
        DK_ERROR("Inferred operator schema for a C++ kernel function doesn't match the expected function schema.\n"
                 "  operator: ", name, "\n  expected schema: ", full(), "\n    ", debug,
                 "\n  inferred schema: ", inferred, "\n    ", a.debug, "\n  reason: ", *why);
      }
    }
  }
}

RegistrationHandleRAII Dispatcher::registerDef(FunctionSchema schema, const std::string& debug,
                                               std::optional<uint64_t> expected_bitmap) {
  return registerDef(std::move(schema), std::make_shared<const std::string>(debug), expected_bitmap);
}

RegistrationHandleRAII Dispatcher::registerDef(FunctionSchema schema, std::shared_ptr<const std::string> debug,
                                               std::optional<uint64_t> expected_bitmap) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t bitmap = OperatorEntry::computeDispatchArgumentBitmap(schema);
  OperatorEntry* existing = lookupEntry(schema.operator_name());
  checkDef(schema.operator_name(), &schema, nullptr, bitmap, expected_bitmap, *debug, existing, nullptr);
  OperatorEntry& entry = existing ? *existing : createEntry(schema.operator_name());
  entry.setSchema(std::move(schema), std::move(debug), bitmap);
  return RegistrationHandleRAII([this, &entry] { deregisterDef(entry); });
}

RegistrationHandleRAII Dispatcher::registerDefs(std::span<const schema_data::SchemaData> schemas, std::string_view ns,
                                                std::shared_ptr<const std::string> debug) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto batch = std::make_shared<PendingDefBatch>();
  batch->defs = std::make_unique<PendingDef[]>(schemas.size());
  batch->debug = std::move(debug);
  const std::string* interned = registry_->intern(ns);
  registry_->reserve(schemas.size());
  // Each def is checked against the registry and the defs of the batch before it; the first
  // refused one takes the batch's earlier ones back, so a failed call changes nothing.
  try {
    for (const schema_data::SchemaData& data : schemas) {
      PendingDef& def = batch->defs[batch->size];
      def.data = &data;
      def.ns = interned;
      def.batch = batch.get();
      const NameKey key = def.key();
      def.hash = key.hash();
      auto bitmap = schema_data::dispatchArgumentBitmap(data);
      DK_CHECK(bitmap.has_value(), "operator '", key.name(), "' has ", data.arguments.size(),
               " arguments; the dispatcher supports at most 64");
      def.bitmap = *bitmap;
      const OperatorRegistry::Found found = registry_->find(key, def.hash);
      if (found.entry || found.pending || data.dispatch_bitmap != def.bitmap) {
        checkDef(key.name(), nullptr, &data, def.bitmap, data.dispatch_bitmap, *batch->debug, found.entry,
                 found.pending ? found.pending->batch->debug.get() : nullptr);
      }
      if (found.entry) {
        // Kernels came first: the entry exists (Note [Entries made on first use] does not apply).
        found.entry->setSchema(data, batch->debug, def.bitmap);
        def.entry = found.entry;
      } else {
        registry_->insertPending(def);
      }
      ++batch->size;
    }
  } catch (...) {
    withdrawDefs(*batch);
    throw;
  }
  return RegistrationHandleRAII([this, batch = std::move(batch)] {
    std::lock_guard<std::mutex> lock(mutex_);
    withdrawDefs(*batch);
  });
}

void Dispatcher::withdrawDefs(PendingDefBatch& batch) {
  for (size_t i = batch.size; i-- > 0;) {
    PendingDef& def = batch.defs[i];
    if (def.entry != nullptr) {
      def.entry->clearSchema();
    } else {
      registry_->erasePending(def);
    }
  }
  batch.size = 0;
}

void Dispatcher::deregisterDef(OperatorEntry& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  entry.clearSchema();
}

// ---- kernels ----

RegistrationHandleRAII Dispatcher::registerImpl(const OperatorName& name, DispatchKey key, KernelFunction kernel,
                                                std::optional<CppSignature> cpp_signature,
                                                SchemaInferenceFn infer_schema, std::string debug,
                                                RegistrationSite site) {
  std::lock_guard<std::mutex> lock(mutex_);
  DK_CHECK(key != DispatchKey::Undefined && (isRuntimeDispatchKey(key) || isAliasDispatchKey(key)),
           "cannot register a kernel for '", name, "' at ", key,
           ": kernels go at a runtime key (CPU, AutogradCUDA, ...) or an alias key (Autograd, "
           "CompositeImplicitAutograd, ...)");
  DK_CHECK(key != DispatchKey::ThreadRegistration, "cannot register a kernel for '", name,
           "' at ThreadRegistration: the dispatcher owns that key (Note [Kernel reclamation])");
  OperatorEntry* existing = lookupEntry(name);
  // The inferred schema is a function of the C++ type alone, so a kernel made by an inference
  // function the entry has checked needs no second check: this skips building a FunctionSchema,
  // most of the cost of re-registering a kernel.
  if (existing && existing->hasSchema() && infer_schema && !existing->inferenceChecked(infer_schema)) {
    FunctionSchema inferred = infer_schema();
    if (auto why = findSchemaDifference(inferred, existing->schema())) {
      DK_ERROR("Inferred operator schema for a C++ kernel function doesn't match the expected function schema.\n"
               "  operator: ", name, "\n  expected schema: ", existing->schema(), "\n    ",
               existing->schemaDebug(), "\n  inferred schema: ", inferred, "\n    ", debug,
               "\n  reason: ", *why);
    }
    existing->setCheckedInference(infer_schema);
  }
  if (existing && cpp_signature) {
    auto current = existing->cppSignature();
    if (current && !(*current == *cpp_signature)) {
      DK_ERROR("Mismatch in kernel C++ signatures\n  operator: ", name, "\n    kernel 1: ", current->name(),
               "\n    ", existing->cppSignatureDebug(), "\n    kernel 2: ", cpp_signature->name(), "\n    ", debug);
    }
  }
  OperatorEntry& entry = existing ? *existing : createEntry(name);
  const AnnotatedKernel* previous = entry.firstKernelAt(key);
  if (previous && entry.claimOverrideWarning(key)) {
    warn(detail::concat("Overriding a previously registered kernel for the same operator and the same dispatch "
                        "key\n  operator: ", name, "\n  dispatch key: ", key, "\n  previous kernel: ",
                        previous->debug, "\n       new kernel: ", debug));
  }
  AnnotatedKernel a;
  a.key = key;
  a.kernel = std::make_shared<const KernelFunction>(std::move(kernel));
  a.cpp_signature = cpp_signature;
  a.infer_schema = infer_schema;
  a.debug = std::move(debug);
  a.site = site;
  a.id = next_registration_id_++;
  uint64_t id = a.id;
  entry.addKernel(std::move(a), fallbackPointers());
  return RegistrationHandleRAII([this, &entry, id] { deregisterImpl(entry, id); });
}

void Dispatcher::deregisterImpl(OperatorEntry& entry, uint64_t id) {
  std::shared_ptr<const KernelFunction> retired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    retired = entry.removeKernel(id, fallbackPointers(), fallback_only_);
    if (!retired) return;
  }
  // After the new table is published, and outside the mutex: freeing a kernel may run user
  // code that deregisters (Note [Kernel reclamation]).
  retired_kernels_.retire(std::move(retired));
}

// ---- backend fallbacks ----

RegistrationHandleRAII Dispatcher::registerFallback(DispatchKey key, KernelFunction kernel, std::string debug,
                                                    RegistrationSite site) {
  return addFallback(key, std::move(kernel), std::move(debug), /*is_default=*/false, site);
}

RegistrationHandleRAII Dispatcher::registerDefaultFallback(DispatchKey key, KernelFunction kernel, std::string debug) {
  return addFallback(key, std::move(kernel), std::move(debug), /*is_default=*/true);
}

RegistrationHandleRAII Dispatcher::addFallback(DispatchKey key, KernelFunction kernel, std::string debug,
                                               bool is_default, RegistrationSite site) {
  std::lock_guard<std::mutex> lock(mutex_);
  DK_CHECK(isRuntimeDispatchKey(key) && key != DispatchKey::Undefined, "cannot register a backend fallback at ",
           key, ": fallbacks go at a runtime key");
  DK_CHECK(key != DispatchKey::ThreadRegistration, "cannot register a backend fallback at ThreadRegistration: the "
           "dispatcher owns that key (Note [Kernel reclamation])");
  auto& slot = backend_fallbacks_[tableIndexForRuntimeKey(key)];
  DK_CHECK(!slot, "Tried to register multiple backend fallbacks for the same dispatch key ", key,
           "; previous registration ", slot->debug, ", new registration ", debug);
  uint64_t id = setFallbackSlot(key, std::move(kernel), std::move(debug), is_default, site);
  updateAllTables(key);
  return RegistrationHandleRAII([this, key, id] { deregisterFallback(key, id); });
}

uint64_t Dispatcher::setFallbackSlot(DispatchKey key, KernelFunction kernel, std::string debug, bool is_default,
                                     RegistrationSite site) {
  AnnotatedKernel a;
  a.key = key;
  a.kernel = std::make_shared<const KernelFunction>(std::move(kernel));
  a.debug = std::move(debug);
  a.site = site;
  a.id = next_registration_id_++;
  a.is_default = is_default;
  const uint64_t id = a.id;
  backend_fallbacks_[tableIndexForRuntimeKey(key)] = std::move(a);
  return id;
}

void Dispatcher::deregisterFallback(DispatchKey key, uint64_t id) {
  std::shared_ptr<const KernelFunction> retired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = backend_fallbacks_[tableIndexForRuntimeKey(key)];
    if (!slot || slot->id != id) return;
    retired = std::move(slot->kernel);
    slot.reset();
    updateAllTables(key);
  }
  retired_kernels_.retire(std::move(retired));  // Note [Kernel reclamation]
}

// ---- checks and errors ----

void Dispatcher::checkSignature(const OperatorHandle& op, const CppSignature& sig,
                                const FunctionSchema& inferred) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const OperatorEntry& e = op.entry();
  if (auto current = e.cppSignature()) {
    DK_CHECK(*current == sig, "Tried to access or call an operator with a wrong signature.\n  operator: ",
             e.operator_name(), "\n    correct signature:  ", current->name(), "\n        ", e.cppSignatureDebug(),
             "\n    accessed/called as: ", sig.name(),
             "\n  This likely happened in a call to OperatorHandle::typed<Sig>(). Check that Sig matches the kernel.");
    return;
  }
  if (e.hasSchema()) {
    if (auto why = findSchemaDifference(inferred, e.schema())) {
      DK_ERROR("Tried to access or call an operator with a wrong signature.\n  operator: ", e.operator_name(),
               "\n    schema:             ", e.schema(), "\n        ", e.schemaDebug(),
               "\n    accessed/called as: ", sig.name(), " (", inferred, ")\n  reason: ", *why);
    }
  }
}

std::string Dispatcher::missingKernelMessage(const OperatorHandle& op, DispatchKeySet ks) const {
  std::string missing_meta_warning;
  std::ostringstream out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const OperatorEntry& e = op.entry();
    std::ostringstream keys;
    keys << "[";
    bool first = true;
    const auto fallbacks = fallbackPointers();
    for (DispatchKey k : e.keysWithValidSlot(fallbacks)) {
      keys << (first ? "" : ", ") << toString(k);
      first = false;
    }
    keys << "]";
    DispatchKey key = ks.highestPriorityTypeId();
    if (key == DispatchKey::Undefined) {
      out << "There were no tensor arguments to this function (for example, you passed an empty list of tensors), "
             "but no fallback function is registered for schema "
          << e.operator_name()
          << ". This usually means that the function needs a non-empty list of tensors, or that its author forgot "
             "to register a CompositeImplicitAutograd or CompositeExplicitAutograd kernel. Available for these "
             "backends: "
          << keys.str() << ".\n\n";
    } else {
      // Lint at run time: an operator with a CPU kernel and no Meta one cannot be traced with
      // Meta or fake tensors; said once per operator, as a warning, since the error may be caught.
      if (key == DispatchKey::Meta && e.hasKernelForDispatchKey(DispatchKey::CPU) && e.claimMissingMetaWarning())
        missing_meta_warning = detail::concat(
            e.operator_name(), " has a CPU kernel but no Meta kernel, so Meta tensors (FakeTensorMode, ",
            "opcheck's meta check) cannot run it: register a Meta kernel, or write it as ",
            "CompositeExplicitAutograd or structured");
      out << "Could not run '" << e.operator_name() << "' with arguments from the '" << toString(key)
          << "' backend. '" << e.operator_name() << "' is only available for these backends: " << keys.str()
          << ".\n\n";
    }
    out << e.dumpComputedTable(fallbacks);
  }
  // Given after the registry's lock is released: a warning handler may call back into the dispatcher.
  if (!missing_meta_warning.empty()) warn(missing_meta_warning);
  return out.str();
}

// ===================== operator handles =====================

namespace detail {
// Note [Generated operator handles]. Constructed first (priority 101) so that a generated
// call made by another static initializer of the library already finds its flag set.
__attribute__((init_priority(101))) OperatorEntry unresolved_operator_entry(
    OperatorName{"dk::<unresolved generated operator>", ""}, OperatorEntry::AlwaysSlow{});
}  // namespace detail

bool OperatorHandle::hasSchema() const {
  std::lock_guard<std::mutex> lock(Dispatcher::singleton().mutex_);
  return entry_->hasSchema();
}

namespace {
// The boxed calls' slow path (Note [Dispatch slow path], Note [Observers]).
__attribute__((noinline)) void callBoxedObserved(const OperatorHandle& op, const KernelFunction& kernel,
                                                 DispatchKeySet ks, detail::CallKind kind, Stack* stack) {
  detail::CallObserverScope scope(op, ks, kind);
  if (scope.wantsInputs()) {
    size_t n = op.hasSchema() ? std::min(op.schema().arguments().size(), stack->size()) : stack->size();
    Stack inputs(stack->end() - static_cast<ptrdiff_t>(n), stack->end());
    scope.enter(&inputs);
  } else {
    scope.enter(nullptr);
  }
  size_t below = stack->size() - (op.hasSchema() ? std::min(op.schema().arguments().size(), stack->size()) : stack->size());
  kernel.callBoxed(op, ks, stack);
  if (scope.wantsOutputs()) {
    Stack outputs(stack->begin() + static_cast<ptrdiff_t>(std::min(below, stack->size())), stack->end());
    scope.returned(&outputs);
  } else {
    scope.returned(nullptr);
  }
}
}  // namespace

void OperatorHandle::callBoxed(Stack* stack) const {
  const OperatorEntry* entry = entry_;
  detail::CallDepthScope in_call(entry);  // Note [Call depth scope]
  if (__builtin_expect(entry->slowPathEnabled(), 0)) {
    detail::ensureThreadRegistered();  // so observers never see the ThreadRegistration hop
    DispatchKeySet ks = entry->getDispatchKeySetBoxed(*stack);
    callBoxedObserved(*this, entry->lookup(ks), ks, detail::CallKind::CallBoxed, stack);
    return;
  }
  DispatchKeySet ks = entry->getDispatchKeySetBoxed(*stack);
  entry->lookup(ks).callBoxed(*this, ks, stack);
}

void OperatorHandle::redispatchBoxed(DispatchKeySet ks, Stack* stack) const {
  if (__builtin_expect(entry_->slowPathEnabled(), 0)) {
    callBoxedObserved(*this, entry_->lookup(ks), ks, detail::CallKind::RedispatchBoxed, stack);
    return;
  }
  entry_->lookup(ks).callBoxed(*this, ks, stack);
}

bool OperatorHandle::hasKernelForDispatchKey(DispatchKey k) const {
  std::lock_guard<std::mutex> lock(Dispatcher::singleton().mutex_);
  return entry_->hasKernelForDispatchKey(k);
}
bool OperatorHandle::hasComputedKernelForDispatchKey(DispatchKey k) const {
  std::lock_guard<std::mutex> lock(Dispatcher::singleton().mutex_);
  return entry_->hasComputedKernelForDispatchKey(k);
}
std::string OperatorHandle::dumpState() const {
  std::lock_guard<std::mutex> lock(Dispatcher::singleton().mutex_);
  return entry_->dumpState();
}
std::string OperatorHandle::dumpComputedTable() const {
  Dispatcher& d = Dispatcher::singleton();
  std::lock_guard<std::mutex> lock(d.mutex_);
  return entry_->dumpComputedTable(d.fallbackPointers());
}

}  // namespace dk
