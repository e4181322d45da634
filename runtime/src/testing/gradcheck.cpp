// dk/testing/gradcheck.cpp: see dk/testing/gradcheck.h.
#include "dk/testing/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "dk/autograd/autograd.h"
#include "dk/core/core_types.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"

namespace dk::testing {

namespace {

// A check that failed; caught by gradcheck_multi and turned into the result's message.
class Failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  throw Failure(out.str());
}

// The offset (in elements, from data_ptr()) of every element, in row-major index order. The
// walk uses the tensor's own strides, so any layout is read and written correctly.
std::vector<int64_t> elementOffsets(const Tensor& t) {
  IntArrayRef sizes = t.sizes();
  IntArrayRef strides = t.strides();
  int64_t n = t.numel();
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(n));
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t offset = 0;
    for (size_t d = 0; d < sizes.size(); ++d) offset += index[d] * strides[d];
    offsets.push_back(offset);
    for (size_t d = sizes.size(); d-- > 0;) {  // odometer increment, last dim fastest
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  return offsets;
}

std::string describe(const Tensor& t) { return autograd::describe_tensor(t); }

std::string sizesString(const std::vector<int64_t>& sizes) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << "]";
  return out.str();
}

bool close(double actual, double expected, const GradcheckOptions& o) {
  // NaN never passes: a NaN gradient is a bug even where finite differences give NaN too.
  return std::fabs(actual - expected) <= o.atol + o.rtol * std::fabs(expected);
}

// What one run of the check (on one layout of the inputs) computed.
struct Run {
  std::vector<size_t> diff_outputs;                // indices of the floating outputs of fn
  std::vector<std::vector<int64_t>> output_sizes;  // their sizes
  std::vector<std::vector<double>> output_values;  // their values
  std::vector<size_t> wrt;                         // indices of the inputs requiring grad
  // analytical[w][row * cols + col]: d (flat output element `row`, counted over all
  // differentiable outputs in order) / d (element `col` of input wrt[w]).
  std::vector<std::vector<double>> analytical;
  int64_t rows = 0;
};

// Names row `row` of a Jacobian: "output 1 (Double [2]) element [0]".
std::string describeRow(const Run& run, int64_t row) {
  for (size_t k = 0; k < run.diff_outputs.size(); ++k) {
    auto n = static_cast<int64_t>(run.output_values[k].size());
    if (row < n) {
      std::ostringstream out;
      out << "output " << run.diff_outputs[k] << " (Double " << sizesString(run.output_sizes[k]) << ") element "
          << index_string(run.output_sizes[k], row);
      return out.str();
    }
    row -= n;
  }
  return "output ?";
}

std::vector<Tensor> callFn(const GradcheckMultiFn& fn, const std::vector<Tensor>& inputs, size_t expected_outputs,
                           bool check_count) {
  std::vector<Tensor> outs = fn(inputs);
  if (check_count && outs.size() != expected_outputs)
    fail("the function returned ", outs.size(), " outputs on one call and ", expected_outputs, " on another");
  return outs;
}

// Values of the differentiable outputs, concatenated (the rows of the Jacobian).
std::vector<double> flatOutputs(const std::vector<Tensor>& outs, const Run& run) {
  std::vector<double> flat;
  for (size_t i = 0; i < run.diff_outputs.size(); ++i) {
    const Tensor& o = outs[run.diff_outputs[i]];
    if (!o.defined() || o.sizes() != run.output_sizes[i])
      fail("output ", run.diff_outputs[i], " changed shape under a perturbation of the inputs");
    std::vector<double> v = to_doubles(o);
    flat.insert(flat.end(), v.begin(), v.end());
  }
  return flat;
}

// Restores a perturbed element even when fn throws.
class RestoreElement {
 public:
  explicit RestoreElement(double* p) : p_(p), value_(*p) {}
  ~RestoreElement() { *p_ = value_; }
  RestoreElement(const RestoreElement&) = delete;
  RestoreElement& operator=(const RestoreElement&) = delete;
  double value() const { return value_; }

 private:
  double* p_;
  double value_;
};

