// Shape and stride arithmetic (dk/tensor/tensor_geometry.h).
#include "dk/tensor/tensor_geometry.h"

#include <algorithm>

#include "dk/util/error.h"

namespace dk {

void computeContiguousStridesInto(IntArrayRef sizes, int64_t* strides) {
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    if (i == 0) break;  // the product of all sizes is not a stride
    DK_CHECK(!__builtin_mul_overflow(running, std::max<int64_t>(sizes[i], 1), &running),
             "the contiguous strides for sizes ", sizes, " overflow int64");
  }
}

std::vector<int64_t> computeContiguousStrides(IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size());
  computeContiguousStridesInto(sizes, strides.data());
  return strides;
}

bool isContiguousLayout(IntArrayRef sizes, IntArrayRef strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;  // no elements: any strides will do
  }
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;  // a dim of size 1 is never stepped over
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

int64_t computeNumel(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    DK_CHECK(!__builtin_mul_overflow(n, s, &n), "the number of elements of sizes ", sizes, " overflows int64");
  return n;
}

int64_t storageElementsFor(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  for (int64_t s : sizes)
    if (s == 0) return 0;
  int64_t extent = storage_offset + 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t step = 0;
    bool overflow = __builtin_mul_overflow(sizes[i] - 1, strides[i], &step);
    overflow = overflow || __builtin_add_overflow(extent, step, &extent);
    DK_CHECK(!overflow, "the storage needed for sizes ", sizes, " and strides ", strides, " overflows int64");
  }
  return extent;
}

std::vector<int64_t> inferSize(IntArrayRef shape, int64_t numel) {
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      DK_CHECK(!inferred, "only one dimension can be inferred");
      inferred = i;
    } else {
      DK_CHECK(shape[i] >= 0, "invalid shape dimension ", shape[i]);
      DK_CHECK(!__builtin_mul_overflow(known, shape[i], &known), "shape '", shape, "' overflows int64");
    }
  }
  std::vector<int64_t> result = shape.vec();
  if (!inferred) {
    DK_CHECK(known == numel, "shape '", shape, "' is invalid for input of size ", numel);
    return result;
  }
  DK_CHECK(known != 0 || numel == 0, "shape '", shape, "' is invalid for input of size ", numel);
  DK_CHECK(known != 0, "cannot reshape tensor of 0 elements into shape ", shape,
           " because the unspecified dimension size -1 can be any value and is ambiguous");
  DK_CHECK(numel % known == 0, "shape '", shape, "' is invalid for input of size ", numel);
  result[*inferred] = numel / known;
  return result;
}

std::optional<std::vector<int64_t>> computeStrideForView(IntArrayRef oldSizes, IntArrayRef oldStrides,
                                                         IntArrayRef newSizes) {
  int64_t numel = computeNumel(oldSizes);
  if (computeNumel(newSizes) != numel) return std::nullopt;
  if (numel == 0) {
    // Nothing is addressed: keep the old strides for the same shape, else any valid strides.
    if (oldSizes.equals(newSizes)) return oldStrides.vec();
    return computeContiguousStrides(newSizes);
  }
  // All sizes are now >= 1. With no old dims (a 0-dim tensor), every new dim has size 1.
  if (oldSizes.empty()) return computeContiguousStrides(newSizes);

  std::vector<int64_t> newStrides(newSizes.size());
  auto next_new = static_cast<int64_t>(newSizes.size()) - 1;  // innermost unplaced new dim
  auto chunk_end = static_cast<int64_t>(oldSizes.size()) - 1;
  while (chunk_end >= 0) {
    // Grow a chunk outward from old dim `chunk_end` while the old dims stay dense relative to
    // each other; the chunk behaves like one flat dim of chunk_numel elements at base_stride.
    int64_t base_stride = oldStrides[static_cast<size_t>(chunk_end)];
    int64_t chunk_numel = oldSizes[static_cast<size_t>(chunk_end)];
    int64_t chunk_begin = chunk_end;
    while (chunk_begin > 0) {
      auto outer = static_cast<size_t>(chunk_begin - 1);
      if (oldSizes[outer] != 1 && oldStrides[outer] != chunk_numel * base_stride) break;
      chunk_numel *= oldSizes[outer];
      --chunk_begin;
    }
    // Cover the chunk with new dims, innermost first; size-1 new dims ride along (the outermost
    // chunk takes any left over).
    int64_t covered = 1;
    while (next_new >= 0 && (covered < chunk_numel || newSizes[static_cast<size_t>(next_new)] == 1)) {
      newStrides[static_cast<size_t>(next_new)] = covered * base_stride;
      covered *= newSizes[static_cast<size_t>(next_new)];
      --next_new;
    }
    if (covered != chunk_numel) return std::nullopt;  // a new dim straddles two chunks
    chunk_end = chunk_begin - 1;
  }
  if (next_new >= 0) return std::nullopt;
  return newStrides;
}

std::vector<int64_t> inferBroadcastShape(IntArrayRef a, IntArrayRef b) {
  size_t ndim = std::max(a.size(), b.size());
  std::vector<int64_t> result(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    // Position i counts from the right; missing dims count as 1.
    size_t dim = ndim - 1 - i;
    int64_t size_a = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t size_b = i < b.size() ? b[b.size() - 1 - i] : 1;
    DK_CHECK(size_a == size_b || size_a == 1 || size_b == 1, "The size of tensor a (", size_a,
             ") must match the size of tensor b (", size_b, ") at non-singleton dimension ", dim, " (shapes ", a,
             " and ", b, ")");
    result[dim] = size_a == 1 ? size_b : size_a;
  }
  return result;
}

int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, bool wrap_scalar) {
  if (ndim <= 0) {
    DK_CHECK(wrap_scalar, "Dimension specified as ", dim, " but tensor has no dimensions");
    ndim = 1;
  }
  int64_t min = -ndim;
  int64_t max = ndim - 1;
  DK_CHECK(dim >= min && dim <= max, "Dimension out of range (expected to be in range of [", min, ", ", max,
           "], but got ", dim, ")");
  return dim < 0 ? dim + ndim : dim;
}

}  // namespace dk
