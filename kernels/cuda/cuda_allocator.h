// kernels/cuda/cuda_allocator.h: the CUDA caching allocator, registered for DeviceType::CUDA
// when the library loads.
//
// Note [CUDA caching allocator]
// cudaMalloc and cudaFree synchronize the device and cost microseconds, so freed blocks are
// kept for reuse instead of returned. Requests are rounded up to a size class (multiples of
// 512 bytes up to 1 MiB; above, 8 classes per power of two, so at most 1/8 is wasted); each
// (device, size class) has a free list. An allocation takes a cached block of its class when
// there is one, else calls cudaMalloc; when that fails it frees the cache and tries once more,
// then raises "CUDA out of memory: ...". Every kernel runs on the legacy default stream, which
// orders a freed block's last use before its next one, so no events are needed. Cached blocks
// go back with emptyCache(); at process exit they are left to the driver.
// DK_CUDA_NO_CACHING=1 (read once; PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING) turns the cache
// off: each tensor gets a cudaMalloc of exactly its size and is cudaFree'd when released, so
// that compute-sanitizer's memcheck sees an access one element past a tensor's end, which a
// rounded, reused block would hide (tools/gpu-check runs memcheck so). Slow: debugging only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dk/tensor/allocator.h"

namespace dk::cuda {

struct CachingAllocatorStats {
  size_t allocated_bytes = 0;  // in blocks handed out and not yet freed (rounded sizes)
  size_t cached_bytes = 0;     // in free blocks kept for reuse
  uint64_t device_allocations = 0;  // cudaMalloc calls that succeeded
  uint64_t cache_hits = 0;          // allocations served from a free list
};

// The allocator registered for CUDA (the same object every call).
Allocator* cachingAllocator();
CachingAllocatorStats cachingAllocatorStats();
// cudaFree every cached block (on every device).
void emptyCache();
// Whether DK_CUDA_NO_CACHING=1 turned the cache off.
bool cachingDisabled();
// The size class a request of `nbytes` is rounded up to.
size_t roundToSizeClass(size_t nbytes);

}  // namespace dk::cuda
