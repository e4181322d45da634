// grad, vjp and jacrev on the dynamic layer stack (Note [grad transform]).
#include "dk/func/grad.h"

#include <string>
#include <utility>

#include "dk/autograd/autograd.h"
#include "dk/autograd/engine.h"
#include "dk/core/grad_mode.h"
#include "dk/func/dynamic_layer.h"
#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/eq.h"
#include "dk/generated/ops/zeros_like.h"

namespace dk::func {

namespace {

std::string argnumsText(const std::vector<int64_t>& argnums) {
  if (argnums.size() == 1) return std::to_string(argnums[0]);
  std::string text = "(";
  for (size_t i = 0; i < argnums.size(); ++i) text += (i ? ", " : "") + std::to_string(argnums[i]);
  return text + ")";
}

// argnums with negative entries counted from the end, checked against the inputs.
std::vector<size_t> checkedArgnums(const char* api, const std::vector<int64_t>& argnums, size_t ninputs) {
  DK_CHECK(!argnums.empty(), api, ": argnums must be non-empty");
  std::vector<size_t> out;
  const auto n = static_cast<int64_t>(ninputs);
  for (int64_t a : argnums) {
    DK_CHECK(a >= -n && a < n, api, ": Got argnums=", argnumsText(argnums), ", but only ", n, " positional inputs");
    const auto index = static_cast<size_t>(a < 0 ? a + n : a);
    for (size_t seen : out) DK_CHECK(seen != index, api, ": argnums must be unique, got ", argnumsText(argnums));
    out.push_back(index);
  }
  return out;
}

// The gradients of `outputs` (weighted by `cotangents`) with respect to `inputs`; zeros for an
// input they do not depend on. Outputs that do not require grad contribute nothing.
std::vector<Tensor> gradientsOf(const std::vector<Tensor>& outputs, const std::vector<Tensor>& cotangents,
                                const std::vector<Tensor>& inputs, bool create_graph) {
  std::vector<Tensor> diff_outputs;
  std::vector<Tensor> diff_cotangents;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !outputs[i].requires_grad()) continue;
    diff_outputs.push_back(outputs[i]);
    diff_cotangents.push_back(cotangents.empty() ? Tensor() : cotangents[i]);
  }
  std::vector<Tensor> grads(inputs.size());
  if (!diff_outputs.empty())
    grads = autograd::grad(diff_outputs, inputs, diff_cotangents, /*retain_graph=*/true, create_graph,
                           /*allow_unused=*/true);
  for (size_t i = 0; i < grads.size(); ++i)
    if (!grads[i].defined()) grads[i] = dk::zeros_like(inputs[i]);
  return grads;
}

std::vector<Tensor> runGrad(const TensorsFn& f, const std::vector<int64_t>& argnums, bool has_aux,
                            const std::vector<Tensor>& inputs) {
  const std::vector<size_t> diff = checkedArgnums("grad(f)(*args)", argnums, inputs.size());
  AutoGradMode grad_on(true);
  DynamicLayerScope layer;
  const int64_t level = layer.level();
  std::vector<Tensor> args = inputs;
  std::vector<Tensor> diff_args;
  for (size_t i : diff) {
    DK_CHECK(inputs[i].defined(), "grad(f)(*args): input ", i, " (in argnums) is an undefined tensor");
    args[i] = makeWrapper(inputs[i], level, layer.alive());
    args[i].requires_grad_(true);
    diff_args.push_back(args[i]);
  }
  std::vector<Tensor> outputs = f(args);
  DK_CHECK(!outputs.empty(), "grad_and_value(f)(*args): f returned no output");
  DK_CHECK(has_aux || outputs.size() == 1, "grad_and_value(f)(*args): Expected f(*args) to return a single Tensor, "
           "got ", outputs.size(), " outputs; pass has_aux=true to return auxiliary outputs after the loss");
  const Tensor& out = outputs[0];
  DK_CHECK(out.defined(), "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got an undefined one");
  DK_CHECK(out.dim() == 0, "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with ",
           out.dim(), " dims. Maybe you wanted to use the vjp or jacrev APIs instead?");
  std::vector<Tensor> results = gradientsOf({out}, {}, diff_args, /*create_graph=*/true);
  for (Tensor& g : results) g = unwrapAt(g, level);
  for (size_t j = 1; j < outputs.size(); ++j) results.push_back(unwrapAt(outputs[j], level));
  return results;
}

}  // namespace

TensorsFn grad(TensorsFn f, std::vector<int64_t> argnums, bool has_aux) {
  DK_CHECK(f, "grad: the function to differentiate is empty");
  return [f = std::move(f), argnums = std::move(argnums), has_aux](const std::vector<Tensor>& inputs) {
    return runGrad(f, argnums, has_aux, inputs);
  };
}

