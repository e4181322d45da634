// dk/core/dispatch_key_set.h: the 64-bit set of backend and functionality bits (Note [Key layout]).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <string>
#include <type_traits>

#include "dk/core/dispatch_key.h"

namespace dk {

inline constexpr uint64_t kBackendMask = (uint64_t{1} << kNumBackends) - 1;
inline constexpr uint64_t kFunctionalityMask = ~kBackendMask;

constexpr uint64_t backendBit(BackendComponent b) { return uint64_t{1} << static_cast<int>(b); }
constexpr uint64_t functionalityBit(DispatchKey functionality) {
  return uint64_t{1} << (kNumBackends + static_cast<int>(functionality) - 1);
}

// One table slot per runtime key: Undefined, each non-per-backend functionality, and
// kNumBackends slots per per-backend functionality.
inline constexpr int kDispatchTableSize =
    1 + (kNumFunctionalityKeys - 1 - kNumPerBackendFunctionalities) +
    kNumPerBackendFunctionalities * kNumBackends;

namespace detail {
// Note [Slot index table]
// The table slot of a key set depends on two bit scans: the highest set bit of the whole set
// (its highest functionality, since functionality bits sit above backend bits) and the highest
// backend bit. kSlotIndex maps that pair straight to a slot, so the hot path does one byte
// load instead of decoding an offset and a per-backend mask: rows are bit positions (a row
// below kNumBackends means "no functionality bit": slot 0, Undefined), columns backends
// (padded to a power of two, at least 8, so the address is one shift and add).
inline constexpr int kSlotIndexColumns = std::max(8, static_cast<int>(std::bit_ceil(unsigned{kNumBackends})));
static_assert(kNumBackends <= kSlotIndexColumns);
constexpr std::array<std::array<uint8_t, kSlotIndexColumns>, 64> computeSlotIndex() {
  std::array<uint8_t, kNumFunctionalityKeys> first_slot{};  // first slot of each functionality
  int next = 1;                                              // slot 0 is Undefined
  for (int f = 1; f < kNumFunctionalityKeys; ++f) {
    first_slot[f] = static_cast<uint8_t>(next);
    next += isPerBackendFunctionality(static_cast<DispatchKey>(f)) ? kNumBackends : 1;
  }
  std::array<std::array<uint8_t, kSlotIndexColumns>, 64> table{};
  for (int bit = kNumBackends; bit < kNumBackends + kNumFunctionalityKeys - 1; ++bit) {
    int f = bit - kNumBackends + 1;
    bool per_backend = isPerBackendFunctionality(static_cast<DispatchKey>(f));
    for (int b = 0; b < kSlotIndexColumns; ++b)
      table[bit][b] = static_cast<uint8_t>(first_slot[f] + (per_backend && b < kNumBackends ? b : 0));
  }
  return table;
}
inline constexpr auto kSlotIndex = computeSlotIndex();
static_assert(kSlotIndex[kNumBackends + kNumFunctionalityKeys - 2][0] + 1 == kDispatchTableSize);
static_assert(kDispatchTableSize <= 256, "slot numbers are bytes");

// Index of the highest set bit of x (x != 0). One bsr: written in asm because GCC's
// 63 ^ clz leaves a sign extension behind when the result indexes memory.
constexpr uint64_t highestBitIndex(uint64_t x) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (!std::is_constant_evaluated()) {
    uint64_t r;
    asm("bsr %1, %0" : "=r"(r) : "rm"(x) : "cc");
    return r;
  }
#endif
  return static_cast<uint64_t>(63 ^ std::countl_zero(x));
}
}  // namespace detail

class DispatchKeySet {
 public:
  struct Raw {};
  constexpr DispatchKeySet() = default;
  constexpr DispatchKeySet(Raw, uint64_t repr) : repr_(repr) {}
  // A runtime key sets its functionality bit and, if per-backend, its backend bit. An alias
  // key gives the empty set (use getRuntimeKeySetForAlias to expand one).
  constexpr explicit DispatchKeySet(DispatchKey k) : repr_(bitsFor(k)) {}
  constexpr explicit DispatchKeySet(BackendComponent b) : repr_(backendBit(b)) {}
  constexpr DispatchKeySet(std::initializer_list<DispatchKey> keys) {
    for (DispatchKey k : keys) repr_ |= bitsFor(k);
  }
  static constexpr DispatchKeySet fromRaw(uint64_t repr) { return DispatchKeySet(Raw{}, repr); }
  static constexpr DispatchKeySet allBackends() { return fromRaw(kBackendMask); }

  // A runtime per-backend key is present when both its bits are.
  constexpr bool has(DispatchKey k) const {
    uint64_t bits = bitsFor(k);
    return bits != 0 && (repr_ & bits) == bits;
  }
  constexpr bool hasBackend(BackendComponent b) const { return (repr_ & backendBit(b)) != 0; }
  constexpr bool hasAny(DispatchKeySet other) const { return (repr_ & other.repr_ & kFunctionalityMask) != 0; }
  constexpr bool empty() const { return repr_ == 0; }
  constexpr uint64_t raw_repr() const { return repr_; }

