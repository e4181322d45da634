// The tensor core: key-set computation, TensorImpl geometry and data pointer, views.
#include "dk/tensor/tensor.h"

#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk {

DispatchKeySet computeTensorKeySet(Device device, bool inference) {
  DispatchKeySet ks = DispatchKeySet(toBackendComponent(device.type)).add(DispatchKey::Dense);
  if (!inference) ks = ks.add(DispatchKey::ADInplaceOrView).add(DispatchKey::AutogradFunctionality);
  return ks;
}

TensorImpl::TensorImpl(DispatchKeySet key_set, ScalarType dtype, Device device, std::vector<int64_t> sizes)
    : key_set_(key_set), dtype_(dtype), device_(device), version_counter_(make_intrusive<VersionCounter>()) {
  set_sizes_contiguous(std::move(sizes));
}

TensorImpl::TensorImpl(Storage storage, DispatchKeySet key_set, ScalarType dtype, Device device,
                       std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t storage_offset)
    : TensorImpl(std::move(storage), make_intrusive<VersionCounter>(), key_set, dtype, device, std::move(sizes),
                 std::move(strides), storage_offset) {}

TensorImpl::TensorImpl(Storage storage, intrusive_ptr<VersionCounter> version_counter, DispatchKeySet key_set,
                       ScalarType dtype, Device device, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                       int64_t storage_offset)
    : key_set_(key_set),
      dtype_(dtype),
      device_(device),
      storage_offset_(storage_offset),
      storage_(std::move(storage)),
      version_counter_(std::move(version_counter)) {
  DK_CHECK(version_counter_, "TensorImpl: the version counter is null");
  set_sizes_and_strides(std::move(sizes), std::move(strides));
}

namespace detail {
std::atomic<TensorReleaseHook> tensor_release_hook{nullptr};
std::atomic<PythonObjectReleaseHook> python_object_release_hook{nullptr};
}  // namespace detail

TensorImpl::~TensorImpl() {
  // One relaxed load when no AllocationTracker is alive (Note [Tensor release observers]).
  const detail::TensorReleaseHook hook = detail::tensor_release_hook.load(std::memory_order_relaxed);
  if (__builtin_expect(hook != nullptr, 0)) hook(this);
  if (__builtin_expect(owns_python_object_.load(std::memory_order_acquire), 0)) {
    if (auto release = detail::python_object_release_hook.load(std::memory_order_acquire)) release(this);
  }
}

intrusive_ptr<TensorImpl> TensorImpl::shallow_copy_without_history() const {
  auto alias = make_intrusive<TensorImpl>(storage_, version_counter_, key_set_, dtype_, device_, sizes_, strides_,
                                          storage_offset_);
  alias->set_wrapped_number(is_wrapped_number_);
  return alias;
}

int64_t TensorImpl::size(int64_t dim) const {
  return sizes_[static_cast<size_t>(maybe_wrap_dim(dim, this->dim(), /*wrap_scalar=*/false))];
}

int64_t TensorImpl::stride(int64_t dim) const {
  return strides_[static_cast<size_t>(maybe_wrap_dim(dim, this->dim(), /*wrap_scalar=*/false))];
}

void TensorImpl::set_sizes_contiguous(std::vector<int64_t> sizes) {
  strides_ = computeContiguousStrides(sizes);
  sizes_ = std::move(sizes);
  refreshNumelAndContiguity();
}

void TensorImpl::set_sizes_and_strides(std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  DK_CHECK(sizes.size() == strides.size(), "set_sizes_and_strides: ", sizes.size(), " sizes but ", strides.size(),
           " strides");
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  refreshNumelAndContiguity();
}

void TensorImpl::refreshNumelAndContiguity() {
  numel_ = computeNumel(sizes_);
  is_contiguous_ = isContiguousLayout(sizes_, strides_);
}

void* TensorImpl::data() const {
  // Adding an offset to a null pointer is undefined behaviour, so null stays null.
  void* base = storage_.data();
  if (base == nullptr) return data_when_absent();
  return static_cast<char*>(base) + storage_offset_ * static_cast<int64_t>(itemsize());
}

namespace detail {

// Note [Undefined tensor impl]: constructed first among the library's globals; never destroyed.
UndefinedTensorImplHolder::UndefinedTensorImplHolder()
    : impl(DispatchKeySet(), ScalarType::Undefined, Device(DeviceType::CPU), {}) {}
__attribute__((init_priority(101))) UndefinedTensorImplHolder undefined_tensor_impl;

void throwDataPtrDtypeMismatch(ScalarType requested, ScalarType actual) {
  DK_ERROR("data_ptr: expected scalar type ", requested, " but found ", actual);
}
}  // namespace detail

Tensor make_tensor(std::vector<int64_t> sizes, ScalarType dtype, Device device) {
  return Tensor(make_intrusive<TensorImpl>(computeTensorKeySet(device, InferenceMode::is_enabled()), dtype,
                                           device, std::move(sizes)));
}

namespace detail {

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  DK_CHECK(base.defined(), "make_view: the base tensor is undefined");
  DK_CHECK(sizes.size() == strides.size(), "make_view: ", sizes.size(), " sizes but ", strides.size(), " strides");
  DK_CHECK(storage_offset >= 0, "make_view: negative storage offset ", storage_offset);
  TensorImpl* base_impl = base.unsafeGetTensorImpl();
  if (base_impl->has_storage() && base_impl->itemsize() > 0) {
    int64_t needed = storageElementsFor(sizes, strides, storage_offset);
    auto available = static_cast<int64_t>(base_impl->storage().nbytes() / base_impl->itemsize());
    DK_CHECK(needed <= available, "make_view: a view with sizes ", sizes, " and strides ", strides, " at offset ",
             storage_offset, " needs ", needed, " elements of storage, but the storage holds ", available);
  }
  // Shares base's version counter from the start (Note [Version counter]): no fresh one to drop.
  auto view = make_intrusive<TensorImpl>(base_impl->storage(), base_impl->version_counter(), base_impl->key_set(),
                                         base_impl->dtype(), base_impl->device(), sizes.vec(), strides.vec(),
                                         storage_offset);
  view->set_base(base_impl->is_view() ? base_impl->base() : base.getIntrusivePtr());
  return Tensor(std::move(view));
}

}  // namespace detail

}  // namespace dk