std::function<Tensor(const Tensor&)> grad(std::function<Tensor(const Tensor&)> f) {
  DK_CHECK(f, "grad: the function to differentiate is empty");
  TensorsFn many = grad([f = std::move(f)](const std::vector<Tensor>& xs) { return std::vector<Tensor>{f(xs[0])}; });
  return [many = std::move(many)](const Tensor& x) { return many({x})[0]; };
}

VjpResult vjp(const TensorsFn& f, const std::vector<Tensor>& primals) {
  DK_CHECK(f, "vjp: the function to differentiate is empty");
  DK_CHECK(!primals.empty(), "vjp(f, *primals): Expected at least one primal");
  AutoGradMode grad_on(true);
  DynamicLayerScope layer;
  const int64_t level = layer.level();
  std::vector<Tensor> wrapped;
  wrapped.reserve(primals.size());
  for (size_t i = 0; i < primals.size(); ++i) {
    DK_CHECK(primals[i].defined(), "vjp(f, *primals): primal ", i, " is an undefined tensor");
    wrapped.push_back(makeWrapper(primals[i], level, layer.alive()));
    wrapped.back().requires_grad_(true);
  }
  std::vector<Tensor> outputs = f(wrapped);
  VjpResult result;
  for (const Tensor& o : outputs) result.outputs.push_back(unwrapAt(o, level));
  // The backward runs when vjp_fn is called, after this layer has ended: its wrappers are dead
  // then and stand for their values (Note [Grad wrappers]), so the gradient's own operators are
  // recorded by whatever transforms are running at that time.
  result.vjp_fn = [outputs = std::move(outputs), wrapped = std::move(wrapped)](const std::vector<Tensor>& cotangents) {
    DK_CHECK(cotangents.size() == outputs.size(), "Expected pytree structure of cotangents to be the same as pytree "
             "structure of outputs to the function. cotangents: ", cotangents.size(), " tensors, primal output: ",
             outputs.size(), " tensors");
    for (size_t i = 0; i < outputs.size(); ++i) {
      DK_CHECK(cotangents[i].defined() && cotangents[i].sizes() == outputs[i].sizes(), "vjp_fn: Mismatch in shape: "
               "cotangent ", i, " has a shape of ", cotangents[i].defined() ? cotangents[i].sizes() : IntArrayRef(),
               " and output ", i, " has a shape of ", outputs[i].sizes(), ".");
    }
    std::vector<Tensor> grads = gradientsOf(outputs, cotangents, wrapped, GradMode::is_enabled());
    for (Tensor& g : grads) g = unwrapDead(std::move(g));
    return grads;
  };
  return result;
}

TensorsFn jacrev(TensorsFn f, std::vector<int64_t> argnums) {
  DK_CHECK(f, "jacrev: the function to differentiate is empty");
  return [f = std::move(f), argnums = std::move(argnums)](const std::vector<Tensor>& inputs) {
    const std::vector<size_t> diff = checkedArgnums("jacrev(f, argnums)(*args)", argnums, inputs.size());
    std::vector<Tensor> primals;
    for (size_t i : diff) primals.push_back(inputs[i]);
    // f as a function of the differentiated inputs only.
    auto of_primals = [&](const std::vector<Tensor>& ps) {
      std::vector<Tensor> args = inputs;
      for (size_t k = 0; k < diff.size(); ++k) args[diff[k]] = ps[k];
      return f(args);
    };
    VjpResult v = vjp(of_primals, primals);
    DK_CHECK(v.outputs.size() == 1, "jacrev(f)(*args): Expected f to return a single Tensor, got ", v.outputs.size());
    const Tensor& y = v.outputs[0];
    const int64_t m = y.numel();
    // The rows of the m x m identity, each shaped as the output.
    const Tensor index = dk::arange(0, m, 1, ScalarType::Long);
    std::vector<int64_t> basis_shape{m};
    basis_shape.insert(basis_shape.end(), y.sizes().begin(), y.sizes().end());
    const Tensor basis = dk::eq(index.unsqueeze(1), index.unsqueeze(0)).to(y.dtype()).reshape(basis_shape);
    std::vector<Tensor> rows = vmap(v.vjp_fn)({basis});
    std::vector<Tensor> jacobians;
    for (size_t k = 0; k < rows.size(); ++k) {
      std::vector<int64_t> shape(y.sizes().begin(), y.sizes().end());
      shape.insert(shape.end(), primals[k].sizes().begin(), primals[k].sizes().end());
      jacobians.push_back(rows[k].reshape(shape));
    }
    return jacobians;
  };
}

std::function<Tensor(const Tensor&)> jacrev(std::function<Tensor(const Tensor&)> f) {
  DK_CHECK(f, "jacrev: the function to differentiate is empty");
  TensorsFn many = jacrev([f = std::move(f)](const std::vector<Tensor>& xs) { return std::vector<Tensor>{f(xs[0])}; });
  return [many = std::move(many)](const Tensor& x) { return many({x})[0]; };
}

}  // namespace dk::func
