// kernels/cuda/launch.h: the interface between the CUDA kernels' host code (the *_cuda.cpp
// files, C++20, compiled by g++) and the device code (the .cu files, compiled by nvcc).
//
// Note [CUDA launch interface]
// The .cu files include this header and the CUDA headers only: no dk/ header, no Tensor. Shapes,
// dtypes, checks, allocation and broadcasting are worked out in the .cpp files, which hand
// the device code raw pointers, a dtype code and a Geometry (sizes plus per-operand strides,
// in elements, already broadcast and collapsed). That keeps nvcc away from the C++20 runtime
// headers and keeps every device template instantiation in one place per operator family.
// Every launcher runs on the current device's legacy default stream and checks the launch;
// failures are raised as dk::Error through throwCudaError (defined in cuda_error.cpp).
//
// Written in the C++17 subset both compilers accept.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reduce_plan.h"

namespace dk::cuda::launch {

// Operands of an elementwise loop: the output first, then up to three inputs.
constexpr int kMaxOperands = 4;

// The dtypes, numbered as dk::ScalarType (checked by a static_assert in cuda_utils.cpp).
enum class Dtype : int8_t { Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16 };

// An elementwise loop: `numel` elements over `ndim` dims of `sizes`; operand k reads or
// writes element (i0, ..., in) at sum(i_d * strides[k][d]) elements from its pointer.
struct Geometry {
  int32_t ndim = 0;
  int32_t num_operands = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};
};

// An input of a pointwise launcher: device memory walked through the geometry (`data`), or,
// when data is null, one value passed with the launch: the raw bits of one element of the
// input's dtype, in the low bytes. A 0-dim CPU operand travels that way, so nothing is uploaded
// and nothing waits for the device.
struct Input {
  const void* data = nullptr;
  uint64_t bits = 0;
  Input() = default;
  Input(const void* device_data) : data(device_data) {}  // a pointer is an input in memory
  static Input value(uint64_t element_bits) {
    Input in;
    in.bits = element_bits;
    return in;
  }
};

// A Scalar argument, ready for either kind of dtype: kernels of floating dtypes read `f`,
// integral ones `i`, Bool reads i != 0.
struct ScalarArg {
  double f = 0;
  int64_t i = 0;
};

// Raises dk::Error "CUDA error: <cudaGetErrorString(code)> (<what> at <file>:<line>)".
[[noreturn]] void throwCudaError(int code, const char* what, const char* file, int line);

// Whether DK_CUDA_LAUNCH_BLOCKING=1 (read once; PyTorch's CUDA_LAUNCH_BLOCKING): every checked
// launch then waits for its kernel and raises the kernel's own fault there, naming the launch,
// instead of the next operation that synchronizes. Costs a device round trip per launch.
bool launchBlocking();

// Raises the CPU kernels' error for a dtype an operator does not support: "<op>: unsupported
// dtype <Dtype>" (dk/tensor/dtype_dispatch.h).
[[noreturn]] void throwUnsupportedDtype(const char* op, Dtype dtype);

// ---------------------------------------------------------------- copies and fills

// dst = src converted to dst's dtype (operands: 0 dst, 1 src).
void copy(const Geometry& g, void* dst, Dtype dst_dtype, const void* src, Dtype src_dtype);
// Every element of dst (operand 0) set to the `element_size`-byte pattern in the low bytes of
// `bits` (the value already converted to dst's dtype on the host).
void fill(const Geometry& g, void* dst, int element_size, uint64_t bits);
// out[i] = start + i * step for a contiguous out of n elements, computed in double for floating
// dtypes and int64 for integral ones (as the CPU kernel), then converted.
void arange(Dtype dtype, void* out, int64_t n, ScalarArg start, ScalarArg step);
// Counter-based random numbers (Philox-4x32-10 keyed by `seed`): element i depends only on
// (seed, i). uniform: [0, 1); normal: mean 0, standard deviation 1. Contiguous out, floating
// dtypes.
void uniform(Dtype dtype, void* out, int64_t n, uint64_t seed);
void normal(Dtype dtype, void* out, int64_t n, uint64_t seed);

// ---------------------------------------------------------------- pointwise

