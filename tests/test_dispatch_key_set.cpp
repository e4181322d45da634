// Keys, key-set algebra, table indices and alias expansion (docs/semantics.md section 1).
#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "dk/core/dispatch_key_set.h"

using namespace dk;

namespace {
std::vector<DispatchKey> allKeys() {
  std::vector<DispatchKey> keys;
  for (int k = 0; k < static_cast<int>(DispatchKey::EndOfAliasKeys); ++k) keys.push_back(static_cast<DispatchKey>(k));
  return keys;
}
std::vector<DispatchKey> runtimeKeys() {
  std::vector<DispatchKey> keys;
  for (DispatchKey k : allKeys())
    if (isRuntimeDispatchKey(k)) keys.push_back(k);
  return keys;
}
}  // namespace

TEST_CASE("keys: toString and parseDispatchKey round-trip for every key") {
  std::set<std::string_view> names;
  for (DispatchKey k : allKeys()) {
    std::string_view name = toString(k);
    CHECK(names.insert(name).second);
    REQUIRE(parseDispatchKey(name).has_value());
    CHECK(*parseDispatchKey(name) == k);
  }
  CHECK(toString(DispatchKey::AutogradCUDA) == "AutogradCUDA");
  CHECK(toString(DispatchKey::CompositeExplicitAutogradNonFunctional) == "CompositeExplicitAutogradNonFunctional");
  CHECK_FALSE(parseDispatchKey("NotAKey").has_value());
  CHECK_FALSE(parseDispatchKey("cpu").has_value());
}

TEST_CASE("keys: classification of runtime, alias and functionality keys") {
  CHECK(isAliasDispatchKey(DispatchKey::Autograd));
  CHECK(isAliasDispatchKey(DispatchKey::CompositeImplicitAutograd));
  CHECK_FALSE(isAliasDispatchKey(DispatchKey::AutogradCPU));
  CHECK(isRuntimeDispatchKey(DispatchKey::CPU));
  CHECK(isRuntimeDispatchKey(DispatchKey::BackendSelect));
  CHECK_FALSE(isRuntimeDispatchKey(DispatchKey::Dense));
  CHECK_FALSE(isRuntimeDispatchKey(DispatchKey::AutogradFunctionality));
  CHECK(toFunctionalityKey(DispatchKey::SparseMeta) == DispatchKey::Sparse);
  CHECK(toBackendComponent(DispatchKey::QuantizedCUDA) == BackendComponent::CUDABit);
  CHECK(toRuntimePerBackendKey(DispatchKey::AutogradFunctionality, BackendComponent::PrivateUse1Bit) ==
        DispatchKey::AutogradPrivateUse1);
  CHECK(autogradKeyForBackendKey(DispatchKey::Meta) == DispatchKey::AutogradMeta);
  CHECK(autogradKeyForBackendKey(DispatchKey::SparseCPU) == DispatchKey::AutogradOther);
}

TEST_CASE("key sets: every runtime key has its own table slot, and the slot maps back") {
  std::set<int> slots;
  for (DispatchKey k : runtimeKeys()) {
    int index = tableIndexForRuntimeKey(k);
    CHECK(index >= 0);
    CHECK(index < kDispatchTableSize);
    CHECK(slots.insert(index).second);
    CHECK(runtimeKeyForTableIndex(index) == k);
    if (k != DispatchKey::Undefined) {
      CHECK(DispatchKeySet(k).highestPriorityTypeId() == k);
    }
  }
  CHECK(static_cast<int>(slots.size()) == kDispatchTableSize);
  CHECK(kDispatchTableSize == 36);  // 35 and the internal ThreadRegistration slot
  CHECK(tableIndexForRuntimeKey(DispatchKey::Undefined) == 0);
  CHECK(DispatchKeySet().getDispatchTableIndex() == 0);
  // Backend bits alone name no functionality: slot 0.
  CHECK(DispatchKeySet(BackendComponent::CUDABit).getDispatchTableIndex() == 0);
}

