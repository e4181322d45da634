// kernels/meta/meta_output.h: allocating the outputs of Meta kernels. The meta allocator hands
// out no memory, so these tensors have sizes, strides and a dtype but no data.
#pragma once

#include "dk/tensor/empty_tensor.h"
#include "shape_functions.h"

namespace dk::meta {

inline Tensor emptyMeta(IntArrayRef sizes, ScalarType dtype) {
  return detail::empty_contiguous(sizes, dtype, Device(DeviceType::Meta));
}

// The tensor an OutputSpec describes (Note [Meta outputs]).
inline Tensor emptyMeta(const OutputSpec& spec) {
  return detail::empty_strided(spec.sizes, spec.allocationStrides(), spec.dtype, Device(DeviceType::Meta));
}

}  // namespace dk::meta