// The two evaluations of a central difference: eval() with *p raised by eps, then lowered by
// eps; *p is restored afterwards, also when eval throws.
template <class Eval>
auto evaluateAround(double* p, double eps, Eval eval) {
  RestoreElement restore(p);
  *p = restore.value() + eps;
  auto plus = eval();
  *p = restore.value() - eps;
  auto minus = eval();
  return std::make_pair(std::move(plus), std::move(minus));
}

void validateInputs(const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined()) continue;
    if (!x.is_cpu()) fail("input ", i, " is not a CPU tensor");
    if (x.requires_grad() && !x.is_leaf()) fail("input ", i, " requires grad but is not a leaf");
    if (isFloatingType(x.dtype()) && x.dtype() != ScalarType::Double)
      fail("input ", i, " (", describe(x), ") is not float64: gradcheck needs double precision");
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (x.stride(d) == 0 && x.size(d) > 1)
        fail("input ", i, " has overlapping memory (stride 0 in dim ", d, "): its elements cannot be perturbed alone");
    }
  }
}

// The whole check on one layout of the inputs. `stage` says what is running, for the message
// of an exception; `prefix` starts every message of this run.
Run checkOnce(const GradcheckMultiFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& opts,
              std::string& stage, const std::string& prefix) {
  Run run;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) run.wrt.push_back(i);
  }
  // Gradients left from an earlier use of the inputs would be mixed into the backward() check.
  for (size_t i : run.wrt) inputs[i].mutable_grad() = Tensor();

  // ---- the forward, recording the graph
  stage = prefix + "running the function";
  std::vector<Tensor> outs = callFn(fn, inputs, 0, false);
  for (size_t k = 0; k < outs.size(); ++k) {
    const Tensor& o = outs[k];
    if (!o.defined() || !isFloatingType(o.dtype())) continue;  // indices, masks: not differentiable
    if (o.dtype() != ScalarType::Double)
      fail(prefix, "output ", k, " (", describe(o), ") is not float64 although the inputs are");
    if (!run.wrt.empty() && !o.requires_grad())
      fail(prefix, "output ", k, " (", describe(o),
           ") does not require grad although an input does: the operator recorded no gradient history");
    run.diff_outputs.push_back(k);
    run.output_sizes.push_back(o.sizes());
    std::vector<double> v = to_doubles(o);
    run.rows += static_cast<int64_t>(v.size());
    run.output_values.push_back(std::move(v));
  }
  if (run.wrt.empty()) return run;  // nothing to differentiate: the outputs are compared only

  std::vector<Tensor> wrt_tensors;
  std::vector<int64_t> cols;
  for (size_t i : run.wrt) {
    wrt_tensors.push_back(inputs[i]);
    cols.push_back(inputs[i].numel());
    run.analytical.emplace_back(static_cast<size_t>(run.rows * inputs[i].numel()), 0.0);
  }

  // ---- analytical: one vector-Jacobian product per output element, with a one-hot vector
  int64_t row = 0;
  for (size_t k : run.diff_outputs) {
    const Tensor& o = outs[k];
    for (int64_t j = 0; j < o.numel(); ++j, ++row) {
      stage = prefix + "autograd::grad of " + describeRow(run, row);
      std::vector<double> one_hot(static_cast<size_t>(o.numel()), 0.0);
      one_hot[static_cast<size_t>(j)] = 1.0;
      Tensor grad_output = double_tensor(o.sizes(), one_hot);
      // retain_graph: the same graph serves every row; allow_unused: an input this output
      // does not depend on has a zero row, not an error.
      std::vector<Tensor> grads = autograd::grad({o}, wrt_tensors, {grad_output}, /*retain_graph=*/true,
                                                 /*create_graph=*/false, /*allow_unused=*/true);
      if (grads.size() != run.wrt.size())
        fail(prefix, "autograd::grad returned ", grads.size(), " gradients for ", run.wrt.size(), " inputs");
      for (size_t w = 0; w < grads.size(); ++w) {
        const Tensor& g = grads[w];
        if (!g.defined()) continue;
        const Tensor& x = inputs[run.wrt[w]];
        if (g.dtype() != ScalarType::Double || g.sizes() != x.sizes())
          fail(prefix, "the gradient of input ", run.wrt[w], " (", describe(x), ") is ", describe(g), " (from ",
               describeRow(run, row), ")");
        std::vector<double> v = to_doubles(g);
        std::memcpy(run.analytical[w].data() + row * cols[w], v.data(), v.size() * sizeof(double));
      }
    }
  }

  // ---- numerical: central differences, each input element perturbed in place
  std::vector<std::vector<double>> numerical;
  {
    NoGradGuard no_grad;
    for (size_t w = 0; w < run.wrt.size(); ++w) {
      const Tensor& x = inputs[run.wrt[w]];
      numerical.emplace_back(static_cast<size_t>(run.rows * cols[w]), 0.0);
      double* data = x.data_ptr<double>();
      std::vector<int64_t> offsets = elementOffsets(x);
      for (int64_t c = 0; c < cols[w]; ++c) {
        stage = prefix + "finite differences for input " + std::to_string(run.wrt[w]) + " element " +
                index_string(x.sizes(), c);
        auto [plus, minus] = evaluateAround(data + offsets[static_cast<size_t>(c)], opts.eps,
                                            [&] { return flatOutputs(callFn(fn, inputs, outs.size(), true), run); });
        for (int64_t r = 0; r < run.rows; ++r) {
          numerical[w][static_cast<size_t>(r * cols[w] + c)] =
              (plus[static_cast<size_t>(r)] - minus[static_cast<size_t>(r)]) / (2 * opts.eps);
        }
      }
    }
  }

  // ---- compare
  std::ostringstream mismatches;
  size_t count = 0;
  for (size_t w = 0; w < run.wrt.size(); ++w) {
    const Tensor& x = inputs[run.wrt[w]];
    for (int64_t r = 0; r < run.rows; ++r) {
      for (int64_t c = 0; c < cols[w]; ++c) {
        double a = run.analytical[w][static_cast<size_t>(r * cols[w] + c)];
        double n = numerical[w][static_cast<size_t>(r * cols[w] + c)];
        if (close(a, n, opts)) continue;
        if (count++ < opts.max_reported) {
          mismatches << "\n  input " << run.wrt[w] << " (" << describe(x) << ") element " << index_string(x.sizes(), c)
                     << ", " << describeRow(run, r) << ": analytical " << a << ", numerical " << n << " (|diff| "
                     << std::fabs(a - n) << " > " << opts.atol << " + " << opts.rtol << " * |numerical|)";
        }
      }
    }
  }
  if (count > 0) {
    if (count > opts.max_reported) mismatches << "\n  ... and " << (count - opts.max_reported) << " more";
    fail(prefix, "Jacobian mismatch: ", count, " entries differ", mismatches.str());
  }

  // ---- backward(): accumulation into .grad, and no gradient for inputs not requiring grad
  if (opts.check_backward) {
    stage = prefix + "backward() with all-ones gradients";
    std::vector<Tensor> outs2 = callFn(fn, inputs, outs.size(), true);
    std::vector<Tensor> roots, root_grads;
    for (size_t k : run.diff_outputs) {
      if (!outs2[k].requires_grad()) continue;
      roots.push_back(outs2[k]);
      root_grads.push_back(
          double_tensor(outs2[k].sizes(), std::vector<double>(static_cast<size_t>(outs2[k].numel()), 1.0)));
    }
    autograd::backward(roots, root_grads);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& x = inputs[i];
      if (!x.defined() || x.requires_grad()) continue;
      if (x.grad().defined())
        fail(prefix, "input ", i, " (", describe(x), ") does not require grad but backward() gave it a gradient");
    }
    for (size_t w = 0; w < run.wrt.size(); ++w) {
      const Tensor& x = inputs[run.wrt[w]];
      std::vector<double> expected(static_cast<size_t>(cols[w]), 0.0);  // column sums of the Jacobian
      for (int64_t r = 0; r < run.rows; ++r) {
        for (int64_t c = 0; c < cols[w]; ++c)
          expected[static_cast<size_t>(c)] += run.analytical[w][static_cast<size_t>(r * cols[w] + c)];
      }
      const Tensor& g = x.grad();
      std::vector<double> got;
      if (g.defined()) {
        if (g.sizes() != x.sizes() || g.dtype() != ScalarType::Double)
          fail(prefix, "after backward(), input ", run.wrt[w], " (", describe(x), ") has a .grad of ", describe(g));
        got = to_doubles(g);
      } else {
        got.assign(expected.size(), 0.0);  // no gradient reached it: fine only if all zero
      }
      for (size_t c = 0; c < expected.size(); ++c) {
        if (!close(got[c], expected[c], opts))
          fail(prefix, "after backward() with all-ones gradients, input ", run.wrt[w], " (", describe(x), ") element ",
               index_string(x.sizes(), static_cast<int64_t>(c)), " has .grad ",
               g.defined() ? std::to_string(got[c]) : std::string("undefined"),
               ", but the analytical Jacobian's column sum is ", expected[c]);
      }
      x.mutable_grad() = Tensor();
    }
  }
  return run;
}

