// Fake tensors and FakeTensorMode (Note [Fake tensors]).
#include "dk/layers/fake_tensor.h"

#include <optional>
#include <utility>
#include <vector>

#include "dk/generated/ops/empty_strided.h"

namespace dk {

namespace {

DispatchKeySet fakeKeySet(const Tensor& meta, Device device) {
  return computeTensorKeySet(device, meta.is_inference()).add(DispatchKey::Python);
}

bool isDeviceType(const Type& t) {
  return t.kind() == TypeKind::Device || (t.kind() == TypeKind::Optional && t.element().kind() == TypeKind::Device);
}

// A meta tensor with t's sizes, strides and dtype; made below any mode, so a real meta tensor.
Tensor fakeGeometry(const Tensor& t) {
  const detail::KeySetChange no_modes = detail::KeySetChange::apply({}, {}, DispatchKeySet(DispatchKey::Python), {});
  struct Undo {
    const detail::KeySetChange& change;
    ~Undo() { change.undo(); }
  } undo{no_modes};
  return dk::empty_strided(t.sizes(), t.strides(), t.dtype(), std::nullopt, Device(DeviceType::Meta));
}

}  // namespace

FakeTensorImpl::FakeTensorImpl(Tensor meta, Device device)
    : TensorImpl(Storage(), fakeKeySet(meta, device), meta.dtype(), device,
                 std::vector<int64_t>(meta.sizes().begin(), meta.sizes().end()),
                 std::vector<int64_t>(meta.strides().begin(), meta.strides().end()), meta.storage_offset()),
      meta_(std::move(meta)) {}

intrusive_ptr<TensorImpl> FakeTensorImpl::shallow_copy_without_history() const {
  auto copy = make_intrusive<FakeTensorImpl>(meta_, device());
  copy->set_version_counter(version_counter());
  return copy;
}

void* FakeTensorImpl::data_when_absent() const {
  DK_ERROR("data_ptr() of a fake tensor (", dtype(), " ", IntArrayRef(sizes()), " on ", device(), "): a fake tensor has no data "
           "(Note [Fake tensors])");
}

const FakeTensorImpl* maybeFake(const Tensor& t) {
  if (!t.key_set().has(DispatchKey::Python)) return nullptr;
  return dynamic_cast<const FakeTensorImpl*>(t.unsafeGetTensorImpl());
}

Tensor FakeTensorMode::fromTensor(const Tensor& t) { return fromTensor(t, t.device()); }

Tensor FakeTensorMode::fromTensor(const Tensor& t, Device device) {
  DK_CHECK(t.defined(), "FakeTensorMode::fromTensor: the tensor is undefined");
  if (const FakeTensorImpl* f = maybeFake(t); f != nullptr && f->device() == device) return t;
  const Tensor& source = maybeFake(t) ? maybeFake(t)->meta() : t;
  Tensor meta = fakeGeometry(source);
  return Tensor(make_intrusive<FakeTensorImpl>(std::move(meta), device));
}

int64_t FakeTensorMode::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

void FakeTensorMode::dispatch(const OperatorHandle& op, DispatchKeySet /*ks*/, Stack* stack) {
  const FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments().size();
  const size_t base = stack->size() - n;
  std::vector<IValue> inputs(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  std::optional<Device> device;       // where the real program would put the outputs
  std::optional<Device> dim_device;   // the first fake input with dims (a 0-dim one may be a cpu scalar)
  bool any_fake = false;
  for (size_t i = 0; i < n; ++i) {
    const Argument& a = schema.arguments()[i];
    IValue& v = (*stack)[base + i];
    if (isDeviceType(a.type) && !v.isNone()) {
      device = v.toDevice();
      v = IValue(Device(DeviceType::Meta));
      continue;
    }
    mapTensors(v, [&](const Tensor& t) -> Tensor {
      if (!t.defined()) return t;
      const FakeTensorImpl* f = maybeFake(t);
      if (f == nullptr && t.unsafeGetTensorImpl()->is_wrapped_number()) {
        // A Scalar argument as a 0-dim cpu tensor (wrapScalar): a constant, as in PyTorch.
        Tensor meta = fakeGeometry(t);
        meta.unsafeGetTensorImpl()->set_wrapped_number(true);
        return meta;
      }
      DK_CHECK(f != nullptr, "FakeTensorMode: ", op.operator_name(), " got a real tensor (argument '", a.name,
               "'); make it fake first with FakeTensorMode::fromTensor");
      any_fake = true;
      if (!dim_device && t.dim() > 0) dim_device = t.device();
      if (!device && !dim_device) device = t.device();
      return f->meta();
    });
  }
  if (dim_device && !device) device = dim_device;
  bool factory = !any_fake;
  if (factory) {
    // A factory with no device argument given: cpu, built on Meta.
    for (size_t i = 0; i < n && !device; ++i) {
      if (!isDeviceType(schema.arguments()[i].type)) continue;
      device = Device(DeviceType::CPU);
      (*stack)[base + i] = IValue(Device(DeviceType::Meta));
    }
  }
  bool tensor_returns = false;
  for (const Argument& r : schema.returns()) tensor_returns = tensor_returns || r.type.isTensorLike();
  DK_CHECK(tensor_returns || !any_fake, "FakeTensorMode: ", op.operator_name(), " reads the data of a fake tensor, "
           "which has none");
  op.callBoxed(stack);
  const Device out_device = device.value_or(Device(DeviceType::CPU));
  const size_t nrets = schema.returns().size();
  const size_t rbase = stack->size() - nrets;
  int64_t made = 0;
  for (size_t j = 0; j < nrets; ++j) {
    if (std::optional<size_t> i = writtenArgumentOfReturn(schema, j)) {
      (*stack)[rbase + j] = inputs[*i];  // in place or out=: the fake that was written
      continue;
    }
    const bool view = schema.returns()[j].alias_info.has_value();
    mapTensors((*stack)[rbase + j], [&](const Tensor& t) -> Tensor {
      if (!t.defined()) return t;
      if (!view) made += static_cast<int64_t>(t.nbytes());
      return Tensor(make_intrusive<FakeTensorImpl>(t, out_device));
    });
  }
  std::lock_guard<std::mutex> lock(mutex_);
  bytes_ += made;
}

}  // namespace dk
