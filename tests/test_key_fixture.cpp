// A backend and a layer added by the key file alone (tests/keys/xpu_keys.yaml): built only in a
// configuration with that file (meson -Ddispatch_keys=tests/keys/xpu_keys.yaml; tools/test's TSan
// build). No C++ of the runtime names XPU or Logging: the enums, names, slots, key sets, device
// type and default fallthrough all come from the YAML.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "dk/autograd/autograd.h"
#include "dk/dispatch.h"
#include "dk/dispatch/privateuse1_backend.h"
#include "dk/generated/TensorOperators.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/sum.h"
#include "dk/tensor/allocator.h"
#include "dk/tensor/tensor_from_values.h"

using namespace dk;

namespace {

float at(const Tensor& t, int64_t i) { return privateuse1::toCpu(t).contiguous().data_ptr<float>()[i]; }

bool tableHas(const char* op, const char* overload, const std::string& line) {
  auto handle = Dispatcher::singleton().findSchemaOrThrow(op, overload);
  return handle.dumpComputedTable().find(line) != std::string::npos;
}

// XPU's allocator for the duration of a test: host memory, as the fallback backend expects.
struct XpuAllocator {
  XpuAllocator() { setAllocator(DeviceType::XPU, defaultHostAllocator()); }
  ~XpuAllocator() { setAllocator(DeviceType::XPU, nullptr); }
};

std::vector<std::string> g_logged;

// The Logging layer's kernel for relu: records the operator, then goes on below its key.
void logCall(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  g_logged.push_back(op.operator_name().toString());
  op.redispatchBoxed(ks.remove(DispatchKey::Logging), stack);
}

}  // namespace

TEST_CASE("key fixture: XPU and Logging are keys like the others") {
  CHECK(kNumBackends == 6);
  CHECK(kDispatchTableSize == 41);  // 36 + XPU's 4 per-backend keys + Logging
  CHECK(toString(DispatchKey::XPU) == "XPU");
  CHECK(toString(BackendComponent::XPUBit) == "XPUBit");
  CHECK(parseDispatchKey("AutogradXPU").value() == DispatchKey::AutogradXPU);
  CHECK(parseDispatchKey("Logging").value() == DispatchKey::Logging);
  CHECK(toFunctionalityKey(DispatchKey::SparseXPU) == DispatchKey::Sparse);
  CHECK(autogradKeyForBackendKey(DispatchKey::XPU) == DispatchKey::AutogradXPU);
  CHECK(autogradKeyForBackendKey(DispatchKey::QuantizedXPU) == DispatchKey::AutogradOther);
  // Priorities: Meta stays the highest backend, Logging sits between Tracer and AutocastCPU.
  CHECK(DispatchKeySet({DispatchKey::XPU, DispatchKey::Meta}).highestPriorityTypeId() == DispatchKey::Meta);
  CHECK(DispatchKeySet({DispatchKey::XPU, DispatchKey::CUDA}).highestPriorityTypeId() == DispatchKey::XPU);
  CHECK(DispatchKeySet({DispatchKey::Logging, DispatchKey::Tracer}).highestPriorityTypeId() == DispatchKey::Logging);
  CHECK(DispatchKeySet({DispatchKey::Logging, DispatchKey::AutocastCPU}).highestPriorityTypeId() ==
        DispatchKey::AutocastCPU);
  // Key sets and aliases cover the new keys as the file says.
  CHECK(autograd_dispatch_keyset.has(DispatchKey::AutogradXPU));
  CHECK(getRuntimeKeySetForAlias(DispatchKey::CompositeExplicitAutograd).has(DispatchKey::XPU));
  CHECK(getRuntimeKeySetForAlias(DispatchKey::CompositeImplicitAutograd).has(DispatchKey::AutogradXPU));
  CHECK_FALSE(after_autograd_keyset.has(DispatchKey::Logging));
  CHECK(full_keyset.has(DispatchKey::Logging));
  // The device type.
  CHECK(Device("xpu:1") == Device(DeviceType::XPU, 1));
  CHECK(Device(DeviceType::XPU).str() == "xpu");
  CHECK(toBackendComponent(DeviceType::XPU) == BackendComponent::XPUBit);
  CHECK(toDeviceType(BackendComponent::XPUBit).value() == DeviceType::XPU);
  CHECK_THROWS_WITH(Device("xla"),
                    "invalid device string 'xla': expected cpu, cuda, privateuseone, xpu or meta, optionally "
                    "followed by :<index>");
}

