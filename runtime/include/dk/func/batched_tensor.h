// dk/func/batched_tensor.h: the tensors vmap hands to the function it maps (Note [Batched
// tensors]).
#pragma once

#include <cstdint>
#include <optional>

#include "dk/tensor/tensor.h"

namespace dk::func {

// Note [Batched tensors]
// Inside vmap, each mapped input is a BatchedTensorImpl: a `value` tensor with one more dim than
// the function sees (the batch dim, `bdim`, anywhere in the value) and the `level` of the vmap
// that made it (1 for the outermost, one more per nested vmap). Its sizes are the value's
// without the batch dim; it has no storage. Its key set is the value's plus FuncTorchBatched,
// the highest functionality key, so every operator called on it reaches the batching layer
// first: a batching rule for the operator (which calls the operator on the value, once for the
// whole batch) or the for-loop fallback (once per batch element). Nested vmap nests the
// wrappers: the value of a level-2 tensor may itself be a level-1 tensor, and operators on the
// value reach the level-1 rules in turn, until a plain tensor reaches the kernels.
class BatchedTensorImpl : public TensorImpl {
 public:
  // bdim is a dim of value, in [0, value.dim()); makeBatched also takes a negative one.
  BatchedTensorImpl(Tensor value, int64_t bdim, int64_t level);

  const Tensor& value() const { return value_; }
  int64_t bdim() const { return bdim_; }
  int64_t level() const { return level_; }

  intrusive_ptr<TensorImpl> shallow_copy_without_history() const override;

 private:
  Tensor value_;
  int64_t bdim_;
  int64_t level_;
};

// The batched impl of `t`, or null when `t` is not a batched tensor.
const BatchedTensorImpl* maybeBatched(const Tensor& t);
// The batched impl of `t` when it is batched at exactly `level`, else null.
const BatchedTensorImpl* batchedAt(const Tensor& t, int64_t level);
// Wraps `value` with its batch dim at `bdim` (negative counts from the end) for `level`.
Tensor makeBatched(Tensor value, int64_t bdim, int64_t level);
// The value of a batched tensor with its batch dim moved to the front (a view when it is not
// there already).
Tensor valueWithBdimFirst(const BatchedTensorImpl& batched);

}  // namespace dk::func
