// dk/dispatch/tensor_factories.h: the factory operators taking a TensorOptions, as in PyTorch's C++
// API: dk::zeros({2, 3}, dk::TensorOptions().dtype(dk::kDouble).device(dk::kMeta)).
// Each unpacks the options into the generated operator's dtype/layout/device/pin_memory
// arguments; with requires_grad(true) the result is a leaf that requires grad, as torch::zeros
// makes it (detail::applyRequiresGrad). (Templates constrained to TensorOptions, so dk::zeros({2}, dk::kFloat) still
// picks the generated overload without ambiguity.)
#pragma once

#include <type_traits>

#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/rand.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/zeros.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor_options.h"

namespace dk {

namespace detail {
template <class O>
using IfTensorOptions = std::enable_if_t<std::is_same_v<std::decay_t<O>, TensorOptions>, int>;
}  // namespace detail

#define DK_OPTIONS_ARGS(o) \
  (o).dtype_opt(), (o).layout_opt(), (o).device_opt(), \
      ((o).has_pinned_memory() ? std::optional<bool>((o).pinned_memory()) : std::nullopt)

template <class O, detail::IfTensorOptions<O> = 0>
Tensor empty(IntArrayRef size, const O& options) {
  return detail::applyRequiresGrad(dk::empty(size, DK_OPTIONS_ARGS(options)), options);
}
template <class O, detail::IfTensorOptions<O> = 0>
Tensor zeros(IntArrayRef size, const O& options) {
  return detail::applyRequiresGrad(dk::zeros(size, DK_OPTIONS_ARGS(options)), options);
}
template <class O, detail::IfTensorOptions<O> = 0>
Tensor ones(IntArrayRef size, const O& options) {
  return detail::applyRequiresGrad(dk::ones(size, DK_OPTIONS_ARGS(options)), options);
}
template <class O, detail::IfTensorOptions<O> = 0>
Tensor full(IntArrayRef size, const Scalar& value, const O& options) {
  return detail::applyRequiresGrad(dk::full(size, value, DK_OPTIONS_ARGS(options)), options);
}
template <class O, detail::IfTensorOptions<O> = 0>
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const O& options) {
  return detail::applyRequiresGrad(dk::arange(start, end, step, DK_OPTIONS_ARGS(options)), options);
}
template <class O, detail::IfTensorOptions<O> = 0>
Tensor rand(IntArrayRef size, const O& options) {
  return detail::applyRequiresGrad(dk::rand(size, DK_OPTIONS_ARGS(options)), options);
}
template <class O, detail::IfTensorOptions<O> = 0>
Tensor randn(IntArrayRef size, const O& options) {
  return detail::applyRequiresGrad(dk::randn(size, DK_OPTIONS_ARGS(options)), options);
}

#undef DK_OPTIONS_ARGS

}  // namespace dk