// The contiguous and non-contiguous runs must agree on outputs and analytical Jacobians.
void compareRuns(const Run& contiguous, const Run& other, const GradcheckOptions& opts) {
  const std::string prefix = "with non-contiguous inputs, ";
  if (other.diff_outputs != contiguous.diff_outputs || other.output_sizes != contiguous.output_sizes)
    fail(prefix, "the function returned different outputs");
  for (size_t k = 0; k < contiguous.output_values.size(); ++k) {
    for (size_t e = 0; e < contiguous.output_values[k].size(); ++e) {
      double a = other.output_values[k][e], b = contiguous.output_values[k][e];
      if (!close(a, b, opts))
        fail(prefix, "output ", contiguous.diff_outputs[k], " element ",
             index_string(contiguous.output_sizes[k], static_cast<int64_t>(e)), " is ", a, ", but ", b,
             " with contiguous inputs");
    }
  }
  for (size_t w = 0; w < contiguous.analytical.size(); ++w) {
    const std::vector<double>& a = other.analytical[w];
    const std::vector<double>& b = contiguous.analytical[w];
    auto cols = contiguous.rows == 0 ? 0 : static_cast<int64_t>(b.size()) / contiguous.rows;
    for (size_t e = 0; e < b.size(); ++e) {
      if (!close(a[e], b[e], opts))
        fail(prefix, "the analytical gradient of input ", contiguous.wrt[w], " element ",
             static_cast<int64_t>(e) % cols, " (flat) for ", describeRow(contiguous, static_cast<int64_t>(e) / cols),
             " is ", a[e], ", but ", b[e], " with contiguous inputs");
    }
  }
}

}  // namespace

