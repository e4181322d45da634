// dk/tensor/tensor.h: the refcounted Tensor handle and the TensorImpl it points to.
//
// A TensorImpl is the metadata of one tensor: the DispatchKeySet calls read (Note [Tensor key
// set]), dtype, device, sizes, strides and storage offset into a shared Storage, the version
// counter it shares with its views (Note [Version counter]), and a slot for autograd metadata.
// Operators are not here: they are dispatched, generated from schemas, and implemented by
// kernels, which use the low-level helpers of dk/tensor/empty_tensor.h and dk/tensor/tensor_geometry.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dk/core/core_types.h"
#include "dk/core/dispatch_key_set.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/storage.h"
#include "dk/tensor/tensor_options.h"
#include "dk/util/array_ref.h"
#include "dk/util/intrusive_ptr.h"

namespace dk {

// Note [Tensor key set]
// A tensor on backend B has {Dense, ADInplaceOrView, AutogradFunctionality} with backend bit
// B; an inference tensor (made inside InferenceMode) has only Dense with bit B, so calls on
// it never reach an autograd or ADInplaceOrView slot.
DispatchKeySet computeTensorKeySet(Device device, bool inference);

// Note [Version counter]
// Every in-place change to a tensor's data bumps its version; autograd compares versions to
// detect that a value saved for backward was overwritten. A view writes the same memory as its
// base, so a view and its base share one counter: make_view hands the base's counter on.
class VersionCounter : public intrusive_ptr_target {
 public:
  uint32_t version() const { return version_.load(std::memory_order_acquire); }
  void bump() { version_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  std::atomic<uint32_t> version_{0};
};

// What autograd keeps on a tensor (requires_grad, grad, grad_fn, ...). Empty here: autograd
// derives from it and stores its own state.
class AutogradMetaInterface {
 public:
  virtual ~AutogradMetaInterface() = default;
};

class TensorImpl;
namespace detail {
// Note [Tensor release observers]
// Tools that track tensor lifetimes (AllocationTracker, in a higher layer) are told when a
// TensorImpl dies through one hook they install here. The destructor pays one relaxed load
// while none is installed. The hook must stay callable for the life of the process (a
// function, not a closure), since a destructor may have loaded it just before it is cleared.
using TensorReleaseHook = void (*)(const TensorImpl* impl);
extern std::atomic<TensorReleaseHook> tensor_release_hook;
inline void setTensorReleaseHook(TensorReleaseHook hook) { tensor_release_hook.store(hook); }

// The Python package's hook for a TensorImpl that dies owning its Python object (Note [One
// Python object per tensor] in python/src/python_objects.cpp): it releases the object.
using PythonObjectReleaseHook = void (*)(TensorImpl* impl);
extern std::atomic<PythonObjectReleaseHook> python_object_release_hook;
}  // namespace detail

class TensorImpl : public intrusive_ptr_target {
 public:
  // Metadata only: contiguous strides, offset 0, no storage (data_ptr() is null).
  TensorImpl(DispatchKeySet key_set, ScalarType dtype, Device device, std::vector<int64_t> sizes);
  // A tensor over `storage` with the given geometry, and a fresh version counter.
  TensorImpl(Storage storage, DispatchKeySet key_set, ScalarType dtype, Device device, std::vector<int64_t> sizes,
             std::vector<int64_t> strides, int64_t storage_offset);
  // The same with a given version counter (not null): a view's is its base's.
  TensorImpl(Storage storage, intrusive_ptr<VersionCounter> version_counter, DispatchKeySet key_set, ScalarType dtype,
             Device device, std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t storage_offset);
  ~TensorImpl() override;

  // Fast: one load (Note [Tensor key set]).
  DispatchKeySet key_set() const { return key_set_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }
  size_t itemsize() const { return elementSize(dtype_); }

  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t size(int64_t dim) const;    // wraps negative dims
  int64_t stride(int64_t dim) const;  // wraps negative dims
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  // Row-major dense: cached, recomputed whenever sizes or strides change.
  bool is_contiguous() const { return is_contiguous_; }

