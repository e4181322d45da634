// The dispatchkit showcase (tools/demo): operators defined by hand with DK_LIBRARY, kernels
// at CPU, Autograd and CompositeImplicitAutograd, called unboxed and boxed, with the computed
// dispatch table and a dispatch trace.
#include <dk/dk.h>

#include <iostream>
#include <optional>

using namespace dk;

namespace {
// ---- kernels ----
int64_t numel_sum_cpu(const Tensor& a, const Tensor& b) { return a.numel() + b.numel(); }

// An autograd layer: does its own work, then redispatches below autograd.
int64_t numel_sum_autograd(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  static const auto op =
      Dispatcher::singleton().findSchemaOrThrow("demo::numel_sum", "").typed<int64_t(const Tensor&, const Tensor&)>();
  std::cout << "  (autograd layer: recording, then redispatching below autograd)\n";
  return op.redispatch(ks & after_autograd_keyset, a, b);
}

// A composite: written in terms of another operator, so it works on every backend.
int64_t numel_twice(const Tensor& a) {
  static const auto op =
      Dispatcher::singleton().findSchemaOrThrow("demo::numel_sum", "").typed<int64_t(const Tensor&, const Tensor&)>();
  return op.call(a, a);
}

// A boxed kernel: reads its arguments from the stack, pushes its result.
void describe_boxed(const OperatorHandle& op, Stack* stack) {
  std::string label = pop(*stack).toStringRef();
  Tensor t = pop(*stack).toTensor();
  stack->push_back(IValue(label + ": " + op.operator_name().toString() + " saw a tensor with " +
                          std::to_string(t.dim()) + " dims"));
}
}  // namespace

DK_LIBRARY(demo, m) {
  m.def("numel_sum(Tensor a, Tensor b) -> int");
  m.def("numel_twice(Tensor a) -> int");
  m.def("describe(Tensor t, str label) -> str");
}
DK_LIBRARY_IMPL(demo, CPU, m) {
  m.impl("numel_sum", DK_FN(numel_sum_cpu));
  m.impl("describe", CppFunction::makeFromBoxedFunction<&describe_boxed>());
}
DK_LIBRARY_IMPL(demo, Autograd, m) { m.impl("numel_sum", DK_FN(numel_sum_autograd)); }
DK_LIBRARY_IMPL(demo, CompositeImplicitAutograd, m) { m.impl("numel_twice", DK_FN(numel_twice)); }

// A 2-layer MLP forward, written with the generated operators, run on CPU, on meta tensors
// (shapes only) and on CUDA when a GPU is there.
Tensor mlp(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
  return dk::log_softmax(dk::relu(dk::linear(x, w1, b1)).mm(w2.t()) + b2, 1);
}

