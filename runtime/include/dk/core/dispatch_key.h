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
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

namespace dk {

enum class BackendComponent : uint8_t {
  CPUBit,
  CUDABit,
  PrivateUse1Bit,
  PrivateUse2Bit,
  MetaBit,  // stays last
};
inline constexpr int kNumBackends = 5;

enum class DispatchKey : uint16_t {
  Undefined = 0,

  // ---- functionality keys, rising priority (value == functionality index) ----
  Dense,                     // per-backend: CPU, CUDA, PrivateUse1, PrivateUse2, Meta
  Quantized,                 // per-backend
  Sparse,                    // per-backend
  BackendSelect,
  Python,
  Functionalize,
  ADInplaceOrView,
  AutogradOther,
  AutogradFunctionality,     // per-backend: AutogradCPU, ...
  Tracer,
  AutocastCPU,
  AutocastCUDA,
  FuncTorchBatched,
  TESTING_ONLY_GenericWrapper,
  TESTING_ONLY_GenericMode,
  ThreadRegistration,        // internal: every thread's first call (Note [Kernel reclamation])
  EndOfFunctionalityKeys,    // not a key

  // ---- per-backend runtime keys (block order == BackendComponent order) ----
  CPU = EndOfFunctionalityKeys,
  CUDA,
  PrivateUse1,
  PrivateUse2,
  Meta,
  QuantizedCPU,
  QuantizedCUDA,
  QuantizedPrivateUse1,
  QuantizedPrivateUse2,
  QuantizedMeta,
  SparseCPU,
  SparseCUDA,
  SparsePrivateUse1,
  SparsePrivateUse2,
  SparseMeta,
  AutogradCPU,
  AutogradCUDA,
  AutogradPrivateUse1,
  AutogradPrivateUse2,
  AutogradMeta,
  EndOfRuntimeBackendKeys,   // not a key

  // ---- alias keys: expand at registration time, own no slot ----
  Autograd = EndOfRuntimeBackendKeys,
  CompositeImplicitAutograd,
  CompositeExplicitAutograd,
  CompositeExplicitAutogradNonFunctional,
  EndOfAliasKeys,            // not a key
};

inline constexpr int kNumFunctionalityKeys = static_cast<int>(DispatchKey::EndOfFunctionalityKeys);
inline constexpr int kNumPerBackendFunctionalities = 4;  // Dense, Quantized, Sparse, AutogradFunctionality

constexpr bool isFunctionalityKey(DispatchKey k) {
  return k > DispatchKey::Undefined && k < DispatchKey::EndOfFunctionalityKeys;
}
constexpr bool isPerBackendRuntimeKey(DispatchKey k) {
  return k >= DispatchKey::CPU && k < DispatchKey::EndOfRuntimeBackendKeys;
}
constexpr bool isAliasDispatchKey(DispatchKey k) {
  return k >= DispatchKey::Autograd && k < DispatchKey::EndOfAliasKeys;
}
constexpr bool isPerBackendFunctionality(DispatchKey k) {
  return k == DispatchKey::Dense || k == DispatchKey::Quantized || k == DispatchKey::Sparse ||
         k == DispatchKey::AutogradFunctionality;
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
  constexpr DispatchKey blocks[kNumPerBackendFunctionalities] = {
      DispatchKey::Dense, DispatchKey::Quantized, DispatchKey::Sparse,
      DispatchKey::AutogradFunctionality};
  int block = (static_cast<int>(k) - static_cast<int>(DispatchKey::CPU)) / kNumBackends;
  return blocks[block];
}

// The backend part of a per-backend runtime key; nullopt for every other key.
constexpr std::optional<BackendComponent> toBackendComponent(DispatchKey k) {
  if (!isPerBackendRuntimeKey(k)) return std::nullopt;
  int offset = (static_cast<int>(k) - static_cast<int>(DispatchKey::CPU)) % kNumBackends;
  return static_cast<BackendComponent>(offset);
}

// The runtime key for {per-backend functionality, backend}: (Dense, CUDABit) -> CUDA.
constexpr DispatchKey toRuntimePerBackendKey(DispatchKey functionality, BackendComponent b) {
  int block = functionality == DispatchKey::Dense       ? 0
              : functionality == DispatchKey::Quantized ? 1
              : functionality == DispatchKey::Sparse    ? 2
                                                        : 3;
  return static_cast<DispatchKey>(static_cast<int>(DispatchKey::CPU) + block * kNumBackends +
                                  static_cast<int>(b));
}

// Autograd key matching a backend key (CPU -> AutogradCPU); AutogradOther for Quantized and
// Sparse keys, which have no autograd key of their own.
constexpr DispatchKey autogradKeyForBackendKey(DispatchKey k) {
  if (!isPerBackendRuntimeKey(k)) return DispatchKey::Undefined;
  DispatchKey f = toFunctionalityKey(k);
  if (f == DispatchKey::Dense) return toRuntimePerBackendKey(DispatchKey::AutogradFunctionality, *toBackendComponent(k));
  if (f == DispatchKey::Quantized || f == DispatchKey::Sparse) return DispatchKey::AutogradOther;
  return DispatchKey::Undefined;
}

std::string_view toString(DispatchKey k);
std::string_view toString(BackendComponent b);
std::optional<DispatchKey> parseDispatchKey(std::string_view name);
std::ostream& operator<<(std::ostream& out, DispatchKey k);
std::ostream& operator<<(std::ostream& out, BackendComponent b);

}  // namespace dk

static_assert(static_cast<int>(dk::DispatchKey::EndOfAliasKeys) <= 64, "one bit per key must fit in 64 bits");
