// The CompositeImplicitAutograd kernels: operators written in terms of other operators, so they
// run on every backend that has the operators they call, and autograd comes from those calls.
// Each calls the dispatched dk:: functions (or dk::ops::<op>::call for method-only operators),
// never a backend kernel. Semantics follow PyTorch 1.13.1's ATen composites.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "dk/generated/ops/_log_softmax.h"
#include "dk/generated/ops/_softmax.h"
#include "dk/generated/ops/_to_copy.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/add_native.h"
#include "dk/generated/ops/add_ops.h"
#include "dk/generated/ops/addmm.h"
#include "dk/generated/ops/bmm.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/clone.h"
#include "dk/generated/ops/contiguous_native.h"
#include "dk/generated/ops/cross_entropy_loss.h"
#include "dk/generated/ops/cross_entropy_loss_native.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/div_native.h"
#include "dk/generated/ops/dropout.h"
#include "dk/generated/ops/dropout_native.h"
#include "dk/generated/ops/embedding.h"
#include "dk/generated/ops/empty_like.h"
#include "dk/generated/ops/empty_strided.h"
#include "dk/generated/ops/empty_like_native.h"
#include "dk/generated/ops/eq.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/fill.h"
#include "dk/generated/ops/flatten.h"
#include "dk/generated/ops/flatten_native.h"
#include "dk/generated/ops/linear.h"
#include "dk/generated/ops/linear_native.h"
#include "dk/generated/ops/log_softmax.h"
#include "dk/generated/ops/log_softmax_native.h"
#include "dk/generated/ops/lt.h"
#include "dk/generated/ops/matmul.h"
#include "dk/generated/ops/matmul_native.h"
#include "dk/generated/ops/mean.h"
#include "dk/generated/ops/mean_native.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/mul_native.h"
#include "dk/generated/ops/neg.h"
#include "dk/generated/ops/nll_loss.h"
#include "dk/generated/ops/ones_like.h"
#include "dk/generated/ops/ones_like_native.h"
#include "dk/generated/ops/permute.h"
#include "dk/generated/ops/rand.h"
#include "dk/generated/ops/reshape.h"
#include "dk/generated/ops/reshape_native.h"
#include "dk/generated/ops/softmax.h"
#include "dk/generated/ops/softmax_native.h"
#include "dk/generated/ops/squeeze.h"
#include "dk/generated/ops/stack.h"
#include "dk/generated/ops/stack_native.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sub_native.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/t.h"
#include "dk/generated/ops/to_native.h"
#include "dk/generated/ops/to_ops.h"
#include "dk/generated/ops/unsqueeze.h"
#include "dk/generated/ops/view_ops.h"
#include "dk/generated/ops/where.h"
#include "dk/generated/ops/zero.h"
#include "dk/generated/ops/zeros.h"
#include "dk/generated/ops/zeros_like.h"
#include "dk/generated/ops/zeros_like_native.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

// PyTorch's loss reductions (the int `reduction` argument).
enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

void checkReduction(const char* op, int64_t reduction) {
  DK_CHECK(reduction == kNone || reduction == kMean || reduction == kSum, op,
           ": reduction must be 0 (none), 1 (mean) or 2 (sum), but got ", reduction);
}

// A Scalar as a 0-dim CPU tensor marked as a wrapped number, so that type promotion ranks it as
// a Scalar (Note [Type promotion] in dk/tensor/type_promotion.h): int32 tensor + 2 stays int32, as it
// does for add.Scalar in PyTorch. Kernels accept a CPU wrapped number next to tensors on any
// device.
Tensor wrapScalar(const Scalar& value) {
  Tensor t = detail::empty_contiguous({}, value.type(), Device(DeviceType::CPU));
  switch (value.type()) {
    case ScalarType::Double: *t.data_ptr<double>() = value.toDouble(); break;
    case ScalarType::Bool: *t.data_ptr<bool>() = value.toBool(); break;
    default: *t.data_ptr<int64_t>() = value.toLong(); break;
  }
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

int64_t product(IntArrayRef sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, [](int64_t a, int64_t b) { return a * b; });
}

