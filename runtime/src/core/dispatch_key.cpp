// Key names, for printing and parsing.
#include "dk/core/dispatch_key.h"

#include <array>
#include <ostream>

namespace dk {

namespace {
constexpr int kNumKeyNames = static_cast<int>(DispatchKey::EndOfAliasKeys);

constexpr std::array<std::string_view, kNumKeyNames> kKeyNames = {
    "Undefined", "Dense", "Quantized", "Sparse", "BackendSelect", "Python", "Functionalize",
    "ADInplaceOrView", "AutogradOther", "AutogradFunctionality", "Tracer", "AutocastCPU",
    "AutocastCUDA", "FuncTorchBatched", "TESTING_ONLY_GenericWrapper", "TESTING_ONLY_GenericMode",
    "ThreadRegistration",
    // per-backend runtime keys
    "CPU", "CUDA", "PrivateUse1", "PrivateUse2", "Meta",
    "QuantizedCPU", "QuantizedCUDA", "QuantizedPrivateUse1", "QuantizedPrivateUse2", "QuantizedMeta",
    "SparseCPU", "SparseCUDA", "SparsePrivateUse1", "SparsePrivateUse2", "SparseMeta",
    "AutogradCPU", "AutogradCUDA", "AutogradPrivateUse1", "AutogradPrivateUse2", "AutogradMeta",
    // alias keys
    "Autograd", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional"};
static_assert(kKeyNames[static_cast<int>(DispatchKey::CPU)] == "CPU");
static_assert(kKeyNames[static_cast<int>(DispatchKey::AutogradMeta)] == "AutogradMeta");
static_assert(kKeyNames[static_cast<int>(DispatchKey::Autograd)] == "Autograd");

constexpr std::array<std::string_view, kNumBackends> kBackendNames = {
    "CPUBit", "CUDABit", "PrivateUse1Bit", "PrivateUse2Bit", "MetaBit"};
}  // namespace

std::string_view toString(DispatchKey k) {
  auto i = static_cast<int>(k);
  return i < kNumKeyNames ? kKeyNames[i] : std::string_view("UNKNOWN_DISPATCH_KEY");
}

std::string_view toString(BackendComponent b) {
  auto i = static_cast<int>(b);
  return i < kNumBackends ? kBackendNames[i] : std::string_view("UNKNOWN_BACKEND");
}

std::optional<DispatchKey> parseDispatchKey(std::string_view name) {
  for (int i = 0; i < kNumKeyNames; ++i) {
    if (kKeyNames[i] == name) return static_cast<DispatchKey>(i);
  }
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& out, DispatchKey k) { return out << toString(k); }
std::ostream& operator<<(std::ostream& out, BackendComponent b) { return out << toString(b); }

}  // namespace dk
