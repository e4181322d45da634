// kernels/meta/shape_functions.h: what each backend operator produces (sizes, dtype and
// strides of its outputs) and the checks it makes on its arguments, in the CPU kernels' order
// and words, without touching data: PyTorch's "meta functions". The Meta kernels are these plus
// an allocation on the meta device; the CUDA kernels call them before launching, so both agree
// with the CPU kernels on shapes and on errors for bad shapes, dtypes and dims
// (tests/test_kernels_meta.cpp checks the meta side against the CPU kernels). The CPU kernels
// may call them too.
//
// Note [Meta outputs]
// An output is dense. The pointwise operators lay it out in the memory order of their inputs, as
// PyTorch's TensorIterator (and the CPU kernels' one, Note [Iteration order] in
// kernels/cpu/tensor_iterator.h) does: `x.t() + 1` is as transposed as x. Every other output is
// contiguous (row-major, computeContiguousStrides). An out= tensor keeps its own strides when it
// already has the right sizes (resizeOutput). Views are not described here: they are
// CompositeExplicitAutograd kernels that already work on every device.
#pragma once

#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dk/core/core_types.h"
#include "dk/core/scalar.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/structured.h"
#include "dk/tensor/tensor.h"
#include "dk/util/array_ref.h"

namespace dk::meta {

// The sizes, dtype and strides of one output (Note [Meta outputs]).
struct OutputSpec {
  OutputSpec() = default;
  OutputSpec(std::vector<int64_t> sizes_, ScalarType dtype_, std::vector<int64_t> strides_ = {})
      : sizes(std::move(sizes_)), dtype(dtype_), strides(std::move(strides_)) {}

  std::vector<int64_t> sizes;
  ScalarType dtype = ScalarType::Undefined;
  std::vector<int64_t> strides;  // empty: contiguous