void mlpShowcase() {
  std::cout << "\n== a 2-layer MLP forward on CPU (generated operators, CPU kernels)\n";
  dk::manual_seed(0);
  Tensor x = dk::randn({4, 3});
  Tensor w1 = dk::randn({5, 3}), b1 = dk::zeros({5});
  Tensor w2 = dk::randn({2, 5}), b2 = dk::full({2}, 0.5);
  Tensor y = mlp(x, w1, b1, w2, b2);
  std::cout << "log-probabilities:\n" << y << "\n";
  Tensor target = dk::tensor({0, 1, 1, 0});
  std::cout << "nll loss: " << dk::nll_loss(y, target).item().toDouble() << "\n";

  std::cout << "\n== the same forward under dispatch modes: OpCounter and GraphRecorder\n";
  auto counter = std::make_shared<OpCounter>();
  auto recorder = std::make_shared<GraphRecorder>();
  {
    DispatchModeGuard count(counter);
    DispatchModeGuard record(recorder);
    mlp(x, w1, b1, w2, b2);
  }
  std::cout << counter->str() << "\n" << recorder->str();

  std::cout << "\n== and under the profiler (100 forwards)\n";
  {
    profiler::Profiler prof;
    for (int i = 0; i < 100; ++i) mlp(x, w1, b1, w2, b2);
    prof.stop();
    std::cout << prof.table();
  }

  std::cout << "\n== the same model on meta tensors: shapes and dtypes, no data\n";
  auto meta = TensorOptions().device(DeviceType::Meta);
  Tensor mx = dk::empty({1024, 3}, meta), mw1 = dk::empty({5, 3}, meta), mb1 = dk::empty({5}, meta);
  Tensor mw2 = dk::empty({2, 5}, meta), mb2 = dk::empty({2}, meta);
  Tensor my = mlp(mx, mw1, mb1, mw2, mb2);
  std::cout << "output: " << my << "\n";

  std::cout << "\n== under FakeTensorMode on a pretend cuda:0 (no GPU, no data), its graph recorded\n";
  {
    auto fake = std::make_shared<FakeTensorMode>();
    auto graph = std::make_shared<GraphRecorder>();
    DispatchModeGuard fake_guard(fake);
    auto gpu = TensorOptions().device(Device(DeviceType::CUDA, 0));
    Tensor fx = dk::randn({1024, 3}, gpu), fw1 = dk::randn({5, 3}, gpu), fb1 = dk::zeros({5}, gpu);
    Tensor fw2 = dk::randn({2, 5}, gpu), fb2 = dk::zeros({2}, gpu);
    Tensor fy;
    {
      DispatchModeGuard record(graph);  // on top: sees the fake tensors the fake mode makes
      fy = mlp(fx, fw1, fb1, fw2, fb2);
    }
    std::cout << "output: " << fy << "\n" << graph->str() << "bytes the real run allocates: " << fake->bytes()
              << "\n";
  }

  std::cout << "\n== and on CUDA, when there is a GPU\n";
  try {
    Tensor gx = dk::_to_copy(x, std::nullopt, std::nullopt, Device(DeviceType::CUDA, 0));
    Tensor gy = mlp(gx, dk::_to_copy(w1, std::nullopt, std::nullopt, Device(DeviceType::CUDA, 0)),
                    dk::_to_copy(b1, std::nullopt, std::nullopt, Device(DeviceType::CUDA, 0)),
                    dk::_to_copy(w2, std::nullopt, std::nullopt, Device(DeviceType::CUDA, 0)),
                    dk::_to_copy(b2, std::nullopt, std::nullopt, Device(DeviceType::CUDA, 0)));
    std::cout << "on " << gy.device() << ", back on cpu:\n"
              << dk::_to_copy(gy, std::nullopt, std::nullopt, Device(DeviceType::CPU)) << "\n";
  } catch (const Error& e) {
    std::string what = e.what();
    std::cout << "  (no CUDA here: " << what.substr(0, what.find('\n')) << ")\n";
  }
}

// Function transforms (dk/func): per-example gradients of the MLP's loss with vmap(grad(loss)),
// each transform a layer on the dispatcher (Note [Dynamic layer stack]).
void transformsShowcase() {
  std::cout << "\n== per-example gradients: vmap(grad(loss)) over a batch of 4\n";
  dk::manual_seed(1);
  Tensor x = dk::randn({4, 3}, ScalarType::Double);
  Tensor target = dk::tensor({0, 1, 1, 0});
  Tensor w1 = dk::randn({5, 3}, ScalarType::Double), b1 = dk::zeros({5}, ScalarType::Double);
  Tensor w2 = dk::randn({2, 5}, ScalarType::Double), b2 = dk::zeros({2}, ScalarType::Double);
  // The loss of one example (x [3], target []), as a function of the weights and the example.
  func::TensorsFn loss = [](const std::vector<Tensor>& in) {
    Tensor y = mlp(in[4].unsqueeze(0), in[0], in[1], in[2], in[3]);
    return std::vector<Tensor>{dk::nll_loss(y, in[5].unsqueeze(0))};
  };
  const bool warned = func::setVmapFallbackWarningEnabled(false);  // nll_loss runs once per example
  auto per_example = func::vmap(func::grad(loss, {0, 1, 2, 3}),
                                {std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0, 0});
  std::vector<Tensor> grads = per_example({w1, b1, w2, b2, x, target});
  func::setVmapFallbackWarningEnabled(warned);
  std::cout << "d loss / d w1: " << grads[0].sizes() << " (one [5, 3] gradient per example)\n";
  Tensor squares = dk::zeros({4}, ScalarType::Double);
  for (const Tensor& g : grads) squares = squares + dk::sum(dk::mul(g, g).reshape({4, -1}), {1});
  std::cout << "gradient norm per example: " << dk::sqrt(squares) << "\n";
  // The loop it replaces gives the same numbers.
  auto one = func::grad(loss, {0});
  Tensor first = one({w1, b1, w2, b2, x.select(0, 0), target.select(0, 0)})[0];
  std::cout << "max |vmap - loop| for example 0: "
            << dk::max(dk::abs(grads[0].select(0, 0) - first)).item().toDouble() << "\n";
}

