// Building a TensorIterator (Note [CPU TensorIterator]) and the checks the CPU kernels share.
#include "tensor_iterator.h"

#include <algorithm>
#include <cstring>

#include "dk/allocator.h"
#include "dk/empty_tensor.h"
#include "dk/generated/NativeFunctions.h"
#include "dk/storage.h"
#include "dk/tensor_geometry.h"
#include "dk/type_promotion.h"

namespace dk::native {

bool canCast(ScalarType from, ScalarType to) {
  if (isFloatingType(from) && isIntegralType(to, /*includeBool=*/false)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

void checkOnCpu(const char* op, const Tensor& t) {
  if (!t.defined() || t.is_cpu()) return;
  DK_ERROR(op, ": expected all tensors to be on the same device, but found at least two devices, cpu and ",
           t.device().str());
}

void assertNoInternalOverlap(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    DK_CHECK(t.sizes()[static_cast<size_t>(d)] <= 1 || t.strides()[static_cast<size_t>(d)] != 0,
             "unsupported operation: more than one element of the written-to tensor refers to a single memory "
             "location. Please clone() the tensor before performing the operation.");
  }
}

namespace {

// [first, last) byte addresses a tensor's elements occupy; empty for a tensor with none.
std::pair<uintptr_t, uintptr_t> byteRange(const Tensor& t) {
  if (t.numel() == 0 || t.data_ptr() == nullptr) return {0, 0};
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    last += (t.sizes()[static_cast<size_t>(d)] - 1) * t.strides()[static_cast<size_t>(d)];
  auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  return {begin, begin + static_cast<uintptr_t>((last + 1) * static_cast<int64_t>(t.element_size()))};
}

// `t`'s strides for `shape` (aligned at the right), 0 where t is broadcast.
std::vector<int64_t> broadcastStrides(const Tensor& t, IntArrayRef shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  size_t offset = shape.size() - static_cast<size_t>(t.dim());
  for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d)
    strides[offset + d] = t.sizes()[d] == 1 && shape[offset + d] != 1 ? 0 : t.strides()[d];
  return strides;
}

// Note [Iteration order]: dims innermost first. `strides` holds, per operand that has a say,
// its strides for the full shape.
std::vector<int64_t> iterationOrder(IntArrayRef shape, const std::vector<std::vector<int64_t>>& strides) {
  const auto nd = static_cast<int64_t>(shape.size());
  std::vector<int64_t> order(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) order[static_cast<size_t>(i)] = nd - 1 - i;  // row-major to start
  // > 0: `outer` belongs inside `inner`; < 0: it does not; 0: no operand can tell.
  auto shouldSwap = [&](int64_t inner, int64_t outer) {
    for (const auto& s : strides) {
      int64_t si = s[static_cast<size_t>(inner)], so = s[static_cast<size_t>(outer)];
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

// Strides that make a tensor of `shape` dense in iteration order `order` (innermost first).
std::vector<int64_t> stridesForOrder(IntArrayRef shape, const std::vector<int64_t>& order) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t next = 1;
  for (int64_t d : order) {
    strides[static_cast<size_t>(d)] = next;
    next *= std::max<int64_t>(shape[static_cast<size_t>(d)], 1);
  }
  return strides;
}

Tensor emptyForOrder(IntArrayRef shape, const std::vector<int64_t>& order, ScalarType dtype) {
  return detail::empty_strided(shape, stridesForOrder(shape, order), dtype, Device(DeviceType::CPU));
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

bool mayOverlap(const Tensor& a, const Tensor& b) {
  if (!a.has_storage() || !b.has_storage() || !a.storage().is_same(b.storage())) return false;
  auto [a0, a1] = byteRange(a);
  auto [b0, b1] = byteRange(b);
  return a0 < b1 && b0 < a1;
}

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

TensorIteratorConfig& TensorIteratorConfig::add_output(const Tensor& out) {
  output_ = out;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::add_input(const Tensor& in) {
  inputs_.push_back({in, false});
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::add_input_keeping_dtype(const Tensor& in) {
  inputs_.push_back({in, true});
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::promote_inputs_to_common_dtype(bool on) {
  promote_inputs_ = on;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::promote_integer_inputs_to_float(bool on) {
  promote_integer_inputs_to_float_ = on;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::common_dtype(ScalarType dtype) {
  common_dtype_ = dtype;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::output_dtype(ScalarType dtype) {
  output_dtype_ = dtype;
  return *this;
}
TensorIteratorConfig& TensorIteratorConfig::resize_outputs(bool on) {
  resize_outputs_ = on;
  return *this;
}

TensorIterator TensorIteratorConfig::build() const {
  const char* op = op_name_;
  DK_CHECK(!inputs_.empty() && inputs_.size() < TensorIterator::kMaxOperands, op, ": ", inputs_.size(),
           " inputs is not supported by the TensorIterator");

  // 1. defined tensors on the cpu.
  for (const Input& in : inputs_) {
    DK_CHECK(in.tensor.defined(), op, ": expected a defined tensor as input");
    checkOnCpu(op, in.tensor);
  }
  checkOnCpu(op, output_);

  // 2. shape.
  std::vector<int64_t> shape = inputs_[0].tensor.sizes();
  for (size_t i = 1; i < inputs_.size(); ++i) shape = inferBroadcastShape(shape, inputs_[i].tensor.sizes());
  Tensor out = output_;
  bool inplace = false;
  for (const Input& in : inputs_) inplace = inplace || (out.defined() && in.tensor.is_same(out));
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
    for (const Input& in : inputs_)
      if (!in.keeps_dtype) state = update_result_type_state(in.tensor, state);
    common = result_type(state);
    if (promote_integer_inputs_to_float_ && isIntegralType(common, /*includeBool=*/true)) common = get_default_dtype();
  } else {
    common = inputs_[0].tensor.dtype();
  }
  const bool castInputs = promote_inputs_ || common_dtype_.has_value();
  ScalarType resultDtype = output_dtype_.value_or(common);

  TensorIterator it;
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
  std::vector<std::vector<int64_t>> orderStrides;
  if (out.defined()) orderStrides.push_back(broadcastStrides(out, shape));
  for (const Input& in : inputs_) orderStrides.push_back(broadcastStrides(in.tensor, shape));
  std::vector<int64_t> order = iterationOrder(shape, orderStrides);

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
  it.operands_.push_back(written);
  for (const Input& in : inputs_) {
    Tensor t = in.tensor;
    if (castInputs && !in.keeps_dtype && t.dtype() != common) {
      t = castToDtype(t, common);
    } else if (written.is_same(out) && !aliasesExactly(t, written) && mayOverlap(t, written)) {
      t = contiguousCopy(t);
    }
    it.operands_.push_back(std::move(t));
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
  std::vector<int64_t> shape = operands[0].sizes();
  for (size_t i = 1; i < operands.size(); ++i) {
    std::vector<int64_t> broadcast = inferBroadcastShape(shape, operands[i].sizes());
    if (broadcast != shape) throwOutputShapeMismatch(shape, broadcast);
  }
  std::vector<std::vector<int64_t>> orderStrides;
  for (const Tensor& t : operands) orderStrides.push_back(broadcastStrides(t, shape));
  it.common_dtype_ = operands[0].dtype();
  it.result_ = operands[0];
  it.operands_ = std::move(operands);
  it.computeGeometry(shape, iterationOrder(shape, orderStrides));
  return it;
}

void TensorIterator::computeGeometry(IntArrayRef shape, const std::vector<int64_t>& order) {
  numel_ = computeNumel(shape);
  const size_t nops = operands_.size();
  const size_t nd = shape.size();
  std::vector<std::vector<int64_t>> byteStrides(nops);
  for (size_t k = 0; k < nops; ++k) {
    const Tensor& t = operands_[k];
    byteStrides[k] = broadcastStrides(t, shape);
    for (int64_t& s : byteStrides[k]) s *= static_cast<int64_t>(t.element_size());
    data_[k] = static_cast<char*>(t.data_ptr());
  }
  // Coalesce in iteration order: the running dim absorbs the next one when every operand
  // steps over the running dim exactly to where the next one's first step lands (size-1 dims
  // always merge).
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides(nops);
  for (size_t i = 0; i < nd; ++i) {
    auto d = static_cast<size_t>(order[i]);
    int64_t size = shape[d];
    if (!sizes.empty()) {
      size_t last = sizes.size() - 1;
      bool mergeable = size == 1 || sizes[last] == 1;
      if (!mergeable) {
        mergeable = true;
        for (size_t k = 0; k < nops && mergeable; ++k)
          mergeable = strides[k][last] * sizes[last] == byteStrides[k][d];
      }
      if (mergeable) {
        if (sizes[last] == 1)
          for (size_t k = 0; k < nops; ++k) strides[k][last] = byteStrides[k][d];
        sizes[last] *= size;
        continue;
      }
    }
    sizes.push_back(size);
    for (size_t k = 0; k < nops; ++k) strides[k].push_back(byteStrides[k][d]);
  }
  // One dim of size 1 says nothing a 0-dim iteration does not.
  if (sizes.size() == 1 && sizes[0] == 1) {
    sizes.clear();
    for (auto& s : strides) s.clear();
  }
  shape_ = std::move(sizes);
  strides_.clear();
  for (const auto& s : strides) strides_.insert(strides_.end(), s.begin(), s.end());
}

void TensorIterator::finish() {
  if (!copy_back_) return;
  copy_back_ = false;
  copy_inplace_cpu(result_, operands_[0], false);
}

}  // namespace dk::native
