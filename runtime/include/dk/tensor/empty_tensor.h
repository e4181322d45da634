// dk/tensor/empty_tensor.h: tensors with fresh, uninitialized memory, and tensors over memory someone
// else owns. These are the non-dispatched constructors kernels build their outputs with
// (dk::empty and the other factories are dispatched operators built on top).
#pragma once

#include <functional>

#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_options.h"
#include "dk/util/array_ref.h"

namespace dk {

namespace detail {

// Storage from getAllocator(device.type) big enough for the geometry (nothing for meta), key
// set from computeTensorKeySet(device, InferenceMode::is_enabled()). Errors:
//   "Trying to create tensor with negative dimension -1: [-1, 2]"
//   "empty_strided: 2 sizes but 1 strides", "empty_strided: negative stride -1 in [-1]"
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device);
// empty_strided with computeContiguousStrides(sizes).
Tensor empty_contiguous(IntArrayRef sizes, ScalarType dtype, Device device);

// What PyTorch's torch:: factories do with TensorOptions().requires_grad(true): the new tensor
// becomes a leaf that requires grad. Error: "Only Tensors of floating point and complex dtype
// can require gradients". Returns `made`.
Tensor applyRequiresGrad(Tensor made, const TensorOptions& options);

}  // namespace detail

// A tensor over `data` (on options.device()), which must hold the whole geometry. Without a
// deleter nothing is freed: the memory must outlive every tensor and view of it. With one,
// deleter(data) runs when the last of them is gone. Contiguous strides unless given.
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, std::function<void(void*)> deleter,
                 const TensorOptions& options = {});

}  // namespace dk
