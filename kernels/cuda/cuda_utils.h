// kernels/cuda/cuda_utils.h: host-side helpers the CUDA kernels (*_cuda.cpp) share: outputs
// on a CUDA device, geometries for the launchers of launch.h, operands converted to a compute
// dtype, copies between CUDA tensors and between host and device, and error flags.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "dk/core/core_types.h"
#include "dk/core/scalar.h"
#include "dk/tensor/tensor.h"
#include "dk/util/array_ref.h"
#include "launch.h"

namespace dk::cuda {

launch::Dtype toLaunchDtype(ScalarType dtype);

// A contiguous, uninitialized tensor on `device` (its index resolved: resolveDevice).
Tensor emptyCuda(IntArrayRef sizes, ScalarType dtype, Device device);
// The same with the given strides (a pointwise result laid out like its inputs).
Tensor emptyCudaStrided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device);

// The geometry of an elementwise loop over `sizes`: operand k is operands[k] broadcast to
// `sizes` (0 strides along broadcast dims; expand rules checked). Dims of size 1 are dropped,
// the rest ordered by operand 0's strides and merged where every operand walks them as one
// (launch::buildLoopGeometry). Error: "CUDA kernels support at most 25 dims after merging, got 26".
launch::Geometry makeGeometry(IntArrayRef sizes, std::initializer_list<const Tensor*> operands);

// A Scalar as a launcher argument (both its double and its int64 value).
launch::ScalarArg scalarArg(const Scalar& value);
// `value` converted to `dtype` (Scalar::to), as the raw bits of one element.
uint64_t scalarBits(const Scalar& value, ScalarType dtype);
// The element at `data` (host memory) of dtype `dtype`.
Scalar readScalar(const void* data, ScalarType dtype);

// The CUDA device a pointwise operator runs on: the device of the first operand that is not a
// 0-dim CPU tensor.
Device computeDevice(std::initializer_list<const Tensor*> operands);

// An input of a pointwise launcher computing in `dtype`: `tensor` is what makeGeometry walks,
// `input` what the launcher reads. A 0-dim CPU tensor becomes a value passed with the launch
// (launch::Input::value: nothing uploaded, nothing waited for; issue 24, item 9); any other
// tensor is used where it is, converted to dtype (a contiguous copy) when its dtype differs.
struct PointwiseInput {
  Tensor tensor;
  launch::Input input;
};
PointwiseInput pointwiseInput(const Tensor& t, ScalarType dtype);
// t converted to `dtype` (a contiguous copy), or t when it has that dtype.
Tensor convertCuda(const Tensor& t, ScalarType dtype);
// t, or a contiguous copy of it.
Tensor contiguousCuda(const Tensor& t);

// dst = src broadcast to dst's sizes and converted to dst's dtype; both on the same CUDA device.
void copyWithinDevice(const Tensor& dst, const Tensor& src);
// Every element of t (a CUDA tensor) set to `value` converted to t's dtype.
void fillCuda(const Tensor& t, const Scalar& value);

// Runs compute(result) with result = out when out is contiguous (kernels that write contiguous
// outputs: gemm, reductions), else with a contiguous temporary copied into out afterwards; with
// kReadsOut the temporary first holds out's values (addmm reads what it accumulates onto).
template <bool kReadsOut = false, class Compute>
void intoContiguous(const Tensor& out, Compute&& compute) {
  if (out.is_contiguous()) {
    compute(out);
    return;
  }
  Tensor result = emptyCuda(out.sizes(), out.dtype(), out.device());
  if (kReadsOut) copyWithinDevice(result, out);
  compute(result);
  copyWithinDevice(out, result);
}

// The multiprocessors of CUDA device `device` (asked once per device).
int multiprocessorCount(Device device);

// launch::reduce over `in` (on a CUDA device) with geometry g: plans the launch for the device
// (Note [CUDA reduction plans] in reduce_plan.h), gives a split plan its workspace, and writes
// the contiguous `out` (and `indices` for max, min, argmax and argmin).
void reduceCuda(launch::ReduceOp op, const Tensor& in, const launch::ReduceGeometry& g, void* out, int64_t* indices);

// Device memory for a kernel's error report (two int64, zeroed): see launch::nllLoss.
Tensor errorFlag(Device device);
// Raises dk::Error(message(value)) when the kernel reported value through `flag`.
template <class MessageFn>
void checkErrorFlag(const Tensor& flag, MessageFn message);
// The flag's two values, copied to the host (waits for the device).
void readErrorFlag(const Tensor& flag, int64_t out[2]);

template <class MessageFn>
void checkErrorFlag(const Tensor& flag, MessageFn message) {
  int64_t values[2];
  readErrorFlag(flag, values);
  if (values[0] != 0) throw Error(message(values[1]));
}

// Raises message(value) when an element of `index` (a CUDA integer tensor) lies outside
// [0, size); waits for the device, as every error flag read does.
template <class MessageFn>
void checkIndicesOnDevice(const Tensor& index, int64_t size, MessageFn message) {
  if (index.numel() == 0) return;
  Tensor flag = errorFlag(index.device());
  launch::checkIndices(toLaunchDtype(index.dtype()), makeGeometry(index.sizes(), {&index}), index.data_ptr(), size,
                       flag.data_ptr<int64_t>());
  checkErrorFlag(flag, message);
}

// Copies between a host buffer and a tensor's elements in row-major order, whatever the
// tensor's strides; itemsize bytes each.
void gatherHost(void* dst_contiguous, const void* src, IntArrayRef sizes, IntArrayRef strides, size_t itemsize);
void scatterHost(void* dst, IntArrayRef sizes, IntArrayRef strides, const void* src_contiguous, size_t itemsize);

}  // namespace dk::cuda
