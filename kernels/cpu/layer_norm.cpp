// layer_norm on the CPU: native_layer_norm and its backward, fused (Note [Fused layer_norm]).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "dk/core/parallel.h"
#include "dk/generated/ops/native_layer_norm_backward_native.h"
#include "dk/generated/ops/native_layer_norm_native.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"
#include "meta/shape_functions.h"
#include "vec_math.h"

namespace dk::native {

// Note [Fused layer_norm]
// The input is seen as M rows of N elements (N: the normalized dims). Forward, per row: the mean
// and the biased variance, each one vectorized pass in double over the row (while it sits in
// the L1 cache), then y = (x * rstd + (-mean * rstd)) * weight + bias in one more pass, in
// PyTorch's order of operations. Nothing of the input's size is allocated besides the output;
// mean and rstd (M values each) are saved for the backward. Rows are independent and split over
// the threads (dk::parallel_for). Half and BFloat16 rows go through a float buffer.
//
// Backward, with g = dy * weight (or dy) and xhat = (x - mean) * rstd, per row:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
// computed as a * g + b * x + c from the row sums of g and g * x (in double), again split over
// rows. dweight = sum over rows of dy * xhat and dbias = sum over rows of dy are split over
// columns instead, so each column is summed by one thread, in row order, whatever the thread
// count: results do not depend on the split.

namespace {

// The accumulation type of a row: double for double, float for the others.
template <class T>
using RowType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Rows of at least this many elements in a chunk of parallel work (about kGrainSize elements).
int64_t rowGrain(int64_t row_size) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(row_size, 1)); }

// `t` (of dtype T) as a contiguous array of A: its own data when T is A and it is contiguous,
// else a converted copy kept in `buffer`.
template <class T, class A>
const A* asContiguous(const Tensor& t, Tensor& keep, std::vector<A>& buffer) {
  keep = t.contiguous();
  const T* data = static_cast<const T*>(keep.data_ptr());
  if constexpr (std::is_same_v<T, A>) {
    return data;
  } else {
    buffer.resize(static_cast<size_t>(keep.numel()));
    for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<A>(data[i]);
    return buffer.data();
  }
}

template <class T>
void layerNormForward(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                      double eps, int64_t M, int64_t N, const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  using A = RowType<T>;
  const vec::MathFunctions<A>& math = vec::mathFor<A>();
  Tensor x_keep, w_keep, b_keep;
  std::vector<A> w_buffer, b_buffer;
  x_keep = input.contiguous();
  const T* x = static_cast<const T*>(x_keep.data_ptr());
  const A* w = weight && weight->defined() ? asContiguous<T, A>(*weight, w_keep, w_buffer) : nullptr;
  const A* b = bias && bias->defined() ? asContiguous<T, A>(*bias, b_keep, b_buffer) : nullptr;
  T* y = static_cast<T*>(out.data_ptr());
  T* mean_out = static_cast<T*>(mean.data_ptr());
  T* rstd_out = static_cast<T*>(rstd.data_ptr());
  parallel_for(0, M, rowGrain(N), [&](int64_t first, int64_t last) {
    std::vector<A> row(std::is_same_v<T, A> ? 0 : static_cast<size_t>(N));
    for (int64_t i = first; i < last; ++i) {
      const A* in = nullptr;
      A* dst = nullptr;
      if constexpr (std::is_same_v<T, A>) {
        in = x + i * N;
        dst = y + i * N;
      } else {
        for (int64_t j = 0; j < N; ++j) row[static_cast<size_t>(j)] = static_cast<A>(x[i * N + j]);
        in = dst = row.data();
      }
      const double mu = math.sum(in, N) / static_cast<double>(N);
      const double var = math.sum_sq_dev(in, N, mu) / static_cast<double>(N);
      const double r = 1.0 / std::sqrt(var + eps);
      // scale and shift in the row type, as PyTorch rounds them: x * scale + shift is exactly 0
      // where x is the mean.
      const A scale = static_cast<A>(r), shift = -scale * static_cast<A>(mu);
      math.normalize(in, dst, N, scale, shift, w, b);
      if constexpr (!std::is_same_v<T, A>) {
        for (int64_t j = 0; j < N; ++j) y[i * N + j] = T(row[static_cast<size_t>(j)]);
      }
      mean_out[i] = T(static_cast<A>(mu));
      rstd_out[i] = T(static_cast<A>(r));
    }
  });
}