TEST_CASE("key fixture: every operator runs on xpu tensors through one fallback, with autograd") {
  CHECK_THROWS_WITH(getAllocator(DeviceType::XPU), "no allocator is registered for device type xpu");
  XpuAllocator allocator;
  auto backend = privateuse1::installFallbackBackend(DeviceType::XPU);
  Tensor a = privateuse1::fromCpu(dk::tensor({1.0, -2.0, 3.0}), DeviceType::XPU);
  Tensor b = privateuse1::fromCpu(dk::tensor({10.0, 20.0, 30.0}), DeviceType::XPU);
  CHECK(a.device() == Device(DeviceType::XPU));
  CHECK(a.key_set().has(DispatchKey::XPU));
  CHECK(a.key_set().has(DispatchKey::AutogradXPU));
  // A generated operator: its XPU slot holds the fallback, its AutogradXPU slot the autograd kernel.
  CHECK(tableHas("dk::add", "Tensor", "XPU: xpu_cpu_fallback [backend fallback]"));
  Tensor s = dk::add(a, b);
  CHECK(s.device() == Device(DeviceType::XPU));
  CHECK(at(s, 1) == 18.0f);
  // Backward through AutogradXPU: every gradient operator runs on xpu too.
  a.requires_grad_();
  Tensor loss = dk::sum(dk::mul(dk::relu(a), b));
  loss.backward();
  REQUIRE(a.grad().defined());
  CHECK(a.grad().device() == Device(DeviceType::XPU));
  CHECK(at(a.grad(), 0) == 10.0f);
  CHECK(at(a.grad(), 1) == 0.0f);
  CHECK(at(a.grad(), 2) == 30.0f);
  // A native kernel at XPU wins over the fallback.
  int native_calls = 0;
  {
    Library native(Library::IMPL, "dk", DispatchKey::XPU);
    native.impl("relu", CppFunction([&native_calls](const Tensor& self) -> Tensor {
      ++native_calls;
      return self;
    }));
    CHECK(dk::relu(b).is_same(b));
    CHECK(native_calls == 1);
  }
}

TEST_CASE("key fixture: the Logging layer falls through until a thread includes it") {
  CHECK(tableHas("dk::relu", "", "Logging: fallthrough logging_fallthrough (default) [backend fallback]"));
  // A kernel for one operator at the layer; every other operator keeps falling through.
  Library layer(Library::IMPL, "dk", DispatchKey::Logging);
  layer.impl("relu", CppFunction::makeFromBoxedFunction<&logCall>().debug("logging_layer"));
  CHECK(tableHas("dk::relu", "", "Logging: logging_layer [kernel]"));
  g_logged.clear();
  Tensor x = dk::tensor({-1.0, 2.0});
  dk::relu(x);
  CHECK(g_logged.empty());  // not in any key set: never reached
  {
    IncludeDispatchKeyGuard on(DispatchKey::Logging);
    Tensor y = dk::relu(x);
    CHECK(y.data_ptr<float>()[0] == 0.0f);
    CHECK(y.data_ptr<float>()[1] == 2.0f);
    Tensor z = dk::add(x, x);  // no kernel at Logging: the default fallthrough
    CHECK(z.data_ptr<float>()[1] == 4.0f);
  }
  REQUIRE(g_logged.size() == 1);
  CHECK(g_logged[0] == "dk::relu");
}