  // The strides to allocate with.
  std::vector<int64_t> allocationStrides() const;
};

// The strides of a dense output of `shape` laid out in the memory order of `inputs` (broadcast
// to shape): dims are ordered innermost first by the inputs' strides, the first input whose
// strides differ on two dims deciding, broadcast dims deciding nothing (Note [Meta outputs]).
// Empty (OutputSpec's "contiguous") when every input is laid out row-major, which then gives a
// row-major output.
std::vector<int64_t> pointwiseOutputStrides(IntArrayRef shape, std::initializer_list<const Tensor*> inputs);

// ---------------------------------------------------------------- dtypes and devices

// PyTorch's canCast: whether a result of dtype `from` may be written into a tensor of dtype
// `to`. Floating to integral and anything but Bool to Bool are refused.
bool canCast(ScalarType from, ScalarType to);

// "result type Float can't be cast to the desired output type Long" unless canCast.
void checkCanCastToOutput(ScalarType result, ScalarType out);

// "<op>: unsupported dtype <Dtype>" (the message of dk/tensor/dtype_dispatch.h) unless `dtype` is in
// `group`.
void checkDtypeIn(const char* op, ScalarType dtype, DtypeGroup group);

// A tensor argument with the name the schema gives it, for messages. An output (out=) is never
// excused as a CPU scalar.
struct NamedTensor {
  const char* name;
  const Tensor& tensor;
  bool is_output = false;
};

// The device check of operators with device_check: NoCheck (the pointwise ones): every defined
// tensor is on one device, except that 0-dim CPU tensors may join tensors on any device (they
// act as scalars, as in PyTorch's TensorIterator). Error, in the generated check's words:
//   "dk::add: expected all tensors to be on the same device, but found at least two devices,
//    meta (argument 'self') and cpu (argument 'other')"
void checkDevicesAllowingCpuScalars(const char* op, std::initializer_list<NamedTensor> tensors);

// ---------------------------------------------------------------- pointwise

enum class BinaryKind {
  Arithmetic,  // add, sub, mul, maximum, minimum: the promoted dtype
  TrueDivide,  // div: the promoted dtype, integral and bool promoted to the default float dtype
  Comparison,  // eq, gt, lt: Bool
};

// Broadcast shape, result dtype and layout of a binary operator (PyTorch's TensorIterator rules).
// Errors: inferBroadcastShape's message.
OutputSpec binaryOp(const Tensor& self, const Tensor& other, BinaryKind kind);
// binaryOp for eq.Scalar and friends: the shape of self, dtype Bool.
OutputSpec comparisonWithScalar(const Tensor& self, const Scalar& other);

// add.Tensor and sub.Tensor: binaryOp plus PyTorch's checks on bool subtraction
// ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or
// `logical_xor()` operator instead.", "... with a bool tensor is not supported. If you are
// trying to invert a mask, use the `~` or `logical_not()` operator instead.") and on alpha
// ("Boolean alpha only supported for Boolean results.", "For integral input tensors, argument
// alpha must not be a floating point number.").
OutputSpec addOrSub(const Tensor& self, const Tensor& other, const Scalar& alpha, bool is_sub);

// pow.Tensor_Scalar: shape of self, dtype result_type(self, exponent). Errors: "Integers to
// negative integer powers are not allowed.", "pow: unsupported dtype Bool".
OutputSpec powTensorScalar(const Tensor& self, const Scalar& exponent);

// where.self: the broadcast of the three shapes, dtype result_type(self, other). Error: "where
// expected condition to be a boolean tensor, but got a tensor with dtype Float". A Byte condition
// is accepted with PyTorch's deprecation warning.
OutputSpec where(const Tensor& condition, const Tensor& self, const Tensor& other);

// Unary operators that keep the dtype (neg, abs, relu, gelu). Dtype errors: "Negation, the `-`
// operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~`
// or `logical_not()` operator instead.", "abs: unsupported dtype Bool", "Boolean inputs not
// supported for relu", "gelu: unsupported dtype Long".
enum class UnaryKind { Neg, Abs, Relu, Gelu };
OutputSpec unaryOp(const Tensor& self, UnaryKind kind);
// Unary floating operators (exp, log, sqrt, rsqrt, sin, cos, tanh, sigmoid): integral and bool
// inputs give the default float dtype.
OutputSpec unaryFloatOp(const Tensor& self);

// gelu's approximate argument. Error: "approximate argument must be either none or tanh."
enum class GeluApproximation { None, Tanh };
GeluApproximation parseGeluApproximation(std::string_view approximate);

// clamp: shape of self; a floating self keeps its dtype, otherwise the dtype is promoted with
// the given bounds (clamp(int tensor, 0.5) is Float). Error: "torch.clamp: At least one of
// 'min' or 'max' must not be None".
OutputSpec clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max);
// Whether clamp's result is all NaN: both bounds given and one of them NaN (PyTorch fills the
// output; a single NaN bound is ignored, as std::max(x, NaN) is x).
bool clampGivesNan(const std::optional<Scalar>& min, const std::optional<Scalar>& max);

// An in-place pointwise operator writing a result of `sizes` and `dtype` into self: the
// broadcast shape must be self's ("output with shape [3] doesn't match the broadcast shape
// [2, 3]") and the result dtype must cast to self's (checkCanCastToOutput).
void checkInplace(const Tensor& self, IntArrayRef sizes, ScalarType dtype);

// ---------------------------------------------------------------- reductions

// Bit i set: dim i is reduced.
using DimMask = std::bitset<64>;

// The reduced dims: every dim when `dims` is None or empty. Dims are wrapped (maybe_wrap_dim;
// a 0-dim tensor accepts 0 and -1). Errors: "dim 1 appears multiple times in the list of dims",
// "PyTorch doesn't support reduction operations for dim>=64".
DimMask makeDimMask(std::optional<IntArrayRef> dims, int64_t ndim);
// `sizes` with the reduced dims removed, or set to 1 with keepdim.
std::vector<int64_t> reducedSizes(IntArrayRef sizes, const DimMask& mask, bool keepdim);

// sum's result dtype: `dtype` if given, else Long for integral and bool inputs, else self's.
ScalarType sumDtype(ScalarType self, std::optional<ScalarType> dtype);
// sum (dims None: a full reduction, 0-dim result) and sum.dim_IntList.
OutputSpec sum(const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim, std::optional<ScalarType> dtype);
// mean.dim. Errors: "mean(): could not infer output dtype. Input dtype must be either a floating
// point or complex dtype. Got: Long" ("Optional dtype ..." when dtype was given).
OutputSpec mean(const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim, std::optional<ScalarType> dtype);

