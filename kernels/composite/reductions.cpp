// The full max() and min(): CompositeExplicitAutograd kernels (every backend through max.dim and
// min.dim on the flattened tensor; their gradient is derivatives.yaml's evenly_distribute_backward).
#include <tuple>

#include "dk/generated/ops/max.h"
#include "dk/generated/ops/max_native.h"
#include "dk/generated/ops/min.h"
#include "dk/generated/ops/min_native.h"
#include "dk/generated/ops/reshape.h"
#include "meta/shape_functions.h"

namespace dk::native {

Tensor max(const Tensor& self) {
  meta::checkFullExtremum(self, "max");
  return std::get<0>(dk::max(dk::reshape(self, {-1}), 0));
}

Tensor min(const Tensor& self) {
  meta::checkFullExtremum(self, "min");
  return std::get<0>(dk::min(dk::reshape(self, {-1}), 0));
}

}  // namespace dk::native