std::string index_string(const std::vector<int64_t>& sizes, int64_t flat) {
  std::vector<int64_t> index(sizes.size(), 0);
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 0) continue;
    index[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return sizesString(index);
}

std::vector<double> to_doubles(const Tensor& t) {
  DK_CHECK(t.defined(), "to_doubles: undefined tensor");
  DK_CHECK(t.is_cpu(), "to_doubles: expected a CPU tensor, got ", describe(t));
  std::vector<int64_t> offsets = elementOffsets(t);
  std::vector<double> out;
  out.reserve(offsets.size());
  auto read = [&](const auto* data) {
    for (int64_t off : offsets) out.push_back(static_cast<double>(data[off]));
  };
  switch (t.dtype()) {
    case ScalarType::Double:
      read(t.data_ptr<double>());
      break;
    case ScalarType::Float:
      read(t.data_ptr<float>());
      break;
    case ScalarType::Long:
      read(t.data_ptr<int64_t>());
      break;
    case ScalarType::Int:
      read(t.data_ptr<int32_t>());
      break;
    case ScalarType::Bool:
      read(t.data_ptr<bool>());
      break;
    default:
      DK_ERROR("to_doubles: unsupported dtype ", t.dtype());
  }
  return out;
}

Tensor double_tensor(const std::vector<int64_t>& sizes, const std::vector<double>& values) {
  Tensor t = detail::empty_contiguous(sizes, ScalarType::Double, Device(DeviceType::CPU));
  DK_CHECK(static_cast<size_t>(t.numel()) == values.size(), "double_tensor: ", values.size(), " values for sizes ",
           sizesString(sizes));
  if (!values.empty()) std::memcpy(t.data_ptr<double>(), values.data(), values.size() * sizeof(double));
  return t;
}