// max.dim: values (self's dtype) and indices (Long), of the same sizes; `dim` wrapped. Error:
// "max(): Expected reduction dim 1 to have non-zero size."
struct MaxDimSpec {
  int64_t dim;
  std::vector<int64_t> sizes;
  ScalarType values_dtype;
};
// max.dim and min.dim (`op` "max" or "min" names them in errors).
MaxDimSpec maxDim(const Tensor& self, int64_t dim, bool keepdim, const char* op = "max");
// argmax and argmin (`op`): Long; dim None reduces every dim (keepdim then keeps them all as
// 1s). Errors: "argmax: unsupported dtype Bool" (first), "argmax(): Expected reduction dim 0 to
// have non-zero size.", "argmax(): Expected reduction dim to be specified for input.numel() == 0.".
OutputSpec argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const char* op = "argmax");
// max() and min() of every element (`op`): 0-dim, self's dtype. Error: "max(): Expected
// reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim'
// argument."
void checkFullExtremum(const Tensor& self, const char* op);

// ---------------------------------------------------------------- linear algebra

// mm: [n, m] x [m, p] -> [n, p] of self's dtype. Errors: "self must be a matrix", "mat2 must be
// a matrix", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", "expected m1 and m2 to
// have the same dtype, but got: float != double" (C++ type names, as PyTorch prints them),
// "mm: unsupported dtype Bool" (for a non-empty result; mm.out checks it after its out
// argument, so it passes check_dtype_support = false and calls checkMatmulDtypeSupported).
OutputSpec mm(const Tensor& self, const Tensor& mat2, bool check_dtype_support = true);
void checkMatmulDtypeSupported(const char* op, const OutputSpec& out);
// bmm: [b, n, m] x [b, m, p] -> [b, n, p]. Errors: "batch1 must be a 3D tensor", "batch2 must be
// a 3D tensor", "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got:
// [2, 4].", mm's dtype messages.
OutputSpec bmm(const Tensor& self, const Tensor& mat2);
// addmm: [n, p] of mat1's dtype; self must expand to [n, p] and may have another dtype (it is
// converted, as in PyTorch 1.13). Errors: "mat1 must be a matrix, got 3-D tensor", "mat2 must be
// a matrix, got 1-D tensor", mm's shape and dtype messages, "For integral input tensors,
// argument alpha must not be a floating point number." (beta likewise), checkExpandable's.
OutputSpec addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                 const Scalar& alpha);

// The name PyTorch's dtype messages give a dtype (caffe2::TypeMeta's): "float", "long int",
// "c10::Half", ...
const char* typeMetaName(ScalarType dtype);
// PyTorch's legacy tensor type name: "torch.FloatTensor", "torch.cuda.LongTensor",
// "torch.meta.HalfTensor".
std::string legacyTypeName(const Tensor& t);

// ---------------------------------------------------------------- shapes and broadcasting

// Whether `t` expands to `target` (PyTorch's expand rules). Errors:
//   "expand(torch.FloatTensor{[1, 2, 5]}, size=[2, 5]): the number of sizes provided (2) must
//    be greater or equal to the number of dimensions in the tensor (3)"
//   "The expanded size of the tensor (4) must match the existing size (3) at non-singleton
//    dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]"
void checkExpandable(const Tensor& t, IntArrayRef target);
// The strides that read `t` broadcast to `target` (0 along broadcast dims); checkExpandable
// first. What kernels index broadcast operands with.
std::vector<int64_t> expandedStrides(const Tensor& t, IntArrayRef target);

// cat: the output and the wrapped dim. 1-D tensors of size 0 are skipped (PyTorch's legacy
// rule) but take part in type promotion; the dtype is result_type of all inputs. Errors:
// "torch.cat(): expected a non-empty list of Tensors", "zero-dimensional tensor (at position 0)
// cannot be concatenated", "Tensors must have same number of dimensions: got 2 and 3", "Sizes of
// tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1
// in the list.", maybe_wrap_dim's.
struct CatSpec {
  OutputSpec output;
  int64_t dim;
};
CatSpec cat(ArrayRef<Tensor> tensors, int64_t dim);
// Whether cat skips `t` (a 1-D tensor of size 0).
bool catSkipsTensor(const Tensor& t);

