// CUDA kernels of the reductions: sum, mean, max.dim, argmax. The meta functions give the
// outputs; the input's dims split into kept and reduced ones (a ReduceGeometry), and
// cuda::reduceCuda plans the launch (Note [CUDA reduction plans] in reduce_plan.h).
#include "../meta/shape_functions.h"
#include "cuda_utils.h"
#include "dk/generated/ops/argmax_native.h"
#include "dk/generated/ops/argmin_native.h"
#include "dk/generated/ops/max_native.h"
#include "dk/generated/ops/mean_native.h"
#include "dk/generated/ops/min_native.h"
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

// out = sum or mean of self over the dims of `mask`: the input converted to out's dtype first,
// then accumulated (written contiguously).
void sumOrMeanInto(ReduceOp op, const Tensor& self, const meta::DimMask& mask, const Tensor& out) {
  Tensor in = cuda::convertCuda(self, out.dtype());
  cuda::launch::ReduceGeometry g = reduceGeometry(in, mask);
  cuda::intoContiguous(out, [&](const Tensor& result) {
    cuda::reduceCuda(op, in, g, result.data_ptr(), nullptr);
  });
}

// The mask of a reduction along dim `dim` (none for a 0-dim self).
meta::DimMask oneDim(const Tensor& self, int64_t dim) {
  meta::DimMask mask;
  if (self.dim() > 0) mask.set(static_cast<size_t>(maybe_wrap_dim(dim, self.dim())));
  return mask;
}

}  // namespace

// The full sum is not structured; the other reductions are (meta() in
// kernels/meta/reduce_structured.cpp has checked dims and dtypes and sized the outputs).
Tensor sum_cuda(const Tensor& self, std::optional<ScalarType> dtype) {
  meta::OutputSpec spec = meta::sum(self, std::nullopt, false, dtype);
  Tensor out = cuda::emptyCuda(spec.sizes, spec.dtype, self.device());
  sumOrMeanInto(ReduceOp::Sum, self, meta::makeDimMask(std::nullopt, self.dim()), out);
  return out;
}

DK_IMPL_FUNC(sum_out_cuda)(const Tensor& self, std::optional<IntArrayRef> dim, bool /*keepdim*/,
                           std::optional<ScalarType> /*dtype*/, const Tensor& out) {
  sumOrMeanInto(ReduceOp::Sum, self, meta::makeDimMask(dim, self.dim()), out);
}

DK_IMPL_FUNC(mean_out_cuda)(const Tensor& self, std::optional<IntArrayRef> dim, bool /*keepdim*/,
                            std::optional<ScalarType> /*dtype*/, const Tensor& out) {
  sumOrMeanInto(ReduceOp::Mean, self, meta::makeDimMask(dim, self.dim()), out);
}

namespace {

// max.dim and min.dim (op Max or Min): values and indices along one dim.
void extremumInto(ReduceOp op, const Tensor& self, int64_t dim, const Tensor& values_out, const Tensor& indices_out) {
  cuda::launch::ReduceGeometry g = reduceGeometry(self, oneDim(self, dim));
  cuda::intoContiguous(values_out, [&](const Tensor& values) {
    cuda::intoContiguous(indices_out, [&](const Tensor& indices) {
      cuda::reduceCuda(op, self, g, values.data_ptr(), indices.data_ptr<int64_t>());
    });
  });
}

}  // namespace

DK_IMPL_FUNC(max_out_cuda)(const Tensor& self, int64_t dim, bool /*keepdim*/, const Tensor& max,
                           const Tensor& max_values) {
  extremumInto(ReduceOp::Max, self, dim, max, max_values);
}

DK_IMPL_FUNC(min_out_cuda)(const Tensor& self, int64_t dim, bool /*keepdim*/, const Tensor& min,
                           const Tensor& min_indices) {
  extremumInto(ReduceOp::Min, self, dim, min, min_indices);
}

namespace {

// argmax and argmin: dim None: self counts as flattened, indices counting row-major over every dim.
void argExtremumInto(ReduceOp op, const Tensor& self, std::optional<int64_t> dim, const Tensor& out) {
  meta::DimMask mask = dim ? oneDim(self, *dim) : meta::makeDimMask(std::nullopt, self.dim());
  cuda::launch::ReduceGeometry g = reduceGeometry(self, mask);
  cuda::intoContiguous(out, [&](const Tensor& indices) {
    cuda::reduceCuda(op, self, g, nullptr, indices.data_ptr<int64_t>());
  });
}

}  // namespace

DK_IMPL_FUNC(argmax_out_cuda)(const Tensor& self, std::optional<int64_t> dim, bool /*keepdim*/, const Tensor& out) {
  argExtremumInto(ReduceOp::ArgMax, self, dim, out);
}

DK_IMPL_FUNC(argmin_out_cuda)(const Tensor& self, std::optional<int64_t> dim, bool /*keepdim*/, const Tensor& out) {
  argExtremumInto(ReduceOp::ArgMin, self, dim, out);
}

}  // namespace dk::native
