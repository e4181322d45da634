// CUDA kernels of index_select, gather, scatter_add, cumsum, sort and topk: shapes and argument
// errors from kernels/meta/index_shapes.h (as CPU and Meta), index values checked on the device
// before anything is written (launch::checkIndices), then one launch (kernels/cuda/indexing.cu).
#include "../meta/index_shapes.h"
#include "cuda_utils.h"
#include "device_guard.h"
#include "dk/generated/ops/cumsum_native.h"
#include "dk/generated/ops/gather_native.h"
#include "dk/generated/ops/index_select_native.h"
#include "dk/generated/ops/nonzero.h"
#include "dk/generated/ops/nonzero_native.h"
#include "dk/generated/ops/_to_copy.h"
#include "dk/generated/ops/scatter_add_native.h"
#include "dk/generated/ops/sort_native.h"
#include "dk/generated/ops/topk_native.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

// A 0-dim tensor as [1], so that every operand has the dim being indexed.
Tensor asAtLeast1d(const Tensor& t) {
  return t.dim() == 0 ? detail::make_view(t, {1}, {1}, t.storage_offset()) : t;
}

// `t` seen with `sizes` and its strides, except stride 0 along `dim`: the start of the line
// through each position.
Tensor lineStarts(const Tensor& t, IntArrayRef sizes, int64_t dim) {
  std::vector<int64_t> strides = t.strides();
  strides[static_cast<size_t>(dim)] = 0;
  return detail::make_view(t, sizes, strides, t.storage_offset());
}

// [outer, n, inner] around dim `dim` of a tensor of `sizes` (a 0-dim tensor: [1, 1, 1]).
struct AroundDim {
  int64_t outer = 1, n = 1, inner = 1;
};
AroundDim aroundDim(IntArrayRef sizes, int64_t dim) {
  AroundDim a;
  if (sizes.empty()) return a;
  for (int64_t i = 0; i < dim; ++i) a.outer *= sizes[static_cast<size_t>(i)];
  a.n = sizes[static_cast<size_t>(dim)];
  for (size_t i = static_cast<size_t>(dim) + 1; i < sizes.size(); ++i) a.inner *= sizes[i];
  return a;
}

}  // namespace

Tensor index_select_cuda(const Tensor& self, int64_t dim, const Tensor& index) {
  meta::IndexSelectSpec spec = meta::indexSelect(self, dim, index);
  Device device = cuda::resolveDevice(self.device());
  Tensor out = cuda::emptyCuda(spec.output.sizes, spec.output.dtype, device);
  const int64_t size = self.dim() == 0 ? 1 : self.size(spec.dim);
  cuda::checkIndicesOnDevice(index, size, [](int64_t) { return std::string("index out of range in self"); });
  if (out.numel() == 0) return out;
  Tensor src = asAtLeast1d(self), result = asAtLeast1d(out);
  Tensor idx = asAtLeast1d(index);
  // index laid along dim, broadcast over the other dims of out.
  std::vector<int64_t> idx_strides(static_cast<size_t>(result.dim()), 0);
  idx_strides[static_cast<size_t>(spec.dim)] = idx.stride(0);
  Tensor idx_view = detail::make_view(idx, result.sizes(), idx_strides, idx.storage_offset());
  Tensor starts = lineStarts(src, result.sizes(), spec.dim);
  cuda::launch::pick(cuda::toLaunchDtype(self.dtype()), cuda::toLaunchDtype(index.dtype()),
                     cuda::makeGeometry(result.sizes(), {&result, &starts, &idx_view}), result.data_ptr(),
                     starts.data_ptr(), src.stride(spec.dim), idx_view.data_ptr());
  return out;
}

DK_IMPL_FUNC(gather_out_cuda)(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/,
                              const Tensor& out) {
  if (index.numel() == 0) return;
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  Tensor src = asAtLeast1d(self), idx = asAtLeast1d(index), result = asAtLeast1d(out);
  cuda::checkIndicesOnDevice(idx, src.size(d), [&](int64_t i) { return meta::indexOutOfBoundsMessage(i, d, src.size(d)); });
  Tensor starts = lineStarts(src, idx.sizes(), d);
  cuda::launch::pick(cuda::toLaunchDtype(self.dtype()), cuda::launch::Dtype::Long,
                     cuda::makeGeometry(idx.sizes(), {&result, &starts, &idx}), result.data_ptr(), starts.data_ptr(),
                     src.stride(d), idx.data_ptr());
}

