// Host-side helpers of the CUDA kernels (kernels/cuda/cuda_utils.h).
#include "cuda_utils.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "../meta/shape_functions.h"
#include "cuda_error.h"
#include "device_guard.h"
#include "loop_geometry.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::cuda {

static_assert(static_cast<int>(launch::Dtype::Byte) == static_cast<int>(ScalarType::Byte) &&
                  static_cast<int>(launch::Dtype::Long) == static_cast<int>(ScalarType::Long) &&
                  static_cast<int>(launch::Dtype::Half) == static_cast<int>(ScalarType::Half) &&
                  static_cast<int>(launch::Dtype::Bool) == static_cast<int>(ScalarType::Bool) &&
                  static_cast<int>(launch::Dtype::BFloat16) == static_cast<int>(ScalarType::BFloat16),
              "launch::Dtype numbers the dtypes as ScalarType does");

launch::Dtype toLaunchDtype(ScalarType dtype) {
  DK_CHECK(dtype != ScalarType::Undefined, "CUDA kernels: the dtype is Undefined");
  return static_cast<launch::Dtype>(dtype);
}

Tensor emptyCuda(IntArrayRef sizes, ScalarType dtype, Device device) {
  return detail::empty_contiguous(sizes, dtype, resolveDevice(device));
}

Tensor emptyCudaStrided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  return detail::empty_strided(sizes, strides, dtype, resolveDevice(device));
}

launch::Geometry makeGeometry(IntArrayRef sizes, std::initializer_list<const Tensor*> operands) {
  DK_CHECK(operands.size() <= static_cast<size_t>(launch::kMaxOperands), "makeGeometry: too many operands");
  std::vector<std::vector<int64_t>> strides;
  std::vector<const int64_t*> stride_rows;
  for (const Tensor* t : operands) strides.push_back(meta::expandedStrides(*t, sizes));
  for (const std::vector<int64_t>& row : strides) stride_rows.push_back(row.data());
  launch::Geometry g;
  int ndim = launch::buildLoopGeometry(static_cast<int>(sizes.size()), sizes.data(), static_cast<int>(operands.size()),
                                       stride_rows.data(), g);
  DK_CHECK(ndim <= launch::kMaxDims, "CUDA kernels support at most ", launch::kMaxDims, " dims after merging, got ",
           ndim);
  return g;
}

launch::ScalarArg scalarArg(const Scalar& value) {
  launch::ScalarArg arg;
  arg.f = value.toDouble();
  arg.i = value.isFloatingPoint() ? static_cast<int64_t>(value.toDouble()) : value.toLong();
  return arg;
}

uint64_t scalarBits(const Scalar& value, ScalarType dtype) {
  return dispatchDtype(dtype, "fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T converted = value.to<T>();
    uint64_t bits = 0;
    std::memcpy(&bits, &converted, sizeof(T));
    return bits;
  });
}

Scalar readScalar(const void* data, ScalarType dtype) {
  return dispatchDtype(dtype, "item", [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    T value;
    std::memcpy(&value, data, sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      return Scalar(value);
    } else if constexpr (std::is_integral_v<T>) {
      return Scalar(static_cast<int64_t>(value));
    } else {
      return Scalar(static_cast<double>(value));  // Half and BFloat16 go through float
    }
  });
}

Device computeDevice(std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands) {
    if (t->defined() && !(t->is_cpu() && t->dim() == 0)) return resolveDevice(t->device());
  }
  DK_ERROR("CUDA kernels: no operand is on a CUDA device");
}

Tensor convertCuda(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = emptyCuda(t.sizes(), dtype, t.device());
  copyWithinDevice(out, t);
  return out;
}

Tensor contiguousCuda(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = emptyCuda(t.sizes(), t.dtype(), t.device());
  copyWithinDevice(out, t);
  return out;
}

PointwiseInput pointwiseInput(const Tensor& t, ScalarType dtype) {
  if (t.is_cpu()) {
    DK_CHECK(t.dim() == 0, "CUDA kernels: a CPU operand must be a 0-dim tensor, got sizes ", IntArrayRef(t.sizes()));
    return PointwiseInput{t, launch::Input::value(scalarBits(readScalar(t.data_ptr(), t.dtype()), dtype))};
  }
  Tensor converted = convertCuda(t, dtype);
  return PointwiseInput{converted, launch::Input(converted.data_ptr())};
}

