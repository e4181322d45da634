// CUDA kernels of the reductions: sum, mean, max.dim, argmax. The meta shape functions give the
// output; the input's dims split into kept and reduced ones (a ReduceGeometry), and
// launch::reduce writes one output element per block.
#include "../meta/shape_functions.h"
#include "cuda_utils.h"
#include "dk/generated/ops/argmax_native.h"
#include "dk/generated/ops/max_native.h"
#include "dk/generated/ops/mean_native.h"
#include "dk/generated/ops/sum_native.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

using cuda::launch::ReduceOp;

// The kept and reduced dims of `in` under `mask`; outputs are numbered row-major over the kept
// dims, which is the order of a contiguous output with or without keepdim.
cuda::launch::ReduceGeometry reduceGeometry(const Tensor& in, const meta::DimMask& mask) {
  cuda::launch::ReduceGeometry g;
  for (int64_t d = 0; d < in.dim(); ++d) {
    int64_t size = in.sizes()[static_cast<size_t>(d)];
    int64_t stride = in.strides()[static_cast<size_t>(d)];
    if (mask.test(static_cast<size_t>(d))) {
      DK_CHECK(g.reduced_ndim < cuda::launch::kMaxDims, "CUDA reductions support at most ", cuda::launch::kMaxDims,
               " reduced dims");
      g.reduced_sizes[g.reduced_ndim] = size;
      g.reduced_strides[g.reduced_ndim++] = stride;
    } else {
      DK_CHECK(g.kept_ndim < cuda::launch::kMaxDims, "CUDA reductions support at most ", cuda::launch::kMaxDims,
               " kept dims");
      g.kept_sizes[g.kept_ndim] = size;
      g.kept_strides[g.kept_ndim++] = stride;
    }
  }
  g.num_outputs = computeNumel(IntArrayRef(g.kept_sizes, static_cast<size_t>(g.kept_ndim)));
  g.reduce_numel = computeNumel(IntArrayRef(g.reduced_sizes, static_cast<size_t>(g.reduced_ndim)));
  return g;
}

// sum or mean: the input converted to the output dtype first, then accumulated.
Tensor sumOrMean(ReduceOp op, const Tensor& self, const meta::OutputSpec& spec, std::optional<IntArrayRef> dims) {
  Tensor in = cuda::convertCuda(self, spec.dtype);
  Tensor out = cuda::emptyCuda(spec.sizes, spec.dtype, self.device());
  cuda::launch::ReduceGeometry g = reduceGeometry(in, meta::makeDimMask(dims, self.dim()));
  cuda::launch::reduce(op, cuda::toLaunchDtype(spec.dtype), g, out.data_ptr(), nullptr, in.data_ptr());
  return out;
}

}  // namespace

Tensor sum_cuda(const Tensor& self, std::optional<ScalarType> dtype) {
  return sumOrMean(ReduceOp::Sum, self, meta::sum(self, std::nullopt, false, dtype), std::nullopt);
}

Tensor sum_cuda(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<ScalarType> dtype) {
  return sumOrMean(ReduceOp::Sum, self, meta::sum(self, dim, keepdim, dtype), dim);
}

Tensor mean_cuda(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<ScalarType> dtype) {
  return sumOrMean(ReduceOp::Mean, self, meta::mean(self, dim, keepdim, dtype), dim);
}

std::tuple<Tensor, Tensor> max_cuda(const Tensor& self, int64_t dim, bool keepdim) {
  meta::MaxDimSpec spec = meta::maxDim(self, dim, keepdim);
  Tensor values = cuda::emptyCuda(spec.sizes, spec.values_dtype, self.device());
  Tensor indices = cuda::emptyCuda(spec.sizes, kLong, self.device());
  meta::DimMask mask;
  if (self.dim() > 0) mask.set(static_cast<size_t>(spec.dim));
  cuda::launch::reduce(ReduceOp::Max, cuda::toLaunchDtype(self.dtype()), reduceGeometry(self, mask), values.data_ptr(),
                       indices.data_ptr<int64_t>(), self.data_ptr());
  return {values, indices};
}

Tensor argmax_cuda(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  meta::OutputSpec spec = meta::argmax(self, dim, keepdim);
  Tensor indices = cuda::emptyCuda(spec.sizes, kLong, self.device());
  meta::DimMask mask;
  if (!dim) {
    mask = meta::makeDimMask(std::nullopt, self.dim());  // flattened: indices count row-major over every dim
  } else if (self.dim() > 0) {
    mask.set(static_cast<size_t>(maybe_wrap_dim(*dim, self.dim())));
  }
  cuda::launch::reduce(ReduceOp::ArgMax, cuda::toLaunchDtype(self.dtype()), reduceGeometry(self, mask), nullptr,
                       indices.data_ptr<int64_t>(), self.data_ptr());
  return indices;
}

}  // namespace dk::native
