// dk/tensor/allocator.h: where tensor memory comes from. An Allocator hands out DataPtrs (owning
// pointers that know how to free themselves); one Allocator is registered per device type.
//
// Note [Allocators]
// Defaults: CPU and PrivateUse1 get host memory aligned to kHostAlignment bytes; Meta gets an
// allocator that returns no memory at all (meta tensors have sizes but no data); CUDA has none
// until kernels/cuda registers one with setAllocator, nor has a backend added by the key file
// until its code registers one. A zero-byte request gives a null pointer.
// Registered allocators are never freed by the registry: the caller keeps them alive.
#pragma once

#include <cstddef>
#include <utility>

#include "dk/core/core_types.h"

namespace dk {

inline constexpr size_t kHostAlignment = 64;

using DeleterFn = void (*)(void* context);

// An owning pointer to memory on a device. `get()` is where the data starts; `context()` is
// what the deleter receives (often the same pointer, or a heap object that knows more).
// Move-only; the deleter runs once, when the DataPtr is destroyed or cleared.
class DataPtr {
 public:
  DataPtr() = default;
  // Non-owning: nothing is freed.
  DataPtr(void* data, Device device) : data_(data), device_(device) {}
  DataPtr(void* data, void* context, DeleterFn deleter, Device device)
      : data_(data), context_(context), deleter_(deleter), device_(device) {}
  DataPtr(DataPtr&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        context_(std::exchange(o.context_, nullptr)),
        deleter_(std::exchange(o.deleter_, nullptr)),
        device_(o.device_) {}
  DataPtr& operator=(DataPtr&& o) noexcept {
    DataPtr moved(std::move(o));
    swap(moved);
    return *this;
  }
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  ~DataPtr() { clear(); }

  void* get() const { return data_; }
  void* context() const { return context_; }
  DeleterFn deleter() const { return deleter_; }
  Device device() const { return device_; }
  explicit operator bool() const { return data_ != nullptr; }

  // Frees the memory now (if owned) and leaves a null pointer on the same device.
  void clear() {
    if (deleter_) deleter_(context_);
    data_ = context_ = nullptr;
    deleter_ = nullptr;
  }
  void swap(DataPtr& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(context_, o.context_);
    std::swap(deleter_, o.deleter_);
    std::swap(device_, o.device_);
  }

 private:
  void* data_ = nullptr;
  void* context_ = nullptr;
  DeleterFn deleter_ = nullptr;
  Device device_;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // `nbytes` bytes for a tensor on `device`; the DataPtr carries `device`.
  virtual DataPtr allocate(size_t nbytes, Device device) = 0;
  // How many devices of its type the process can use (see dk::deviceCount).
  virtual int deviceCount() const { return 1; }
};

// The registered allocator for a device type; raises dk::Error when there is none
// ("no allocator is registered for device type cuda").
Allocator* getAllocator(DeviceType type);
// Registers `allocator` (not owned; null goes back to the device type's default) and returns
// the one that was in use (the default when none was registered).
Allocator* setAllocator(DeviceType type, Allocator* allocator);

// How many devices of `type` this process can use: the registered allocator's count (1 for the
// host and Meta; CUDA's asks the driver: 0 without a GPU), 0 when no allocator is registered
// (CUDA in a build without it). Never raises.
int deviceCount(DeviceType type);

// The built-in allocators, whatever is registered.
Allocator* defaultHostAllocator();  // kHostAlignment-aligned host memory
Allocator* metaAllocator();         // no memory: every DataPtr is null

// Note [Host block cache]
// glibc gives large blocks back to the kernel when they are freed (munmap, or trimming the top
// of the heap), and each 4 KiB page of the next such block faults on its first touch: a training
// step that frees and reallocates its 4 MiB weight gradients paid milliseconds for it. The host
// allocator keeps freed blocks of at least kHostCacheMinBytes (128 KiB, glibc's starting
// threshold for mmap: every block glibc would map itself) and hands one back to the next request
// of exactly the same size (training loops repeat their shapes), up to a total of
// DK_HOST_CACHE_MB megabytes (environment, read once;
// default 256, 0 turns the cache off; off in AddressSanitizer builds, so that use-after-free
// stays visible), the oldest dropped first. The cache takes a mutex, on these large
// allocations only.
inline constexpr size_t kHostCacheMinBytes = size_t{128} << 10;
// Frees every cached block now; returns how many bytes that gave back.
size_t emptyHostCache();
// Bytes held in the cache now.
size_t hostCacheBytes();

}  // namespace dk
