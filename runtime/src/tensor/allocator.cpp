// The built-in allocators (host memory, meta) and the per-device-type registry.
#include "dk/tensor/allocator.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "dk/util/error.h"

namespace dk {

namespace {

// Aligns by hand inside a plain malloc block (the DataPtr's context is the block): glibc's
// memalign splits chunks and sends the pieces down free's slow path, several hundred
// instructions a call, while an over-sized malloc/free stays in its per-thread cache.
class HostAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    if (nbytes == 0) return DataPtr(nullptr, device);
    void* block = nbytes <= SIZE_MAX - kPadding ? std::malloc(nbytes + kPadding) : nullptr;
    DK_CHECK(block != nullptr, "DefaultCPUAllocator: not enough memory: you tried to allocate ", nbytes, " bytes.");
    auto aligned = (reinterpret_cast<uintptr_t>(block) + kPadding) & ~uintptr_t{kHostAlignment - 1};
    return DataPtr(reinterpret_cast<void*>(aligned), block, &freeHost, device);
  }

 private:
  // malloc already aligns to alignof(max_align_t); the rest of kHostAlignment is padding.
  static constexpr size_t kPadding = kHostAlignment - alignof(std::max_align_t);
  static_assert(kHostAlignment % alignof(std::max_align_t) == 0);
  static void freeHost(void* block) { std::free(block); }
};

class MetaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t, Device device) override { return DataPtr(nullptr, device); }
};

HostAllocator host_allocator;
MetaAllocator meta_allocator;

constexpr size_t slot(DeviceType t) { return static_cast<size_t>(t); }

// Indexed by DeviceType; zero-initialized (constinit), so usable from other static initializers.
// An empty slot means the device type's default (defaultFor).
constinit std::atomic<Allocator*> registry[kNumDeviceTypes] = {};

// CPU and PrivateUse1 (host memory underneath) use the host allocator, Meta allocates nothing;
// CUDA's is registered by kernels/cuda, a backend added by the key file registers its own.
Allocator* defaultFor(DeviceType t) {
  if (t == DeviceType::CPU || t == DeviceType::PrivateUse1) return &host_allocator;
  if (t == DeviceType::Meta) return &meta_allocator;
  return nullptr;
}

}  // namespace

Allocator* defaultHostAllocator() { return &host_allocator; }
Allocator* metaAllocator() { return &meta_allocator; }

Allocator* getAllocator(DeviceType type) {
  DK_CHECK(slot(type) < kNumDeviceTypes, "getAllocator: invalid device type ", static_cast<int>(type));
  Allocator* allocator = registry[slot(type)].load(std::memory_order_acquire);
  if (allocator == nullptr) allocator = defaultFor(type);
  DK_CHECK(allocator != nullptr, "no allocator is registered for device type ", toString(type));
  return allocator;
}

Allocator* setAllocator(DeviceType type, Allocator* allocator) {
  DK_CHECK(slot(type) < kNumDeviceTypes, "setAllocator: invalid device type ", static_cast<int>(type));
  Allocator* previous = registry[slot(type)].exchange(allocator, std::memory_order_acq_rel);
  return previous != nullptr ? previous : defaultFor(type);
}

}  // namespace dk
