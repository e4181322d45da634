// The dispatcher's operator registry: operators by name, and the defs whose entry is not made
// yet (Note [Operator registry], Note [Entries made on first use]). Internal to the dispatcher:
// every member is called with the dispatcher's mutex held.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dk/dispatch/dispatcher.h"

namespace dk {

// An operator name as the registry hashes and compares it: the namespace (before the first
// "::", empty when there is none), the rest of the name, and the overload. Pending defs keep
// their name as two views into the generator's string pool and one into an interned
// namespace, so a name is never concatenated until its entry is made.
struct NameKey {
  std::string_view ns;
  std::string_view base;
  std::string_view overload;

  static NameKey of(const OperatorName& name);
  uint64_t hash() const;  // FNV-1a over the three parts, each followed by a separator byte
  OperatorName name() const;
  bool operator==(const NameKey&) const = default;
};

// Note [Entries made on first use]
// A def from the generator's schema data (Library::def(span<const SchemaData>)) does not make
// an OperatorEntry: it leaves a PendingDef in the registry, a few words pointing at the
// constant tables. Its entry (dispatch table, name strings, the schema's debug text) is made
// the first time anything looks the operator up under the dispatcher's mutex: findSchema and
// findOp (so a generated call's first resolution, a typed handle, a dump), a kernel
// registered for it, another def of its name. Only then is the operator's table computed, from
// the fallbacks registered by then. With PyTorch's 2,493 operators, of which a program calls a
// few dozen, startup then writes about 60 bytes per operator instead of an entry of 456 bytes
// or more (1,240 with PyTorch's keys) and its strings: in a VM where a first-touched page
// costs several microseconds, those pages were most of the startup time. Nothing a user sees
// changes: getAllOpNames lists pending defs, duplicates and bad bitmaps are refused at def
// time, and the name's entry, once made, is the one every handle gets.
struct PendingDefBatch;
struct PendingDef {
  const schema_data::SchemaData* data = nullptr;
  const std::string* ns = nullptr;  // interned by the registry: outlives every def
  const PendingDefBatch* batch = nullptr;
  OperatorEntry* entry = nullptr;  // the entry made for it (or an existing one it was given to)
  uint64_t hash = 0;
  uint64_t bitmap = 0;  // the dispatch-argument bitmap, checked at def

  NameKey key() const;
};

// The defs of one Library::def call, owned by its registration handle.
struct PendingDefBatch {
  std::unique_ptr<PendingDef[]> defs;
  size_t size = 0;
  std::shared_ptr<const std::string> debug;  // "registered at FILE:LINE" of the library
};

// Note [Operator registry]
// Operators are found by name in an open-addressing hash table (linear probing, at most half
// full) whose buckets hold an entry pointer, a pending def (tagged pointer) or a tombstone
// (a withdrawn pending def). Every access holds the dispatcher's mutex: lookups by name are
// cold (a typed or generated handle caches its entry; calls never look up), and findSchema
// and findOp took the mutex anyway to read the operator's state. Entries are made once and
// never freed while the dispatcher lives (an operator with no registrations left is only
// hidden), so handles are plain pointers; pending defs belong to their batch.
class Dispatcher::OperatorRegistry {
 public:
  struct Found {
    OperatorEntry* entry = nullptr;
    PendingDef* pending = nullptr;
  };
  Found find(const NameKey& key, uint64_t hash) const;

  // A new entry for `name`, which the caller found absent.
  OperatorEntry& insertEntry(const OperatorName& name);
  // A new entry for the pending def `def`, taking its bucket.
  OperatorEntry& replacePending(PendingDef& def);
  void insertPending(PendingDef& def);  // its name was found absent
  void reserve(size_t more);  // room for `more` insertions without growing on the way
  void erasePending(const PendingDef& def);

  const std::vector<std::unique_ptr<OperatorEntry>>& entries() const { return entries_; }
  std::vector<const PendingDef*> pendingDefs() const;
  const std::string* intern(std::string_view ns);

 private:
  static constexpr uintptr_t kEmpty = 0;
  static constexpr uintptr_t kTombstone = 2;  // no entry or def is at address 2
  static constexpr uintptr_t kPendingTag = 1;

  size_t slotFor(uint64_t hash) const;  // the first empty or tombstone bucket on hash's probe path
  void place(uintptr_t item, uint64_t hash);
  void grow(size_t more = 1);

  std::vector<uintptr_t> buckets_ = std::vector<uintptr_t>(64, kEmpty);
  size_t used_ = 0;  // buckets that are not empty (tombstones included)
  std::vector<std::unique_ptr<OperatorEntry>> entries_;
  std::vector<std::unique_ptr<const std::string>> namespaces_;
};

}  // namespace dk