enum class BinaryOp : int8_t {
  Add,          // a + alpha * b
  Sub,          // a - alpha * b
  Mul,
  Div,          // true division (callers pass floating dtypes)
  Maximum,      // NaN-propagating
  Minimum,
  SquaredDiff,  // (a - b)^2, for mse_loss
  Eq,           // comparisons write Bool
  Gt,
  Lt,
  GeluBackwardErf,   // a * gelu'(b): a the incoming gradient, b gelu's input (floating dtypes)
  GeluBackwardTanh,  // the same for gelu's tanh approximation
};
// out = op(a, b); a and b have `dtype`, and so does out except for comparisons (Bool).
// Operands: 0 out, 1 a, 2 b.
void binary(BinaryOp op, Dtype dtype, const Geometry& g, void* out, Input a, Input b, ScalarArg alpha);

enum class UnaryOp : int8_t { Neg, Abs, Exp, Log, Sqrt, Rsqrt, Sin, Cos, Tanh, Sigmoid, Relu, GeluErf, GeluTanh };
// out = op(in), both of `dtype`. Operands: 0 out, 1 in.
void unary(UnaryOp op, Dtype dtype, const Geometry& g, void* out, const void* in);
// out = min(max(in, min), max) with the bounds that are given; NaN inputs stay NaN.
void clamp(Dtype dtype, const Geometry& g, void* out, const void* in, const ScalarArg* min, const ScalarArg* max);
// out = in ** exponent. For integral dtypes the exponent is a non-negative integer.
void powScalar(Dtype dtype, const Geometry& g, void* out, const void* in, ScalarArg exponent);
// out = cond ? a : b; cond is Bool or Byte. Operands: 0 out, 1 cond, 2 a, 3 b.
void where(Dtype dtype, Dtype cond_dtype, const Geometry& g, void* out, Input cond, Input a, Input b);

// ---------------------------------------------------------------- reductions

enum class ReduceOp : int8_t {
  Sum,     // out: dtype (accumulated in float for 16-bit floats, int64 for integral dtypes)
  Mean,    // Sum / reduce_numel
  Max,     // out: dtype, indices: int64 (NaN wins; ties go to the lowest index)
  ArgMax,  // indices only
  Min,     // as Max, the smallest (NaN still wins)
  ArgMin,  // indices only
};
// Runs `plan` (Note [CUDA reduction plans], reduce_plan.h) over `in`: `in` and the contiguous
// `out` have `dtype`; `indices` (int64, contiguous) is written for Max, ArgMax, Min, ArgMin. A plan
// with splits > 1 writes its partial results to `workspace` (reduceWorkspaceBytes), then runs
// `second`, planned over secondPassGeometry(plan) without splitting, to combine them.
void reduce(ReduceOp op, Dtype dtype, const ReducePlan& plan, const ReducePlan& second, void* out, int64_t* indices,
            const void* in, void* workspace);

// ---------------------------------------------------------------- neural networks

// Softmax (or log-softmax) of a contiguous input seen as [outer, dim_size, inner] along the
// middle dim, into a contiguous out of out_dtype (in_dtype, or Float from Half), planned for a
// device of `num_sms` multiprocessors (Note [CUDA softmax plans] in softmax_plan.h). `workspace`:
// softmaxWorkspaceBytes(in_dtype, outer, dim_size, inner, num_sms) bytes of device memory (null
// when that is 0; a null workspace makes the plan not split lines).
void softmax(bool log, Dtype in_dtype, Dtype out_dtype, void* out, const void* in, int64_t outer, int64_t dim_size,
             int64_t inner, int num_sms, void* workspace);
// The device memory that softmax needs: 0 except for few long lines, split across blocks.
int64_t softmaxWorkspaceBytes(Dtype in_dtype, int64_t outer, int64_t dim_size, int64_t inner, int num_sms);

// nll_loss over a contiguous input [batch, classes] (batch = 1 without a batch dim), a
// contiguous target [batch] of target_dtype (Long or Byte) and an optional contiguous weight
// [classes]. reduction: 0 none (out [batch]), 1 mean, 2 sum (out: one element; `workspace`: at
// least nllLossWorkspaceBytes(batch) bytes of device memory for the blocks' partial sums). A
// target out of [0, classes) that is not ignore_index sets error[0] = 1 and error[1] = the
// target (error: two int64 on the device, zeroed by the caller).
int64_t nllLossWorkspaceBytes(int64_t batch);
void nllLoss(Dtype dtype, Dtype target_dtype, int reduction, void* out, const void* input, const void* target,
             const void* weight, int64_t batch, int64_t classes, int64_t ignore_index, int64_t* error,
             void* workspace);

