// Batched tensors: the value, its batch dim and the vmap level (Note [Batched tensors]).
#include "dk/func/batched_tensor.h"

#include <numeric>
#include <vector>

namespace dk::func {

namespace {
std::vector<int64_t> withoutDim(IntArrayRef sizes, int64_t dim) {
  std::vector<int64_t> out;
  out.reserve(sizes.empty() ? 0 : sizes.size() - 1);
  for (size_t d = 0; d < sizes.size(); ++d)
    if (static_cast<int64_t>(d) != dim) out.push_back(sizes[d]);
  return out;
}

int64_t checkedBdim(const Tensor& value, int64_t bdim) {
  DK_CHECK(value.defined(), "vmap: cannot batch an undefined tensor");
  const int64_t n = value.dim();
  DK_CHECK(bdim >= -n && bdim < n, "vmap: the batch dim ", bdim, " is out of range for a tensor of dimensionality ", n);
  return bdim < 0 ? bdim + n : bdim;
}
}  // namespace

// The value's sizes and strides without the batch dim: a decomposition that asks whether the
// tensor is contiguous, or could be viewed, gets the answer its physical layout gives. No
// storage (Storage() is undefined).
BatchedTensorImpl::BatchedTensorImpl(Tensor value, int64_t bdim, int64_t level)
    : TensorImpl(Storage(), value.key_set().add(DispatchKey::FuncTorchBatched), value.dtype(), value.device(),
                 withoutDim(value.sizes(), bdim), withoutDim(value.strides(), bdim), 0),
      value_(std::move(value)),
      bdim_(bdim),
      level_(level) {
  DK_CHECK(bdim_ >= 0 && bdim_ < value_.dim(), "BatchedTensorImpl: the batch dim ", bdim_, " is not a dim of a value "
           "of dimensionality ", value_.dim(), " (makeBatched takes negative dims)");
}

intrusive_ptr<TensorImpl> BatchedTensorImpl::shallow_copy_without_history() const {
  auto copy = make_intrusive<BatchedTensorImpl>(value_, bdim_, level_);
  copy->set_version_counter(version_counter());
  return copy;
}

const BatchedTensorImpl* maybeBatched(const Tensor& t) {
  if (!t.key_set().has(DispatchKey::FuncTorchBatched)) return nullptr;
  // The key alone does not prove the type: a test may give any TensorImpl any key set.
  return dynamic_cast<const BatchedTensorImpl*>(t.unsafeGetTensorImpl());
}

const BatchedTensorImpl* batchedAt(const Tensor& t, int64_t level) {
  const BatchedTensorImpl* b = maybeBatched(t);
  return b != nullptr && b->level() == level ? b : nullptr;
}

Tensor makeBatched(Tensor value, int64_t bdim, int64_t level) {
  const int64_t d = checkedBdim(value, bdim);
  return Tensor(make_intrusive<BatchedTensorImpl>(std::move(value), d, level));
}

Tensor valueWithBdimFirst(const BatchedTensorImpl& batched) {
  const int64_t b = batched.bdim();
  if (b == 0) return batched.value();
  std::vector<int64_t> order(static_cast<size_t>(batched.value().dim()));
  std::iota(order.begin(), order.end(), 0);
  order.erase(order.begin() + b);
  order.insert(order.begin(), b);
  return batched.value().permute(order);
}

}  // namespace dk::func