TEST_CASE("key sets: a runtime per-backend key is a functionality bit plus a backend bit") {
  DispatchKeySet cpu(DispatchKey::CPU);
  CHECK(cpu.has(DispatchKey::CPU));
  CHECK(cpu.has(DispatchKey::Dense));
  CHECK(cpu.hasBackend(BackendComponent::CPUBit));
  CHECK_FALSE(cpu.has(DispatchKey::CUDA));
  DispatchKeySet both = cpu | DispatchKeySet(DispatchKey::AutogradCUDA);
  // {Dense, AutogradFunctionality} x {CPU, CUDA}: the cross product is present.
  CHECK(both.has(DispatchKey::CUDA));
  CHECK(both.has(DispatchKey::AutogradCPU));
  CHECK(both.highestPriorityTypeId() == DispatchKey::AutogradCUDA);
  CHECK(DispatchKeySet(DispatchKey::Autograd).empty());
  CHECK_FALSE(DispatchKeySet().has(DispatchKey::Undefined));
}

TEST_CASE("key sets: remove and operator- clear functionality bits only") {
  DispatchKeySet ks{DispatchKey::CPU, DispatchKey::AutogradCPU, DispatchKey::ADInplaceOrView};
  DispatchKeySet no_autograd = ks.remove(DispatchKey::AutogradCPU);
  CHECK_FALSE(no_autograd.has(DispatchKey::AutogradCPU));
  CHECK(no_autograd.has(DispatchKey::CPU));  // the CPU backend bit stays
  DispatchKeySet minus = ks - DispatchKeySet{DispatchKey::CPU};
  CHECK_FALSE(minus.has(DispatchKey::CPU));
  CHECK(minus.has(DispatchKey::AutogradCPU));
  CHECK(minus.hasBackend(BackendComponent::CPUBit));
  CHECK(ks.removeBackend(BackendComponent::CPUBit).raw_repr() == (ks.raw_repr() & ~uint64_t{1}));
  CHECK((ks & DispatchKeySet(DispatchKey::ADInplaceOrView)) == DispatchKeySet(DispatchKey::ADInplaceOrView));
}

TEST_CASE("key sets: priority follows the functionality order") {
  DispatchKeySet tensor{DispatchKey::CPU, DispatchKey::AutogradCPU, DispatchKey::ADInplaceOrView};
  CHECK(tensor.highestPriorityTypeId() == DispatchKey::AutogradCPU);
  CHECK((tensor & after_autograd_keyset).highestPriorityTypeId() == DispatchKey::ADInplaceOrView);
  CHECK((tensor & after_ADInplaceOrView_keyset).highestPriorityTypeId() == DispatchKey::CPU);
  // Python (modes) sits below autograd and above the backends.
  CHECK(tensor.add(DispatchKey::Python).highestPriorityTypeId() == DispatchKey::AutogradCPU);
  CHECK((tensor & after_ADInplaceOrView_keyset).add(DispatchKey::Python).highestPriorityTypeId() == DispatchKey::Python);
  CHECK(tensor.add(DispatchKey::TESTING_ONLY_GenericMode).highestPriorityTypeId() ==
        DispatchKey::TESTING_ONLY_GenericMode);
  CHECK(DispatchKeySet{DispatchKey::BackendSelect, DispatchKey::SparseCUDA}.highestPriorityTypeId() ==
        DispatchKey::BackendSelect);
}

TEST_CASE("key sets: iteration yields runtime keys, lowest priority first") {
  DispatchKeySet ks{DispatchKey::AutogradCUDA, DispatchKey::CPU, DispatchKey::Python, DispatchKey::ADInplaceOrView};
  std::vector<DispatchKey> keys(ks.begin(), ks.end());
  // Backends {CPU, CUDA} x functionalities {Dense, AutogradFunctionality}, plus the others.
  std::vector<DispatchKey> expected = {DispatchKey::CPU,          DispatchKey::CUDA,
                                       DispatchKey::Python,       DispatchKey::ADInplaceOrView,
                                       DispatchKey::AutogradCPU,  DispatchKey::AutogradCUDA};
  CHECK(keys == expected);
  CHECK(std::vector<DispatchKey>(DispatchKeySet().begin(), DispatchKeySet().end()).empty());
  CHECK(ks.toString() == "DispatchKeySet(CPU, CUDA, Python, ADInplaceOrView, AutogradCPU, AutogradCUDA)");
}

