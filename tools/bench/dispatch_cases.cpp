// Benchmark operators and cases; see dispatch_cases.h.
#include "dispatch_cases.h"

namespace dk::bench {

__attribute__((noinline)) int64_t twoTensorKernel(const Tensor& a, const Tensor& b) {
  asm volatile("");
  return a.dim() + b.dim();
}

namespace {
// A layer at `key` that does nothing but redispatch below itself.
template <DispatchKey Key>
int64_t forwardingLayer(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  static const TwoTensorOp op = registry().chain5;
  return op.redispatch(ks.remove(Key), a, b);
}
int64_t autogradLayer2(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  static const TwoTensorOp op = registry().chain2;
  return op.redispatch(ks & after_autograd_keyset, a, b);
}
int64_t autogradLayer5(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  static const TwoTensorOp op = registry().chain5;
  return op.redispatch(ks & after_autograd_keyset, a, b);
}
int64_t adInplaceOrViewLayer(DispatchKeySet ks, const Tensor& a, const Tensor& b) {
  static const TwoTensorOp op = registry().chain5;
  return op.redispatch(ks & after_ADInplaceOrView_keyset, a, b);
}
TwoTensorOp typedOp(const char* name) {
  return Dispatcher::singleton().findSchemaOrThrow(name, "").typed<int64_t(const Tensor&, const Tensor&)>();
}
std::vector<std::unique_ptr<Library>> defineBenchOperators();
}  // namespace

namespace {
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
}  // namespace

Registry::Registry()
    : libraries(defineBenchOperators()),
      plain(typedOp("bench::plain")),
      chain2(typedOp("bench::chain2")),
      chain5(typedOp("bench::chain5")),
      plain_handle(Dispatcher::singleton().findSchemaOrThrow("bench::plain", "")) {
  auto impl = [&](DispatchKey k) -> Library& {
    libraries.push_back(std::make_unique<Library>(Library::IMPL, "bench", k));
    return *libraries.back();
  };
  impl(DispatchKey::Autograd).impl("chain2", DK_FN(autogradLayer2)).impl("chain5", DK_FN(autogradLayer5));
  impl(DispatchKey::ADInplaceOrView).impl("chain5", DK_FN(adInplaceOrViewLayer));
  impl(DispatchKey::TESTING_ONLY_GenericWrapper)
      .impl("chain5", DK_FN(forwardingLayer<DispatchKey::TESTING_ONLY_GenericWrapper>));
  impl(DispatchKey::TESTING_ONLY_GenericMode).impl("chain5", DK_FN(forwardingLayer<DispatchKey::TESTING_ONLY_GenericMode>));
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
  Registry& r = registry();
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
  cases.push_back({"register_deregister_one_operator", [](int64_t n) {
                     int64_t s = 0;
                     for (int64_t i = 0; i < n; ++i) {
                       Library lib(Library::FRAGMENT, "bench_reg");
                       lib.def("op(Tensor a, Tensor b) -> int");
                       lib.impl("op", DispatchKey::CPU, DK_FN(twoTensorKernel));
                       s += 3;
                     }
                     return s;
                   }, 3});
  return cases;
}

}  // namespace dk::bench
