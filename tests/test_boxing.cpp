// Boxed <-> unboxed in both directions, for every value kind a kernel takes or returns,
// schema inference from C++ signatures, and key extraction from boxed stacks.
#include <catch2/catch.hpp>

#include <array>
#include <thread>

#include "dispatch_test_util.h"

using namespace dk;
using namespace dk::testing;

namespace {
using Mixed = std::tuple<int64_t, double, bool, std::string>;

Mixed mixed_kernel(int64_t i, double d, bool b, std::string_view s) {
  return {i + 1, d * 2, !b, std::string(s) + "!"};
}

std::vector<int64_t> list_kernel(IntArrayRef xs, std::optional<int64_t> extra, const std::vector<std::string>& names) {
  std::vector<int64_t> out(xs.begin(), xs.end());
  out.push_back(extra.value_or(-1));
  out.push_back(static_cast<int64_t>(names.size()));
  return out;
}

std::optional<double> optional_kernel(std::optional<double> x, ArrayRef<double> ys) {
  if (!x) return std::nullopt;
  double sum = *x;
  for (double y : ys) sum += y;
  return sum;
}

std::tuple<Tensor, Tensor> pair_kernel(const Tensor& a, const std::optional<Tensor>& b) { return {a, b ? *b : a}; }
std::vector<Tensor> split_kernel(ArrayRef<Tensor> xs) { return std::vector<Tensor>(xs.rbegin(), xs.rend()); }

// A boxed-only kernel: sums its int list argument and echoes its string.
void boxed_sum(const OperatorHandle& op, Stack* stack) {
  CHECK(op.operator_name().name == "t_box::boxed_sum");
  IValue name = pop(*stack);
  IValue list = pop(*stack);
  int64_t total = 0;
  for (const IValue& v : list.toListElements()) total += v.toInt();
  stack->push_back(IValue(total));
  stack->push_back(name);
}
// A boxed-only kernel that makes a typed call of another boxed-only kernel (boxed_sum) while
// its own call's stack is in use: nested calls each need their own stack. Throws for n < 0.
void nested_sum(const OperatorHandle&, Stack* stack) {
  const int64_t n = pop(*stack).toInt();
  DK_CHECK(n >= 0, "nested_sum: n must be non-negative, got ", n);
  auto inner = Dispatcher::singleton()
                   .findSchemaOrThrow("t_box::boxed_sum", "")
                   .typed<std::tuple<int64_t, std::string>(IntArrayRef, std::string_view)>();
  std::vector<int64_t> xs(static_cast<size_t>(n), 1);
  stack->push_back(IValue(std::get<0>(inner.call(xs, "inner")) + 100));
}
// Claims one return, leaves two: pushes one and leaves its argument on the stack.
void two_returns(const OperatorHandle&, Stack* stack) { stack->push_back(IValue(int64_t{1})); }
}  // namespace

DK_LIBRARY(t_box, m) {
  m.def("mixed(int i, float d, bool b, str s) -> (int, float, bool, str)");
  m.def("lists(int[] xs, int? extra, str[] names) -> int[]");
  m.def("optional(float? x, float[] ys) -> float?");
  m.def("pair(Tensor a, Tensor? b) -> (Tensor, Tensor)");
  m.def("split(Tensor[] xs) -> Tensor[]");
  m.def("boxed_sum(int[] xs, str name) -> (int, str)");
  m.def("keyset(Tensor x) -> int");
  m.def("scaled(Tensor x, int n) -> int");
  m.def("two_returns(int x) -> int");
  m.def("mask(bool[3] output_mask) -> int");
  m.def("nested_sum(int n) -> int");
}
DK_LIBRARY_IMPL(t_box, CompositeExplicitAutograd, m) {
  m.impl("mixed", DK_FN(mixed_kernel));
  m.impl("lists", DK_FN(list_kernel));
  m.impl("optional", &optional_kernel);  // run-time function pointer
  m.impl("boxed_sum", CppFunction::makeFromBoxedFunction<&boxed_sum>());
  m.impl("two_returns", CppFunction::makeFromBoxedFunction<&two_returns>());
  m.impl("nested_sum", CppFunction::makeFromBoxedFunction<&nested_sum>());
  // bool[3]: a std::array<bool, 3> by value, as PyTorch's output masks.
  m.impl("mask", [](std::array<bool, 3> mask) -> int64_t { return mask[0] * 4 + mask[1] * 2 + mask[2]; });
}
DK_LIBRARY_IMPL(t_box, CPU, m) {
  m.impl("pair", DK_FN(pair_kernel));
  m.impl("split", DK_FN(split_kernel));
  m.impl("keyset", [](DispatchKeySet ks, const Tensor&) -> int64_t { return static_cast<int64_t>(ks.raw_repr()); });
  m.impl("scaled", [](const Tensor& x, int64_t n) -> int64_t { return x.numel() * n; });
}
DK_LIBRARY_IMPL(t_box, CUDA, m) {
  m.impl("split", [](ArrayRef<Tensor> xs) -> std::vector<Tensor> { return {xs[0]}; });
}

