// dk/autograd/formulas.h: the helper functions derivatives.yaml formulas call (the generated
// AutogradFunctions.cpp has this namespace in scope). Each is written with dk operators, so it
// works on every backend that has them and is itself differentiable (create_graph).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "dk/autograd/node.h"
#include "dk/core/scalar.h"
#include "dk/tensor/tensor.h"

namespace dk::autograd::formulas {

// t * s, or t itself when s is 1 (no extra operator in the graph).
Tensor maybe_multiply(const Tensor& t, const Scalar& s);

// -1, 0 or 1 by the sign of each element.
Tensor sgn(const Tensor& self);

// d/dx x^e = e x^(e-1) (zero for e = 0).
Tensor pow_backward(const Tensor& grad, const Tensor& self, const Scalar& exponent);

// maximum/minimum: the gradient goes to the winning input, half to each on a tie, and all of it
// to both where neither wins (a NaN on either side), as PyTorch's formula does.
Tensor max_min_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool is_max, bool for_self);

// grad where x > threshold, else 0 (relu: x is the result).
Tensor threshold_backward(const Tensor& grad, const Tensor& x, const Scalar& threshold);

// d^2 gelu(x)/dx^2 (gelu_backward's derivative in x), for approximate "none" and "tanh".
Tensor gelu_second_derivative(const Tensor& self, std::string_view approximate);

// grad where min <= self <= max, else 0.
Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max);

// The gradient of a sum over `dim` (every dim when none or empty): grad broadcast back to `sizes`.
Tensor sum_backward(const Tensor& grad, const std::vector<int64_t>& sizes,
                    const std::optional<std::vector<int64_t>>& dim, bool keepdim);
// The same, divided by the number of elements each mean took.
Tensor mean_backward(const Tensor& grad, const std::vector<int64_t>& sizes,
                     const std::optional<std::vector<int64_t>>& dim, bool keepdim);

// var over `dim` (ddof 1 when unbiased): 2 (self - mean) grad / (N - ddof), grad broadcast back.
Tensor var_backward(const Tensor& grad, const Tensor& self, const std::optional<std::vector<int64_t>>& dim,
                    bool unbiased, bool keepdim);
// std = sqrt(var): var_backward of grad / (2 std), with 0 where std is 0 (as PyTorch's
// std_backward; the chain through sqrt would give 0 * inf = nan there).
Tensor std_backward(const Tensor& result, const Tensor& grad, const Tensor& self,
                    const std::optional<std::vector<int64_t>>& dim, bool unbiased, bool keepdim);

// max.dim, sort, topk and the like: grad goes to the elements `indices` selected along `dim`.
Tensor value_selecting_reduction_backward(const Tensor& grad, int64_t dim, const Tensor& indices,
                                          const std::vector<int64_t>& sizes, bool keepdim);

// index_select: zeros of `sizes` with each slice of grad added at the index it was read from.
Tensor index_select_backward(const Tensor& grad, const std::vector<int64_t>& sizes, int64_t dim,
                             const Tensor& index);
// gather: zeros of `sizes` with grad added where each element was read from (scatter_add).
Tensor gather_backward(const Tensor& grad, const std::vector<int64_t>& sizes, int64_t dim, const Tensor& index);
// im2col: col2im of grad back to the input's spatial size.
Tensor im2col_backward(const Tensor& grad, const std::vector<int64_t>& input_sizes, const std::vector<int64_t>& kernel_size,
                       const std::vector<int64_t>& dilation, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& stride);
// max_pool2d_with_indices: each output's gradient added at the input position (row * W + col of
// its plane) its index names.
Tensor max_pool2d_indices_backward(const Tensor& grad, const std::vector<int64_t>& input_sizes, const Tensor& indices);
// cumsum: the reversed running sum of grad along dim, in the input's dtype.
Tensor cumsum_backward(const Tensor& grad, int64_t dim, ScalarType input_dtype);

// max() and min(): the gradient shared evenly by the elements of `input` equal to `value` (the
// NaNs, when value is NaN), as PyTorch's evenly_distribute_backward.
Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& input, const Tensor& value);

// grad summed down to `sizes` (the shape that was broadcast or expanded to grad's).
Tensor sum_to(const Tensor& grad, const std::vector<int64_t>& sizes);

// permute by the inverse permutation.
Tensor permute_backwards(const Tensor& grad, const std::vector<int64_t>& dims);

// squeeze.dim: put the dim back if it was squeezed (size 1).
Tensor unsqueeze_to(const Tensor& grad, int64_t dim, const std::vector<int64_t>& sizes);
// squeeze(): grad with the size-1 dims of `sizes` put back.
Tensor unsqueeze_to(const Tensor& grad, const std::vector<int64_t>& sizes);

// zeros of `sizes` with grad written where the view was.
Tensor select_backward(const Tensor& grad, const std::vector<int64_t>& sizes, int64_t dim, int64_t index);
Tensor slice_backward(const Tensor& grad, const std::vector<int64_t>& sizes, int64_t dim,
                      std::optional<int64_t> start, std::optional<int64_t> end, int64_t step);

// The outputs' gradients put back together; missing ones (outputs not used) count as zeros.
Tensor split_backward(const variable_list& grads, int64_t split_size, int64_t dim, const std::vector<int64_t>& sizes,
                      ScalarType dtype, Device device);
Tensor unbind_backward(const variable_list& grads, int64_t dim, const std::vector<int64_t>& sizes, ScalarType dtype,
                       Device device);

// cat: each input's slice of grad.
std::vector<Tensor> cat_tensors_backward(const Tensor& grad, const std::vector<std::vector<int64_t>>& sizes,
                                         int64_t dim);

// _softmax / _log_softmax from their output, in the input's dtype.
Tensor softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim, ScalarType input_dtype);
Tensor log_softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim, ScalarType input_dtype);

// The gradients of mat1 and mat2 of mat1 @ mat2 (times alpha), laid out as the input was: for an
// input that is the transpose of a contiguous matrix (weight.t() in linear), the product is
// computed transposed, (mat2 @ grad^T)^T or (grad^T @ mat1)^T, so the gradient has the input's
// strides and the transpose's backward hands its leaf a contiguous gradient to keep, with no copy.
Tensor mm_mat1_backward(const Tensor& grad, const Tensor& mat2, const std::vector<int64_t>& mat1_sizes,
                        const std::vector<int64_t>& mat1_strides, const Scalar& alpha);
Tensor mm_mat2_backward(const Tensor& grad, const Tensor& mat1, const std::vector<int64_t>& mat2_sizes,
                        const std::vector<int64_t>& mat2_strides, const Scalar& alpha);

// native_layer_norm: the gradients of input, weight and bias that grad_input_mask asks for
// (undefined where not asked or when grad is undefined), through native_layer_norm_backward
// (the CPU's fused kernel). Under create_graph (grad mode on during the backward) the composite
// backward instead, with mean and rstd recomputed from input (and eps) by dk operators, so the
// graph it records reaches input through them too (second derivatives).
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad, const Tensor& input,
                                                       const std::vector<int64_t>& normalized_shape,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const std::optional<Tensor>& weight,
                                                       const std::optional<Tensor>& bias, double eps,
                                                       std::array<bool, 3> grad_input_mask);

// Losses (reduction: 0 none, 1 mean, 2 sum).
Tensor mse_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction);
Tensor nll_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index);

// The weight's gradient: each row the sum of the gradients of the lookups that read it.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, const std::vector<int64_t>& weight_sizes,
                          int64_t padding_idx, bool scale_grad_by_freq);

}  // namespace dk::autograd::formulas
