// dk/util/intrusive_ptr.h: a reference count stored inside the object, for tensors and boxed
// heap values (strings, lists, tuples, objects). One pointer wide, so an IValue stays 16 bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace dk {

class intrusive_ptr_target {
 public:
  intrusive_ptr_target() = default;
  intrusive_ptr_target(const intrusive_ptr_target&) : refcount_(0) {}
  intrusive_ptr_target& operator=(const intrusive_ptr_target&) { return *this; }
  virtual ~intrusive_ptr_target() = default;

  uint32_t use_count() const { return refcount_.load(std::memory_order_acquire); }

  // Raw reference counting, for holders that manage the count themselves (IValue, Tensor).
  void incref() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  void decref() const {
    if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  mutable std::atomic<uint32_t> refcount_{0};
};

template <class T>
class intrusive_ptr {
 public:
  intrusive_ptr() = default;
  intrusive_ptr(std::nullptr_t) {}  // NOLINT: implicit like shared_ptr
  // Takes a new reference to `p` (which may already be shared).
  explicit intrusive_ptr(T* p) : p_(p) {
    if (p_) p_->incref();
  }
  intrusive_ptr(const intrusive_ptr& o) : p_(o.p_) {
    if (p_) p_->incref();
  }
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <class U>
  intrusive_ptr(intrusive_ptr<U> o) : p_(o.release()) {}  // NOLINT: derived-to-base
  ~intrusive_ptr() {
    if (p_) p_->decref();
  }
  intrusive_ptr& operator=(intrusive_ptr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  // Gives up ownership without decrementing; the caller now owns one reference.
  T* release() { return std::exchange(p_, nullptr); }
  // Adopts a reference the caller already owns.
  static intrusive_ptr reclaim(T* p) {
    intrusive_ptr r;
    r.p_ = p;
    return r;
  }
  bool operator==(const intrusive_ptr& o) const { return p_ == o.p_; }

 private:
  T* p_ = nullptr;
};

template <class T, class... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace dk
