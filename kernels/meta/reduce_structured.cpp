// Meta functions of the structured reductions: sum.dim_IntList, mean.dim, max.dim, min.dim, argmax, argmin
// (functional and out=; Note [Structured kernels] in dk/tensor/structured.h). Their base is
// MetaBase: an out= tensor must have exactly the dtype asked for. As in PyTorch, sum and mean
// without a dtype argument take the out= tensor's dtype when one is given (sum of an int tensor
// into a float out sums in float); every output is contiguous.
#include "dk/generated/ops/argmax_native.h"
#include "dk/generated/ops/max_native.h"
#include "dk/generated/ops/mean_native.h"
#include "dk/generated/ops/min_native.h"
#include "dk/generated/ops/argmin_native.h"
#include "dk/generated/ops/sum_native.h"
#include "shape_functions.h"

namespace dk {

namespace {

// PyTorch's infer_dtype_from_optional: the dtype argument, else the out= tensor's, else the
// operator's own rule (`fallback`).
ScalarType reductionDtype(MetaBase& m, std::optional<ScalarType> dtype, ScalarType fallback) {
  if (dtype) return *dtype;
  const Tensor& out = m.maybe_get_output(0);
  return out.defined() ? out.dtype() : fallback;
}

}  // namespace

DK_META_FUNC(sum_dim_IntList)(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                              std::optional<ScalarType> dtype) {
  meta::OutputSpec spec = meta::sum(self, dim, keepdim, dtype);
  spec.dtype = reductionDtype(*this, dtype, spec.dtype);
  meta::setOutput(*this, 0, spec, self.device());
}

// The input's dtype must be floating; so must the result's (mean of floats into a Long out:
// "result type Float can't be cast to the desired output type Long").
DK_META_FUNC(mean_dim)(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                       std::optional<ScalarType> dtype) {
  meta::OutputSpec spec = meta::mean(self, dim, keepdim, dtype);
  ScalarType result = reductionDtype(*this, dtype, spec.dtype);
  if (!isFloatingType(result)) meta::checkCanCastToOutput(spec.dtype, result);
  spec.dtype = result;
  meta::setOutput(*this, 0, spec, self.device());
}

// Outputs: the values (self's dtype) and their indices (Long).
DK_META_FUNC(max_dim)(const Tensor& self, int64_t dim, bool keepdim) {
  meta::MaxDimSpec spec = meta::maxDim(self, dim, keepdim);
  set_output_raw_strided(0, spec.sizes, {}, spec.values_dtype, self.device());
  set_output_raw_strided(1, spec.sizes, {}, kLong, self.device());
}

DK_META_FUNC(min_dim)(const Tensor& self, int64_t dim, bool keepdim) {
  meta::MaxDimSpec spec = meta::maxDim(self, dim, keepdim, "min");
  set_output_raw_strided(0, spec.sizes, {}, spec.values_dtype, self.device());
  set_output_raw_strided(1, spec.sizes, {}, kLong, self.device());
}

DK_META_FUNC(argmax)(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  meta::setOutput(*this, 0, meta::argmax(self, dim, keepdim), self.device());
}

DK_META_FUNC(argmin)(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  meta::setOutput(*this, 0, meta::argmax(self, dim, keepdim, "argmin"), self.device());
}

}  // namespace dk
