// clone and _to_copy (CompositeExplicitAutograd): a fresh tensor from dk::empty_like on the
// target device and dtype, filled by dk::copy_ (which converts dtype and crosses devices). The
// layout follows the memory format, Note [Preserve memory format] in implicit.cpp: a Preserve
// copy of a transposed tensor is transposed too.
#include <optional>

#include "dk/generated/ops/_to_copy.h"
#include "dk/generated/ops/_to_copy_native.h"
#include "dk/generated/ops/clone.h"
#include "dk/generated/ops/clone_native.h"
#include "dk/generated/ops/copy_ops.h"
#include "dk/generated/ops/empty_like.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"

namespace dk::native {

Tensor clone(const Tensor& self, std::optional<MemoryFormat> memory_format) {
  Tensor result = dk::empty_like(self, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                 memory_format.value_or(MemoryFormat::Preserve));
  return ops::copy_::call(result, self, false);
}

// non_blocking changes nothing: copies here finish before they return.
Tensor _to_copy(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                std::optional<Device> device, std::optional<bool> pin_memory, bool non_blocking,
                std::optional<MemoryFormat> memory_format) {
  Tensor result = dk::empty_like(self, dtype, layout, device, pin_memory, memory_format.value_or(MemoryFormat::Preserve));
  return ops::copy_::call(result, self, non_blocking);
}

}  // namespace dk::native