  // Geometry setters for kernels (resize_, as_strided_, set_): they keep numel and
  // is_contiguous in step. They do not check the storage is large enough.
  void set_sizes_contiguous(std::vector<int64_t> sizes);
  void set_sizes_and_strides(std::vector<int64_t> sizes, std::vector<int64_t> strides);
  void set_storage_offset(int64_t storage_offset) { storage_offset_ = storage_offset; }

  const Storage& storage() const { return storage_; }
  bool has_storage() const { return storage_.defined(); }
  void set_storage(Storage storage) { storage_ = std::move(storage); }
  // storage data + storage_offset * itemsize; null when there is no data (metadata-only, meta,
  // or zero bytes).
  void* data() const;

  const intrusive_ptr<VersionCounter>& version_counter() const { return version_counter_; }
  void set_version_counter(intrusive_ptr<VersionCounter> counter) { version_counter_ = std::move(counter); }
  uint32_t version() const { return version_counter_->version(); }
  void bump_version() { version_counter_->bump(); }

  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) { autograd_meta_ = std::move(meta); }

  // A view shares its base's storage and version counter; base() is the tensor that owns the
  // memory (a view of a view records the original base). Null when not a view.
  bool is_view() const { return static_cast<bool>(base_); }
  const intrusive_ptr<TensorImpl>& base() const { return base_; }
  void set_base(intrusive_ptr<TensorImpl> base) { base_ = std::move(base); }

  // A 0-dim tensor made from a Python-style number (a Scalar argument turned into a tensor):
  // it takes part in type promotion like a Scalar (dk/tensor/type_promotion.h).
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool on) { is_wrapped_number_ = on; }

  bool is_inference() const { return !key_set_.has(DispatchKey::ADInplaceOrView); }

  // The Python object standing for this tensor (the Python package, python/): one per
  // TensorImpl, so that `x.add_(1) is x`, a mode's result is the object its caller gets, and
  // weak references work. Usually borrowed (the object holds the tensor and clears this when it
  // goes); owned while only C++ holds the tensor, and then released by the destructor through
  // detail::python_object_release_hook. Written with Python's GIL held only.
  void* python_object() const { return python_object_; }
  void set_python_object(void* obj) { python_object_ = obj; }
  bool owns_python_object() const { return owns_python_object_.load(std::memory_order_acquire); }
  void set_owns_python_object(bool owns) { owns_python_object_.store(owns, std::memory_order_release); }

  // Same storage, geometry, key set and version counter, and no autograd metadata or base: what
  // autograd keeps of a node's own output without holding the node through the output's
  // grad_fn. A subclass (a wrapper of the function transforms) returns its own kind.
  virtual intrusive_ptr<TensorImpl> shallow_copy_without_history() const;

  // The shared impl of undefined tensors: empty key set, never freed. Fast: the address of a
  // global, so Tensor compares against it inline (Note [Undefined tensor impl]).
  static TensorImpl* undefined();

 protected:
  void refreshNumelAndContiguity();
  // What data() gives when there is no data (no storage, a meta tensor, zero bytes): null. A
  // tensor that pretends to have data it does not (a fake tensor) raises instead.
  virtual void* data_when_absent() const { return nullptr; }

  DispatchKeySet key_set_;
  ScalarType dtype_;
  Device device_;
  bool is_contiguous_ = true;
  bool is_wrapped_number_ = false;
  void* python_object_ = nullptr;
  std::atomic<bool> owns_python_object_{false};
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;
  Storage storage_;
  intrusive_ptr<VersionCounter> version_counter_;
  intrusive_ptr<TensorImpl> base_;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
};

namespace detail {
[[noreturn]] void throwDataPtrDtypeMismatch(ScalarType requested, ScalarType actual);

// Note [Undefined tensor impl]
// Every undefined Tensor points at one TensorImpl with an empty key set, so key_set() needs no
// null check. It lives in a global of the library (not a function-local static) so that its
// address is a link-time constant: Tensor's constructors, destructor and defined() compare
// against it without a call or a guard check. The holder is a union with an empty destructor,
// so the impl is never destroyed (tensors in other globals may outlive the library's
// destructors), and Tensor never refcounts it. It is constructed before the library's other
// initializers (init_priority); before that its zero-filled static memory already reads as an
// impl with an empty key set and no sizes.
union UndefinedTensorImplHolder {
  UndefinedTensorImplHolder();
  ~UndefinedTensorImplHolder() {}  // never destroyed
  TensorImpl impl;
};
extern UndefinedTensorImplHolder undefined_tensor_impl;
}  // namespace detail

