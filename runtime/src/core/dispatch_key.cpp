// Key names, for printing and parsing.
#include "dk/core/dispatch_key.h"

#include <ostream>

namespace dk {

namespace {
constexpr int kNumKeyNames = static_cast<int>(DispatchKey::EndOfAliasKeys);
using detail::kBackendComponentNames;
using detail::kDispatchKeyNames;
static_assert(kDispatchKeyNames[static_cast<int>(DispatchKey::CPU)] == "CPU");
static_assert(kDispatchKeyNames[static_cast<int>(DispatchKey::Autograd)] == "Autograd");
}  // namespace

std::string_view toString(DispatchKey k) {
  auto i = static_cast<int>(k);
  return i < kNumKeyNames ? kDispatchKeyNames[i] : std::string_view("UNKNOWN_DISPATCH_KEY");
}

std::string_view toString(BackendComponent b) {
  auto i = static_cast<int>(b);
  return i < kNumBackends ? kBackendComponentNames[i] : std::string_view("UNKNOWN_BACKEND");
}

std::optional<DispatchKey> parseDispatchKey(std::string_view name) {
  for (int i = 0; i < kNumKeyNames; ++i) {
    if (kDispatchKeyNames[i] == name) return static_cast<DispatchKey>(i);
  }
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& out, DispatchKey k) { return out << toString(k); }
std::ostream& operator<<(std::ostream& out, BackendComponent b) { return out << toString(b); }

}  // namespace dk
