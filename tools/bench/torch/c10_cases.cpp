// c10 benchmark operators and cases; see c10_cases.h.
#include "c10_cases.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/function.h>
#include <torch/library.h>

#include <cmath>
#include <memory>
#include <string>

namespace c10bench {

using benchcase::Case;
using at::Tensor;
using c10::DispatchKey;
using c10::DispatchKeySet;
using TwoTensorOp = c10::TypedOperatorHandle<int64_t(const Tensor&, const Tensor&)>;

__attribute__((noinline)) int64_t twoTensorKernel(const Tensor& a, const Tensor& b) {
  asm volatile("");
  return a.dim() + b.dim();
}

namespace {

TwoTensorOp typedOp(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<int64_t(const Tensor&, const Tensor&)>();
}

struct Registry {
  Registry();
  std::vector<std::unique_ptr<torch::Library>> libraries;
  TwoTensorOp plain, chain2, chain5;
  c10::OperatorHandle plain_handle;
};
Registry& registry();

// The layers reach their operator through the registry, published once it is built (before
// any call): a global load, where a function-local static would add a guard check and,
// for its first-call path, a stack frame to every layer. The c10 side does the same.
const Registry* g_layers = nullptr;

template <DispatchKey Key>
int64_t forwardingLayer(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  return g_layers->chain5.redispatch(ks.remove(Key), a, b);
}
int64_t autogradLayer2(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  return g_layers->chain2.redispatch(ks & c10::after_autograd_keyset, a, b);
}
int64_t autogradLayer5(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  return g_layers->chain5.redispatch(ks & c10::after_autograd_keyset, a, b);
}
int64_t adInplaceOrViewLayer(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  return g_layers->chain5.redispatch(ks & c10::after_ADInplaceOrView_keyset, a, b);
}
Tensor mulAtWrapper(const Tensor& a, const Tensor&) { return a; }

std::vector<std::unique_ptr<torch::Library>> defineBenchOperators() {
  std::vector<std::unique_ptr<torch::Library>> libs;
  libs.push_back(std::make_unique<torch::Library>(torch::Library::DEF, "bench", c10::nullopt, __FILE__, __LINE__));
  torch::Library& def = *libs.back();
  for (const char* name : {"plain", "chain2", "chain5"}) {
    def.def((std::string(name) + "(Tensor a, Tensor b) -> int").c_str());
    def.impl(name, torch::dispatch(DispatchKey::CPU, TORCH_FN(twoTensorKernel)));
  }
  return libs;
}

Registry::Registry()
    : libraries(defineBenchOperators()),
      plain(typedOp("bench::plain")),
      chain2(typedOp("bench::chain2")),
      chain5(typedOp("bench::chain5")),
      plain_handle(c10::Dispatcher::singleton().findSchemaOrThrow("bench::plain", "")) {
  auto impl = [&](DispatchKey k, const char* ns = "bench") -> torch::Library& {
    libraries.push_back(std::make_unique<torch::Library>(torch::Library::IMPL, ns, k, __FILE__, __LINE__));
    return *libraries.back();
  };
  impl(DispatchKey::Autograd).impl("chain2", TORCH_FN(autogradLayer2)).impl("chain5", TORCH_FN(autogradLayer5));
  impl(DispatchKey::ADInplaceOrView).impl("chain5", TORCH_FN(adInplaceOrViewLayer));
  impl(DispatchKey::TESTING_ONLY_GenericWrapper)
      .impl("chain5", TORCH_FN(forwardingLayer<DispatchKey::TESTING_ONLY_GenericWrapper>));
  impl(DispatchKey::TESTING_ONLY_GenericMode).impl("chain5", TORCH_FN(forwardingLayer<DispatchKey::TESTING_ONLY_GenericMode>));
  impl(DispatchKey::TESTING_ONLY_GenericWrapper, "aten").impl("mul.Tensor", TORCH_FN(mulAtWrapper));
  g_layers = this;
}

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// The MLP of case 6, as in ../dispatch_cases.cpp.
struct Mlp {
  Tensor x, w1, b1, w2, b2;
  Mlp() {
    at::manual_seed(7);
    x = at::randn({4, 8});
    w1 = at::randn({16, 8});
    b1 = at::randn({16});
    w2 = at::randn({4, 16});
    b2 = at::randn({4});
    for (Tensor* p : {&w1, &b1, &w2, &b2}) p->requires_grad_();
  }
  int64_t step(bool keep = false) {
    Tensor loss = at::sum(at::linear(at::relu(at::linear(x, w1, b1)), w2, b2));
    loss.backward();
    int64_t r = std::lround(b2.grad().data_ptr<float>()[0]);
    if (!keep)
      for (Tensor* p : {&w1, &b1, &w2, &b2}) p->mutable_grad() = Tensor();
    return r;
  }
};
Mlp& mlp() {
  static Mlp* m = new Mlp();
  return *m;
}
std::string checkMlp() {
  Mlp& m = mlp();
  m.step(/*keep=*/true);
  Tensor h;
  {
    at::NoGradGuard g;
    h = at::sum(at::relu(at::linear(m.x, m.w1, m.b1)), {0});
  }
  std::string why;
  if (!at::allclose(m.b2.grad(), at::full({4}, 4.0))) why = "grad of b2 is not 4";
  if (!at::allclose(m.w2.grad(), h.expand({4, 16}), 1e-4, 1e-4)) why = "grad of w2 is not the column sums of h";
  if (!m.w1.grad().defined()) why = "no grad of w1";
  for (Tensor* p : {&m.w1, &m.b1, &m.w2, &m.b2}) p->mutable_grad() = Tensor();
  return why;
}

}  // namespace

std::vector<Case> allCases() {
  static Tensor a = at::empty({2, 3});
  static Tensor b = at::empty({4});
  static Tensor ia = [] { c10::InferenceMode g; return at::empty({2, 3}); }();
  static Tensor ib = [] { c10::InferenceMode g; return at::empty({4}); }();
  static Tensor one = at::ones({1});
  static Tensor two = at::full({1}, 2.0);
  static Tensor one_rg = at::ones({1}).requires_grad_();
  Registry& r = registry();
  static const c10::TypedOperatorHandle<Tensor(const Tensor&, const Tensor&)> mul_typed =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::mul", "Tensor").typed<Tensor(const Tensor&, const Tensor&)>();
  std::vector<Case> cases;
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
  cases.push_back({"unboxed_typed_call", [&r](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += r.plain.call(a, b);
                     return s;
                   }, 3});
  cases.push_back({"unboxed_typed_call_inference_tensors", [&r](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += r.plain.call(ia, ib);
                     return s;
                   }, 3});
  cases.push_back({"unboxed_generated_ops_call", [](int64_t n) {
                     c10::impl::IncludeDispatchKeyGuard g(DispatchKeySet(DispatchKey::TESTING_ONLY_GenericWrapper));
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += at::_ops::mul_Tensor::call(a, b).dim();
                     return s;
                   }, 2});
  cases.push_back({"unboxed_typed_call_returning_tensor", [](int64_t n) {
                     c10::impl::IncludeDispatchKeyGuard g(DispatchKeySet(DispatchKey::TESTING_ONLY_GenericWrapper));
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += mul_typed.call(a, b).dim();
                     return s;
                   }, 2});
  cases.push_back({"boxed_call", [&r](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) {
                       torch::jit::Stack stack;
                       stack.reserve(2);
                       stack.emplace_back(a);
                       stack.emplace_back(b);
                       r.plain_handle.callBoxed(&stack);
                       s += stack[0].toInt();
                     }
                     return s;
                   }, 3});
  cases.push_back({"boxed_call_stack_reused", [&r](int64_t n) {
                     int64_t s = 0;
                     torch::jit::Stack stack;
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
  cases.push_back({"redispatch_chain_2_layers", [&r](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += r.chain2.call(a, b);
                     return s;
                   }, 3});
  cases.push_back({"redispatch_chain_5_layers", [&r](int64_t n) {
                     c10::impl::IncludeDispatchKeyGuard g(DispatchKeySet(DispatchKey::TESTING_ONLY_GenericMode) |
                                                          DispatchKeySet(DispatchKey::TESTING_ONLY_GenericWrapper));
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) s += r.chain5.call(a, b);
                     return s;
                   }, 3});
  Case add{"add_float_1_element", [](int64_t n) {
             int64_t s = 0;
             for (int64_t i = 0; i < n; ++i) s += std::lround(at::add(one, two).data_ptr<float>()[0]);
             return s;
           }, 3};
  add.check = [] {
    Tensor out = at::add(one, two);
    return out.numel() == 1 && out.scalar_type() == at::kFloat && !out.requires_grad() && !out.grad_fn()
               ? std::string()
               : std::string("not a 1-element float tensor without history");
  };
  add.callgrind_n = 2000;
  cases.push_back(add);
  Case add_rg{"add_float_1_element_requires_grad", [](int64_t n) {
                int64_t s = 0;
                for (int64_t i = 0; i < n; ++i) s += std::lround(at::add(one_rg, two).data_ptr<float>()[0]);
                return s;
              }, 3};
  add_rg.check = [] {
    Tensor out = at::add(one_rg, two);
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
  cases.push_back(step);
  Case reg{"register_deregister_one_operator", [](int64_t n) {
             int64_t s = 0;
             for (int64_t i = 0; i < n; ++i) {
               torch::Library lib(torch::Library::FRAGMENT, "bench_reg", c10::nullopt, __FILE__, __LINE__);
               lib.def("op(Tensor a, Tensor b) -> int");
               lib.impl("op", torch::dispatch(DispatchKey::CPU, TORCH_FN(twoTensorKernel)));
               s += 3;
             }
             return s;
           }, 3};
  reg.batch = 10;
  reg.callgrind_n = 200;
  cases.push_back(reg);
  static torch::Library* existing = [] {
    auto* lib = new torch::Library(torch::Library::DEF, "bench_existing", c10::nullopt, __FILE__, __LINE__);
    lib->def("op(Tensor a, Tensor b) -> int");
    return lib;
  }();
  (void)existing;
  Case kernel{"register_kernel_existing_operator", [](int64_t n) {
                int64_t s = 0;
                for (int64_t i = 0; i < n; ++i) {
                  torch::Library lib(torch::Library::IMPL, "bench_existing", DispatchKey::CPU, __FILE__, __LINE__);
                  lib.impl("op", TORCH_FN(twoTensorKernel));
                  s += 3;
                }
                return s;
              }, 3};
  kernel.batch = 10;
  kernel.callgrind_n = 200;
  cases.push_back(kernel);
  return cases;
}

}  // namespace c10bench