// copy_: src must broadcast to self's sizes. Errors: inferBroadcastShape's, "output with shape
// [2, 3] doesn't match the broadcast shape [4, 2, 3]".
void checkCopy(const Tensor& self, const Tensor& src);
// fill_ and full: the value must fit the dtype ("value cannot be converted to type uint8_t
// without overflow"); integers may wrap from below into unsigned types (-1 fills uint8 with
// 255), infinities and NaN fit floating dtypes only.
void checkFillValue(const Scalar& value, ScalarType dtype);

// ---------------------------------------------------------------- neural networks

// _softmax and _log_softmax: self's sizes; self's dtype, or Float with half_to_float. Errors:
// maybe_wrap_dim's, "conversion is supported for Half type only", "_softmax: unsupported dtype
// Long" (floating dtypes only; `op` names the operator).
struct SoftmaxSpec {
  OutputSpec output;
  int64_t dim;
};
SoftmaxSpec softmax(const char* op, const Tensor& self, int64_t dim, bool half_to_float);

// native_layer_norm: PyTorch's checks of normalized_shape, weight and bias ("Expected
// normalized_shape to be at least 1-dimensional, ...", "Given normalized_shape=[4], expected input
// with shape [*, 4], but got input of size[2, 3]", "Expected weight to be of same shape as
// normalized_shape, ..."); the input is seen as M rows of N elements (the normalized dims), and
// mean and rstd have stat_sizes: the input's sizes with the normalized dims 1.
struct LayerNormSpec {
  int64_t rows;                      // M
  int64_t row_size;                  // N
  std::vector<int64_t> stat_sizes;
  std::vector<int64_t> normalized_dims;  // the last normalized_shape.size() dims of the input
};
LayerNormSpec layerNorm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                        const std::optional<Tensor>& bias);

// The reduction argument of the losses (PyTorch's at::Reduction).
enum class LossReduction : int64_t { None = 0, Mean = 1, Sum = 2 };
// Error: "mse_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), but got 3".
LossReduction parseLossReduction(const char* op, int64_t reduction);

// mse_loss: the broadcast shape with reduction None, else 0-dim; dtype result_type(self,
// target), floating only ("mse_loss: unsupported dtype Long").
OutputSpec mseLoss(const Tensor& self, const Tensor& target, int64_t reduction);
// nll_loss: [N] for a 2-D input with reduction None, else 0-dim; self's dtype. Errors, in
// order: parseLossReduction's, "input tensor should be 1D or 2D", "0D or 1D target tensor
// expected, multi-target not supported", "size mismatch (got input: [2, 3], target: [4])",
// "weight tensor should be defined either for all 3 classes or no classes but got weight tensor
// of shape: [2]", "expected scalar type Long but found Int" (targets are Long or Byte),
// "expected scalar type Float but found Double" (weight), "nll_loss: unsupported dtype Long".
OutputSpec nllLoss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                   int64_t reduction);
// embedding: indices.sizes() + [weight.size(1)], weight's dtype. Errors: "'weight' must be 2-D",
// "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long,
// Int; but got torch.FloatTensor instead (while checking arguments for embedding)".
OutputSpec embedding(const Tensor& weight, const Tensor& indices);

// ---------------------------------------------------------------- factories

// Options every factory checks. Errors: "<op>: only the strided layout is supported, got
// Sparse", "<op>: only dense CPU tensors can be pinned" (pin_memory on another device).
void checkFactoryOptions(const char* op, std::optional<Layout> layout, std::optional<bool> pin_memory,
                         Device device);
