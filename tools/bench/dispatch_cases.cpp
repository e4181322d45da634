// Benchmark operators and cases; see dispatch_cases.h.
#include "dispatch_cases.h"

#include <atomic>
#include <cmath>
#include <thread>

#include "dk/generated/ops/add.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/linear.h"
#include "dk/generated/ops/matmul.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mul_ops.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sum.h"
#include "dk/func/functionalize.h"
#include "dk/func/vmap.h"

namespace dk::bench {

using benchcase::Case;

__attribute__((noinline)) int64_t twoTensorKernel(const Tensor& a, const Tensor& b) {
  asm volatile("");
  return a.dim() + b.dim();
}

namespace {
// The layers reach their operator through the registry, published once it is built (before
// any call): a global load, where a function-local static would add a guard check and,
// for its first-call path, a stack frame to every layer. The c10 side does the same.
const Registry* g_layers = nullptr;

// A layer at `key` that does nothing but redispatch below itself.
template <DispatchKey Key>
int64_t forwardingLayer(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  return g_layers->chain5.redispatch(ks.remove(Key), a, b);
}
int64_t autogradLayer2(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  return g_layers->chain2.redispatch(ks & after_autograd_keyset, a, b);
}
int64_t autogradLayer5(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  return g_layers->chain5.redispatch(ks & after_autograd_keyset, a, b);
}
int64_t adInplaceOrViewLayer(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  return g_layers->chain5.redispatch(ks & after_ADInplaceOrView_keyset, a, b);
}
// dk::mul.Tensor at TESTING_ONLY_GenericWrapper (only reached while that key is included):
// returns its first argument, so the generated dk::ops::mul_Tensor::call can be timed
// without the cost of a multiplication.
Tensor mulAtWrapper(const Tensor& a, const Tensor&) { return a; }

TwoTensorOp typedOp(const char* name) {
  return Dispatcher::singleton().findSchemaOrThrow(name, "").typed<int64_t(const Tensor&, const Tensor&)>();
}

std::vector<std::unique_ptr<Library>> defineBenchOperators() {
  std::vector<std::unique_ptr<Library>> libs;
  libs.push_back(std::make_unique<Library>(Library::DEF, "bench"));
  Library& def = *libs.back();
  for (const char* name : {"plain", "chain2", "chain5"}) {
    def.def(std::string(name) + "(Tensor a, Tensor b) -> int");
    def.impl(name, DispatchKey::CPU, DK_FN(twoTensorKernel));
  }
  return libs;
}

// TypedOperatorHandle::call without the slow-path check (Note [Dispatch slow path]): the
// difference to unboxed_typed_call is what idle observers and an unset trace cost.
inline int64_t callWithoutSlowPathCheck(const TwoTensorOp& op, const Tensor& a, const Tensor& b) {
  OperatorEntry* entry = &op.entry();
  detail::CallDepthScope in_call(entry);  // Note [Call depth scope]
  DispatchKeySet ks;
  const KernelFunction& k = entry->lookupForArguments(a.key_set() | b.key_set(), &ks);
  return k.call<int64_t, const Tensor&, const Tensor&>(entry, ks, a, b);
}

// A dispatch mode that only forwards to the kernels below it.
struct ForwardingMode : DispatchMode {
  void dispatch(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) override { op.redispatchBoxed(ks, stack); }
};

// The MLP of case 6: x [4, 8] -> linear 8x16 -> relu -> linear 16x4 -> sum; parameters require
// grad. Loss = sum(out), so d loss / d b2 = 4 (the batch) everywhere and d loss / d w2[k][j]
// = sum_i h[i][j] with h the hidden activations: what check() compares.
struct Mlp {
  Tensor x, w1, b1, w2, b2;
  Mlp() {
    Generator gen(7);
    x = dk::randn({4, 8}, gen);
    w1 = dk::randn({16, 8}, gen);
    b1 = dk::randn({16}, gen);
    w2 = dk::randn({4, 16}, gen);
    b2 = dk::randn({4}, gen);
    for (const Tensor& p : {w1, b1, w2, b2}) p.requires_grad_();
  }
  // One forward and backward step; clears the gradients it made unless `keep`. Returns
  // d loss / d b2[0] (4).
  int64_t step(bool keep = false) const {
    Tensor loss = dk::sum(dk::linear(dk::relu(dk::linear(x, w1, b1)), w2, b2));
    loss.backward();
    int64_t r = std::lround(b2.grad().data_ptr<float>()[0]);
    if (!keep)
      for (const Tensor& p : {w1, b1, w2, b2}) p.mutable_grad() = Tensor();
    return r;
  }
};
Mlp& mlp() {
  static Mlp* m = new Mlp();
  return *m;
}

std::string checkMlp() {
  const Mlp& m = mlp();
  m.step(/*keep=*/true);
  Tensor h;
  {
    NoGradGuard g;
    h = dk::sum(dk::relu(dk::linear(m.x, m.w1, m.b1)), {0});  // [16]
  }
  Tensor gw2_c = m.w2.grad().contiguous(), gb2_c = m.b2.grad().contiguous();
  const float* gw2 = gw2_c.data_ptr<float>();
  const float* gb2 = gb2_c.data_ptr<float>();
  const float* hs = h.data_ptr<float>();
  std::string why;
  for (int k = 0; k < 4; ++k) {
    if (gb2[k] != 4.0f) why = "grad of b2 is not 4";
    for (int j = 0; j < 16; ++j)
      if (std::fabs(gw2[k * 16 + j] - hs[j]) > 1e-4f * (1.0f + std::fabs(hs[j]))) why = "grad of w2 is not the column sums of h";
  }
  if (!m.w1.grad().defined() || m.w1.grad().sizes() != std::vector<int64_t>{16, 8}) why = "no grad of w1";
  for (const Tensor& p : {m.w1, m.b1, m.w2, m.b2}) p.mutable_grad() = Tensor();
  return why;
}

// Operator calls (not redispatches) one MLP step dispatches, counted by an observer.
int64_t countMlpOps() {
  std::atomic<int64_t> calls{0};
  Observer o;
  o.on_enter = [&calls](const ObservedCall& c) {
    if (c.kind == detail::CallKind::Call || c.kind == detail::CallKind::CallBoxed) calls.fetch_add(1);
  };
  ScopedObserver scope(std::move(o));
  mlp().step();
  return calls.load();
}

// Case 8's third thread: registers and deregisters a kernel of bench::plain (at PrivateUse2,
// so the CPU slot the callers use keeps its kernel) until stopped; every change recomputes
// the operator's table while the two callers read it.
std::function<void()> startRegistrationChurn() {
  auto stop = std::make_shared<std::atomic<bool>>(false);
  auto thread = std::make_shared<std::thread>([stop] {
    while (!stop->load(std::memory_order_relaxed)) {
      Library lib(Library::IMPL, "bench", DispatchKey::PrivateUse2);
      lib.impl("plain", DK_FN(twoTensorKernel));
    }
  });
  return [stop, thread] {
    stop->store(true);
    thread->join();
  };
}
}  // namespace

Registry::Registry()
    : libraries(defineBenchOperators()),
      plain(typedOp("bench::plain")),
      chain2(typedOp("bench::chain2")),
      chain5(typedOp("bench::chain5")),
      plain_handle(Dispatcher::singleton().findSchemaOrThrow("bench::plain", "")) {
  auto impl = [&](DispatchKey k, const char* ns = "bench") -> Library& {
    libraries.push_back(std::make_unique<Library>(Library::IMPL, ns, k));
    return *libraries.back();
  };
  impl(DispatchKey::Autograd).impl("chain2", DK_FN(autogradLayer2)).impl("chain5", DK_FN(autogradLayer5));
  impl(DispatchKey::ADInplaceOrView).impl("chain5", DK_FN(adInplaceOrViewLayer));
  impl(DispatchKey::TESTING_ONLY_GenericWrapper)
      .impl("chain5", DK_FN(forwardingLayer<DispatchKey::TESTING_ONLY_GenericWrapper>));
  impl(DispatchKey::TESTING_ONLY_GenericMode).impl("chain5", DK_FN(forwardingLayer<DispatchKey::TESTING_ONLY_GenericMode>));
  impl(DispatchKey::TESTING_ONLY_GenericWrapper, "dk").impl("mul.Tensor", DK_FN(mulAtWrapper));
  g_layers = this;
}

Registry& registry() {
  static Registry* r = new Registry();  // lives for the process: benchmark threads use it
  return *r;
}

std::vector<Case> allCases() {
  static Tensor a = make_tensor({2, 3});
  static Tensor b = make_tensor({4});
  static Tensor ia = [] { InferenceMode g; return make_tensor({2, 3}); }();
  static Tensor ib = [] { InferenceMode g; return make_tensor({4}); }();
  static Tensor one = dk::ones({1});
  static Tensor two = dk::full({1}, Scalar(2.0));
  static Tensor one_rg = [] { Tensor t = dk::ones({1}); t.requires_grad_(); return t; }();
  Registry& r = registry();
  static const TypedOperatorHandle<Tensor(const Tensor&, const Tensor&)> mul_typed =
      Dispatcher::singleton().findSchemaOrThrow("dk::mul", "Tensor").typed<Tensor(const Tensor&, const Tensor&)>();
  auto unboxed = [&r](int64_t n) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; ++i) s += r.plain.call(a, b);
    return s;
  };
  std::vector<Case> cases;
  // ---- 1. baselines
  cases.push_back({"baseline_empty_loop", [](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) {
                       asm volatile("" : "+r"(s));
                       s += 3;
                     }
                     return s;
                   }, 3});
  cases.push_back({"baseline_direct_call", [](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += twoTensorKernel(a, b);
                     return s;
                   }, 3});
  cases.push_back({"baseline_function_pointer", [](int64_t n) {
                     int64_t (*volatile fp)(const Tensor&, const Tensor&) = &twoTensorKernel;
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += fp(a, b);
                     return s;
                   }, 3});
  // ---- 2. unboxed dispatch
  cases.push_back({"unboxed_typed_call", unboxed, 3});
  cases.push_back({"unboxed_typed_call_inference_tensors", [&r](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += r.plain.call(ia, ib);
                     return s;
                   }, 3});
  // dk::mul.Tensor through the generated call and through a typed handle, both reaching the
  // kernel at TESTING_ONLY_GenericWrapper that returns its first argument (a Tensor: one
  // reference count up and down per call in both).
  cases.push_back({"unboxed_generated_ops_call", [](int64_t n) {
                     IncludeDispatchKeyGuard g(DispatchKeySet(DispatchKey::TESTING_ONLY_GenericWrapper));
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += ops::mul_Tensor::call(a, b).dim();
                     return s;
                   }, 2});
  cases.push_back({"unboxed_typed_call_returning_tensor", [](int64_t n) {
                     IncludeDispatchKeyGuard g(DispatchKeySet(DispatchKey::TESTING_ONLY_GenericWrapper));
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += mul_typed.call(a, b).dim();
                     return s;
                   }, 2});
  // ---- 3. boxed dispatch
  cases.push_back({"boxed_call", [&r](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) {
                       Stack stack;
                       stack.reserve(2);
                       stack.emplace_back(a);
                       stack.emplace_back(b);
                       r.plain_handle.callBoxed(&stack);
                       s += stack[0].toInt();
                     }
                     return s;
                   }, 3});
  // The same with one stack for every call (its capacity kept): the boxed path without the
  // stack's allocation.
  cases.push_back({"boxed_call_stack_reused", [&r](int64_t n) {
                     int64_t s = 0;
                     Stack stack;
                     stack.reserve(2);
                     for (int64_t i = 0; i < n; ++i) {
                       stack.clear();
                       stack.emplace_back(a);
                       stack.emplace_back(b);
                       r.plain_handle.callBoxed(&stack);
                       s += stack[0].toInt();
                     }
                     return s;
                   }, 3});
  // ---- 4. redispatch chains
  cases.push_back({"redispatch_chain_2_layers", [&r](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += r.chain2.call(a, b);
                     return s;
                   }, 3});
  cases.push_back({"redispatch_chain_5_layers", [&r](int64_t n) {
                     IncludeDispatchKeyGuard g(DispatchKeySet{DispatchKey::TESTING_ONLY_GenericMode,
                                                              DispatchKey::TESTING_ONLY_GenericWrapper});
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += r.chain5.call(a, b);
                     return s;
                   }, 3});
  // ---- 5. idle features. unboxed_typed_call is the call with no observer, the trace unset
  // and no mode pushed; these say what each costs when idle and when active.
  cases.push_back({"idle_unboxed_call_without_slow_path_check", [&r](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += callWithoutSlowPathCheck(r.plain, a, b);
                     return s;
                   }, 3});
  cases.push_back({"observer_registered_empty", [](int64_t n) {
                     ScopedObserver scope(Observer{});
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += registry().plain.call(a, b);
                     return s;
                   }, 3});
  cases.push_back({"observer_thread_local_on_other_thread", [](int64_t n) {
                     ObserverHandle h = 0;
                     std::thread([&h] { h = addThreadLocalObserver(Observer{}); }).join();
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += registry().plain.call(a, b);
                     removeObserver(h);
                     return s;
                   }, 3});
  cases.push_back({"dispatch_mode_forwarding", [](int64_t n) {
                     DispatchModeGuard g(std::make_shared<ForwardingMode>());
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += registry().plain.call(a, b);
                     return s;
                   }, 3});
  // ---- 6. end to end
  Case add{"add_float_1_element", [](int64_t n) {
             int64_t s = 0;
             for (int64_t i = 0; i < n; ++i) s += std::lround(dk::add(one, two).data_ptr<float>()[0]);
             return s;
           }, 3};
  add.check = [] {
    Tensor out = dk::add(one, two);
    return out.numel() == 1 && out.dtype() == ScalarType::Float && !out.requires_grad() && !out.grad_fn()
               ? std::string()
               : std::string("not a 1-element float tensor without history");
  };
  add.callgrind_n = 2000;
  cases.push_back(add);
  Case add_rg{"add_float_1_element_requires_grad", [](int64_t n) {
                int64_t s = 0;
                for (int64_t i = 0; i < n; ++i) s += std::lround(dk::add(one_rg, two).data_ptr<float>()[0]);
                return s;
              }, 3};
  add_rg.check = [] {
    Tensor out = dk::add(one_rg, two);
    return out.requires_grad() && out.grad_fn() && out.grad_fn()->name() == "AddBackward0"
               ? std::string()
               : std::string("the result has no AddBackward0");
  };
  add_rg.callgrind_n = 2000;
  cases.push_back(add_rg);
  Case step{"mlp_forward_backward_step", [](int64_t n) {
              int64_t s = 0;
              for (int64_t i = 0; i < n; ++i) s += mlp().step();
              return s;
            }, 4};
  step.check = checkMlp;
  step.batch = 1;
  step.callgrind_n = 20;
  step.ops_per_call = countMlpOps();
  cases.push_back(step);
  // ---- 6b. vmap (issue 19): a batch of 64 through the batching rules, against the same
  // operator called once on the stacked input. Each run returns 1 per call; the check compares
  // the two results.
  static Tensor vm_x = dk::randn({64, 256}), vm_y = dk::randn({256});
  static Tensor vm_a = dk::randn({64, 16, 32}), vm_w = dk::randn({32, 16});
  static func::TensorsFn vmap_add = func::vmap(
      [](const std::vector<Tensor>& xs) { return std::vector<Tensor>{dk::add(xs[0], xs[1])}; }, {0, std::nullopt});
  static func::TensorsFn vmap_mm = func::vmap(
      [](const std::vector<Tensor>& xs) { return std::vector<Tensor>{dk::mm(xs[0], xs[1])}; }, {0, std::nullopt});
  auto sameResult = [](const Tensor& got, const Tensor& want) {
    return got.sizes() == want.sizes() && dk::sub(got, want).abs().sum().item().toDouble() == 0
               ? std::string()
               : std::string("the vmap result differs from the stacked call's");
  };
  // n calls of `call`, 100 per timed iteration, 200 under callgrind.
  auto batchCase = [](std::string name, std::function<void()> call) {
    Case c{std::move(name), [call = std::move(call)](int64_t n) {
             for (int64_t i = 0; i < n; ++i) call();
             return n;
           }, 1};
    c.batch = 100;
    c.callgrind_n = 200;
    return c;
  };
  Case vm_add = batchCase("vmap_add_batch64", [] { (void)vmap_add({vm_x, vm_y}); });
  vm_add.check = [sameResult] { return sameResult(vmap_add({vm_x, vm_y})[0], dk::add(vm_x, vm_y)); };
  cases.push_back(vm_add);
  cases.push_back(batchCase("stacked_add_64x256", [] { (void)dk::add(vm_x, vm_y); }));
  Case vm_mm = batchCase("vmap_mm_batch64", [] { (void)vmap_mm({vm_a, vm_w}); });
  vm_mm.check = [sameResult] { return sameResult(vmap_mm({vm_a, vm_w})[0], dk::matmul(vm_a, vm_w)); };
  cases.push_back(vm_mm);
  cases.push_back(batchCase("stacked_matmul_64x16x32", [] { (void)dk::matmul(vm_a, vm_w); }));
  // A reduction of the along_dims family: vmap of a sum over the example's dim against one sum
  // over dim 1 of the stacked input.
  static func::TensorsFn vmap_sum = func::vmap(
      [](const std::vector<Tensor>& xs) { return std::vector<Tensor>{dk::sum(xs[0], {-1})}; }, {0});
  Case vm_sum = batchCase("vmap_sum_dim_batch64", [] { (void)vmap_sum({vm_x}); });
  vm_sum.check = [sameResult] { return sameResult(vmap_sum({vm_x})[0], dk::sum(vm_x, {1})); };
  cases.push_back(vm_sum);
  cases.push_back(batchCase("stacked_sum_dim_64x256", [] { (void)dk::sum(vm_x, {1}); }));
  // ---- 6c. functionalize (issue 19): a step with writes through views, functionalized, against
  // the same step run eagerly (both on [64, 256]).
  static func::TensorsFn write_step = [](const std::vector<Tensor>& xs) {
    Tensor y = xs[0].clone();
    y.select(0, 1).mul_(2.0);
    y.slice(1, 0, 128).add_(1.0);
    return std::vector<Tensor>{dk::sum(y, {1})};
  };
  static func::TensorsFn pure_step = func::functionalize(write_step);
  Case fn_step = batchCase("functionalized_view_writes_64x256", [] { (void)pure_step({vm_x}); });
  fn_step.check = [sameResult] { return sameResult(pure_step({vm_x})[0], write_step({vm_x})[0]); };
  cases.push_back(fn_step);
  cases.push_back(batchCase("eager_view_writes_64x256", [] { (void)write_step({vm_x}); }));
  // ---- 7. registration
  Case reg{"register_deregister_one_operator", [](int64_t n) {
             int64_t s = 0;
             for (int64_t i = 0; i < n; ++i) {
               Library lib(Library::FRAGMENT, "bench_reg");
               lib.def("op(Tensor a, Tensor b) -> int");
               lib.impl("op", DispatchKey::CPU, DK_FN(twoTensorKernel));
               s += 3;
             }
             return s;
           }, 3};
  reg.batch = 10;
  reg.callgrind_n = 200;
  cases.push_back(reg);
  // One kernel registered on an operator that stays defined, then deregistered.
  static Library* existing = [] {
    auto* lib = new Library(Library::DEF, "bench_existing");
    lib->def("op(Tensor a, Tensor b) -> int");
    return lib;
  }();
  (void)existing;
  Case kernel{"register_kernel_existing_operator", [](int64_t n) {
                int64_t s = 0;
                for (int64_t i = 0; i < n; ++i) {
                  Library lib(Library::IMPL, "bench_existing", DispatchKey::CPU);
                  lib.impl("op", DK_FN(twoTensorKernel));
                  s += 3;
                }
                return s;
              }, 3};
  kernel.batch = 10;
  kernel.callgrind_n = 200;
  cases.push_back(kernel);
  // ---- 8. concurrency (timed only: callgrind runs one thread at a time)
  Case two_threads{"concurrent_unboxed_2_threads", unboxed, 3};
  two_threads.threads = 2;
  two_threads.callgrind_n = 0;
  cases.push_back(two_threads);
  Case churn = two_threads;
  churn.name = "concurrent_unboxed_2_threads_with_registration_churn";
  churn.background = startRegistrationChurn;
  cases.push_back(churn);
  return cases;
}

}  // namespace dk::bench
