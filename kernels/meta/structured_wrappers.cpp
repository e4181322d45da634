// The given outputs of structured wrappers (kernels/meta/structured_wrappers.h).
#include "structured_wrappers.h"

#include "dk/generated/ops/copy_ops.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"

namespace dk::meta {

Tensor allocateOutput(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  return strides.empty() ? detail::empty_contiguous(sizes, dtype, device)
                         : detail::empty_strided(sizes, strides, dtype, device);
}

void prepareGivenOutput(GivenOutput& slot, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device,
                        bool inplace, bool casts) {
  const Tensor& target = slot.target;
  DK_CHECK(target.device() == device, "Expected out tensor to have device ", device.str(), ", but got ",
           target.device().str(), " instead");
  if (inplace) {
    if (casts) {
      checkInplace(target, sizes, dtype);
    } else {
      DK_CHECK(IntArrayRef(target.sizes()).equals(sizes), "Bad in-place call: input tensor size ",
               IntArrayRef(target.sizes()), " and output tensor size ", sizes, " should match");
      DK_CHECK(target.dtype() == dtype, "Bad in-place call: input tensor dtype ", typeMetaName(target.dtype()),
               " and output tensor dtype ", typeMetaName(dtype), " should match");
    }
  } else if (casts) {
    // As PyTorch's TensorIterator: out is resized before its dtype is checked.
    resizeOutput(target, sizes);
    checkCanCastToOutput(dtype, target.dtype());
  } else {
    checkOutDtypeExact(target, dtype);
    resizeOutput(target, sizes);
  }
  if (!casts) return;
  checkNoInternalOverlap(target);
  if (target.dtype() != dtype) slot.temporary = allocateOutput(sizes, strides, dtype, device);
}

void finishGivenOutput(GivenOutput& slot) {
  if (!slot.temporary.defined()) return;
  ops::copy_::call(slot.target, slot.temporary, /*non_blocking=*/false);
  slot.temporary = Tensor();
}

}  // namespace dk::meta
