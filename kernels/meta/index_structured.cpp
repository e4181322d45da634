// Meta functions of the structured gather, scatter_add, cumsum and topk (Note [Structured
// kernels] in dk/tensor/structured.h), and the Meta kernels of index_select and sort. The
// checks and shapes are kernels/meta/index_shapes.h's; a given output (in-place self, out=) may
// not share memory with an input it is computed from (PyTorch's assert_no_overlap).
#include "dk/generated/ops/cumsum_native.h"
#include "dk/generated/ops/gather_native.h"
#include "dk/generated/ops/index_select_native.h"
#include "dk/generated/ops/scatter_add_native.h"
#include "dk/generated/ops/sort_native.h"
#include "dk/generated/ops/topk_native.h"
#include "index_shapes.h"
#include "meta_output.h"

namespace dk {

DK_META_FUNC(gather)(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/) {
  meta::checkGather(self, dim, index);
  const Tensor& given = maybe_get_output(0);
  if (given.defined()) {
    meta::checkNoInternalOverlap(given);
    meta::checkNoOverlap(given, self);
    meta::checkNoOverlap(given, index);
  }
  set_output_raw_strided(0, index.sizes(), {}, self.dtype(), self.device());
}

DK_META_FUNC(scatter_add)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  meta::checkScatter(self, dim, index, src);
  const Tensor& given = maybe_get_output(0);
  if (given.defined()) {
    meta::checkNoInternalOverlap(given);
    meta::checkNoOverlap(given, index);
    meta::checkNoOverlap(given, src);
  }
  set_output_raw_strided(0, self.sizes(), {}, self.dtype(), self.device());
}

// Without a dtype argument, an out= tensor keeps its own dtype (cumsum of int8 into a float out
// sums in float).
DK_META_FUNC(cumsum)(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const Tensor& given = maybe_get_output(0);
  meta::CumsumSpec spec = meta::cumsum(self, dim, dtype, given.defined() ? given.dtype() : ScalarType::Undefined);
  meta::setOutput(*this, 0, spec.output, self.device());
}

DK_META_FUNC(topk)(const Tensor& self, int64_t k, int64_t dim, bool /*largest*/, bool /*sorted*/) {
  meta::SortSpec spec = meta::topk(self, k, dim);
  for (int64_t i = 0; i < 2; ++i) {
    const Tensor& given = maybe_get_output(i);
    if (given.defined()) meta::checkNoOverlap(given, self);
  }
  set_output_raw_strided(0, spec.sizes, {}, spec.values_dtype, self.device());
  set_output_raw_strided(1, spec.sizes, {}, kLong, self.device());
}

namespace native {

Tensor index_select_meta(const Tensor& self, int64_t dim, const Tensor& index) {
  return meta::emptyMeta(meta::indexSelect(self, dim, index).output);
}

std::tuple<Tensor, Tensor> sort_meta(const Tensor& self, int64_t dim, bool /*descending*/) {
  meta::SortSpec spec = meta::sort(self, dim);
  return {meta::emptyMeta(spec.sizes, spec.values_dtype), meta::emptyMeta(spec.sizes, kLong)};
}

}  // namespace native

}  // namespace dk
