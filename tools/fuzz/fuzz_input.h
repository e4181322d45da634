// A reader over a fuzz input: each call takes the next bytes and returns a value; once the
// input is used up every call returns 0 (so any input decodes, and short inputs are small
// cases). Shared by the libFuzzer targets of tools/fuzz.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

// A property of a target that must hold: when it does not, say which and abort (a finding).
#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace dk::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return pos_ >= size_; }
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(byte() | (byte() << 8)); }
  // A value in [0, n); n > 0.
  size_t pick(size_t n) { return (n <= 256 ? byte() : u16()) % n; }
  bool flag() { return byte() & 1; }
  // A small integer in [lo, hi] (hi - lo < 256).
  int64_t small(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(byte() % (hi - lo + 1)); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace dk::fuzz
