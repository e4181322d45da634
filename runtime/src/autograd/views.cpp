// In-place operations on views: CopySlices and rebuilt view grad_fns (Note [Views and in-place]
// in dk/autograd/history.h).
#include "dk/autograd/views.h"

#include <utility>

#include "dk/autograd/functions.h"
#include "dk/autograd/history.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/sum.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::autograd {

namespace {

// An uninitialised tensor with `base`'s sizes and strides, in new storage (a tensor of its own
// when base is contiguous, so that views of it record it as their base).
Tensor emptyLike(const TensorGeometry& base, const Tensor& like) {
  if (isContiguousLayout(base.sizes, base.strides)) {
    return dk::empty(base.sizes, like.dtype(), std::nullopt, like.device());
  }
  Tensor storage = dk::empty({storageElementsFor(base.sizes, base.strides, 0)}, like.dtype(), std::nullopt,
                             like.device());
  return dk::detail::make_view(storage, base.sizes, base.strides, 0);
}

// The part of `whole` (laid out as `base`) that `view` covers.
Tensor sliceOf(const Tensor& whole, const TensorGeometry& base, const TensorGeometry& view) {
  Tensor slice = dk::detail::make_view(whole, view.sizes, view.strides,
                                       whole.storage_offset() + view.storage_offset - base.storage_offset);
  // An autograd view of `whole`: under create_graph, writing into it records on `whole`.
  as_view(whole, slice);
  return slice;
}

}  // namespace

CopySlices::CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
    : base_(base), view_(view), fn_(std::move(fn)) {
  DK_CHECK(fn_ != nullptr, "CopySlices: null node");
  edge_list edges = fn_->next_edges();
  DK_CHECK(!edges.empty(), "CopySlices: the in-place node has no input for the view");
  edges[0] = gradient_edge(base);
  set_next_edges(std::move(edges));
}

variable_list CopySlices::apply(variable_list grads) {
  const Tensor& grad = grads.at(0);
  DK_CHECK(grad.defined(), "CopySlices: undefined gradient");
  Tensor result = emptyLike(base_, grad);
  // The slice below is made from strides, not by an operator, so it needs a tensor with memory:
  // a wrapper (a grad transform's, a functional or fake tensor) has none.
  DK_CHECK(result.unsafeGetTensorImpl()->has_storage(),
           "autograd: the backward of an in-place write into a view is not supported inside a function transform "
           "(grad, vjp, jacrev) yet: write into a fresh tensor, or functionalize the function inside the transform "
           "(grad(functionalize(f)))");
  result.copy_(grad);
  Tensor slice = sliceOf(result, base_, view_);
  variable_list res = (*fn_)({slice.clone()});
  variable_list out(num_outputs());
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == 0) {
      // What the view held before flows to the base's history; nothing of it when fn says so.
      if (res.at(0).defined()) {
        slice.copy_(res[0]);
      } else {
        slice.zero_();
      }
      out[0] = result;
    } else if (i < res.size()) {
      out[i] = res[i];
    }
  }
  return out;
}

void CopySlices::release_variables() { fn_->release_variables(); }

AsStridedBackward0::AsStridedBackward0(const Tensor& base, const Tensor& view) : base_(base), view_(view) {}

variable_list AsStridedBackward0::apply(variable_list grads) {
  Tensor grad = grads.at(0);
  Tensor result = emptyLike(base_, grad);
  result.zero_();
  // Where the view repeats an element (stride 0), the base element gets the sum.
  TensorGeometry view = view_;
  std::vector<int64_t> repeated;
  for (size_t d = 0; d < view.sizes.size(); ++d) {
    if (view.strides[d] == 0 && view.sizes[d] > 1) {
      repeated.push_back(static_cast<int64_t>(d));
      view.sizes[d] = 1;
    }
  }
  if (!repeated.empty()) grad = dk::sum(grad, IntArrayRef(repeated), /*keepdim=*/true);
  sliceOf(result, base_, view).copy_(grad);
  return {result};
}

}  // namespace dk::autograd
