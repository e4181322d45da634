// Counts the heap bytes a program holds (malloc_usable_size of every live operator-new block),
// for the memory-per-operator measurements (memory.cpp, torch/c10_memory.cpp). Replaces the
// global operator new and delete, so include it in exactly one file of a program.
#pragma once

#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace benchalloc {
inline std::atomic<int64_t> live_bytes{0};
inline int64_t live() { return live_bytes.load(); }
inline void* allocate(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  live_bytes.fetch_add(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}
inline void release(void* p) noexcept {
  if (p == nullptr) return;
  live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
}  // namespace benchalloc

void* operator new(std::size_t n) { return benchalloc::allocate(n); }
void* operator new[](std::size_t n) { return benchalloc::allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return benchalloc::allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return benchalloc::allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { benchalloc::release(p); }
void operator delete[](void* p) noexcept { benchalloc::release(p); }
void operator delete(void* p, std::size_t) noexcept { benchalloc::release(p); }
void operator delete[](void* p, std::size_t) noexcept { benchalloc::release(p); }
