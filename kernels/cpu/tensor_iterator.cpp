// Building a TensorIterator (Note [CPU TensorIterator]) and the checks the CPU kernels share.
#include "tensor_iterator.h"

#include <algorithm>
#include <cstring>

#include "dk/generated/ops/copy_native.h"
#include "dk/tensor/allocator.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/storage.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/tensor/type_promotion.h"
#include "meta/shape_functions.h"

namespace dk::native {

bool canCast(ScalarType from, ScalarType to) {
  if (isFloatingType(from) && isIntegralType(to, /*includeBool=*/false)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

void throwNotOnCpu(const char* op, const Tensor& t) {
  DK_ERROR(op, ": expected all tensors to be on the same device, but found at least two devices, cpu and ",
           t.device().str());
}

void assertNoInternalOverlap(const Tensor& t) {
  if (t.numel() == 0) return;  // nothing is written (PyTorch: an empty tensor is dense)
  for (int64_t d = 0; d < t.dim(); ++d) {
    DK_CHECK(t.sizes()[static_cast<size_t>(d)] <= 1 || t.strides()[static_cast<size_t>(d)] != 0,
             "unsupported operation: more than one element of the written-to tensor refers to a single memory "
             "location. Please clone() the tensor before performing the operation.");
  }
}

namespace {

// `t`'s strides for `shape` (aligned at the right), 0 where t is broadcast, into `out`
// (shape.size() values).
void broadcastStrides(const Tensor& t, IntArrayRef shape, int64_t* out) {
  size_t offset = shape.size() - static_cast<size_t>(t.dim());
  for (size_t d = 0; d < offset; ++d) out[d] = 0;
  for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d)
    out[offset + d] = t.sizes()[d] == 1 && shape[offset + d] != 1 ? 0 : t.strides()[d];
}

using DimVector = SmallInt64Vector<6>;
using StrideVector = SmallInt64Vector<6 * TensorIterator::kMaxOperands>;

// Note [Iteration order]: dims innermost first. `strides` holds, for each of `nops` operands
// that has a say, its strides for the full shape (operand-major).
DimVector iterationOrder(IntArrayRef shape, const StrideVector& strides, size_t nops) {
  const auto nd = static_cast<int64_t>(shape.size());
  DimVector order;
  order.resize(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) order[static_cast<size_t>(i)] = nd - 1 - i;  // row-major to start
  // > 0: `outer` belongs inside `inner`; < 0: it does not; 0: no operand can tell.
  auto shouldSwap = [&](int64_t inner, int64_t outer) {
    for (size_t k = 0; k < nops; ++k) {
      const int64_t* s = strides.data() + k * static_cast<size_t>(nd);
      int64_t si = s[inner], so = s[outer];
      if (si == 0 || so == 0) continue;
      if (si != so) return si > so ? 1 : -1;
      if (shape[static_cast<size_t>(inner)] > shape[static_cast<size_t>(outer)]) return 1;
    }
    return 0;
  };
  // Insertion sort that moves a dim inwards past dims it belongs inside of, skipping those no
  // operand can order and stopping at the first it belongs outside of.
  for (int64_t i = 1; i < nd; ++i) {
    int64_t moving = i;
    for (int64_t j = i - 1; j >= 0; --j) {
      int cmp = shouldSwap(order[static_cast<size_t>(j)], order[static_cast<size_t>(moving)]);
      if (cmp > 0) {
        std::swap(order[static_cast<size_t>(j)], order[static_cast<size_t>(moving)]);
        moving = j;
      } else if (cmp < 0) {
        break;
      }
    }
  }
  return order;
}

// The iteration order of `tensors` over `shape`, each having a say.
DimVector iterationOrderOf(IntArrayRef shape, ArrayRef<const Tensor*> tensors) {
  StrideVector strides;
  strides.resize(tensors.size() * shape.size());
  for (size_t k = 0; k < tensors.size(); ++k) broadcastStrides(*tensors[k], shape, strides.data() + k * shape.size());
  return iterationOrder(shape, strides, tensors.size());
}

// Strides that make a tensor of `shape` dense in iteration order `order` (innermost first).
std::vector<int64_t> stridesForOrder(IntArrayRef shape, IntArrayRef order) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t next = 1;
  for (int64_t d : order) {
    strides[static_cast<size_t>(d)] = next;
    next *= std::max<int64_t>(shape[static_cast<size_t>(d)], 1);
  }
  return strides;
}

Tensor emptyForOrder(IntArrayRef shape, IntArrayRef order, ScalarType dtype) {
  return detail::empty_strided(shape, stridesForOrder(shape, order), dtype, Device(DeviceType::CPU));
}

// Whether `t` has elements and exactly the strides computeContiguousStrides gives its sizes
// (row-major dense, size-1 dims included).
bool isRowMajorWithElements(const TensorImpl& t) {
  if (t.numel() < 1 || !t.is_contiguous()) return false;
  const std::vector<int64_t>& sizes = t.sizes();
  const std::vector<int64_t>& strides = t.strides();
  int64_t expected = 1;  // a product of sizes >= 1 up to numel: no overflow
  for (size_t i = sizes.size(); i-- > 0;) {
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

Tensor contiguousCopy(const Tensor& t) {
  Tensor copy = detail::empty_contiguous(t.sizes(), t.dtype(), Device(DeviceType::CPU));
  copy_inplace_cpu(copy, t, false);
  return copy;
}

[[noreturn]] void throwOutputShapeMismatch(IntArrayRef out, IntArrayRef broadcast) {
  DK_ERROR("output with shape ", out, " doesn't match the broadcast shape ", broadcast);
}

}  // namespace


bool aliasesExactly(const Tensor& a, const Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         a.strides() == b.strides();
}

bool resizeOutput(const Tensor& out, IntArrayRef shape) {
  if (IntArrayRef(out.sizes()).equals(shape)) return false;
  if (out.numel() != 0) {
    warn(detail::concat("An output with one or more elements was resized since it had shape ", IntArrayRef(out.sizes()),
                        ", which does not match the required output shape ", shape,
                        ". This behavior is deprecated, and in a future PyTorch release outputs will not be resized "
                        "unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, "
                        "inplace, to zero elements with t.resize_(0)."));
  }
  TensorImpl* impl = out.unsafeGetTensorImpl();
  DK_CHECK(impl->has_storage(), "resize: the out tensor has no storage");
  impl->set_sizes_contiguous(shape.vec());
  if (impl->numel() == 0) return true;
  auto needed = static_cast<size_t>((impl->storage_offset() + impl->numel()) * static_cast<int64_t>(impl->itemsize()));
  const Storage& storage = impl->storage();
  if (storage.nbytes() >= needed) return true;
  Allocator* allocator = storage.allocator();
  DK_CHECK(allocator != nullptr, "Trying to resize storage that is not resizable");
  DataPtr grown = allocator->allocate(needed, storage.device());
  if (storage.nbytes() > 0 && storage.data() != nullptr) std::memcpy(grown.get(), storage.data(), storage.nbytes());
  storage.unsafeGetStorageImpl()->set_data_ptr(std::move(grown), needed);
  return true;
}

Tensor castToDtype(const Tensor& src, ScalarType dtype) {
  Tensor cast = detail::empty_contiguous(src.sizes(), dtype, Device(DeviceType::CPU));
  copy_inplace_cpu(cast, src, false);
  return cast;
}

// ---- config ----

// Note [Trivial TensorIterator]
// Most calls are the trivial case: inputs of one dtype that need no cast (none added with
// add_input_keeping_dtype, none a wrapped number), all with the same
// sizes and row-major strides, at least one element, and no output or an output of the result
// dtype that is one of them (in-place) or has their sizes and strides (an out= tensor, such as
// the one a structured kernel's meta() allocated), no input partly overlapping it. Every
// step of Note [CPU TensorIterator] then has a known outcome: no broadcasting, the common dtype
// is the inputs' (no wrapped numbers, so promotion is the identity), the iteration order is
// row-major (row-major strides never ask a dim to move inwards), an allocated output has the
// inputs' strides, nothing is cast or copied, and coalescing leaves one run of numel elements
// (none when numel is 1). buildTrivial produces that geometry directly and answers false,
// having changed nothing, whenever any condition fails; build() then takes the general path.
bool TensorIteratorConfig::buildTrivial(TensorIterator& it) const {
  const TensorImpl& first = *inputs_[0].tensor.unsafeGetTensorImpl();
  if (!isRowMajorWithElements(first)) return false;
  const ScalarType dtype = first.dtype();
  const size_t nd = first.sizes().size();
  const int64_t* sizes = first.sizes().data();
  const int64_t* strides = first.strides().data();
  for (size_t i = 0; i < ninputs_; ++i) {
    const TensorImpl& t = *inputs_[i].tensor.unsafeGetTensorImpl();
    if (t.dtype() != dtype || t.is_wrapped_number() || inputs_[i].keeps_dtype) return false;
    if (&t == &first) continue;  // the same tensor twice (x + x)
    // Same sizes and strides; a plain loop, as there are few dims.
    if (t.sizes().size() != nd) return false;
    for (size_t d = 0; d < nd; ++d)
      if (t.sizes()[d] != sizes[d] || t.strides()[d] != strides[d]) return false;
  }
  ScalarType common = dtype;
  if (common_dtype_) {
    common = *common_dtype_;
  } else if (promote_inputs_ && promote_integer_inputs_to_float_ && isIntegralType(common, /*includeBool=*/true)) {
    common = get_default_dtype();
  }
  const bool castInputs = promote_inputs_ || common_dtype_.has_value();
  if (castInputs && common != dtype) return false;  // every input would be cast
  const ScalarType resultDtype = output_dtype_.value_or(common);

  Tensor written;
  if (output_.defined()) {
    // In-place, or an out= tensor laid out as the inputs (the output a structured kernel's meta()
    // allocated): nothing to resize, cast or reorder.
    if (output_.dtype() != resultDtype) return false;
    const TensorImpl& out = *output_.unsafeGetTensorImpl();
    if (&out != &first) {
      if (out.sizes().size() != nd) return false;
      for (size_t d = 0; d < nd; ++d)
        if (out.sizes()[d] != sizes[d] || out.strides()[d] != strides[d]) return false;
    }
    for (size_t i = 0; i < ninputs_; ++i) {
      const Tensor& in = inputs_[i].tensor;
      if (!in.is_same(output_) && !aliasesExactly(in, output_) && meta::mayOverlap(in, output_)) return false;
    }
    written = output_;
  } else {
    written = detail::empty_strided(first.sizes(), first.strides(), resultDtype, Device(DeviceType::CPU));
  }

  it.op_name_ = op_name_;
  it.common_dtype_ = common;
  it.result_ = written;
  it.numel_ = first.numel();
  it.addOperand(std::move(written));
  for (size_t i = 0; i < ninputs_; ++i) it.addOperand(inputs_[i].tensor);
  const auto nops = static_cast<size_t>(it.nops_);
  for (size_t k = 0; k < nops; ++k) it.data_[k] = static_cast<char*>(it.operands_[k].data_ptr());
  if (it.numel_ > 1) {
    it.shape_.push_back(it.numel_);
    for (size_t k = 0; k < nops; ++k) it.strides_.push_back(static_cast<int64_t>(it.operands_[k].element_size()));
  }
  return true;
}

TensorIterator TensorIteratorConfig::build() const {
  const char* op = op_name_;
  DK_CHECK(ninputs_ > 0 && ninputs_ < TensorIterator::kMaxOperands, op, ": ", ninputs_,
           " inputs is not supported by the TensorIterator");
  const ArrayRef<Input> inputs(inputs_.data(), ninputs_);

  // 1. defined tensors on the cpu.
  for (const Input& in : inputs) {
    DK_CHECK(in.tensor.defined(), op, ": expected a defined tensor as input");
    checkOnCpu(op, in.tensor);
  }
  checkOnCpu(op, output_);

  TensorIterator it;
  if (buildTrivial(it)) return it;

  // 2. shape.
  std::vector<int64_t> shape = inputs[0].tensor.sizes();
  for (size_t i = 1; i < inputs.size(); ++i) shape = inferBroadcastShape(shape, inputs[i].tensor.sizes());
  Tensor out = output_;
  bool inplace = false;
  for (const Input& in : inputs) inplace = inplace || (out.defined() && in.tensor.is_same(out));
  if (out.defined() && (inplace || !resize_outputs_) && !IntArrayRef(out.sizes()).equals(shape)) {
    std::vector<int64_t> withOutput = inferBroadcastShape(out.sizes(), shape);
    throwOutputShapeMismatch(out.sizes(), withOutput);
  }

  // 3. dtypes.
  ScalarType common;
  if (common_dtype_) {
    common = *common_dtype_;
  } else if (promote_inputs_) {
    ResultTypeState state;
    for (const Input& in : inputs)
      if (!in.keeps_dtype) state = update_result_type_state(in.tensor, state);
    common = result_type(state);
    if (promote_integer_inputs_to_float_ && isIntegralType(common, /*includeBool=*/true)) common = get_default_dtype();
  } else {
    common = inputs[0].tensor.dtype();
  }
  const bool castInputs = promote_inputs_ || common_dtype_.has_value();
  ScalarType resultDtype = output_dtype_.value_or(common);

  it.op_name_ = op;
  it.common_dtype_ = common;
  bool outputNeedsTemporary = false;
  if (out.defined()) {
    if (resize_outputs_ && !inplace) resizeOutput(out, shape);
    if (out.dtype() != resultDtype) {
      DK_CHECK(canCast(resultDtype, out.dtype()), "result type ", resultDtype,
               " can't be cast to the desired output type ", out.dtype());
      outputNeedsTemporary = true;
    }
    assertNoInternalOverlap(out);
  }

  // 4. iteration order, from the tensors whose layout is already fixed.
  std::array<const Tensor*, TensorIterator::kMaxOperands> fixed{};
  size_t nfixed = 0;
  if (out.defined()) fixed[nfixed++] = &out;
  for (const Input& in : inputs) fixed[nfixed++] = &in.tensor;
  DimVector order = iterationOrderOf(shape, ArrayRef<const Tensor*>(fixed.data(), nfixed));

  Tensor written;
  if (!out.defined()) {
    written = emptyForOrder(shape, order, resultDtype);
    it.result_ = written;
  } else if (outputNeedsTemporary) {
    written = emptyForOrder(shape, order, resultDtype);
    it.result_ = out;
    it.copy_back_ = true;
  } else {
    written = out;
    it.result_ = out;
  }

  // 5. inputs cast to the common dtype; inputs that share memory with the output copied.
  it.addOperand(written);
  for (const Input& in : inputs) {
    Tensor t = in.tensor;
    if (castInputs && !in.keeps_dtype && t.dtype() != common) {
      t = castToDtype(t, common);
    } else if (written.is_same(out) && !aliasesExactly(t, written) && meta::mayOverlap(t, written)) {
      t = contiguousCopy(t);
    }
    it.addOperand(std::move(t));
  }

  // 6. strides and coalescing.
  it.computeGeometry(shape, order);
  return it;
}

// ---- iterator ----

TensorIterator TensorIterator::overOperands(const char* op_name, std::vector<Tensor> operands) {
  DK_CHECK(!operands.empty() && operands.size() <= kMaxOperands, op_name, ": ", operands.size(),
           " operands is not supported by the TensorIterator");
  TensorIterator it;
  it.op_name_ = op_name;
  IntArrayRef shape = operands[0].sizes();
  for (size_t i = 1; i < operands.size(); ++i) {
    std::vector<int64_t> broadcast = inferBroadcastShape(shape, operands[i].sizes());
    if (broadcast != shape) throwOutputShapeMismatch(shape, broadcast);
  }
  std::array<const Tensor*, kMaxOperands> all{};
  for (size_t k = 0; k < operands.size(); ++k) all[k] = &operands[k];
  DimVector order = iterationOrderOf(shape, ArrayRef<const Tensor*>(all.data(), operands.size()));
  it.common_dtype_ = operands[0].dtype();
  it.result_ = operands[0];
  for (Tensor& t : operands) it.addOperand(std::move(t));
  it.computeGeometry(it.result_.sizes(), order);
  return it;
}

void TensorIterator::computeGeometry(IntArrayRef shape, IntArrayRef order) {
  numel_ = computeNumel(shape);
  const auto nops = static_cast<size_t>(nops_);
  const size_t nd = shape.size();
  // byteStrides[k * nd + d]: operand k's step over dim d, in bytes.
  StrideVector byteStrides;
  byteStrides.resize(nops * nd);
  for (size_t k = 0; k < nops; ++k) {
    const Tensor& t = operands_[k];
    int64_t* s = byteStrides.data() + k * nd;
    broadcastStrides(t, shape, s);
    for (size_t d = 0; d < nd; ++d) s[d] *= static_cast<int64_t>(t.element_size());
    data_[k] = static_cast<char*>(t.data_ptr());
  }
  // Coalesce in iteration order: the running dim absorbs the next one when every operand
  // steps over the running dim exactly to where the next one's first step lands (size-1 dims
  // always merge). strides[k * nd + i] is operand k's stride over coalesced dim i.
  DimVector sizes;
  StrideVector strides;
  strides.resize(nops * nd);
  auto stride = [&](size_t k, size_t i) -> int64_t& { return strides[k * nd + i]; };
  for (size_t i = 0; i < nd; ++i) {
    auto d = static_cast<size_t>(order[i]);
    int64_t size = shape[d];
    if (!sizes.empty()) {
      size_t last = sizes.size() - 1;
      bool mergeable = size == 1 || sizes[last] == 1;
      if (!mergeable) {
        mergeable = true;
        for (size_t k = 0; k < nops && mergeable; ++k)
          mergeable = stride(k, last) * sizes[last] == byteStrides[k * nd + d];
      }
      if (mergeable) {
        if (sizes[last] == 1)
          for (size_t k = 0; k < nops; ++k) stride(k, last) = byteStrides[k * nd + d];
        sizes[last] *= size;
        continue;
      }
    }
    sizes.push_back(size);
    for (size_t k = 0; k < nops; ++k) stride(k, sizes.size() - 1) = byteStrides[k * nd + d];
  }
  // One dim of size 1 says nothing a 0-dim iteration does not.
  if (sizes.size() == 1 && sizes[0] == 1) sizes.clear();
  const size_t ndim = sizes.size();
  strides_.resize(nops * ndim);
  for (size_t k = 0; k < nops; ++k)
    for (size_t i = 0; i < ndim; ++i) strides_[k * ndim + i] = stride(k, i);
  shape_ = std::move(sizes);
}

void TensorIterator::finish() {
  if (!copy_back_) return;
  copy_back_ = false;
  copy_inplace_cpu(result_, operands_[0], false);
}

}  // namespace dk::native
