// Printing key sets, and the slot -> key map used by introspection.
#include "dk/core/dispatch_key_set.h"

#include <array>
#include <sstream>

namespace dk {

namespace {
constexpr std::array<DispatchKey, kDispatchTableSize> computeSlotKeys() {
  std::array<DispatchKey, kDispatchTableSize> keys{};
  for (int k = 0; k < static_cast<int>(DispatchKey::EndOfRuntimeBackendKeys); ++k) {
    auto key = static_cast<DispatchKey>(k);
    if (isRuntimeDispatchKey(key)) keys[tableIndexForRuntimeKey(key)] = key;
  }
  return keys;
}
constexpr auto kSlotKeys = computeSlotKeys();
static_assert(kSlotKeys[0] == DispatchKey::Undefined);
static_assert(kSlotKeys[kDispatchTableSize - 1] == DispatchKey::ThreadRegistration);
}  // namespace

DispatchKey runtimeKeyForTableIndex(int index) { return kSlotKeys.at(static_cast<size_t>(index)); }

std::string DispatchKeySet::toString() const {
  std::ostringstream out;
  out << *this;
  return out.str();
}

// A per-backend functionality stands for one key per backend bit, so iterating a set without
// backend bits yields none for it; such a set (a thread's excluded set, which holds
// functionality bits only) prints its functionalities by name instead of as "()".
std::ostream& operator<<(std::ostream& out, DispatchKeySet ks) {
  out << "DispatchKeySet(";
  bool first = true;
  auto print = [&](DispatchKey k) {
    out << (first ? "" : ", ") << dk::toString(k);
    first = false;
  };
  if ((ks.raw_repr() & kBackendMask) != 0) {
    for (DispatchKey k : ks) print(k);
  } else {
    for (int f = 1; f < kNumFunctionalityKeys; ++f)
      if ((ks.raw_repr() & functionalityBit(static_cast<DispatchKey>(f))) != 0) print(static_cast<DispatchKey>(f));
  }
  return out << ")";
}

}  // namespace dk
