// CUDA kernels that move, fill or join whole tensors: copy_ (within a device, between
// devices, and between host and device), item, fill_, zero_, cat.
#include <cuda_runtime_api.h>

#include <vector>

#include "../meta/shape_functions.h"
#include "cuda_error.h"
#include "cuda_utils.h"
#include "device_guard.h"
#include "dk/generated/ops/cat_native.h"
#include "dk/generated/ops/copy_native.h"
#include "dk/generated/ops/fill_native.h"
#include "dk/generated/ops/item_native.h"
#include "dk/generated/ops/zero_native.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

bool sameLayout(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() && a.is_contiguous() && b.is_contiguous();
}

// self (CUDA) = src (host memory), broadcast and converted on the device.
void copyHostToDevice(const Tensor& self, const Tensor& src) {
  cuda::DeviceGuard guard(self.device());
  if (sameLayout(self, src)) {
    DK_CUDA_CHECK(cudaMemcpy(self.data_ptr(), src.data_ptr(), self.nbytes(), cudaMemcpyHostToDevice));
    return;
  }
  // Upload src's distinct elements in its own dtype, then let the device broadcast and convert.
  // An expanded dim (stride 0) goes up once, as a dim of size 1 the device broadcasts back, so
  // an expansion is never materialized on the host.
  std::vector<int64_t> distinct_sizes(src.sizes().begin(), src.sizes().end());
  for (size_t d = 0; d < distinct_sizes.size(); ++d) {
    if (src.strides()[d] == 0) distinct_sizes[d] = 1;
  }
  Tensor staged = cuda::emptyCuda(distinct_sizes, src.dtype(), self.device());
  std::vector<char> gathered;
  const void* host = src.data_ptr();
  if (!src.is_contiguous()) {
    gathered.resize(staged.nbytes());
    cuda::gatherHost(gathered.data(), src.data_ptr(), distinct_sizes, src.strides(), src.element_size());
    host = gathered.data();
  }
  DK_CUDA_CHECK(cudaMemcpy(staged.data_ptr(), host, staged.nbytes(), cudaMemcpyHostToDevice));
  cuda::copyWithinDevice(self, staged);
}

// self (host memory) = src (CUDA), broadcast and converted on the device.
void copyDeviceToHost(const Tensor& self, const Tensor& src) {
  cuda::DeviceGuard guard(src.device());
  Tensor staged = src;
  if (!sameLayout(self, src)) {
    staged = cuda::emptyCuda(self.sizes(), self.dtype(), src.device());
    cuda::copyWithinDevice(staged, src);
  }
  if (self.is_contiguous()) {
    DK_CUDA_CHECK(cudaMemcpy(self.data_ptr(), staged.data_ptr(), self.nbytes(), cudaMemcpyDeviceToHost));
    return;
  }
  std::vector<char> host(self.nbytes());
  DK_CUDA_CHECK(cudaMemcpy(host.data(), staged.data_ptr(), self.nbytes(), cudaMemcpyDeviceToHost));
  cuda::scatterHost(self.data_ptr(), self.sizes(), self.strides(), host.data(), self.element_size());
}

// self and src on two CUDA devices: src converted and made contiguous where it is, moved
// across with a peer copy, then broadcast into self.
void copyBetweenDevices(const Tensor& self, const Tensor& src) {
  Device from = cuda::resolveDevice(src.device()), to = cuda::resolveDevice(self.device());
  Tensor staged;
  {
    cuda::DeviceGuard guard(from);
    staged = cuda::contiguousCuda(cuda::convertCuda(src, self.dtype()));
  }
  cuda::DeviceGuard guard(to);
  Tensor landed = cuda::emptyCuda(src.sizes(), self.dtype(), to);
  DK_CUDA_CHECK(cudaMemcpyPeer(landed.data_ptr(), to.index, staged.data_ptr(), from.index, staged.nbytes()));
  cuda::copyWithinDevice(self, landed);
}

}  // namespace

Tensor copy_inplace_cuda(const Tensor& self, const Tensor& src, bool /*non_blocking: copies are synchronous*/) {
  if (self.is_same(src)) return self;
  meta::checkNoInternalOverlap(self);
  meta::checkCopy(self, src);
  meta::checkNoPartialOverlap(self, src);  // Note [Memory overlap]
  if (self.numel() == 0) return self;
  if (self.is_cuda() && src.is_cuda()) {
    if (cuda::resolveDevice(self.device()) == cuda::resolveDevice(src.device())) {
      cuda::DeviceGuard guard(self.device());
      const meta::MemOverlap overlap = meta::overlapStatus(self, src);
      if (overlap == meta::MemOverlap::Full && self.dtype() == src.dtype()) return self;
      if (overlap == meta::MemOverlap::No) {
        cuda::copyWithinDevice(self, src);
      } else {
        // Shared memory the check could not rule on (a strided view): other threads would read
        // elements already written, so the source is read whole into a temporary first.
        Tensor source = cuda::emptyCuda(src.sizes(), src.dtype(), src.device());
        cuda::copyWithinDevice(source, src);
        cuda::copyWithinDevice(self, source);
      }
    } else {
      copyBetweenDevices(self, src);
    }
  } else if (self.is_cuda() && src.is_cpu()) {
    copyHostToDevice(self, src);
  } else if (self.is_cpu() && src.is_cuda()) {
    copyDeviceToHost(self, src);
  } else {
    DK_ERROR("copy_: the CUDA kernel cannot copy from ", src.device(), " to ", self.device());
  }
  return self;
}

Scalar item_cuda(const Tensor& self) {
  DK_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  uint64_t bits = 0;
  DK_CUDA_CHECK(cudaMemcpy(&bits, self.data_ptr(), self.element_size(), cudaMemcpyDeviceToHost));
  return cuda::readScalar(&bits, self.dtype());
}

Tensor fill_inplace_cuda(const Tensor& self, const Scalar& value) {
  meta::checkFillValue(value, self.dtype());
  cuda::fillCuda(self, value);
  return self;
}

Tensor zero_inplace_cuda(const Tensor& self) {
  cuda::fillCuda(self, 0);
  return self;
}

Tensor cat_cuda(ArrayRef<Tensor> tensors, int64_t dim) {
  meta::CatSpec spec = meta::cat(tensors, dim);
  Tensor out = cuda::emptyCuda(spec.output.sizes, spec.output.dtype, tensors[0].device());
  if (out.numel() == 0) return out;
  // Each input lands in its slice of out along dim, converted on the way.
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (meta::catSkipsTensor(t)) continue;
    if (t.numel() > 0) {
      Tensor slice = detail::make_view(out, t.sizes(), out.strides(), offset * out.stride(spec.dim));
      cuda::copyWithinDevice(slice, t);
    }
    offset += t.size(spec.dim);
  }
  return out;
}

}  // namespace dk::native