// Note [Preserve memory format]
// MemoryFormat::Preserve (the default of the *_like factories, clone and _to_copy) keeps the
// input's layout: a non-overlapping and dense input (a permutation of a contiguous layout, e.g.
// a transpose) keeps its exact strides; any other input (a strided slice, an expand) gets dense
// strides that order the dims as the input's strides do. Contiguous ignores the input.

// True when some permutation of the dims makes the layout contiguous: every element has its own
// address and the addresses have no gaps. Dims of size 0 or 1 are never stepped over.
bool isNonOverlappingAndDense(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Size < 2 dims last; the rest by increasing stride.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t expected = 1;
  for (size_t dim : order) {
    if (sizes[dim] < 2) return true;
    if (strides[dim] != expected) return false;
    expected *= sizes[dim];
  }
  return true;
}

// Dense strides for `sizes` that order the dims as `strides` does (innermost = smallest stride).
// Stride-0 dims keep their place, and ties go to the smaller dim innermost, as TensorIterator
// orders dims.
std::vector<int64_t> inferDenseStrides(IntArrayRef sizes, IntArrayRef strides) {
  size_t ndim = sizes.size();
  // perm[0] is the innermost dim; it starts as the row-major order (last dim innermost).
  std::vector<size_t> perm(ndim);
  for (size_t i = 0; i < ndim; ++i) perm[i] = ndim - 1 - i;
  // > 0: dim0 should be outside dim1; < 0: inside; 0: keep the order.
  auto compare = [&](size_t dim0, size_t dim1) {
    if (strides[dim0] == 0 || strides[dim1] == 0) return 0;
    if (strides[dim0] != strides[dim1]) return strides[dim0] < strides[dim1] ? -1 : 1;
    return sizes[dim0] > sizes[dim1] ? 1 : 0;
  };
  for (size_t i = 1; i < ndim; ++i) {  // a stable insertion sort
    size_t dim1 = i;
    for (size_t j = 1; j <= i; ++j) {
      size_t dim0 = i - j;
      int c = compare(perm[dim0], perm[dim1]);
      if (c > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int64_t> result(ndim);
  int64_t stride = 1;
  for (size_t dim : perm) {
    result[dim] = stride;
    if (sizes[dim] > 1) stride *= sizes[dim];
  }
  return result;
}

// n / d for the loss means, true division with a 0-dim result on the tensor's device.
Tensor divideBy(const Tensor& numerator, double denominator) { return dk::div(numerator, Scalar(denominator)); }

// nll_loss over inputs of any rank: (C), (N, C) go straight to nll_loss; (N, C, d1, ..., dk)
// moves the class dim last and flattens to (N * d1 * ... * dk, C) (PyTorch's nll_loss_nd).
Tensor nllLossND(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                 int64_t ignore_index) {
  DK_CHECK(input.dim() >= 1, "Expected 1 or more dimensions (got ", input.dim(), ")");
  if (input.dim() != 1 && target.dim() >= 1) {
    DK_CHECK(input.size(0) == target.size(0), "Expected input batch_size (", input.size(0),
             ") to match target batch_size (", target.size(0), ").");
  }
  if (input.dim() <= 2) return dk::nll_loss(input, target, weight, reduction, ignore_index);

  std::vector<int64_t> out_size = input.sizes();
  out_size.erase(out_size.begin() + 1);  // (N, d1, ..., dk)
  DK_CHECK(target.sizes() == out_size, "Expected target size ", IntArrayRef(out_size), ", got ",
           IntArrayRef(target.sizes()));
  std::vector<int64_t> classes_last(static_cast<size_t>(input.dim()));
  classes_last[0] = 0;
  for (int64_t d = 2; d < input.dim(); ++d) classes_last[static_cast<size_t>(d - 1)] = d;
  classes_last.back() = 1;
  int64_t n_classes = input.size(1);
  Tensor flat_input = dk::reshape(dk::permute(input, classes_last), {product(out_size), n_classes});
  Tensor flat_target = dk::reshape(target, {product(out_size)});
  Tensor loss = dk::nll_loss(flat_input, flat_target, weight, reduction, ignore_index);
  return reduction == kNone ? dk::reshape(loss, out_size) : loss;
}

// `weight` (C) viewed as (1, C, 1, ..., 1) to broadcast against an input of `ndim` dims whose
// class dim is 1; left as it is for a 1-D input.
Tensor classWeightForBroadcast(const Tensor& weight, int64_t ndim) {
  if (ndim <= 1) return weight;
  std::vector<int64_t> shape(static_cast<size_t>(ndim), 1);
  shape[1] = weight.size(0);
  return ops::view::call(weight, shape);
}

// Targets of class probabilities (same shape as the input).
Tensor crossEntropyProbTarget(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                              int64_t reduction, double label_smoothing) {
  int64_t class_dim = self.dim() == 1 ? 0 : 1;
  int64_t n_classes = self.size(class_dim);
  bool weighted = weight.has_value() && weight->defined();
  DK_CHECK(!weighted || (weight->dim() == 1 && weight->numel() == n_classes),
           "cross_entropy: weight tensor should be defined either for all ", n_classes,
           " classes or no classes but got weight tensor of shape: ", IntArrayRef(weight->sizes()));
  Tensor log_probs = dk::log_softmax(self, class_dim, self.dtype());
  Tensor soft_target = target;
  if (label_smoothing > 0.0) {
    soft_target = dk::add(dk::mul(target, Scalar(1.0 - label_smoothing)),
                          Scalar(label_smoothing / static_cast<double>(n_classes)));
  }
  Tensor terms = dk::mul(log_probs, soft_target);
  if (weighted) terms = dk::mul(terms, classWeightForBroadcast(*weight, log_probs.dim()));
  switch (reduction) {
    case kNone: return dk::neg(dk::sum(terms, IntArrayRef{class_dim}));
    case kSum: return dk::neg(dk::sum(terms));
    default: {
      // Mean over the samples; an empty input gives 0/0 = NaN.
      double samples = log_probs.numel() == 0 ? 0.0 : static_cast<double>(log_probs.numel() / n_classes);
      return divideBy(dk::neg(dk::sum(terms)), samples);
    }
  }
}

// Class-index targets with label smoothing: (1 - s) * nll + s / C * (the loss against a uniform
// target), ignored targets contributing nothing to either part.
Tensor crossEntropyLabelSmoothing(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                  int64_t reduction, int64_t ignore_index, double label_smoothing) {
  int64_t class_dim = self.dim() == 1 ? 0 : 1;
  int64_t n_classes = self.size(class_dim);
  bool weighted = weight.has_value() && weight->defined();
  Tensor log_probs = dk::log_softmax(self, class_dim, self.dtype());
  Tensor nll = nllLossND(log_probs, target, weight, reduction, ignore_index);
  Tensor ignored = dk::eq(target, Scalar(ignore_index));
  Tensor weighted_log_probs =
      weighted ? dk::mul(log_probs, classWeightForBroadcast(*weight, log_probs.dim())) : log_probs;
  Tensor smooth = dk::neg(dk::sum(weighted_log_probs, IntArrayRef{class_dim}));
  smooth = dk::where(ignored, wrapScalar(0.0), smooth);
  Tensor smooth_reduced;
  switch (reduction) {
    case kNone: smooth_reduced = smooth; break;
    case kSum: smooth_reduced = dk::sum(smooth); break;
    default: {
      Tensor total;  // the weight of the targets that count (their number when unweighted)
      if (weighted) {
        Tensor safe_target = dk::where(ignored, wrapScalar(int64_t{0}), target);
        Tensor target_weight =
            dk::squeeze(dk::embedding(dk::unsqueeze(*weight, 1), safe_target), -1);  // weight[target]
        total = dk::sum(dk::where(ignored, wrapScalar(0.0), target_weight));
      } else {
        total = dk::sum(dk::eq(ignored, Scalar(false)));
      }
      smooth_reduced = dk::div(dk::sum(smooth), total);
      break;
    }
  }
  return dk::add(dk::mul(nll, Scalar(1.0 - label_smoothing)),
                 dk::mul(smooth_reduced, Scalar(label_smoothing / static_cast<double>(n_classes))));
}

}  // namespace

// ---------------------------------------------------------------- full reductions

// mean(): mean.dim over every dim (its checks, dtype rules and gradient).
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype) { return dk::mean(self, std::nullopt, false, dtype); }

// ---------------------------------------------------------------- Scalar overloads

Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return dk::add(self, wrapScalar(other), alpha);
}

Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return dk::sub(self, wrapScalar(other), alpha);
}

