// dk/core/dispatch_key.h: backend components, functionality keys, runtime keys and alias keys.
//
// Note [Key layout]
// A DispatchKeySet is 64 bits: the low kNumBackends bits say where data lives (one bit per
// BackendComponent), the bits above say what functionality applies (one bit per
// functionality key, priority rising with the bit). A runtime key such as AutogradCUDA is the
// pair {functionality bit AutogradFunctionality, backend bit CUDABit}. The DispatchKey enum
// lists, in order: Undefined, the functionality keys (their value is their functionality
// index, 1..kNumFunctionalityKeys-1), the per-backend runtime keys (blocks of kNumBackends,
// one block per per-backend functionality, in functionality order), then the alias keys,
// which own no bit and no table slot.
// The enums themselves, their names and the per-backend tables are generated from
// schemas/dispatch_keys.yaml (dk/generated/keys/DispatchKeys.h); what follows is written over them.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

#include "dk/generated/keys/DispatchKeys.h"

namespace dk {

constexpr bool isFunctionalityKey(DispatchKey k) {
  return k > DispatchKey::Undefined && k < DispatchKey::EndOfFunctionalityKeys;
}
constexpr bool isPerBackendRuntimeKey(DispatchKey k) {
  return k >= DispatchKey::EndOfFunctionalityKeys && k < DispatchKey::EndOfRuntimeBackendKeys;
}
constexpr bool isAliasDispatchKey(DispatchKey k) {
  return k >= DispatchKey::EndOfRuntimeBackendKeys && k < DispatchKey::EndOfAliasKeys;
}
constexpr bool isPerBackendFunctionality(DispatchKey k) {
  return isFunctionalityKey(k) && detail::kPerBackendBlock[static_cast<int>(k)] >= 0;
}
// A runtime key owns a table slot: Undefined, every non-per-backend functionality, every
// per-backend runtime key.
constexpr bool isRuntimeDispatchKey(DispatchKey k) {
  return k == DispatchKey::Undefined || (isFunctionalityKey(k) && !isPerBackendFunctionality(k)) ||
         isPerBackendRuntimeKey(k);
}

// The functionality part of a key: Dense for CPU, AutogradFunctionality for AutogradCUDA.
constexpr DispatchKey toFunctionalityKey(DispatchKey k) {
  if (!isPerBackendRuntimeKey(k)) return k;
  int block = (static_cast<int>(k) - static_cast<int>(DispatchKey::EndOfFunctionalityKeys)) / kNumBackends;
  return detail::kPerBackendFunctionalities[block];
}

// The backend part of a per-backend runtime key; nullopt for every other key.
constexpr std::optional<BackendComponent> toBackendComponent(DispatchKey k) {
  if (!isPerBackendRuntimeKey(k)) return std::nullopt;
  int offset = (static_cast<int>(k) - static_cast<int>(DispatchKey::EndOfFunctionalityKeys)) % kNumBackends;
  return static_cast<BackendComponent>(offset);
}

// The runtime key for {per-backend functionality, backend}: (Dense, CUDABit) -> CUDA.
constexpr DispatchKey toRuntimePerBackendKey(DispatchKey functionality, BackendComponent b) {
  int block = detail::kPerBackendBlock[static_cast<int>(functionality)];
  return static_cast<DispatchKey>(static_cast<int>(DispatchKey::EndOfFunctionalityKeys) + block * kNumBackends +
                                  static_cast<int>(b));
}

// Autograd key matching a backend key (CPU -> AutogradCPU; the key file's `autograd:`): a
// per-backend autograd functionality pairs backend by backend, another one (AutogradOther, for
// Quantized and Sparse keys) is shared. Undefined for keys that have none.
constexpr DispatchKey autogradKeyForBackendKey(DispatchKey k) {
  if (isFunctionalityKey(k) && !isPerBackendFunctionality(k))
    return detail::kAutogradFunctionalityOf[static_cast<int>(k)];  // e.g. MkldnnCPU in PyTorch's keys
  if (!isPerBackendRuntimeKey(k)) return DispatchKey::Undefined;
  DispatchKey autograd = detail::kAutogradFunctionalityOf[static_cast<int>(toFunctionalityKey(k))];
  if (autograd == DispatchKey::Undefined || !isPerBackendFunctionality(autograd)) return autograd;
  return toRuntimePerBackendKey(autograd, *toBackendComponent(k));
}

std::string_view toString(DispatchKey k);
std::string_view toString(BackendComponent b);
std::optional<DispatchKey> parseDispatchKey(std::string_view name);
std::ostream& operator<<(std::ostream& out, DispatchKey k);
std::ostream& operator<<(std::ostream& out, BackendComponent b);

}  // namespace dk

// One bit per backend and per functionality (Note [Key layout]); codegen/keys_yaml.py checks it first.
static_assert(dk::kNumBackends + dk::kNumFunctionalityKeys - 1 <= 64,
              "one bit per backend and per functionality must fit in 64 bits");