Tensor noncontiguous_copy(const Tensor& t) {
  std::vector<double> values = to_doubles(t);
  IntArrayRef sizes = t.sizes();
  // Dim 0 innermost, every element two apart: both the dim order and the gaps differ from a
  // contiguous layout, so kernels that ignore either read wrong values.
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 2;
  for (size_t d = 0; d < sizes.size(); ++d) {
    strides[d] = stride;
    stride *= std::max<int64_t>(sizes[d], 1);
  }
  Tensor out = detail::empty_strided(sizes, strides, ScalarType::Double, Device(DeviceType::CPU));
  double* data = out.data_ptr<double>();
  std::vector<int64_t> offsets = elementOffsets(out);
  for (size_t k = 0; k < offsets.size(); ++k) data[offsets[k]] = values[k];
  return out;
}

GradcheckResult gradcheck_multi(const GradcheckMultiFn& fn, const std::vector<Tensor>& inputs,
                                const GradcheckOptions& opts) {
  std::string stage = "checking the inputs";
  try {
    validateInputs(inputs);
    Run contiguous = checkOnce(fn, inputs, opts, stage, "");
    if (opts.check_noncontiguous) {
      std::vector<Tensor> nc_inputs;
      bool changed = false;
      for (const Tensor& x : inputs) {
        bool relayout = x.defined() && x.dtype() == ScalarType::Double && x.numel() > 1;
        if (!relayout) {
          nc_inputs.push_back(x);
          continue;
        }
        Tensor copy = noncontiguous_copy(x);
        if (x.requires_grad()) copy.requires_grad_();
        changed = true;
        nc_inputs.push_back(copy);
      }
      if (changed) {
        Run other = checkOnce(fn, nc_inputs, opts, stage, "with non-contiguous inputs, ");
        compareRuns(contiguous, other, opts);
      }
    }
  } catch (const Failure& f) {
    return {false, f.what()};
  } catch (const std::exception& e) {
    return {false, stage + " raised: " + e.what()};
  }
  return {};
}

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& opts) {
  return gradcheck_multi([&fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in)}; }, inputs, opts);
}

namespace {

// Fixed pseudo-random values in [-1, 1) (a 64-bit LCG, not the global generator, which the
// function under check may be seeding).
std::vector<double> pseudoRandomValues(size_t n, uint64_t& state) {
  std::vector<double> v(n);
  for (double& x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53) * 2.0 - 1.0;
  }
  return v;
}

// The first gradients of fn (the function gradgradcheck checks), given what the first call
// found: which outputs of fn get a grad_output and which first gradients are kept.
struct FirstGradients {
  const GradcheckMultiFn& fn;
  size_t n_inputs;                  // inputs of fn; then one grad_output per entry of diff_outputs
  std::vector<size_t> diff_outputs;  // fn's floating outputs that require grad
  std::vector<size_t> wrt;           // fn's inputs that require grad
  std::vector<size_t> kept;          // indices into wrt of the gradients that are checked

  // All first gradients, undefined where an input is unused.
  std::vector<Tensor> all(const std::vector<Tensor>& in) const {
    // The finite differences call this under NoGradGuard: backward's own graph is recorded
    // anyway (the perturbed values are read through the inputs' data, not through the graph).
    AutoGradMode grad_mode(true);
    std::vector<Tensor> x(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_inputs));
    std::vector<Tensor> outs = fn(x);
    std::vector<Tensor> roots, grad_outputs, wrt_tensors;
    for (size_t k = 0; k < diff_outputs.size(); ++k) {
      if (diff_outputs[k] >= outs.size()) fail("the function returned fewer outputs on a later call");
      roots.push_back(outs[diff_outputs[k]]);
      grad_outputs.push_back(in[n_inputs + k]);
    }
    for (size_t i : wrt) wrt_tensors.push_back(x[i]);
    return autograd::grad(roots, wrt_tensors, grad_outputs, /*retain_graph=*/true, /*create_graph=*/true,
                          /*allow_unused=*/true);
  }

  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
    std::vector<Tensor> grads = all(in), picked;
    for (size_t w : kept) {
      if (!grads[w].defined())
        fail("the gradient of input ", wrt[w], " is undefined on one call and defined on another");
      picked.push_back(grads[w]);
    }
    return picked;
  }
};

