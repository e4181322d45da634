// dk/tensor/storage.h: the memory behind tensors. A StorageImpl owns one DataPtr (data, device) and
// its size in bytes; tensors and their views share it through the refcounted Storage handle.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dk/core/core_types.h"
#include "dk/tensor/allocator.h"
#include "dk/util/intrusive_ptr.h"

namespace dk {

class StorageImpl : public intrusive_ptr_target {
 public:
  // `allocator` is the one that made `data` (null for memory the storage does not own, as
  // with from_blob): what a resize would allocate from.
  StorageImpl(DataPtr data, size_t nbytes, Allocator* allocator)
      : data_(std::move(data)), nbytes_(nbytes), allocator_(allocator) {}

  // Null for meta storage and for zero bytes.
  void* data() const { return data_.get(); }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return data_.device(); }
  Allocator* allocator() const { return allocator_; }
  const DataPtr& data_ptr() const { return data_; }

  // Replaces the memory (a resize); the old DataPtr frees its memory here.
  void set_data_ptr(DataPtr data, size_t nbytes) {
    data_ = std::move(data);
    nbytes_ = nbytes;
  }

 private:
  DataPtr data_;
  size_t nbytes_;
  Allocator* allocator_;
};

// A shared handle to a StorageImpl; default-constructed, it holds none (metadata-only tensors).
class Storage {
 public:
  Storage() = default;
  explicit Storage(intrusive_ptr<StorageImpl> impl) : impl_(std::move(impl)) {}

  // `nbytes` bytes from `allocator` for a tensor on `device`.
  static Storage allocate(size_t nbytes, Device device, Allocator* allocator) {
    return Storage(make_intrusive<StorageImpl>(allocator->allocate(nbytes, device), nbytes, allocator));
  }
  // Memory owned elsewhere, wrapped as-is (the DataPtr decides whether anything is freed).
  static Storage wrap(DataPtr data, size_t nbytes) {
    return Storage(make_intrusive<StorageImpl>(std::move(data), nbytes, nullptr));
  }

  bool defined() const { return static_cast<bool>(impl_); }
  void* data() const { return impl_ ? impl_->data() : nullptr; }
  size_t nbytes() const { return impl_ ? impl_->nbytes() : 0; }
  Device device() const { return impl_ ? impl_->device() : Device(); }
  Allocator* allocator() const { return impl_ ? impl_->allocator() : nullptr; }
  StorageImpl* unsafeGetStorageImpl() const { return impl_.get(); }
  uint32_t use_count() const { return impl_ ? impl_->use_count() : 0; }
  bool is_same(const Storage& o) const { return impl_ == o.impl_; }

 private:
  intrusive_ptr<StorageImpl> impl_;
};

}  // namespace dk