// Graph capture (dk/func/make_graph.h): an SGD step with writes through a view and in place,
// functionalized and recorded on fake tensors (no data), then replayed on real ones.
void graphShowcase() {
  std::cout << "\n== graph capture: make_graph(step), an update with in-place writes\n";
  func::TensorsFn step = [](const std::vector<Tensor>& in) {  // in: w [3], g [3]
    dk::select(in[0], 0, 0).mul_(2.0);                         // w[0] *= 2, through a view
    in[0].sub_(dk::mul(in[1], 0.1));                            // w -= 0.1 g
    return std::vector<Tensor>{dk::sum(in[0])};
  };
  Tensor w = dk::tensor({1.0, 2.0, 3.0}), g = dk::tensor({0.5, 0.5, 0.5});
  func::Graph graph = func::make_graph(step, {w, g});
  std::cout << graph.str();
  Tensor w_eager = w.clone();
  const double eager = step({w_eager, g})[0].item().toDouble();
  const double replayed = graph({w, g})[0].item().toDouble();
  std::cout << "replayed: sum " << replayed << ", w " << w << "; eager: sum " << eager << ", w " << w_eager << "\n";
}

int main() {
  Dispatcher& d = Dispatcher::singleton();
  Tensor x = make_tensor({2, 3});
  std::cout << "x = " << x << "\n  key set: " << x.key_set() << "\n\n";

  auto numel_sum = d.findSchemaOrThrow("demo::numel_sum", "").typed<int64_t(const Tensor&, const Tensor&)>();
  std::cout << "== unboxed call: demo::numel_sum(x, x)\n";
  int64_t sum = numel_sum.call(x, x);
  std::cout << "  result: " << sum << "\n";

  std::cout << "\n== the same call in inference mode: the tensor has no autograd keys\n";
  {
    InferenceMode guard;
    Tensor y = make_tensor({4});
    std::cout << "  y key set: " << y.key_set() << "\n  result: " << numel_sum.call(y, y) << "\n";
  }

  std::cout << "\n== boxed call: demo::describe(x, \"boxed\")\n";
  Stack stack{IValue(x), IValue("boxed")};
  d.findSchemaOrThrow("demo::describe", "").callBoxed(&stack);
  std::cout << "  result: " << stack.at(0).toStringRef() << "\n";

  std::cout << "\n== a boxed kernel called with unboxed arguments\n";
  auto describe = d.findSchemaOrThrow("demo::describe", "").typed<std::string(const Tensor&, std::string_view)>();
  std::cout << "  result: " << describe.call(x, "unboxed") << "\n";

  std::cout << "\n== composite on a meta tensor (no meta kernel needed)\n";
  Tensor m = make_tensor({5}, ScalarType::Float, Device(DeviceType::Meta));
  auto twice = d.findSchemaOrThrow("demo::numel_twice", "").typed<int64_t(const Tensor&)>();
  try {
    int64_t result = twice.call(m);
    std::cout << "  result: " << result << "\n";
  } catch (const NotImplementedError& e) {
    std::string what = e.what();
    std::cout << "  error, as expected (numel_sum has no Meta kernel):\n  " << what.substr(0, what.find('\n')) << "\n";
  }

  std::cout << "\n== dumpState() of demo::numel_sum\n" << d.findSchemaOrThrow("demo::numel_sum", "").dumpState();
  std::cout << "\n== dumpComputedTable() of demo::numel_sum\n"
            << d.findSchemaOrThrow("demo::numel_sum", "").dumpComputedTable();
  std::cout << "\n== dumpComputedTable() of demo::numel_twice\n"
            << d.findSchemaOrThrow("demo::numel_twice", "").dumpComputedTable();

  mlpShowcase();
  transformsShowcase();
  graphShowcase();

  std::cout << "\n== dispatch trace of numel_twice(x) (what DK_SHOW_DISPATCH_TRACE=1 prints, on stderr)\n"
            << std::flush;
  setDispatchTraceEnabled(true);
  int64_t r = twice.call(x);
  setDispatchTraceEnabled(false);
  std::cerr << std::flush;
  std::cout << "  result: " << r << "\n";
  return 0;
}