  constexpr DispatchKeySet add(DispatchKey k) const { return fromRaw(repr_ | bitsFor(k)); }
  // Removing a key clears only its functionality bit; backend bits are cleared explicitly.
  constexpr DispatchKeySet remove(DispatchKey k) const {
    return fromRaw(repr_ & ~(bitsFor(k) & kFunctionalityMask));
  }
  constexpr DispatchKeySet removeBackend(BackendComponent b) const { return fromRaw(repr_ & ~backendBit(b)); }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return fromRaw(repr_ | o.repr_); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return fromRaw(repr_ & o.repr_); }
  // Set difference on functionality bits only: backend bits of *this are kept.
  constexpr DispatchKeySet operator-(DispatchKeySet o) const {
    return fromRaw(repr_ & ~(o.repr_ & kFunctionalityMask));
  }
  constexpr bool operator==(const DispatchKeySet&) const = default;

  // Highest functionality bit, paired with the highest backend bit when it is per-backend.
  // A per-backend functionality with no backend bit counts as backend 0 (CPU), matching the
  // table index below.
  constexpr DispatchKey highestPriorityTypeId() const {
    int f = highestFunctionalityIndex();
    auto functionality = static_cast<DispatchKey>(f);
    if (!isPerBackendFunctionality(functionality)) return functionality;
    return toRuntimePerBackendKey(functionality, highestBackend());
  }
  constexpr DispatchKey highestFunctionalityKey() const {
    return static_cast<DispatchKey>(highestFunctionalityIndex());
  }
  constexpr BackendComponent highestBackend() const {
    return static_cast<BackendComponent>(highestBackendIndex(repr_));
  }

  // Note [Dispatch table index]
  // Fast: two branch-free bit scans (the highest bit, the highest backend bit) and one byte
  // load from a 64 x kSlotIndexColumns byte constant table (512 bytes for up to 8 backends;
  // Note [Slot index table]). Sets with no functionality bit land on slot 0 (Undefined).
  constexpr int getDispatchTableIndex() const {
    return static_cast<int>(tableIndexFor(repr_, highestBackendIndex(repr_)));
  }
  static constexpr uint64_t tableIndexFor(uint64_t repr, uint64_t backend) {
    return detail::kSlotIndex[detail::highestBitIndex(repr | 1)][backend];
  }

  // Index of the highest backend bit, 0 when there is none. Branch-free: OR-ing in bit 0
  // makes the scan's input non-zero and leaves the answer unchanged (bit 0 is backend 0).
  static constexpr uint64_t highestBackendIndex(uint64_t repr) {
    return detail::highestBitIndex((repr & kBackendMask) | 1);
  }
  // Index of the highest functionality bit (its DispatchKey value), 0 when there is none:
  // shifting so functionality f lands on bit f, with bit 0 forced on, gives bit_width of the
  // functionality bits without a branch.
  static constexpr int highestFunctionalityIndex(uint64_t repr) {
    return 63 ^ std::countl_zero((repr >> (kNumBackends - 1)) | 1);
  }

  // Iteration yields runtime keys, lowest priority first (for per-backend functionalities,
  // one key per backend bit, lowest backend first).
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = DispatchKey;
    using difference_type = std::ptrdiff_t;
    using pointer = const DispatchKey*;
    using reference = DispatchKey;
    constexpr iterator(uint64_t repr, int func, int backend) : repr_(repr), func_(func), backend_(backend) {
      settle();
    }
    constexpr DispatchKey operator*() const {
      auto f = static_cast<DispatchKey>(func_);
      return isPerBackendFunctionality(f) ? toRuntimePerBackendKey(f, static_cast<BackendComponent>(backend_)) : f;
    }
    constexpr iterator& operator++() {
      advance();
      settle();
      return *this;
    }
    constexpr iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    constexpr bool operator==(const iterator& o) const { return func_ == o.func_ && backend_ == o.backend_; }

   private:
    constexpr void advance() {
      auto f = static_cast<DispatchKey>(func_);
      if (isPerBackendFunctionality(f) && backend_ + 1 < kNumBackends) {
        ++backend_;
      } else {
        ++func_;
        backend_ = 0;
      }
    }
    // Move forward to the next position that names a key present in the set.
    constexpr void settle() {
      while (func_ < kNumFunctionalityKeys) {
        auto f = static_cast<DispatchKey>(func_);
        bool present = (repr_ & functionalityBit(f)) != 0 &&
                       (!isPerBackendFunctionality(f) || (repr_ & (uint64_t{1} << backend_)) != 0);
        if (present) return;
        advance();
      }
      backend_ = 0;
    }
    uint64_t repr_;
    int func_;
    int backend_;
  };
  constexpr iterator begin() const { return iterator(repr_, 1, 0); }
  constexpr iterator end() const { return iterator(repr_, kNumFunctionalityKeys, 0); }

  std::string toString() const;

 private:
  constexpr int highestFunctionalityIndex() const { return highestFunctionalityIndex(repr_); }
  static constexpr uint64_t bitsFor(DispatchKey k) {
    if (isFunctionalityKey(k)) return functionalityBit(k);
    if (isPerBackendRuntimeKey(k)) return functionalityBit(toFunctionalityKey(k)) | backendBit(*toBackendComponent(k));
    return 0;  // Undefined and alias keys own no bit
  }
  uint64_t repr_ = 0;
};

std::ostream& operator<<(std::ostream& out, DispatchKeySet ks);

// The runtime key a table slot stands for, and back.
DispatchKey runtimeKeyForTableIndex(int index);
constexpr int tableIndexForRuntimeKey(DispatchKey k) { return DispatchKeySet(k).getDispatchTableIndex(); }

// ---- named key sets and alias expansions (docs/semantics.md section 1), from the key file ----
}  // namespace dk

#include "dk/generated/keys/DispatchKeySets.h"

namespace dk {

// Does registering at `registered` (a runtime or alias key) cover runtime key `k`?
constexpr bool keyCovers(DispatchKey registered, DispatchKey k) {
  if (isAliasDispatchKey(registered)) return getRuntimeKeySetForAlias(registered).has(k);
  return registered == k;
}

}  // namespace dk
