// The built-in allocators (host memory, meta) and the per-device-type registry.
#include "dk/tensor/allocator.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "dk/util/error.h"

namespace dk {

namespace {

// Freed large host blocks by size, oldest first (Note [Host block cache]).
class HostBlockCache {
 public:
  // A cached block of exactly `block_bytes`, or null.
  void* take(size_t block_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
      if (it->bytes != block_bytes) continue;
      void* block = it->block;
      held_ -= it->bytes;
      blocks_.erase(std::next(it).base());
      return block;
    }
    return nullptr;
  }
  // Keeps `block`, or frees it when the cache is off or the block alone exceeds the limit.
  void give(void* block, size_t block_bytes) {
    const size_t limit = limitBytes();
    if (block_bytes > limit) {
      std::free(block);
      return;
    }
    std::vector<void*> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_.push_back({block, block_bytes});
      held_ += block_bytes;
      while (held_ > limit) {
        evicted.push_back(blocks_.front().block);
        held_ -= blocks_.front().bytes;
        blocks_.erase(blocks_.begin());
      }
    }
    for (void* b : evicted) std::free(b);
  }
  size_t clear() {
    std::vector<Entry> all;
    size_t freed = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      all.swap(blocks_);
      freed = std::exchange(held_, 0);
    }
    for (const Entry& e : all) std::free(e.block);
    return freed;
  }
  size_t held() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }

 private:
  static size_t limitBytes() {
    static const size_t limit = [] {
#if defined(__SANITIZE_ADDRESS__)
      size_t mb = 0;
#else
      size_t mb = 256;
#endif
      if (const char* env = std::getenv("DK_HOST_CACHE_MB")) mb = static_cast<size_t>(std::strtoull(env, nullptr, 10));
      return mb << 20;
    }();
    return limit;
  }
  struct Entry {
    void* block;
    size_t bytes;
  };
  std::mutex mutex_;
  std::vector<Entry> blocks_;
  size_t held_ = 0;
};

// Never destroyed: tensors freed by other static destructors may still give blocks back.
HostBlockCache& hostCache() {
  static HostBlockCache* cache = new HostBlockCache();
  return *cache;
}

// Aligns by hand inside a plain malloc block (the DataPtr's context is the block): glibc's
// memalign splits chunks and sends the pieces down free's slow path, several hundred
// instructions a call, while an over-sized malloc/free stays in its per-thread cache. A block
// of kHostCacheMinBytes or more starts with a header holding its size, for the cache.
class HostAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    if (nbytes == 0) return DataPtr(nullptr, device);
    if (nbytes >= kHostCacheMinBytes) return allocateLarge(nbytes, device);
    void* block = nbytes <= SIZE_MAX - kPadding ? std::malloc(nbytes + kPadding) : nullptr;
    DK_CHECK(block != nullptr, "DefaultCPUAllocator: not enough memory: you tried to allocate ", nbytes, " bytes.");
    auto aligned = (reinterpret_cast<uintptr_t>(block) + kPadding) & ~uintptr_t{kHostAlignment - 1};
    return DataPtr(reinterpret_cast<void*>(aligned), block, &freeHost, device);
  }

 private:
  // malloc already aligns to alignof(max_align_t); the rest of kHostAlignment is padding.
  static constexpr size_t kPadding = kHostAlignment - alignof(std::max_align_t);
  static_assert(kHostAlignment % alignof(std::max_align_t) == 0);
  // A large block: [size_t block size][padding][data aligned to kHostAlignment].
  static constexpr size_t kLargeOverhead = sizeof(size_t) + kHostAlignment;
  static void freeHost(void* block) { std::free(block); }
  static void freeLarge(void* block) { hostCache().give(block, *static_cast<size_t*>(block)); }

  static DataPtr allocateLarge(size_t nbytes, Device device) {
    DK_CHECK(nbytes <= SIZE_MAX - kLargeOverhead, "DefaultCPUAllocator: not enough memory: you tried to allocate ",
             nbytes, " bytes.");
    const size_t block_bytes = nbytes + kLargeOverhead;
    void* block = hostCache().take(block_bytes);
    if (block == nullptr) block = std::malloc(block_bytes);
    DK_CHECK(block != nullptr, "DefaultCPUAllocator: not enough memory: you tried to allocate ", nbytes, " bytes.");
    *static_cast<size_t*>(block) = block_bytes;
    auto aligned = (reinterpret_cast<uintptr_t>(block) + sizeof(size_t) + kHostAlignment - 1) &
                   ~uintptr_t{kHostAlignment - 1};
    return DataPtr(reinterpret_cast<void*>(aligned), block, &freeLarge, device);
  }
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
size_t emptyHostCache() { return hostCache().clear(); }
size_t hostCacheBytes() { return hostCache().held(); }
Allocator* metaAllocator() { return &meta_allocator; }

Allocator* getAllocator(DeviceType type) {
  DK_CHECK(slot(type) < kNumDeviceTypes, "getAllocator: invalid device type ", static_cast<int>(type));
  Allocator* allocator = registry[slot(type)].load(std::memory_order_acquire);
  if (allocator == nullptr) allocator = defaultFor(type);
  DK_CHECK(allocator != nullptr, "no allocator is registered for device type ", toString(type));
  return allocator;
}

int deviceCount(DeviceType type) {
  if (slot(type) >= kNumDeviceTypes) return 0;
  Allocator* allocator = registry[slot(type)].load(std::memory_order_acquire);
  if (allocator == nullptr) allocator = defaultFor(type);
  return allocator == nullptr ? 0 : allocator->deviceCount();
}

Allocator* setAllocator(DeviceType type, Allocator* allocator) {
  DK_CHECK(slot(type) < kNumDeviceTypes, "setAllocator: invalid device type ", static_cast<int>(type));
  Allocator* previous = registry[slot(type)].exchange(allocator, std::memory_order_acq_rel);
  return previous != nullptr ? previous : defaultFor(type);
}

}  // namespace dk
