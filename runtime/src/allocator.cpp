// The built-in allocators (host memory, meta) and the per-device-type registry.
#include "dk/allocator.h"

#include <atomic>
#include <new>

#include "dk/error.h"

namespace dk {

namespace {

class HostAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    if (nbytes == 0) return DataPtr(nullptr, device);
    void* p = ::operator new(nbytes, std::align_val_t{kHostAlignment});
    return DataPtr(p, p, &freeHost, device);
  }

 private:
  static void freeHost(void* p) { ::operator delete(p, std::align_val_t{kHostAlignment}); }
};

class MetaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t, Device device) override { return DataPtr(nullptr, device); }
};

HostAllocator host_allocator;
MetaAllocator meta_allocator;

constexpr size_t kNumDeviceTypes = 4;
constexpr size_t slot(DeviceType t) { return static_cast<size_t>(t); }

// Indexed by DeviceType; constant-initialized, so usable from other static initializers.
constinit std::atomic<Allocator*> registry[kNumDeviceTypes] = {
    &host_allocator,  // CPU
    nullptr,          // CUDA: registered by kernels/cuda
    &meta_allocator,  // Meta
    &host_allocator,  // PrivateUse1: host memory underneath
};
static_assert(slot(DeviceType::PrivateUse1) == kNumDeviceTypes - 1);

}  // namespace

Allocator* defaultHostAllocator() { return &host_allocator; }
Allocator* metaAllocator() { return &meta_allocator; }

Allocator* getAllocator(DeviceType type) {
  DK_CHECK(slot(type) < kNumDeviceTypes, "getAllocator: invalid device type ", static_cast<int>(type));
  Allocator* allocator = registry[slot(type)].load(std::memory_order_acquire);
  DK_CHECK(allocator != nullptr, "no allocator is registered for device type ", toString(type));
  return allocator;
}

Allocator* setAllocator(DeviceType type, Allocator* allocator) {
  DK_CHECK(slot(type) < kNumDeviceTypes, "setAllocator: invalid device type ", static_cast<int>(type));
  return registry[slot(type)].exchange(allocator, std::memory_order_acq_rel);
}

}  // namespace dk
