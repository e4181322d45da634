// Ordering and merging an elementwise loop's dims (kernels/cuda/loop_geometry.h).
#include "loop_geometry.h"

#include <cstdlib>
#include <utility>
#include <vector>

namespace dk::cuda::launch {

namespace {

// Whether dim a belongs outside dim b: the first operand that strides through both, with
// different strides, decides (the larger stride goes outside). Stride-0 (broadcast) dims say
// nothing about memory order.
bool belongsOutside(int a, int b, int num_operands, const int64_t* const* strides) {
  for (int k = 0; k < num_operands; ++k) {
    int64_t sa = std::llabs(strides[k][a]), sb = std::llabs(strides[k][b]);
    if (sa == 0 || sb == 0 || sa == sb) continue;
    return sa > sb;
  }
  return false;
}

}  // namespace

int buildLoopGeometry(int ndim, const int64_t* sizes, int num_operands, const int64_t* const* strides, Geometry& g) {
  // The dims that move, outermost first; insertion sort keeps row-major order among equals.
  std::vector<int> order;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 1) continue;
    order.push_back(d);
    for (size_t j = order.size() - 1; j > 0 && belongsOutside(order[j], order[j - 1], num_operands, strides); --j) {
      std::swap(order[j], order[j - 1]);
    }
  }
  // Merge each dim into the one outside it when every operand steps over the pair as one.
  std::vector<int64_t> merged_sizes;
  std::vector<std::vector<int64_t>> merged_strides(static_cast<size_t>(num_operands));
  for (int d : order) {
    bool mergeable = !merged_sizes.empty();
    for (int k = 0; mergeable && k < num_operands; ++k) {
      mergeable = merged_strides[static_cast<size_t>(k)].back() == strides[k][d] * sizes[d];
    }
    if (mergeable) {
      merged_sizes.back() *= sizes[d];
      for (int k = 0; k < num_operands; ++k) merged_strides[static_cast<size_t>(k)].back() = strides[k][d];
    } else {
      merged_sizes.push_back(sizes[d]);
      for (int k = 0; k < num_operands; ++k) merged_strides[static_cast<size_t>(k)].push_back(strides[k][d]);
    }
  }
  int merged_ndim = static_cast<int>(merged_sizes.size());
  if (merged_ndim > kMaxDims) return merged_ndim;
  g = Geometry();
  g.ndim = merged_ndim;
  g.num_operands = num_operands;
  g.numel = 1;
  for (int d = 0; d < ndim; ++d) g.numel *= sizes[d];
  for (int d = 0; d < merged_ndim; ++d) {
    g.sizes[d] = merged_sizes[static_cast<size_t>(d)];
    for (int k = 0; k < num_operands; ++k) g.strides[k][d] = merged_strides[static_cast<size_t>(k)][static_cast<size_t>(d)];
  }
  return merged_ndim;
}

}  // namespace dk::cuda::launch