Tensor mul(const Tensor& self, const Scalar& other) { return dk::mul(self, wrapScalar(other)); }

Tensor div(const Tensor& self, const Scalar& other) { return dk::div(self, wrapScalar(other)); }

// The in-place forms: self.add_(2) is self.add_(tensor(2)), the Scalar a wrapped number.
Tensor add_(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return self.add_(wrapScalar(other), alpha);
}

Tensor sub_(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return self.sub_(wrapScalar(other), alpha);
}

Tensor mul_(const Tensor& self, const Scalar& other) { return self.mul_(wrapScalar(other)); }

Tensor div_(const Tensor& self, const Scalar& other) { return self.div_(wrapScalar(other)); }

// ---------------------------------------------------------------- linear algebra

// Matrix products of any ranks >= 1, with PyTorch's cases: 1-D x 1-D is a dot product (0-dim),
// 2-D x 1-D a matrix-vector product; a 1-D argument otherwise gains a dim of size 1 (prepended
// to the first, appended to the second) that the result drops; dims before the last two are
// batch dims and broadcast.
Tensor matmul(const Tensor& self, const Tensor& other) {
  int64_t dim1 = self.dim();
  int64_t dim2 = other.dim();
  DK_CHECK(dim1 != 0 && dim2 != 0, "both arguments to matmul need to be at least 1D, but they are ", dim1, "D and ",
           dim2, "D");
  if (dim1 == 1 && dim2 == 1) {
    DK_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [", self.numel(),
             "] and src [", other.numel(), "] to have the same number of elements, but got ", self.numel(), " and ",
             other.numel(), " elements respectively");
    return dk::reshape(dk::mm(dk::unsqueeze(self, 0), dk::unsqueeze(other, 1)), IntArrayRef{});
  }
  if (dim1 == 2 && dim2 == 1) {
    DK_CHECK(self.size(1) == other.size(0), "size mismatch, got input (", self.size(0), "), mat (", self.size(0), "x",
             self.size(1), "), vec (", other.size(0), ")");
    return dk::squeeze(dk::mm(self, dk::unsqueeze(other, 1)), 1);
  }
  if (dim1 == 1 && dim2 == 2) return dk::squeeze(dk::mm(dk::unsqueeze(self, 0), other), 0);
  if (dim1 == 2 && dim2 == 2) return dk::mm(self, other);
  if (dim1 >= 3 && dim2 <= 2) {
    // Fold self's batch dims into its rows: one mm instead of a bmm over an expanded other.
    Tensor mat2 = dim2 == 1 ? dk::unsqueeze(other, 1) : other;
    std::vector<int64_t> out_size(self.sizes().begin(), self.sizes().end() - 1);
    if (dim2 == 2) out_size.push_back(other.size(1));
    std::vector<int64_t> batch_rows(self.sizes().begin(), self.sizes().end() - 1);
    Tensor folded = dk::reshape(self, {product(batch_rows), self.size(-1)});
    return dk::reshape(dk::mm(folded, mat2), out_size);
  }
  // Batched: broadcast the batch dims, flatten them into one and call bmm.
  Tensor t1 = dim1 == 1 ? dk::unsqueeze(self, 0) : self;
  Tensor t2 = dim2 == 1 ? dk::unsqueeze(other, 1) : other;
  IntArrayRef batch1(t1.sizes().data(), t1.sizes().size() - 2);
  IntArrayRef batch2(t2.sizes().data(), t2.sizes().size() - 2);
  std::vector<int64_t> batch = inferBroadcastShape(batch1, batch2);
  int64_t n = t1.size(-2), m1 = t1.size(-1), m2 = t2.size(-2), p = t2.size(-1);
  int64_t batch_numel = product(batch);
  std::vector<int64_t> t1_size = batch, t2_size = batch;
  t1_size.insert(t1_size.end(), {n, m1});
  t2_size.insert(t2_size.end(), {m2, p});
  Tensor b1 = dk::reshape(ops::expand::call(t1, t1_size, false), {batch_numel, n, m1});
  Tensor b2 = dk::reshape(ops::expand::call(t2, t2_size, false), {batch_numel, m2, p});
  std::vector<int64_t> out_size = batch;
  if (dim1 > 1) out_size.push_back(n);
  if (dim2 > 1) out_size.push_back(p);
  return dk::reshape(dk::bmm(b1, b2), out_size);
}

