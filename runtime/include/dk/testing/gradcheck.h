// dk/testing/gradcheck.h: checking the gradients autograd computes against finite differences.
//
// gradcheck(fn, inputs) runs `fn` on `inputs` and compares, for every input that requires grad,
// the analytical Jacobian (dk::autograd::grad, one backward per output element with a one-hot
// grad_output) with central finite differences
//
//     d out[j] / d in[k]  ~=  (fn(in[k] + eps)[j] - fn(in[k] - eps)[j]) / (2 eps)
//
// computed under dk::NoGradGuard by perturbing each input element in place through its data
// pointer (and restoring the exact old value). An entry passes when
// |analytical - numerical| <= atol + rtol * |numerical|. Like PyTorch's gradcheck it needs
// float64: with float32 the finite differences are mostly rounding noise.
//
// Besides the Jacobians it checks that:
//   - every floating output of `fn` requires grad (the operator recorded history) when some
//     input does, and every gradient has the input's dtype and sizes;
//   - a plain backward() with all-ones grad_outputs accumulates into .grad exactly the column
//     sums of the analytical Jacobian for inputs that require grad, and leaves inputs that do
//     not require grad without a gradient;
//   - the results do not depend on the inputs' layout: the whole check is repeated with every
//     floating input copied into non-contiguous memory (dims in reverse order, one element gap
//     between elements) and the outputs and Jacobians must match the contiguous run.
//
// Inputs that require grad must be leaves, floating inputs must be float64, and no input may
// have overlapping memory (a stride-0 expand), since perturbing one element would perturb
// several. Integer and bool inputs (indices, conditions) are passed through untouched.
//
// The result says which check failed; for a Jacobian mismatch it names the input, the output
// and both elements, with both values:
//
//   input 0 (Double [2, 3]) element [1, 0], output 0 (Double [2]) element [1]:
//   analytical 2, numerical 1 (|diff| 1 > 1e-05 + 0.001 * |numerical|)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dk/tensor/tensor.h"

namespace dk::testing {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  // Repeat the check with every floating input laid out non-contiguously. Off only for
  // functions that need contiguous inputs (view of a non-contiguous tensor is an error).
  bool check_noncontiguous = true;
  // Check backward()'s accumulation into .grad (see above).
  bool check_backward = true;
  // How many mismatching Jacobian entries a failure message lists.
  size_t max_reported = 6;
};

struct GradcheckResult {
  bool ok = true;
  // Why it failed; when ok, empty (or, from gradgradcheck, why there was nothing to check).
  std::string message;
  explicit operator bool() const { return ok; }
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;
using GradcheckMultiFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// One output.
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});
// Several outputs (a tuple or list return); non-floating outputs (max's indices) are skipped.
GradcheckResult gradcheck_multi(const GradcheckMultiFn& fn, const std::vector<Tensor>& inputs,
                                const GradcheckOptions& options = {});

// Second derivatives (PyTorch's gradgradcheck): gradcheck of the function
//
//     (inputs, grad_outputs) -> d <fn(inputs), grad_outputs> / d inputs
//
// (autograd::grad with create_graph over the inputs that require grad), so the graph that
// backward itself records is checked against finite differences of backward. grad_outputs
// are fixed pseudo-random float64 tensors, one per floating output of fn, that require grad:
// the check covers d/d grad_outputs (backward is linear in them) as well as d/d inputs. A first
// gradient that does not require grad (backward recorded no graph for it) must not change with
// any input or grad_output: sign's zeros pass, a backward computed out of autograd's sight
// fails. When no first gradient requires grad the result is ok and `message` says there was
// nothing more to check. Every failure message starts "double backward: ".
GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});
GradcheckResult gradgradcheck_multi(const GradcheckMultiFn& fn, const std::vector<Tensor>& inputs,
                                    const GradcheckOptions& options = {});

// ---- helpers the tests share

// The elements of a CPU tensor of any layout, in row-major order of its indices, as doubles
// (Double, Float, Long, Int and Bool tensors). Reads memory directly, no operator involved.
std::vector<double> to_doubles(const Tensor& t);

// A contiguous float64 CPU tensor holding `values` (row-major), made without any operator.
Tensor double_tensor(const std::vector<int64_t>& sizes, const std::vector<double>& values);

// A copy of `t` (float64, CPU) in non-contiguous memory of the same sizes: dims in reverse
// order and one unused element between neighbours. Not a view: a fresh tensor with its own
// storage, no history and requires_grad off.
Tensor noncontiguous_copy(const Tensor& t);

// "[1, 0]": the index of row-major element `flat` of a tensor of these sizes.
std::string index_string(const std::vector<int64_t>& sizes, int64_t flat);

}  // namespace dk::testing