// out[i, j] = weight[indices[i], j] for a contiguous out [num_indices, dim]; weight has
// `num_weights` rows and the given strides; indices (Long or Int) are contiguous. An index
// out of [0, num_weights) sets error[0] = 1 and error[1] = the index.
void embedding(Dtype dtype, Dtype index_dtype, void* out, const void* weight, int64_t weight_stride0,
               int64_t weight_stride1, int64_t num_weights, int64_t dim, const void* indices, int64_t num_indices,
               int64_t* error);


// ---------------------------------------------------------------- indexing, scans, sorting

// Every element of `index` (Int or Long; operand 0 of g) in [0, size): the first that is not sets
// error[0] = 1 and error[1] = the index (error: two zeroed int64 on the device).
void checkIndices(Dtype index_dtype, const Geometry& g, const void* index, int64_t size, int64_t* error);
// index_select and gather: out = src[line + index * src_dim_stride] over g, whose operands are
// 0 out, 1 src with stride 0 along the indexed dim (the line starts), 2 index (Int or Long;
// already checked by checkIndices).
void pick(Dtype dtype, Dtype index_dtype, const Geometry& g, void* out, const void* src, int64_t src_dim_stride,
          const void* index);
// scatter_add: out[line + index * out_dim_stride] += src over g (operands: 0 out with stride 0
// along the indexed dim, 1 index (Long, checked), 2 src), with atomic adds.
void scatterAdd(Dtype dtype, const Geometry& g, void* out, int64_t out_dim_stride, const int64_t* index,
                const void* src);
// Running sums along the middle dim of a contiguous [outer, n, inner] (in and out of `dtype`),
// accumulated in double for floating dtypes and int64 for the others.
void cumsum(Dtype dtype, void* out, const void* in, int64_t outer, int64_t n, int64_t inner);
// sort and topk: the first k elements, in order, of each line along the middle dim of a
// contiguous in [outer, n, inner], into contiguous values and indices [outer, k, inner]. The
// order: ascending or descending, NaN above every number, equal values in position order.
void rank(Dtype dtype, void* values, int64_t* indices, const void* in, int64_t outer, int64_t n, int64_t inner,
          int64_t k, bool descending);


// ---------------------------------------------------------------- sliding windows

// A 2-D window: kernel, dilation, padding and stride, each (height, width).
struct Window2d {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};
// Contiguous planes (N * C images of height x width); oh x ow windows. im2col: out [planes,
// kh * kw, oh * ow] (zeros where a window reads padding); col2im: the adjoint, out the planes.
// Floating dtypes.
void im2col(Dtype dtype, void* out, const void* in, const Window2d& w, int64_t planes, int64_t height, int64_t width,
            int64_t oh, int64_t ow);
void col2im(Dtype dtype, void* out, const void* in, const Window2d& w, int64_t planes, int64_t height, int64_t width,
            int64_t oh, int64_t ow);
// Each window's largest element (NaN wins) and its index (y * width + x) in its plane.
void maxPool2d(Dtype dtype, void* out, int64_t* indices, const void* in, const Window2d& w, int64_t planes,
               int64_t height, int64_t width, int64_t oh, int64_t ow);
// Each window's sum over its divisor (kernels/meta/conv_shapes.h's rule; divisor_override 0:
// none); all dtypes but Bool. The backward spreads each window's gradient over its divisor back
// to the window's elements (floating dtypes).
void avgPool2d(Dtype dtype, void* out, const void* in, const Window2d& w, int64_t planes, int64_t height,
               int64_t width, int64_t oh, int64_t ow, bool count_include_pad, int64_t divisor_override);
void avgPool2dBackward(Dtype dtype, void* grad_input, const void* grad, const Window2d& w, int64_t planes,
                       int64_t height, int64_t width, int64_t oh, int64_t ow, bool count_include_pad,
                       int64_t divisor_override);

}  // namespace dk::cuda::launch