void copyWithinDevice(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  launch::Geometry g = makeGeometry(dst.sizes(), {&dst, &src});
  // One run of the same elements in the same order (both dense, laid out alike): the copy
  // engine moves it without a kernel.
  bool one_run = g.ndim == 0 || (g.ndim == 1 && g.strides[0][0] == 1 && g.strides[1][0] == 1);
  if (one_run && dst.dtype() == src.dtype()) {
    DK_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(g.numel) * dst.element_size(),
                                  cudaMemcpyDeviceToDevice, nullptr));
    return;
  }
  launch::copy(g, dst.data_ptr(), toLaunchDtype(dst.dtype()), src.data_ptr(), toLaunchDtype(src.dtype()));
}

void fillCuda(const Tensor& t, const Scalar& value) {
  if (t.numel() == 0) return;
  uint64_t bits = scalarBits(value, t.dtype());
  if (bits == 0 && t.is_contiguous()) {
    DK_CUDA_CHECK(cudaMemsetAsync(t.data_ptr(), 0, t.nbytes(), nullptr));  // zero is all-zero bits in every dtype
    return;
  }
  launch::fill(makeGeometry(t.sizes(), {&t}), t.data_ptr(), static_cast<int>(t.element_size()), bits);
}

int multiprocessorCount(Device device) {
  constexpr int kCachedDevices = 64;
  static std::atomic<int> cached[kCachedDevices] = {};  // 0: not asked yet
  int index = resolveDevice(device).index;
  bool cacheable = index >= 0 && index < kCachedDevices;
  if (cacheable) {
    if (int count = cached[index].load(std::memory_order_relaxed); count > 0) return count;
  }
  int count = 0;
  DK_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, index));
  if (cacheable) cached[index].store(count, std::memory_order_relaxed);
  return count;
}

void reduceCuda(launch::ReduceOp op, const Tensor& in, const launch::ReduceGeometry& g, void* out, int64_t* indices) {
  if (g.num_outputs == 0) return;
  launch::ReducePlanOptions options;
  options.element_size = static_cast<int>(in.element_size());
  options.address = reinterpret_cast<uint64_t>(in.data_ptr());
  options.num_sms = multiprocessorCount(in.device());
  options.reorder_reduced = op == launch::ReduceOp::Sum || op == launch::ReduceOp::Mean;
  launch::ReducePlan plan = launch::planReduce(g, options);
  launch::ReducePlan second;
  Tensor workspace;
  if (plan.splits > 1) {
    second = launch::planSecondPass(plan);
    bool with_indices = !options.reorder_reduced;
    workspace = emptyCuda({launch::reduceWorkspaceBytes(plan, with_indices)}, kByte, in.device());
  }
  launch::reduce(op, toLaunchDtype(in.dtype()), plan, second, out, indices, in.data_ptr(),
                 workspace.defined() ? workspace.data_ptr() : nullptr);
}

Tensor errorFlag(Device device) {
  Tensor flag = emptyCuda({2}, kLong, device);
  DK_CUDA_CHECK(cudaMemsetAsync(flag.data_ptr(), 0, flag.nbytes(), nullptr));
  return flag;
}

void readErrorFlag(const Tensor& flag, int64_t out[2]) {
  DK_CUDA_CHECK(cudaMemcpy(out, flag.data_ptr(), 2 * sizeof(int64_t), cudaMemcpyDeviceToHost));
}

namespace {

// Visits every element of (sizes, strides) in row-major order: f(element offset, linear index).
template <class F>
void forEachElement(IntArrayRef sizes, IntArrayRef strides, F f) {
  int64_t numel = computeNumel(sizes);
  if (numel == 0) return;
  std::vector<int64_t> index(sizes.size(), 0);
  int64_t offset = 0;
  for (int64_t linear = 0; linear < numel; ++linear) {
    f(offset, linear);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (sizes[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace

void gatherHost(void* dst_contiguous, const void* src, IntArrayRef sizes, IntArrayRef strides, size_t itemsize) {
  auto* out = static_cast<char*>(dst_contiguous);
  const auto* in = static_cast<const char*>(src);
  forEachElement(sizes, strides, [&](int64_t offset, int64_t linear) {
    std::memcpy(out + linear * static_cast<int64_t>(itemsize), in + offset * static_cast<int64_t>(itemsize), itemsize);
  });
}

void scatterHost(void* dst, IntArrayRef sizes, IntArrayRef strides, const void* src_contiguous, size_t itemsize) {
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src_contiguous);
  forEachElement(sizes, strides, [&](int64_t offset, int64_t linear) {
    std::memcpy(out + offset * static_cast<int64_t>(itemsize), in + linear * static_cast<int64_t>(itemsize), itemsize);
  });
}

}  // namespace dk::cuda