inline TensorImpl* TensorImpl::undefined() { return &detail::undefined_tensor_impl.impl; }

}  // namespace dk

#include "dk/generated/TensorMethodTypes.h"

namespace dk {

namespace autograd {
class Node;
}  // namespace autograd

class Tensor {
 public:
  // An undefined tensor: points at the shared undefined impl, so key_set() needs no null check.
  Tensor() : impl_(TensorImpl::undefined()) {}
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(impl ? impl.release() : TensorImpl::undefined()) {}
  Tensor(const Tensor& o) : impl_(o.impl_) { retain(); }
  Tensor(Tensor&& o) noexcept : impl_(o.impl_) { o.impl_ = TensorImpl::undefined(); }
  Tensor& operator=(const Tensor& o) {
    Tensor copy(o);
    std::swap(impl_, copy.impl_);
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    std::swap(impl_, o.impl_);
    return *this;
  }
  ~Tensor() { release(); }

  bool defined() const { return impl_ != TensorImpl::undefined(); }
  // Fast: one load from the impl (Note [Tensor key set]).
  // GCC 12 at -O3 warns here, falsely, when a call that passes an empty std::optional<Tensor>
  // is inlined whole into its caller: the dispatcher reads an optional's key set only when it
  // is engaged (detail::accumulateKeySet), but the warning does not follow that test.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  DispatchKeySet key_set() const { return impl_->key_set(); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  ScalarType dtype() const { return impl_->dtype(); }
  ScalarType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  bool is_cpu() const { return impl_->device().type == DeviceType::CPU; }
  bool is_cuda() const { return impl_->device().type == DeviceType::CUDA; }
  bool is_meta() const { return impl_->device().type == DeviceType::Meta; }
  TensorOptions options() const {
    return TensorOptions().dtype(dtype()).device(device()).layout(Layout::Strided);
  }

  // Views of the tensor's own arrays, as in PyTorch (valid while the tensor lives and is not
  // resized): t.sizes().vec() copies, std::vector<int64_t> s = t.sizes() too.
  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  int64_t size(int64_t dim) const { return impl_->size(dim); }
  int64_t stride(int64_t dim) const { return impl_->stride(dim); }
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  size_t element_size() const { return impl_->itemsize(); }
  size_t nbytes() const { return static_cast<size_t>(impl_->numel()) * impl_->itemsize(); }

  const Storage& storage() const { return impl_->storage(); }
  bool has_storage() const { return impl_->has_storage(); }
  void* data_ptr() const { return impl_->data(); }
  // The data as T*, after checking T is the C++ type of dtype():
  // "data_ptr: expected scalar type Float but found Long".
  template <class T>
  T* data_ptr() const {
    if (impl_->dtype() != cppTypeToScalarType<T>) detail::throwDataPtrDtypeMismatch(cppTypeToScalarType<T>, impl_->dtype());
    return static_cast<T*>(impl_->data());
  }

  int64_t _version() const { return impl_->version(); }
  bool is_view() const { return impl_->is_view(); }
  // The base of a view; an undefined tensor when this is not a view.
  Tensor base() const { return Tensor(impl_->base()); }

