// The operator registry (Note [Operator registry]).
#include "dk/dispatch/operator_registry.h"

#include <utility>

#include "dk/dispatch/operator_entry.h"
#include "dk/dispatch/schema_data.h"

namespace dk {

NameKey NameKey::of(const OperatorName& name) {
  std::string_view full = name.name;
  const size_t sep = full.find("::");
  if (sep == std::string_view::npos) return NameKey{{}, full, name.overload_name};
  return NameKey{full.substr(0, sep), full.substr(sep + 2), name.overload_name};
}

uint64_t NameKey::hash() const {
  uint64_t h = 14695981039346656037ull;
  auto add = [&h](std::string_view part) {
    for (unsigned char c : part) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // no name contains 0xff: parts cannot run together
  };
  add(ns);
  add(base);
  add(overload);
  return h;
}

OperatorName NameKey::name() const {
  std::string full;
  full.reserve(ns.size() + 2 + base.size());
  if (!ns.empty()) full.append(ns).append("::");
  full.append(base);
  return OperatorName{std::move(full), std::string(overload)};
}

NameKey PendingDef::key() const {
  const char* strings = static_cast<const char*>(data->strings);
  std::string_view name = strings + data->name;
  std::string_view overload = strings + data->overload_name;
  const size_t sep = name.find("::");  // written qualified: Library::def checked the namespace
  if (sep != std::string_view::npos) return NameKey{name.substr(0, sep), name.substr(sep + 2), overload};
  return NameKey{*ns, name, overload};
}

Dispatcher::OperatorRegistry::Found Dispatcher::OperatorRegistry::find(const NameKey& key, uint64_t hash) const {
  const size_t mask = buckets_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const uintptr_t item = buckets_[i];
    if (item == kEmpty) return {};
    if (item == kTombstone) continue;
    if (item & kPendingTag) {
      auto* def = reinterpret_cast<PendingDef*>(item & ~kPendingTag);
      if (def->hash == hash && def->key() == key) return {nullptr, def};
    } else {
      auto* entry = reinterpret_cast<OperatorEntry*>(item);
      if (NameKey::of(entry->operator_name()) == key) return {entry, nullptr};
    }
  }
}

size_t Dispatcher::OperatorRegistry::slotFor(uint64_t hash) const {
  const size_t mask = buckets_.size() - 1;
  size_t i = hash & mask;
  while (buckets_[i] != kEmpty && buckets_[i] != kTombstone) i = (i + 1) & mask;
  return i;
}

void Dispatcher::OperatorRegistry::place(uintptr_t item, uint64_t hash) {
  if ((used_ + 1) * 2 > buckets_.size()) grow();
  const size_t i = slotFor(hash);
  if (buckets_[i] == kEmpty) ++used_;
  buckets_[i] = item;
}

void Dispatcher::OperatorRegistry::reserve(size_t more) {
  if ((used_ + more) * 2 > buckets_.size()) grow(more);
}

void Dispatcher::OperatorRegistry::grow(size_t more) {
  // The smallest power of two at least twice the live items and `more`, and at least the
  // current size: the same size when tombstones were most of the load.
  size_t live = 0;
  for (uintptr_t item : buckets_) live += item != kEmpty && item != kTombstone;
  size_t size = buckets_.size();
  while ((live + more) * 2 > size) size *= 2;
  std::vector<uintptr_t> old = std::exchange(buckets_, std::vector<uintptr_t>(size, kEmpty));
  used_ = 0;
  for (uintptr_t item : old) {
    if (item == kEmpty || item == kTombstone) continue;
    const uint64_t hash = (item & kPendingTag)
                              ? reinterpret_cast<const PendingDef*>(item & ~kPendingTag)->hash
                              : NameKey::of(reinterpret_cast<const OperatorEntry*>(item)->operator_name()).hash();
    buckets_[slotFor(hash)] = item;
    ++used_;
  }
}

OperatorEntry& Dispatcher::OperatorRegistry::insertEntry(const OperatorName& name) {
  entries_.push_back(std::make_unique<OperatorEntry>(name));
  OperatorEntry& entry = *entries_.back();
  place(reinterpret_cast<uintptr_t>(&entry), NameKey::of(name).hash());
  return entry;
}

OperatorEntry& Dispatcher::OperatorRegistry::replacePending(PendingDef& def) {
  entries_.push_back(std::make_unique<OperatorEntry>(def.key().name()));
  OperatorEntry& entry = *entries_.back();
  const size_t mask = buckets_.size() - 1;
  const uintptr_t tagged = reinterpret_cast<uintptr_t>(&def) | kPendingTag;
  for (size_t i = def.hash & mask;; i = (i + 1) & mask) {
    if (buckets_[i] == tagged) {
      buckets_[i] = reinterpret_cast<uintptr_t>(&entry);
      return entry;
    }
  }
}

void Dispatcher::OperatorRegistry::insertPending(PendingDef& def) {
  place(reinterpret_cast<uintptr_t>(&def) | kPendingTag, def.hash);
}

void Dispatcher::OperatorRegistry::erasePending(const PendingDef& def) {
  const size_t mask = buckets_.size() - 1;
  const uintptr_t tagged = reinterpret_cast<uintptr_t>(&def) | kPendingTag;
  for (size_t i = def.hash & mask;; i = (i + 1) & mask) {
    if (buckets_[i] == tagged) {
      buckets_[i] = kTombstone;
      return;
    }
  }
}

std::vector<const PendingDef*> Dispatcher::OperatorRegistry::pendingDefs() const {
  std::vector<const PendingDef*> out;
  for (uintptr_t item : buckets_)
    if (item != kTombstone && (item & kPendingTag)) out.push_back(reinterpret_cast<const PendingDef*>(item & ~kPendingTag));
  return out;
}

const std::string* Dispatcher::OperatorRegistry::intern(std::string_view ns) {
  for (const auto& known : namespaces_)
    if (*known == ns) return known.get();
  namespaces_.push_back(std::make_unique<const std::string>(ns));
  return namespaces_.back().get();
}

}  // namespace dk
