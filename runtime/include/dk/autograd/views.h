// dk/autograd/views.h: the nodes behind in-place operations on views (Note [Views and in-place]
// in dk/autograd/history.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dk/autograd/node.h"
#include "dk/tensor/tensor.h"

namespace dk::autograd {

// Where a tensor sits in its storage.
struct TensorGeometry {
  explicit TensorGeometry(const Tensor& t) : sizes(t.sizes()), strides(t.strides()), storage_offset(t.storage_offset()) {}
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset;
};

// The base's grad_fn after an in-place operation `fn` on one of its views: the base's gradient
// with the view's slice replaced by what fn computes from it. Outputs: the base's previous
// history, then fn's other inputs.
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn);
  variable_list apply(variable_list grads) override;
  std::string name() const override { return "CopySlices"; }
  void release_variables() override;

 private:
  TensorGeometry base_;
  TensorGeometry view_;
  std::shared_ptr<Node> fn_;
};

// The grad_fn of a view rebuilt from its base's history: the view's gradient placed into
// zeros of the base's geometry (summed where the view repeats elements, as expand does).
class AsStridedBackward0 final : public Node {
 public:
  AsStridedBackward0(const Tensor& base, const Tensor& view);
  variable_list apply(variable_list grads) override;
  std::string name() const override { return "AsStridedBackward0"; }

 private:
  TensorGeometry base_;
  TensorGeometry view_;
};

}  // namespace dk::autograd