DK_IMPL_FUNC(scatter_add_out_cuda)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                                   const Tensor& out) {
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.size(d);
  Tensor idx = asAtLeast1d(index);
  if (index.numel() > 0) {
    cuda::checkIndicesOnDevice(idx, size, [&](int64_t i) { return meta::indexOutOfBoundsMessage(i, d, size); });
  }
  if (!out.is_same(self)) cuda::copyWithinDevice(out, self);
  if (index.numel() == 0) return;
  Tensor result = asAtLeast1d(out), from = asAtLeast1d(src);
  Tensor starts = lineStarts(result, idx.sizes(), d);
  cuda::launch::scatterAdd(cuda::toLaunchDtype(self.dtype()), cuda::makeGeometry(idx.sizes(), {&starts, &idx, &from}),
                           starts.data_ptr(), result.stride(d), idx.data_ptr<int64_t>(), from.data_ptr());
}

DK_IMPL_FUNC(cumsum_out_cuda)(const Tensor& self, int64_t dim, std::optional<ScalarType> /*dtype*/,
                              const Tensor& out) {
  if (out.numel() == 0) return;
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  // Each line is read element by element just before it is written, so in may be out itself
  // (in-place); an input sharing only part of out's memory is copied first.
  Tensor in = cuda::contiguousCuda(cuda::convertCuda(self, out.dtype()));
  meta::MemOverlap overlap = meta::overlapStatus(out, in);
  if (overlap != meta::MemOverlap::No && overlap != meta::MemOverlap::Full) {
    Tensor copy = cuda::emptyCuda(in.sizes(), in.dtype(), in.device());
    cuda::copyWithinDevice(copy, in);
    in = copy;
  }
  AroundDim a = aroundDim(self.sizes(), d);
  cuda::intoContiguous(out, [&](const Tensor& result) {
    cuda::launch::cumsum(cuda::toLaunchDtype(out.dtype()), result.data_ptr(), in.data_ptr(), a.outer, a.n, a.inner);
  });
}

namespace {

void rankInto(const Tensor& self, int64_t dim, int64_t k, bool descending, const Tensor& values_out,
              const Tensor& indices_out) {
  if (values_out.numel() == 0) return;
  Tensor in = cuda::contiguousCuda(self);
  AroundDim a = aroundDim(self.sizes(), dim);
  cuda::intoContiguous(values_out, [&](const Tensor& values) {
    cuda::intoContiguous(indices_out, [&](const Tensor& indices) {
      cuda::launch::rank(cuda::toLaunchDtype(self.dtype()), values.data_ptr(), indices.data_ptr<int64_t>(),
                         in.data_ptr(), a.outer, a.n, a.inner, k, descending);
    });
  });
}

}  // namespace

std::tuple<Tensor, Tensor> sort_cuda(const Tensor& self, int64_t dim, bool descending) {
  meta::SortSpec spec = meta::sort(self, dim);
  Device device = cuda::resolveDevice(self.device());
  Tensor values = cuda::emptyCuda(spec.sizes, spec.values_dtype, device);
  Tensor indices = cuda::emptyCuda(spec.sizes, kLong, device);
  rankInto(self, spec.dim, self.dim() == 0 ? 1 : self.size(spec.dim), descending, values, indices);
  return {values, indices};
}

DK_IMPL_FUNC(topk_out_cuda)(const Tensor& self, int64_t k, int64_t dim, bool largest, bool /*sorted*/,
                            const Tensor& values, const Tensor& indices) {
  rankInto(self, maybe_wrap_dim(dim, self.dim()), k, largest, values, indices);
}

// nonzero's output size depends on the data, which the host must know to allocate it (PyTorch
// synchronizes too): the tensor goes to the host, the CPU kernel finds the coordinates, and they
// come back.
Tensor nonzero_cuda(const Tensor& self) {
  Tensor host = dk::_to_copy(self, std::nullopt, std::nullopt, Device(DeviceType::CPU));
  return dk::_to_copy(dk::nonzero(host), std::nullopt, std::nullopt, self.device());
}

}  // namespace dk::native
