// kernels/cuda/loop_geometry.h: the Geometry of an elementwise loop from its operands' sizes and
// strides (Note [CUDA elementwise loops] in elementwise.cuh). Plain C++17, no CUDA headers:
// cuda_utils.cpp's makeGeometry builds on it, and tests/test_cuda_plans.cpp checks it on the CPU.
#pragma once

#include <cstdint>

#include "launch.h"

namespace dk::cuda::launch {

// The loop over `ndim` dims of `sizes` where operand k (0: the output) steps strides[k][d]
// elements along dim d (broadcast dims: 0). Size-1 dims are dropped; the others are ordered so
// that the innermost has the output's smallest stride (ties and broadcast dims decided by the
// next operand, then left in place); dims every operand walks as one are merged. Returns the
// number of dims after merging; when that exceeds kMaxDims, g is not filled in.
int buildLoopGeometry(int ndim, const int64_t* sizes, int num_operands, const int64_t* const* strides, Geometry& g);

}  // namespace dk::cuda::launch
