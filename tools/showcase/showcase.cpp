// The dispatchkit showcase (tools/demo): operators defined by hand with DK_LIBRARY, kernels
// at CPU, Autograd and CompositeImplicitAutograd, called unboxed and boxed, with the computed
// dispatch table and a dispatch trace.
#include <dk/dispatch.h>

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

  std::cout << "\n== dispatch trace of numel_twice(x) (what DK_SHOW_DISPATCH_TRACE=1 prints, on stderr)\n"
            << std::flush;
  setDispatchTraceEnabled(true);
  int64_t r = twice.call(x);
  setDispatchTraceEnabled(false);
  std::cerr << std::flush;
  std::cout << "  result: " << r << "\n";
  return 0;
}