// input @ weight.t() + bias; a 2-D input (or a contiguous 3-D one, seen as 2-D) with a bias
// takes the fused addmm.
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  bool has_bias = bias.has_value() && bias->defined();
  if (has_bias && input.dim() == 2) return dk::addmm(*bias, input, dk::t(weight));
  if (has_bias && input.dim() == 3 && input.is_contiguous()) {
    Tensor flat = ops::view::call(input, {input.size(0) * input.size(1), input.size(2)});
    Tensor out = dk::addmm(*bias, flat, dk::t(weight));
    return ops::view::call(out, {input.size(0), input.size(1), out.size(1)});
  }
  Tensor out = dk::matmul(input, dk::t(weight));
  if (has_bias) ops::add__Tensor::call(out, *bias, 1);
  return out;
}

// ---------------------------------------------------------------- shape

// A view when the strides allow one (computeStrideForView), else a contiguous copy viewed.
Tensor reshape(const Tensor& self, IntArrayRef shape) {
  std::vector<int64_t> sizes = inferSize(shape, self.numel());
  if (computeStrideForView(self.sizes(), self.strides(), sizes)) return ops::view::call(self, sizes);
  return ops::view::call(dk::clone(self, MemoryFormat::Contiguous), sizes);
}

Tensor contiguous(const Tensor& self, MemoryFormat memory_format) {
  DK_CHECK(memory_format != MemoryFormat::Preserve, "preserve memory format is unsupported by the contiguous operator");
  DK_CHECK(memory_format == MemoryFormat::Contiguous, "contiguous: memory format ", memory_format,
           " is not supported");
  if (self.is_contiguous()) return self;
  return dk::clone(self, memory_format);
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  start_dim = maybe_wrap_dim(start_dim, self.dim());
  end_dim = maybe_wrap_dim(end_dim, self.dim());
  DK_CHECK(start_dim <= end_dim, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (self.dim() == 0) return dk::reshape(self, {1});
  if (start_dim == end_dim) return self;
  // The flattened size is the product itself, not -1: with a zero size elsewhere, -1 would be
  // ambiguous ([0, 1, 3, 0] flattening dims 1..2 is [0, 3, 0]).
  IntArrayRef sizes = self.sizes();
  std::vector<int64_t> shape(sizes.begin(), sizes.begin() + start_dim);
  shape.push_back(product(IntArrayRef(sizes.data() + start_dim, static_cast<size_t>(end_dim - start_dim + 1))));
  shape.insert(shape.end(), sizes.begin() + end_dim + 1, sizes.end());
  return dk::reshape(self, shape);
}

Tensor stack(ArrayRef<Tensor> tensors, int64_t dim) {
  DK_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  dim = maybe_wrap_dim(dim, tensors[0].dim() + 1);
  for (size_t i = 1; i < tensors.size(); ++i) {
    DK_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack expects each tensor to be equal size, but got ",
             IntArrayRef(tensors[0].sizes()), " at entry 0 and ", IntArrayRef(tensors[i].sizes()), " at entry ", i);
  }
  std::vector<Tensor> unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (const Tensor& t : tensors) unsqueezed.push_back(dk::unsqueeze(t, dim));
  return dk::cat(unsqueezed, dim);
}

