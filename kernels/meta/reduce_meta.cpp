// Meta kernels of the reductions: sum, mean, max.dim, argmax.
#include "dk/generated/ops/argmax_native.h"
#include "dk/generated/ops/max_native.h"
#include "dk/generated/ops/mean_native.h"
#include "dk/generated/ops/sum_native.h"
#include "meta_output.h"
#include "shape_functions.h"

namespace dk::native {

Tensor sum_meta(const Tensor& self, std::optional<ScalarType> dtype) {
  return meta::emptyMeta(meta::sum(self, std::nullopt, /*keepdim=*/false, dtype));
}

Tensor sum_meta(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<ScalarType> dtype) {
  return meta::emptyMeta(meta::sum(self, dim, keepdim, dtype));
}

Tensor mean_meta(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<ScalarType> dtype) {
  return meta::emptyMeta(meta::mean(self, dim, keepdim, dtype));
}

std::tuple<Tensor, Tensor> max_meta(const Tensor& self, int64_t dim, bool keepdim) {
  meta::MaxDimSpec spec = meta::maxDim(self, dim, keepdim);
  return {meta::emptyMeta(spec.sizes, spec.values_dtype), meta::emptyMeta(spec.sizes, kLong)};
}

Tensor argmax_meta(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return meta::emptyMeta(meta::argmax(self, dim, keepdim));
}

}  // namespace dk::native