namespace {
OperatorHandle opNamed(const char* name) { return Dispatcher::singleton().findSchemaOrThrow(name, ""); }
}  // namespace

TEST_CASE("boxing: a C++ kernel of ints, doubles, bools and strings, called unboxed and boxed") {
  auto op = opNamed("t_box::mixed");
  auto typed = op.typed<Mixed(int64_t, double, bool, std::string_view)>();
  CHECK(typed.call(1, 1.5, true, "hi") == Mixed{2, 3.0, false, "hi!"});
  Stack stack;
  push(stack, 41, 0.25, false, "yo");
  op.callBoxed(&stack);
  REQUIRE(stack.size() == 4);
  CHECK(stack[0].toInt() == 42);
  CHECK(stack[1].toDouble() == 0.5);
  CHECK(stack[2].toBool());
  CHECK(stack[3].toStringRef() == "yo!");
}

TEST_CASE("boxing: a bool[3] mask is a std::array<bool, 3>, boxed as a list of 3 bools") {
  auto op = opNamed("t_box::mask");
  CHECK(op.typed<int64_t(std::array<bool, 3>)>().call({true, false, true}) == 5);
  Stack stack;
  stack.push_back(IValue::makeList(Type::base(TypeKind::Bool), {IValue(false), IValue(true), IValue(true)}));
  op.callBoxed(&stack);
  REQUIRE(stack.size() == 1);
  CHECK(stack[0].toInt() == 3);
  stack.clear();
  stack.push_back(IValue::makeList(Type::base(TypeKind::Bool), {IValue(true), IValue(true)}));
  CHECK_THROWS_WITH(op.callBoxed(&stack), Catch::Contains("expected a list of 3 bools (bool[3]) but got 2 elements"));
}

TEST_CASE("boxing: lists and optionals, called unboxed and boxed") {
  auto op = opNamed("t_box::lists");
  auto typed = op.typed<std::vector<int64_t>(IntArrayRef, std::optional<int64_t>, const std::vector<std::string>&)>();
  CHECK(typed.call({1, 2}, 7, {"a", "b", "c"}) == std::vector<int64_t>{1, 2, 7, 3});
  CHECK(typed.call({}, std::nullopt, {}) == std::vector<int64_t>{-1, 0});
  Stack stack;
  stack.push_back(IValue::makeList(Type::base(TypeKind::Int), {IValue(5)}));
  stack.push_back(IValue());
  stack.push_back(IValue::makeList(Type::base(TypeKind::Str), {IValue("x")}));
  op.callBoxed(&stack);
  REQUIRE(stack.size() == 1);
  CHECK(stack[0].listElementType() == Type::base(TypeKind::Int));
  CHECK(stack[0] == IValue::makeList(Type::base(TypeKind::Int), {IValue(5), IValue(-1), IValue(1)}));

  auto opt = opNamed("t_box::optional").typed<std::optional<double>(std::optional<double>, ArrayRef<double>)>();
  CHECK(opt.call(1.0, {2.0, 3.0}) == 6.0);
  CHECK_FALSE(opt.call(std::nullopt, {2.0}).has_value());
}