// First gradients that do not require grad (backward recorded no graph for them) must not
// change with any input: a constant gradient (sign's zeros) passes, a backward that computes
// out of autograd's sight (below the Autograd keys, or through raw memory) fails.
void checkUntracked(const FirstGradients& first, const std::vector<Tensor>& grads, const std::vector<Tensor>& in,
                    const GradcheckOptions& opts) {
  std::vector<size_t> untracked;
  for (size_t w = 0; w < grads.size(); ++w)
    if (grads[w].defined() && !grads[w].requires_grad()) untracked.push_back(w);
  if (untracked.empty()) return;
  std::vector<std::vector<double>> base;
  for (size_t w : untracked) base.push_back(to_doubles(grads[w]));
  NoGradGuard no_grad;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& x = in[i];
    if (!x.defined() || !x.requires_grad()) continue;
    double* data = x.data_ptr<double>();
    std::vector<int64_t> offsets = elementOffsets(x);
    for (size_t c = 0; c < offsets.size(); ++c) {
      auto [plus, minus] = evaluateAround(data + offsets[c], opts.eps, [&] { return first.all(in); });
      for (size_t u = 0; u < untracked.size(); ++u) {
        const size_t w = untracked[u];
        std::vector<double> p = plus[w].defined() ? to_doubles(plus[w]) : base[u];
        std::vector<double> m = minus[w].defined() ? to_doubles(minus[w]) : base[u];
        for (size_t r = 0; r < p.size() && r < m.size(); ++r) {
          const double slope = (p[r] - m[r]) / (2 * opts.eps);
          if (close(0.0, slope, opts)) continue;
          const std::string what = i < first.n_inputs ? "input " + std::to_string(i)
                                                      : "grad_output " + std::to_string(i - first.n_inputs);
          fail("the gradient of input ", first.wrt[w], " (", describe(grads[w]),
               ") does not require grad, so backward recorded no graph for it, but element ",
               index_string(grads[w].sizes().vec(), static_cast<int64_t>(r)), " changes with ", what, " element ",
               index_string(x.sizes().vec(), static_cast<int64_t>(c)), " (numerical derivative ", slope, ")");
        }
      }
    }
  }
}

}  // namespace

GradcheckResult gradgradcheck_multi(const GradcheckMultiFn& fn, const std::vector<Tensor>& inputs,
                                    const GradcheckOptions& opts) {
  const std::string prefix = "double backward: ";
  std::string stage = "checking the inputs";
  try {
    validateInputs(inputs);
    FirstGradients first{fn, inputs.size(), {}, {}, {}};
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].defined() && inputs[i].requires_grad()) first.wrt.push_back(i);
    if (first.wrt.empty()) return {true, "nothing to check: no input requires grad"};
    stage = "running the function";
    std::vector<Tensor> extended = inputs;
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    {
      AutoGradMode grad_mode(true);
      std::vector<Tensor> outs = fn(inputs);
      for (size_t k = 0; k < outs.size(); ++k) {
        const Tensor& o = outs[k];
        if (!o.defined() || !isFloatingType(o.dtype()) || !o.requires_grad()) continue;
        first.diff_outputs.push_back(k);
        Tensor go = double_tensor(o.sizes(), pseudoRandomValues(static_cast<size_t>(o.numel()), state));
        go.requires_grad_();
        extended.push_back(go);
      }
    }
    if (first.diff_outputs.empty()) return {false, prefix + "no output requires grad although an input does"};
    stage = "computing the first gradients with create_graph";
    std::vector<Tensor> grads = first.all(extended);
    for (size_t w = 0; w < grads.size(); ++w)
      if (grads[w].defined() && grads[w].requires_grad()) first.kept.push_back(w);
    stage = "checking the first gradients that record no graph";
    checkUntracked(first, grads, extended, opts);
    if (first.kept.empty())
      return {true, "nothing to check: no first gradient requires grad, and none changes with the inputs"};
    GradcheckResult r = gradcheck_multi(first, extended, opts);
    if (!r.ok) r.message = prefix + r.message;
    return r;
  } catch (const Failure& f) {
    return {false, prefix + f.what()};
  } catch (const std::exception& e) {
    return {false, prefix + stage + " raised: " + e.what()};
  }
}

GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& opts) {
  return gradgradcheck_multi([&fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in)}; }, inputs,
                             opts);
}

}  // namespace dk::testing
