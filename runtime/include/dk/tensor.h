// dk/tensor.h: the refcounted Tensor handle and the TensorImpl it points to.
//
// This is the core the dispatcher needs: every TensorImpl carries the DispatchKeySet that
// calls read (Note [Tensor key set]), plus sizes, dtype and device. Storage, strides and
// autograd metadata grow here with the tensor library.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "dk/core_types.h"
#include "dk/dispatch_key_set.h"
#include "dk/intrusive_ptr.h"

namespace dk {

// Note [Tensor key set]
// A tensor on backend B has {Dense, ADInplaceOrView, AutogradFunctionality} with backend bit
// B; an inference tensor (made inside InferenceMode) has only Dense with bit B, so calls on
// it never reach an autograd or ADInplaceOrView slot.
DispatchKeySet computeTensorKeySet(Device device, bool inference);

class TensorImpl : public intrusive_ptr_target {
 public:
  TensorImpl(DispatchKeySet key_set, ScalarType dtype, Device device, std::vector<int64_t> sizes);

  DispatchKeySet key_set() const { return key_set_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const;
  bool is_inference() const { return !key_set_.has(DispatchKey::ADInplaceOrView); }

  // The shared impl of undefined tensors: empty key set, never freed.
  static TensorImpl* undefined();

 protected:
  DispatchKeySet key_set_;
  ScalarType dtype_;
  Device device_;
  std::vector<int64_t> sizes_;
};

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
  DispatchKeySet key_set() const { return impl_->key_set(); }
  ScalarType dtype() const { return impl_->dtype(); }
  ScalarType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  const std::vector<int64_t>& sizes() const { return impl_->sizes(); }
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  bool is_inference() const { return impl_->is_inference(); }
  TensorImpl* unsafeGetTensorImpl() const { return impl_; }
  uint32_t use_count() const { return defined() ? impl_->use_count() : 0; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

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

// A metadata-only tensor (no data yet): sizes, dtype and device, with the key set
// computed for the device and the current InferenceMode.
Tensor make_tensor(std::vector<int64_t> sizes, ScalarType dtype = ScalarType::Float, Device device = Device(DeviceType::CPU));

std::ostream& operator<<(std::ostream& out, const Tensor& t);

}  // namespace dk