TEST_CASE("boxing: tensors, optional tensors, tensor lists and tuple returns") {
  Tensor a = cpuTensor(), b = cpuTensor();
  auto pair = opNamed("t_box::pair").typed<std::tuple<Tensor, Tensor>(const Tensor&, const std::optional<Tensor>&)>();
  auto [x, y] = pair.call(a, b);
  CHECK(x.is_same(a));
  CHECK(y.is_same(b));
  auto [p, q] = pair.call(a, std::nullopt);
  CHECK(q.is_same(a));
  Stack stack{IValue(a), IValue()};
  opNamed("t_box::pair").callBoxed(&stack);
  REQUIRE(stack.size() == 2);
  CHECK(stack[1].toTensor().is_same(a));

  auto split = opNamed("t_box::split").typed<std::vector<Tensor>(ArrayRef<Tensor>)>();
  auto out = split.call({a, b});
  REQUIRE(out.size() == 2);
  CHECK(out[0].is_same(b));
  // Boxed: the tensors inside the list are dispatch arguments too.
  Tensor c = cudaTensor();
  Stack list_stack{IValue::makeList(Type::base(TypeKind::Tensor), {IValue(a), IValue(c)})};
  opNamed("t_box::split").callBoxed(&list_stack);
  REQUIRE(list_stack.size() == 1);
  REQUIRE(list_stack[0].toListElements().size() == 1);  // the CUDA kernel ran
  CHECK(list_stack[0].toListElements()[0].toTensor().is_same(a));
  CHECK(split.call({c}).size() == 1);
}

TEST_CASE("boxing: a boxed-only kernel called with unboxed arguments") {
  auto op = opNamed("t_box::boxed_sum").typed<std::tuple<int64_t, std::string>(IntArrayRef, std::string_view)>();
  CHECK(op.call({1, 2, 3}, "total") == std::tuple<int64_t, std::string>{6, "total"});
  Stack stack;
  stack.push_back(IValue::makeList(Type::base(TypeKind::Int), {IValue(4)}));
  stack.push_back(IValue("n"));
  opNamed("t_box::boxed_sum").callBoxed(&stack);
  CHECK(stack.size() == 2);
  CHECK(stack[0].toInt() == 4);
  CHECK(opNamed("t_box::boxed_sum").dumpState().find("CompositeExplicitAutograd[alias]: registered at ") !=
        std::string::npos);
}

TEST_CASE("boxing: a kernel taking DispatchKeySet receives the call's key set, never on the stack") {
  auto op = opNamed("t_box::keyset");
  Tensor t = cpuTensor();
  auto ks = DispatchKeySet::fromRaw(static_cast<uint64_t>(op.typed<int64_t(const Tensor&)>().call(t)));
  // AutogradCPU and ADInplaceOrView are fallthrough and were masked out before the lookup.
  CHECK(ks == DispatchKeySet(DispatchKey::CPU).add(DispatchKey::BackendSelect).remove(DispatchKey::BackendSelect));
  Stack stack{IValue(t)};
  op.callBoxed(&stack);
  CHECK(DispatchKeySet::fromRaw(static_cast<uint64_t>(stack[0].toInt())) == ks);
}

TEST_CASE("boxing: wrong boxed stacks raise dk::Error, never crash") {
  auto op = opNamed("t_box::mixed");
  Stack wrong_kind;
  push(wrong_kind, "not an int", 1.0, true, "s");
  CHECK_THROWS_WITH(op.callBoxed(&wrong_kind), "expected an IValue of kind Int but got String");
  Stack too_short;
  push(too_short, 1);
  CHECK_THROWS_WITH(op.callBoxed(&too_short), "t_box::mixed: a boxed call needs 4 arguments on the stack but the stack has 1");
  Stack none_for_tensor{IValue()};
  CHECK_THROWS_AS(opNamed("t_box::keyset").callBoxed(&none_for_tensor), Error);
  Stack empty;
  CHECK_THROWS_WITH(opNamed("t_box::keyset").callBoxed(&empty),
                    "t_box::keyset: a boxed call needs 1 arguments on the stack but the stack has 0");
  // The tensor is not on top of a short stack, so no tensor is found where the schema has one:
  // still the arity error, not "There were no tensor arguments".
  Stack tensor_only;
  push(tensor_only, make_tensor({3}));
  CHECK_THROWS_WITH(opNamed("t_box::scaled").callBoxed(&tensor_only),
                    "t_box::scaled: a boxed call needs 2 arguments on the stack but the stack has 1");
  Stack right;
  push(right, make_tensor({3}), 2);
  opNamed("t_box::scaled").callBoxed(&right);
  CHECK(right.back().toInt() == 6);
}

TEST_CASE("boxing: schemas inferred from C++ signatures") {
  CHECK(detail::inferFunctionSchema<Mixed, int64_t, double, bool, std::string_view>().str() ==
        "(int _0, float _1, bool _2, str _3) -> (int, float, bool, str)");
  CHECK(detail::inferFunctionSchema<std::vector<Tensor>, ArrayRef<Tensor>, const std::optional<Tensor>&,
                                    std::optional<IntArrayRef>>()
            .str() == "(Tensor[] _0, Tensor? _1, int[]? _2) -> Tensor[]");
  CHECK(detail::inferFunctionSchema<void, ScalarType, Device, Layout, MemoryFormat>().str() ==
        "(ScalarType _0, Device _1, Layout _2, MemoryFormat _3) -> ()");
  CHECK(detail::inferFunctionSchema<std::optional<double>, std::vector<std::optional<Tensor>>>().str() ==
        "(Tensor?[] _0) -> float?");
}