  bool is_inference() const { return impl_->is_inference(); }
  TensorImpl* unsafeGetTensorImpl() const { return impl_; }
  intrusive_ptr<TensorImpl> getIntrusivePtr() const {
    return defined() ? intrusive_ptr<TensorImpl>(impl_) : intrusive_ptr<TensorImpl>();
  }
  uint32_t use_count() const { return defined() ? impl_->use_count() : 0; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // Autograd (defined in runtime/src/autograd/tensor_autograd.cpp; Note [Autograd metadata] in
  // dk/autograd/autograd_meta.h). requires_grad_ raises "you can only change requires_grad flags
  // of leaf variables." when turning it off on a non-leaf, and "only Tensors of floating point
  // dtype can require gradients" for other dtypes.
  const Tensor& requires_grad_(bool requires_grad = true) const;
  bool requires_grad() const;
  // The accumulated gradient (leaves) or the retained one (retain_grad); undefined when none.
  const Tensor& grad() const;
  Tensor& mutable_grad() const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  bool is_leaf() const;
  uint32_t output_nr() const;
  void retain_grad() const;
  bool retains_grad() const;
  // Returns a handle for remove_hook; the hook returns an undefined tensor to keep the gradient.
  unsigned register_hook(std::function<Tensor(const Tensor&)> hook) const;
  // A hook that returns nothing only looks at the gradient (as PyTorch's void hooks).
  template <class Hook, std::enable_if_t<std::is_void_v<std::invoke_result_t<Hook&, const Tensor&>>, int> = 0>
  unsigned register_hook(Hook&& hook) const {
    return register_hook(std::function<Tensor(const Tensor&)>(
        [h = std::forward<Hook>(hook)](const Tensor& grad) mutable -> Tensor {
          h(grad);
          return Tensor();
        }));
  }
  void remove_hook(unsigned handle) const;
  // retain_graph defaults to create_graph (dk/autograd/engine.h). With `inputs`, gradients are
  // accumulated into the .grad() of those tensors only (leaves or not), as in PyTorch.
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, std::optional<ArrayRef<Tensor>> inputs = std::nullopt) const;

  // The operators with `variants: method` (generated from schemas/native_functions.yaml;
  // defined out of line in the generated TensorMethods.cpp, above the dispatcher, so this
  // header includes none of the operators: Note [Generated calls]).
#include "dk/generated/TensorMethodDecls.inc"

  // item() as a C++ value, as in PyTorch: x.item<float>(), x.item<int64_t>(). (Self makes the
  // call dependent, so a schema file without an `item` method still compiles this header.)
  template <class T, class Self = Tensor>
  T item() const {
    return static_cast<const Self&>(*this).item().template to<T>();
  }

  // Takes over one reference the caller owns (used by IValue).
  static Tensor reclaim(TensorImpl* impl) {
    Tensor t;
    t.impl_ = impl;
    return t;
  }
  // Gives up this handle's reference to the caller (used by IValue).
  TensorImpl* release_impl() { return std::exchange(impl_, TensorImpl::undefined()); }

 private:
  void retain() const {
    if (defined()) impl_->incref();
  }
  void release() const {
    if (defined()) impl_->decref();
  }
  TensorImpl* impl_;
};
static_assert(sizeof(Tensor) == sizeof(void*), "Tensor is one pointer wide");

// A metadata-only tensor (no data): sizes, dtype and device, with the key set computed for
// the device and the current InferenceMode. Allocating constructors are in dk/tensor/empty_tensor.h.
Tensor make_tensor(std::vector<int64_t> sizes, ScalarType dtype = ScalarType::Float, Device device = Device(DeviceType::CPU));

namespace detail {
// A view of `base`: same storage, version counter, key set, dtype and device, new geometry;
// records base's base (or base itself) as its base. Checks the view stays inside the storage
// when base has storage: "make_view: a view with sizes [4] and strides [2] at offset 1 needs
// 8 elements of storage, but the storage holds 6".
Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
}  // namespace detail

// PyTorch's repr (Note [Tensor printing] in tensor_print.cpp):
//   tensor([[1., 2.],
//           [3., 4.]])
//   tensor([0.1000, 2.5000], dtype=float64)
//   tensor(..., device='meta', size=(2, 3))
std::ostream& operator<<(std::ostream& out, const Tensor& t);
// The same text with "dtype=<dtype_prefix>float64" and more suffixes after the others, wrapped
// the same way: Python's repr adds "requires_grad=True" or "grad_fn=<MulBackward0>".
std::string formatTensor(const Tensor& t, std::string_view dtype_prefix, const std::vector<std::string>& extra_suffixes);

}  // namespace dk
