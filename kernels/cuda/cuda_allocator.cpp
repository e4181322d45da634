// The CUDA caching allocator (Note [CUDA caching allocator] in kernels/cuda/cuda_allocator.h).
#include "cuda_allocator.h"

#include <cuda_runtime_api.h>

#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "cuda_error.h"
#include "device_guard.h"
#include "dk/util/error.h"

namespace dk::cuda {

namespace {

constexpr size_t kSmallGranule = 512;
constexpr size_t kSmallLimit = size_t{1} << 20;

// One block handed out: the DataPtr's context, so the deleter knows where it goes back.
struct Block {
  void* ptr;
  size_t size;  // the size class (the exact size when caching is off)
  int device;
};

class CachingAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    int index = device.index >= 0 ? device.index : currentDevice();
    Device where(DeviceType::CUDA, static_cast<int8_t>(index));
    if (nbytes == 0) return DataPtr(nullptr, where);
    size_t size = cachingDisabled() ? nbytes : roundToSizeClass(nbytes);
    Block* block = cachingDisabled() ? nullptr : takeCached(index, size);
    if (block == nullptr) block = allocateFresh(index, size, nbytes);
    return DataPtr(block->ptr, block, &CachingAllocator::release, where);
  }

  int deviceCount() const override { return cuda::deviceCount(); }

  CachingAllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void emptyCache() {
    std::map<std::pair<int, size_t>, std::vector<Block*>> cached;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cached.swap(free_lists_);
      stats_.cached_bytes = 0;
    }
    for (auto& [key, blocks] : cached) {
      DeviceGuard guard(Device(DeviceType::CUDA, static_cast<int8_t>(key.first)));
      for (Block* block : blocks) {
        (void)cudaFree(block->ptr);
        delete block;
      }
    }
  }

 private:
  Block* takeCached(int device, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_lists_.find({device, size});
    if (it == free_lists_.end() || it->second.empty()) return nullptr;
    Block* block = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= size;
    stats_.allocated_bytes += size;
    ++stats_.cache_hits;
    return block;
  }

  Block* allocateFresh(int device, size_t size, size_t requested) {
    DeviceGuard guard(Device(DeviceType::CUDA, static_cast<int8_t>(device)));
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, size);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      emptyCache();
      status = cudaMalloc(&ptr, size);
    }
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      (void)cudaMemGetInfo(&free_bytes, &total_bytes);
      (void)cudaGetLastError();
      CachingAllocatorStats now = stats();
      DK_ERROR("CUDA out of memory: tried to allocate ", requested, " bytes on cuda:", device, " (", free_bytes,
               " of ", total_bytes, " bytes free; ", now.allocated_bytes, " bytes allocated by dispatchkit)");
    }
    if (status != cudaSuccess) throwCudaError(status, "cudaMalloc", __FILE__, __LINE__);
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.allocated_bytes += size;
    ++stats_.device_allocations;
    return new Block{ptr, size, device};
  }

  // The DataPtr deleter: the block goes on its free list.
  static void release(void* context);

  std::mutex mutex_;
  std::map<std::pair<int, size_t>, std::vector<Block*>> free_lists_;
  CachingAllocatorStats stats_;
};

// Never destroyed: tensors in static storage may free their blocks after main returns.
CachingAllocator& instance() {
  static auto* allocator = new CachingAllocator();
  return *allocator;
}

void CachingAllocator::release(void* context) {
  auto* block = static_cast<Block*>(context);
  CachingAllocator& self = instance();
  if (cachingDisabled()) {
    {
      DeviceGuard guard(Device(DeviceType::CUDA, static_cast<int8_t>(block->device)));
      (void)cudaFree(block->ptr);  // a deleter does not throw; a failed free surfaces at the next call
    }
    std::lock_guard<std::mutex> lock(self.mutex_);
    self.stats_.allocated_bytes -= block->size;
    delete block;
    return;
  }
  std::lock_guard<std::mutex> lock(self.mutex_);
  self.free_lists_[{block->device, block->size}].push_back(block);
  self.stats_.allocated_bytes -= block->size;
  self.stats_.cached_bytes += block->size;
}

// Registers the allocator when the library loads (Note [Allocators] in dk/tensor/allocator.h).
const bool registered = [] {
  setAllocator(DeviceType::CUDA, &instance());
  return true;
}();

}  // namespace

bool cachingDisabled() {
  static const bool disabled = [] {
    const char* value = std::getenv("DK_CUDA_NO_CACHING");
    return value != nullptr && std::string_view(value) == "1";
  }();
  return disabled;
}

size_t roundToSizeClass(size_t nbytes) {
  if (nbytes <= kSmallLimit) return (nbytes + kSmallGranule - 1) / kSmallGranule * kSmallGranule;
  size_t granule = std::bit_floor(nbytes) / 8;
  return (nbytes + granule - 1) / granule * granule;
}

Allocator* cachingAllocator() { return &instance(); }
CachingAllocatorStats cachingAllocatorStats() { return instance().stats(); }
void emptyCache() { instance().emptyCache(); }

}  // namespace dk::cuda