TEST_CASE("key sets: a set without backend bits prints its functionalities") {
  // A thread's excluded set holds functionality bits only: its per-backend functionalities
  // name no runtime key, so they print by functionality rather than vanishing.
  DispatchKeySet functionalities{DispatchKey::AutogradFunctionality, DispatchKey::Dense, DispatchKey::Python};
  CHECK(std::vector<DispatchKey>(functionalities.begin(), functionalities.end()) ==
        std::vector<DispatchKey>{DispatchKey::Python});
  CHECK(functionalities.toString() == "DispatchKeySet(Dense, Python, AutogradFunctionality)");
  CHECK(DispatchKeySet().toString() == "DispatchKeySet()");
  CHECK((functionalities | DispatchKeySet(DispatchKey::CPU)).toString() == "DispatchKeySet(CPU, Python, AutogradCPU)");
}

TEST_CASE("key sets: the named sets") {
  CHECK(autograd_dispatch_keyset.has(DispatchKey::AutogradOther));
  for (DispatchKey k : {DispatchKey::AutogradCPU, DispatchKey::AutogradCUDA, DispatchKey::AutogradPrivateUse1,
                        DispatchKey::AutogradPrivateUse2, DispatchKey::AutogradMeta}) {
    CHECK(autograd_dispatch_keyset.has(k));
    CHECK_FALSE(after_autograd_keyset.has(k));
  }
  CHECK_FALSE(after_autograd_keyset.has(DispatchKey::AutogradOther));
  CHECK(after_autograd_keyset.has(DispatchKey::ADInplaceOrView));
  CHECK(after_autograd_keyset.has(DispatchKey::SparseMeta));
  CHECK(after_autograd_keyset.has(DispatchKey::BackendSelect));
  CHECK_FALSE(after_autograd_keyset.has(DispatchKey::Tracer));
  CHECK_FALSE(after_ADInplaceOrView_keyset.has(DispatchKey::ADInplaceOrView));
  CHECK(after_ADInplaceOrView_keyset.has(DispatchKey::Functionalize));
  CHECK(default_included_set == DispatchKeySet{DispatchKey::BackendSelect, DispatchKey::ADInplaceOrView});
  CHECK(default_excluded_set == DispatchKeySet{DispatchKey::AutocastCPU, DispatchKey::AutocastCUDA});
}

TEST_CASE("key sets: alias keys expand to the runtime keys of docs/semantics.md section 1") {
  auto covered = [](DispatchKey alias) {
    std::set<DispatchKey> keys;
    for (DispatchKey k : runtimeKeys())
      if (keyCovers(alias, k)) keys.insert(k);
    return keys;
  };
  auto autograd = covered(DispatchKey::Autograd);
  CHECK(autograd == std::set<DispatchKey>{DispatchKey::AutogradOther, DispatchKey::AutogradCPU,
                                          DispatchKey::AutogradCUDA, DispatchKey::AutogradPrivateUse1,
                                          DispatchKey::AutogradPrivateUse2, DispatchKey::AutogradMeta});
  auto explicit_keys = covered(DispatchKey::CompositeExplicitAutograd);
  CHECK(explicit_keys.size() == 15);  // Dense, Quantized and Sparse for 5 backends
  CHECK(explicit_keys.count(DispatchKey::SparseCUDA) == 1);
  CHECK(explicit_keys.count(DispatchKey::AutogradCPU) == 0);
  auto non_functional = covered(DispatchKey::CompositeExplicitAutogradNonFunctional);
  CHECK(non_functional.size() == 10);
  CHECK(non_functional.count(DispatchKey::SparseCPU) == 0);
  CHECK(non_functional.count(DispatchKey::QuantizedMeta) == 1);
  auto implicit = covered(DispatchKey::CompositeImplicitAutograd);
  CHECK(implicit.size() == 15 + 6 + 1);
  CHECK(implicit.count(DispatchKey::Functionalize) == 1);
  CHECK(implicit.count(DispatchKey::BackendSelect) == 0);
  CHECK(implicit.count(DispatchKey::Python) == 0);
  CHECK(keyCovers(DispatchKey::CPU, DispatchKey::CPU));
  CHECK_FALSE(keyCovers(DispatchKey::CPU, DispatchKey::CUDA));
}