// empty's strides for a memory format (None and Contiguous: row-major; ChannelsLast: NHWC
// order for 4-D sizes). Errors: "required rank 4 tensor to use channels_last format",
// "unsupported memory format Preserve".
std::vector<int64_t> stridesForMemoryFormat(IntArrayRef sizes, std::optional<MemoryFormat> memory_format);
// full's dtype: `dtype`, else Bool, Long or the default float dtype after the fill value's kind.
ScalarType fullDtype(const Scalar& fill_value, std::optional<ScalarType> dtype);
// arange's dtype: `dtype`, else Long when start, end and step are all integral (or bool), else
// the default float dtype.
ScalarType arangeDtype(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<ScalarType> dtype);
// arange's length for an output of `dtype`, computed as PyTorch's CPU kernel does (bounds
// converted to int64 for integral dtypes and to double for floating ones, the length from
// doubles, except for Long where the bounds' difference is exact). Errors:
// "step must be nonzero", "unsupported range: 0 -> inf", "upper bound and larger bound
// inconsistent with step sign", "invalid size, possible overflow?", "arange: unsupported dtype
// Bool".
int64_t arangeLength(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype);
// rand and randn: floating dtypes only ("rand: unsupported dtype Long").
void checkRandomDtype(const char* op, ScalarType dtype);

// ---------------------------------------------------------------- out= arguments

// Note [Resizing out= tensors]
// An out= tensor of the wrong sizes is resized to `sizes` (contiguous strides) as PyTorch's
// resize_output does: with a warning when it had elements (PyTorch's deprecation message),
// silently when it was empty. Its storage grows, through the storage's allocator, when too small
// ("Trying to resize storage that is not resizable" for memory it does not own); the old
// contents are not kept. An out= tensor that already has the sizes keeps its strides.
// Returns whether anything changed.
bool resizeOutput(const Tensor& out, IntArrayRef sizes);
// Structured operators (mm.out) want out= of exactly the result dtype: "Expected out tensor to
// have dtype float, but got double instead".
void checkOutDtypeExact(const Tensor& out, ScalarType dtype);
// A tensor written elementwise (in-place self, out=, copy_'s self) may not have two elements
// at one address (an expanded tensor): "unsupported operation: more than one element of the
// written-to tensor refers to a single memory location. Please clone() the tensor before
// performing the operation."
void checkNoInternalOverlap(const Tensor& out);

// Note [Memory overlap]
// How the memory of two tensors relates, by PyTorch's rule: Full when they are the same tensor,
// or have the same first and last element and the same strides; Partial when they share some
// memory otherwise; No when they share none (or either is empty); TooHard when they share a
// storage and either is not dense (no gaps, no element twice), so the ranges say nothing.
enum class MemOverlap { No, Full, Partial, TooHard };
MemOverlap overlapStatus(const Tensor& a, const Tensor& b);
// Whether the bytes `a` and `b` can reach intersect (false when they use different storages):
// the coarse test a kernel that reads its inputs while writing (a matrix product, a copy of a
// strided view) uses to decide whether to read an input into a temporary first, on every backend.
bool mayOverlap(const Tensor& a, const Tensor& b);
// An input of an elementwise write (in-place, out=, copy_) may be the written tensor itself,
// or not touch it, but not share only part of its memory: the result would depend on the
// order elements are visited. "unsupported operation: some elements of the input tensor and
// the written-to tensor refer to a single memory location. Please clone() the tensor before
// performing the operation." TooHard passes: the backend reads such an input before writing.
void checkNoPartialOverlap(const Tensor& written, const Tensor& input);

// ---------------------------------------------------------------- meta functions of structured kernels

// The device a pointwise result goes to: that of the first defined input that is not a 0-dim
// CPU tensor, else the first defined input's.
Device pointwiseDevice(std::initializer_list<const Tensor*> inputs);
// The operand checks of a pointwise meta function, called before it sets its outputs: devices
// (checkDevicesAllowingCpuScalars over the inputs, then the outputs given to an in-place or out=
// call, under their argument names; an input that is itself a given output, in-place self, is
// checked as an output), then, as PyTorch's TensorIterator, no input partly overlapping a given
// output (checkNoPartialOverlap).
void checkPointwiseOperands(MetaBase& m, std::initializer_list<NamedTensor> inputs, int64_t outputs = 1);
// set_output_raw_strided from a spec.
void setOutput(MetaBase& m, int64_t index, const OutputSpec& spec, Device device);

}  // namespace dk::meta
