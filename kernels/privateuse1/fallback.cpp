// The PrivateUse1 example backend: one boxed fallback for every operator (Note [Fallback
// backend] in dk/dispatch/privateuse1_backend.h).
#include "dk/dispatch/privateuse1_backend.h"

#include <optional>
#include <string>
#include <vector>

#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/empty_tensor.h"

namespace dk::privateuse1 {

namespace {
std::atomic<int64_t> g_fallback_calls{0};

// A CPU tensor over the same host memory as `t` (PrivateUse1 keeps its data in host memory):
// lets the CPU copy kernel move data in and out without dispatching on PrivateUse1.
Tensor cpuAlias(const Tensor& t) {
  return Tensor(make_intrusive<TensorImpl>(t.storage(), computeTensorKeySet(Device(DeviceType::CPU), true),
                                           t.dtype(), Device(DeviceType::CPU), t.sizes(), t.strides(),
                                           t.storage_offset()));
}
}  // namespace

Tensor toCpu(const Tensor& t) {
  Tensor out = detail::empty_contiguous(t.sizes(), t.dtype(), Device(DeviceType::CPU));
  if (t.numel() > 0) out.copy_(cpuAlias(t));
  return out;
}

Tensor fromCpu(const Tensor& cpu, DeviceType device) {
  Tensor out = detail::empty_contiguous(cpu.sizes(), cpu.dtype(), Device(device));
  if (cpu.numel() > 0) {
    AutoDispatchBelowADInplaceOrView below;  // a data move: nothing for autograd to record
    cpuAlias(out).copy_(cpu);
  }
  return out;
}

namespace {
void writeBack(const Tensor& original, const Tensor& cpu) {
  if (original.numel() > 0) {
    AutoDispatchBelowADInplaceOrView below;  // a data move: nothing for autograd to record
    cpuAlias(original).copy_(cpu);
  }
}

// The backend's device comes from the key set: the slot that ran this fallback is the Dense key
// of the highest backend bit.
void fallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  g_fallback_calls.fetch_add(1, std::memory_order_relaxed);
  const std::optional<DeviceType> found = toDeviceType(ks.highestBackend());
  DK_CHECK(found.has_value(), "host-memory fallback for ", op.operator_name(), ": the backend ", ks.highestBackend(),
           " has no device type");
  const DeviceType device = *found;
  auto onBackend = [device](const Tensor& t) { return t.defined() && t.device().type == device; };
  const auto& args = op.schema().arguments();
  const size_t n = args.size();
  DK_CHECK(stack->size() >= n, "privateuseone fallback for ", op.operator_name(), ": ", n,
           " arguments expected on the stack, found ", stack->size());
  const size_t base = stack->size() - n;
  // Originals and their CPU copies, per tensor argument (lists flattened).
  std::vector<std::pair<Tensor, Tensor>> moved;
  std::vector<std::pair<Tensor, Tensor>> written;  // mutable (a!) arguments
  for (size_t i = 0; i < n; ++i) {
    IValue& v = (*stack)[base + i];
    bool mutable_arg = args[i].alias_info && args[i].alias_info->is_write;
    auto convert = [&](const Tensor& t) {
      Tensor cpu = toCpu(t);
      moved.emplace_back(t, cpu);
      if (mutable_arg) written.emplace_back(t, cpu);
      return cpu;
    };
    if (v.isTensor()) {
      Tensor t = v.toTensor();
      if (onBackend(t)) v = IValue(convert(t));
    } else if (v.isDevice() && v.toDevice().type == device) {
      v = IValue(Device(DeviceType::CPU));  // a factory's device: made on the CPU, moved below
    } else if (v.isList()) {
      std::vector<IValue> elements = v.toListElements();
      bool any = false;
      for (IValue& e : elements) {
        if (e.isTensor() && onBackend(e.toTensor())) {
          e = IValue(convert(e.toTensor()));
          any = true;
        }
      }
      if (any) v = IValue::makeList(v.listElementType(), std::move(elements));
    }
  }
  op.callBoxed(stack);  // the arguments are CPU tensors now: the CPU kernels run
  for (const auto& [original, cpu] : written) writeBack(original, cpu);
  auto back = [&](const Tensor& r) -> Tensor {
    for (const auto& [original, cpu] : moved) {
      if (cpu.is_same(r)) return original;  // an in-place or out= result: the original, updated
    }
    return r.defined() && r.device().type == DeviceType::CPU ? fromCpu(r, device) : r;
  };
  for (size_t i = base; i < stack->size(); ++i) {
    IValue& v = (*stack)[i];
    if (v.isTensor()) {
      v = IValue(back(v.toTensor()));
    } else if (v.isList()) {
      std::vector<IValue> elements = v.toListElements();
      for (IValue& e : elements)
        if (e.isTensor()) e = IValue(back(e.toTensor()));
      v = IValue::makeList(v.listElementType(), std::move(elements));
    }
  }
}
}  // namespace

std::unique_ptr<Library> installFallbackBackend(DeviceType device) {
  const DispatchKey key = toRuntimePerBackendKey(DispatchKey::Dense, toBackendComponent(device));
  auto lib = std::make_unique<Library>(Library::IMPL, "_", key, __FILE__, __LINE__);
  std::string name = device == DeviceType::PrivateUse1 ? "privateuse1" : std::string(toString(device));
  lib->fallback(CppFunction::makeFromBoxedFunction<&fallback>().debug(name + "_cpu_fallback"));
  return lib;
}

int64_t fallbackCalls() { return g_fallback_calls.load(std::memory_order_relaxed); }

}  // namespace dk::privateuse1