// ---------------------------------------------------------------- factories like a tensor

Tensor empty_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory,
                  std::optional<MemoryFormat> memory_format) {
  DK_CHECK(layout.value_or(Layout::Strided) == Layout::Strided, "empty_like: only the strided layout is supported, got ",
           *layout);
  DK_CHECK(!pin_memory.value_or(false), "empty_like: pinned memory is not supported");
  MemoryFormat format = memory_format.value_or(MemoryFormat::Preserve);
  DK_CHECK(format != MemoryFormat::ChannelsLast, "empty_like: memory format ChannelsLast is not supported");
  std::vector<int64_t> strides;
  if (format == MemoryFormat::Contiguous) {
    strides = computeContiguousStrides(self.sizes());
  } else if (isNonOverlappingAndDense(self.sizes(), self.strides())) {
    strides = self.strides();
  } else {
    strides = inferDenseStrides(self.sizes(), self.strides());
  }
  return dk::empty_strided(self.sizes(), strides, dtype.value_or(self.dtype()), std::nullopt,
                          device.value_or(self.device()));
}

Tensor zeros_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory,
                  std::optional<MemoryFormat> memory_format) {
  return dk::zero_(dk::empty_like(self, dtype, layout, device, pin_memory, memory_format));
}

Tensor ones_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                 std::optional<Device> device, std::optional<bool> pin_memory,
                 std::optional<MemoryFormat> memory_format) {
  return dk::fill_(dk::empty_like(self, dtype, layout, device, pin_memory, memory_format), 1);
}

