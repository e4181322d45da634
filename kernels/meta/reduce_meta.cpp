// Meta kernel of the full sum (sum with no dims, which has no out= form here). The other
// reductions are structured: their meta functions are in reduce_structured.cpp.
#include "dk/generated/ops/sum_native.h"
#include "meta_output.h"
#include "shape_functions.h"

namespace dk::native {

Tensor sum_meta(const Tensor& self, std::optional<ScalarType> dtype) {
  return meta::emptyMeta(meta::sum(self, std::nullopt, /*keepdim=*/false, dtype));
}

}  // namespace dk::native