template <class T>
void layerNormBackward(const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
                       const std::optional<Tensor>& weight, int64_t M, int64_t N, const Tensor& dx,
                       const Tensor& dweight, const Tensor& dbias) {
  Tensor dy_keep = grad_out.contiguous(), x_keep = input.contiguous(), mean_keep = mean.contiguous(),
         rstd_keep = rstd.contiguous(), w_keep;
  const T* dy = static_cast<const T*>(dy_keep.data_ptr());
  const T* x = static_cast<const T*>(x_keep.data_ptr());
  const T* mu = static_cast<const T*>(mean_keep.data_ptr());
  const T* rs = static_cast<const T*>(rstd_keep.data_ptr());
  const bool has_weight = weight && weight->defined();
  if (has_weight) w_keep = weight->contiguous();
  const T* w = has_weight ? static_cast<const T*>(w_keep.data_ptr()) : nullptr;
  if (dx.defined()) {
    T* dx_data = static_cast<T*>(dx.data_ptr());
    parallel_for(0, M, rowGrain(N), [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        const T* dy_row = dy + i * N;
        const T* x_row = x + i * N;
        double sum_g = 0, sum_gx = 0;
        for (int64_t j = 0; j < N; ++j) {
          const double g = static_cast<double>(dy_row[j]) * (w ? static_cast<double>(w[j]) : 1.0);
          sum_g += g;
          sum_gx += g * static_cast<double>(x_row[j]);
        }
        const double m = static_cast<double>(mu[i]), r = static_cast<double>(rs[i]);
        const double inv_n = 1.0 / static_cast<double>(N);
        // dx = a * g + b * x + c (Note [Fused layer_norm]).
        const double b = (sum_g * m - sum_gx) * r * r * r * inv_n;
        const double c = -b * m - sum_g * r * inv_n;
        for (int64_t j = 0; j < N; ++j) {
          const double g = static_cast<double>(dy_row[j]) * (w ? static_cast<double>(w[j]) : 1.0);
          dx_data[i * N + j] = T(static_cast<RowType<T>>(r * g + b * static_cast<double>(x_row[j]) + c));
        }
      }
    });
  }
  if (dweight.defined() || dbias.defined()) {
    T* dw = dweight.defined() ? static_cast<T*>(dweight.data_ptr()) : nullptr;
    T* db = dbias.defined() ? static_cast<T*>(dbias.data_ptr()) : nullptr;
    parallel_for(0, N, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(M, 1)), [&](int64_t first, int64_t last) {
      std::vector<double> acc_w(static_cast<size_t>(last - first)), acc_b(static_cast<size_t>(last - first));
      for (int64_t i = 0; i < M; ++i) {
        const double m = static_cast<double>(mu[i]), r = static_cast<double>(rs[i]);
        for (int64_t j = first; j < last; ++j) {
          const double g = static_cast<double>(dy[i * N + j]);
          acc_w[static_cast<size_t>(j - first)] += g * (static_cast<double>(x[i * N + j]) - m) * r;
          acc_b[static_cast<size_t>(j - first)] += g;
        }
      }
      for (int64_t j = first; j < last; ++j) {
        if (dw) dw[j] = T(static_cast<RowType<T>>(acc_w[static_cast<size_t>(j - first)]));
        if (db) db[j] = T(static_cast<RowType<T>>(acc_b[static_cast<size_t>(j - first)]));
      }
    });
  }
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_cpu(const Tensor& input, IntArrayRef normalized_shape,
                                                         const std::optional<Tensor>& weight,
                                                         const std::optional<Tensor>& bias, double eps) {
  meta::LayerNormSpec spec = meta::layerNorm(input, normalized_shape, weight, bias);
  for (const std::optional<Tensor>* t : {&weight, &bias})
    if (*t && (*t)->defined())
      DK_CHECK((*t)->dtype() == input.dtype(), "expected scalar type ", input.dtype(), " but found ", (*t)->dtype());
  Tensor out = detail::empty_contiguous(input.sizes(), input.dtype(), input.device());
  Tensor mean = detail::empty_contiguous(spec.stat_sizes, input.dtype(), input.device());
  Tensor rstd = detail::empty_contiguous(spec.stat_sizes, input.dtype(), input.device());
  DK_DISPATCH_FLOATING_TYPES(input.dtype(), "LayerNormKernelImpl", [&] {
    if (spec.rows > 0) layerNormForward<scalar_t>(input, weight, bias, eps, spec.rows, spec.row_size, out, mean, rstd);
  });
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_cpu(
    const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape, const Tensor& mean, const Tensor& rstd,
    const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, std::array<bool, 3> output_mask) {
  meta::LayerNormSpec spec = meta::layerNorm(input, normalized_shape, weight, bias);
  DK_CHECK(grad_out.sizes() == input.sizes(), "native_layer_norm_backward: grad_out of size ", grad_out.sizes(),
           " does not match the input's size ", input.sizes());
  DK_CHECK(mean.numel() == spec.rows && rstd.numel() == spec.rows, "native_layer_norm_backward: expected mean and rstd of ",
           spec.rows, " elements, but got ", mean.numel(), " and ", rstd.numel());
  const ScalarType dtype = input.dtype();
  for (const Tensor* t : {&grad_out, &mean, &rstd})
    DK_CHECK(t->dtype() == dtype, "native_layer_norm_backward: expected every tensor of dtype ", dtype, ", but got ",
             t->dtype());
  const bool has_weight = weight && weight->defined();
  if (has_weight) DK_CHECK(weight->dtype() == dtype, "expected scalar type ", dtype, " but found ", weight->dtype());
  Tensor dx, dweight, dbias;
  if (output_mask[0]) dx = detail::empty_contiguous(input.sizes(), dtype, input.device());
  if (output_mask[1] && has_weight) dweight = detail::empty_contiguous(normalized_shape, dtype, input.device());
  if (output_mask[2] && bias && bias->defined()) dbias = detail::empty_contiguous(normalized_shape, dtype, input.device());
  DK_DISPATCH_FLOATING_TYPES(dtype, "LayerNormBackwardKernelImpl", [&] {
    if (spec.rows > 0 && spec.row_size > 0)
      layerNormBackward<scalar_t>(grad_out, input, mean, rstd, weight, spec.rows, spec.row_size, dx, dweight, dbias);
    else if (spec.row_size > 0) {  // no rows: the parameter gradients are zeros
      if (dweight.defined()) dweight.zero_();
      if (dbias.defined()) dbias.zero_();
    }
  });
  return {dx, dweight, dbias};
}

}  // namespace dk::native