// ---------------------------------------------------------------- conversion

// self itself when nothing would change (same dtype, no copy asked, a layout the result may
// keep); otherwise a converted copy.
Tensor to(const Tensor& self, ScalarType dtype, bool non_blocking, bool copy,
          std::optional<MemoryFormat> memory_format) {
  MemoryFormat format = memory_format.value_or(MemoryFormat::Preserve);
  // PyTorch compares the format with self.suggest_memory_format(), Contiguous for every strided
  // tensor here (there are no channels-last tensors).
  bool keeps_layout = format == MemoryFormat::Preserve || format == MemoryFormat::Contiguous;
  if (!copy && self.dtype() == dtype && keeps_layout) return self;
  return dk::_to_copy(self, dtype, std::nullopt, std::nullopt, std::nullopt, non_blocking, memory_format);
}

// ---------------------------------------------------------------- neural networks

// With a dtype, the input is converted first (so the softmax runs in that dtype); a half CUDA
// input asked for float output uses the fused half_to_float path, as in PyTorch.
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  if (self.is_cuda() && self.dtype() == ScalarType::Half && dtype == ScalarType::Float)
    return dk::_softmax(self, dim, true);
  Tensor converted = dtype ? ops::to_dtype::call(self, *dtype, false, false, std::nullopt) : self;
  return dk::_softmax(converted, dim, false);
}

Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  if (self.is_cuda() && self.dtype() == ScalarType::Half && dtype == ScalarType::Float)
    return dk::_log_softmax(self, dim, true);
  Tensor converted = dtype ? ops::to_dtype::call(self, *dtype, false, false, std::nullopt) : self;
  return dk::_log_softmax(converted, dim, false);
}

// log_softmax over the class dim (0 for a 1-D input, else 1), then nll_loss; a target with the
// input's shape holds class probabilities instead of class indices.
Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                          int64_t reduction, int64_t ignore_index, double label_smoothing) {
  checkReduction("cross_entropy", reduction);
  DK_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
           "label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  if (self.sizes() == target.sizes()) {
    DK_CHECK(isFloatingType(target.dtype()),
             "Expected floating point type for target with class probabilities, got ", target.dtype());
    DK_CHECK(ignore_index < 0, "ignore_index is not supported for floating point target");
    return crossEntropyProbTarget(self, target, weight, reduction, label_smoothing);
  }
  if (label_smoothing > 0.0)
    return crossEntropyLabelSmoothing(self, target, weight, reduction, ignore_index, label_smoothing);
  int64_t class_dim = self.dim() == 1 ? 0 : 1;
  return nllLossND(dk::log_softmax(self, class_dim, self.dtype()), target, weight, reduction, ignore_index);
}

// In training, zeroes each element with probability p and scales the rest by 1 / (1 - p); the
// mask comes from dk::rand on the input's device (the default generator).
Tensor dropout(const Tensor& input, double p, bool train) {
  DK_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
  if (p == 0.0 || !train || input.numel() == 0) return input;
  if (p == 1.0) return dk::mul(input, dk::zeros({}, input.dtype(), std::nullopt, input.device()));
  DK_CHECK(isFloatingType(input.dtype()), "dropout: expected a floating point input in training, but got ",
           input.dtype());
  Tensor keep = dk::lt(dk::rand(input.sizes(), input.dtype(), std::nullopt, input.device()), wrapScalar(1.0 - p));
  Tensor scale = dk::div(ops::to_dtype::call(keep, input.dtype(), false, false, std::nullopt), Scalar(1.0 - p));
  return dk::mul(input, scale);
}

}  // namespace dk::native