TEST_CASE("boxing: Scalars box to Int, Double or Bool; Generators to an opaque object") {
  CHECK(BoxingTraits<Scalar>::box(Scalar(3)).isInt());
  CHECK(BoxingTraits<Scalar>::box(Scalar(2.5)).toDouble() == 2.5);
  CHECK(BoxingTraits<Scalar>::box(Scalar(true)).isBool());
  CHECK(BoxingTraits<Scalar>::unbox(IValue(7)) == Scalar(int64_t{7}));
  CHECK(BoxingTraits<Scalar>::unbox(IValue(0.5)).isFloatingPoint());
  CHECK_THROWS_WITH(BoxingTraits<Scalar>::unbox(IValue("x")),
                    "expected an IValue of kind Int, Double or Bool (a Scalar) but got String");
  Generator g(5);
  IValue boxed = BoxingTraits<Generator>::box(g);
  CHECK(boxed.isObject());
  CHECK(BoxingTraits<Generator>::unbox(IValue(boxed)) == g);
  CHECK(detail::inferFunctionSchema<Scalar, const Scalar&, std::optional<Generator>>().str() ==
        "(Scalar _0, Generator? _1) -> Scalar");
  Generator a(42), b(42);
  CHECK(a->random64() == b->random64());
}

TEST_CASE("boxing: typed calls of boxed-only kernels nest, throw and go on (Note [Spare boxing stack])") {
  auto nested = opNamed("t_box::nested_sum").typed<int64_t(int64_t)>();
  auto sum = opNamed("t_box::boxed_sum").typed<std::tuple<int64_t, std::string>(IntArrayRef, std::string_view)>();
  CHECK(nested.call(3) == 103);  // the outer call's stack is out while the inner call runs
  CHECK_THROWS_WITH(nested.call(-1), "nested_sum: n must be non-negative, got -1");
  // After the throw the thread's spare stack is usable again and starts empty.
  CHECK(sum.call({5, 6}, "after") == std::tuple<int64_t, std::string>{11, "after"});
  CHECK(nested.call(0) == 100);
  // A long list argument (one stack value) through the outer and the inner call.
  std::vector<int64_t> many(1000, 2);
  CHECK(sum.call(many, "many") == std::tuple<int64_t, std::string>{2000, "many"});
  CHECK(nested.call(300) == 400);
  // On another thread (its own spare, freed at the thread's exit).
  int64_t other = 0;
  std::thread t([&] { other = nested.call(7); });
  t.join();
  CHECK(other == 107);
}

TEST_CASE("boxing: a typed call of a boxed kernel that leaves the wrong number of returns names the operator") {
  auto op = opNamed("t_box::two_returns").typed<int64_t(int64_t)>();
  CHECK_THROWS_WITH(op.call(5), "t_box::two_returns: expected the boxed kernel to leave 1 return value on the stack "
                                "but it left 2");
}

namespace {
int64_t twice(int64_t x) { return 2 * x; }
int64_t thrice(int64_t x) { return 3 * x; }
}  // namespace

TEST_CASE("boxing: kernels of one signature share one boxed entry (Note [One boxing family])") {
  KernelFunction a = KernelFunction::makeFromUnboxedFunction<&twice>();
  KernelFunction b = KernelFunction::makeFromUnboxedFunction<&thrice>();
  CHECK(a.boxedFunction() == b.boxedFunction());
  CHECK(a.boxedFunction() == &detail::BoxingFor<int64_t(int64_t)>::boxed);
  CHECK(a.unboxedFunction() != b.unboxedFunction());  // each calls its own function directly
  CHECK(a.functor() != b.functor());                 // which the shared boxed entry reaches through
  auto op = opNamed("t_box::two_returns");           // any operator: only named in errors
  Stack sa{IValue(int64_t{7})}, sb{IValue(int64_t{7})};
  a.callBoxed(op, DispatchKeySet(), &sa);
  b.callBoxed(op, DispatchKeySet(), &sb);
  CHECK(sa.size() == 1);
  CHECK(sa[0].toInt() == 14);
  CHECK(sb[0].toInt() == 21);
}
