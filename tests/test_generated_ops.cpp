// The generated operators (schemas/native_functions.yaml -> generated code): registrations,
// dispatch-argument bitmaps, typed signatures, and boxed adapters.
#include <catch2/catch.hpp>

#include "dk/autograd/autograd.h"
#include "dk/dispatch.h"
#include "dk/generated/Operators.h"
#include "dk/generated/TensorOperators.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/add_ops.h"
#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/max.h"
#include "dk/generated/ops/mul_ops.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/where_ops.h"
#include "dk/generated/ops/zeros.h"
#include "dk/generated/ops/zeros_ops.h"
#include "dk/modes.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/dispatch/tensor_factories.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/tensor/tensor_options.h"
#include "dk/tensor/type_promotion.h"

using namespace dk;

TEST_CASE("generated: every operator is registered with the schema its struct carries") {
  // The registrations are built from the generator's constant data (Note [Pre-built schemas]);
  // the struct's schema string, parsed here, must give the same schema, printed the same way.
  size_t n = 0;
  for (const ops::OperatorInfo& info : ops::all_operators()) {
    INFO(info.name << "." << info.overload_name);
    auto op = Dispatcher::singleton().findSchema(OperatorName{info.name, info.overload_name});
    REQUIRE(op.has_value());
    FunctionSchema parsed = parseSchema(info.schema_str);
    parsed.set_operator_name(OperatorName{info.name, info.overload_name});
    CHECK(op->schema() == parsed);
    std::string name = info.name;  // "dk::add", "c10d::all_reduce_"
    CHECK(op->schema().str() == name.substr(0, name.find("::") + 2) + info.schema_str);
    ++n;
  }
  CHECK(n == 217);
}

TEST_CASE("generated: a def from schema data builds the schema the text parses to") {
  using namespace dk::schema_data;
  // The pool and its offsets, as the generator lays them out.
  static constexpr char strings[] = "\0f\0data\0self\0a\0indices\0sizes\0None\0views\0b|c\0*\0mode\0\"sum\"\0out\0g";
  enum : StringOffset { f = 1, data_ = 3, self = 8, a = 13, indices = 15, sizes = 23, None = 29, views = 34,
                        b_or_c = 40, star = 44, mode = 46, sum = 51, out = 57, g = 61 };
  static constexpr ArgumentData args[] = {
      {.name = self, .type = {TypeKind::Tensor}, .alias = {.before = a, .is_write = true}},
      {.name = indices, .type = {TypeKind::Tensor, {kOptional, kList}}},
      {.name = sizes, .type = {TypeKind::SymInt, {listOf(2), kOptional}}, .default_value = None},
      {.name = views, .type = {TypeKind::Tensor, {kList}}, .alias = {.before = b_or_c, .after = star}},
      {.name = mode, .type = {TypeKind::Str}, .default_value = sum, .kwarg_only = true},
  };
  static constexpr ArgumentData rets[] = {
      {.name = out, .type = {TypeKind::Tensor}, .alias = {.before = a, .is_write = true}},
      {.type = {TypeKind::Int}},
  };
  static constexpr SchemaData data{.strings = strings, .name = f, .overload_name = data_, .arguments = args,
                                   .returns = rets, .dispatch_bitmap = 0b11010};
  Library lib(Library::FRAGMENT, "t_data");
  lib.def(data);
  auto op = Dispatcher::singleton().findSchemaOrThrow("t_data::f", "data");
  const char* text =
      "t_data::f.data(Tensor(a!) self, Tensor?[] indices, SymInt[2]? sizes=None, Tensor(b|c -> *)[] views, *, "
      "str mode=\"sum\") -> (Tensor(a!) out, int)";
  CHECK(op.schema() == parseSchema(text));
  CHECK(op.schema().str() == text);
  CHECK(op.entry().dispatchArgumentBitmap() == 0b11010);

  // The same rules as a def from text: a wrong bitmap, or a name taken, changes nothing.
  static constexpr SchemaData wrong_bitmap{.strings = strings, .name = g, .arguments = args, .dispatch_bitmap = 0b1};
  CHECK_THROWS_WITH(lib.def(wrong_bitmap), Catch::Matchers::StartsWith("t_data::g: the generated dispatch-argument "
                                                                       "bitmap 0b1 does not match the schema's 0b11010"));
  CHECK_FALSE(Dispatcher::singleton().findOp(OperatorName{"t_data::g", ""}).has_value());
  CHECK_THROWS_WITH(lib.def(data), Catch::Matchers::StartsWith("Tried to register an operator (t_data::f.data("));
  Library impl(Library::IMPL, "t_data", DispatchKey::CPU);
  CHECK_THROWS_WITH(impl.def(data), Catch::Matchers::StartsWith("def() is not allowed in DK_LIBRARY_IMPL"));
}

TEST_CASE("generated: the constexpr bitmaps equal the runtime's, computed from the schema") {
  for (const ops::OperatorInfo& info : ops::all_operators()) {
    INFO(info.name << "." << info.overload_name);
    uint64_t from_schema = OperatorEntry::computeDispatchArgumentBitmap(parseSchema(info.schema_str));
    CHECK(info.dispatch_bitmap == from_schema);
    auto op = Dispatcher::singleton().findSchemaOrThrow(info.name, info.overload_name);
    CHECK(op.entry().dispatchArgumentBitmap() == from_schema);
  }
  STATIC_REQUIRE(ops::add_Tensor::dispatch_bitmap == 0b110);  // self, other; not alpha
  STATIC_REQUIRE(ops::where_self::dispatch_bitmap == 0b111);
  STATIC_REQUIRE(ops::zeros::dispatch_bitmap == 0);
}

TEST_CASE("generated: a def whose bitmap disagrees with its schema is refused and changes nothing") {
  Library lib(Library::FRAGMENT, "t_bitmap");
  CHECK_THROWS_WITH(lib.def("f(int n, Tensor x) -> Tensor", DispatchArgumentBitmap{0b10}),
                    Catch::Matchers::StartsWith("t_bitmap::f: the generated dispatch-argument bitmap 0b10 does not "
                                                "match the schema's 0b1 (t_bitmap::f(int n, Tensor x) -> Tensor); "
                                                "registered at ") &&
                        Catch::Matchers::EndsWith(". Regenerate the operator code from the YAML"));
  CHECK_FALSE(Dispatcher::singleton().findOp(OperatorName{"t_bitmap::f", ""}).has_value());
  lib.def("f(int n, Tensor x) -> Tensor", DispatchArgumentBitmap{0b01});
  CHECK(Dispatcher::singleton().findSchemaOrThrow("t_bitmap::f", "").entry().dispatchArgumentBitmap() == 0b01);
}

TEST_CASE("generated: each struct's C++ signature passes the dispatcher's typed check") {
  auto check = [](auto tag) {
    using Op = decltype(tag);
    auto handle = Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
    CHECK_NOTHROW(handle.template typed<typename Op::signature>());
  };
  check(ops::add_Tensor{});
  check(ops::mm{});
  check(ops::max_dim{});
  check(ops::split_Tensor{});
  check(ops::cat{});
  check(ops::linear{});
  check(ops::zeros{});
  check(ops::rand_generator{});
  check(ops::item{});
}


TEST_CASE("generated: unboxed calls, methods, defaults, operators and out= reach the kernels") {
  Tensor a = dk::tensor({1.0, 2.0, 3.0});
  Tensor b = dk::tensor({10.0, 20.0, 30.0});
  Tensor sum = dk::add(a, b);                   // alpha defaults to 1
  CHECK(sum.data_ptr<float>()[2] == 33.0f);
  CHECK(a.add(b, 2).data_ptr<float>()[0] == 21.0f);  // method with an explicit alpha
  CHECK((a + b).data_ptr<float>()[1] == 22.0f);
  CHECK((-a).data_ptr<float>()[0] == -1.0f);
  CHECK((a * 2).data_ptr<float>()[2] == 6.0f);
  Tensor out = dk::empty({0});
  dk::add(a, b, 1, out);                        // add.out resizes the empty out tensor
  CHECK(out.sizes() == std::vector<int64_t>{3});
  CHECK(out.data_ptr<float>()[0] == 11.0f);
  CHECK(dk::sum(dk::ones({2, 3}), {0, 1}).item().toDouble() == 6.0);
  auto [values, indices] = dk::max(dk::tensor({{1.0, 5.0}, {7.0, 2.0}}), 1);
  CHECK(indices.data_ptr<int64_t>()[0] == 1);
  CHECK(values.data_ptr<float>()[1] == 7.0f);
}

TEST_CASE("generated: boxed calls go through the generated adapters; redispatch skips TLS") {
  Tensor a = dk::tensor({1.0, 2.0});
  auto op = Dispatcher::singleton().findSchemaOrThrow("dk::mul", "Tensor");
  Stack stack{IValue(a), IValue(a)};
  op.callBoxed(&stack);
  REQUIRE(stack.size() == 1);
  CHECK(stack[0].toTensor().data_ptr<float>()[1] == 4.0f);
  // The kernel's boxed entry is the generated per-signature adapter, not the template one.
  CHECK(op.dumpState().find("CPU: wrapper_CPU_mul_Tensor :: (Tensor _0, Tensor _1) -> Tensor [ boxed unboxed ]") != std::string::npos);
  Tensor r = ops::mul_Tensor::redispatch(DispatchKeySet(DispatchKey::CPU), a, a);
  CHECK(r.data_ptr<float>()[0] == 1.0f);
}

TEST_CASE("generated: BackendSelect picks the backend of a factory from its device argument") {
  Tensor cpu = dk::zeros({2, 2});
  CHECK(cpu.device() == Device(DeviceType::CPU));
  Tensor meta = dk::zeros({2, 2}, ScalarType::Double, std::nullopt, Device(DeviceType::Meta));
  CHECK(meta.device().type == DeviceType::Meta);
  CHECK(meta.dtype() == ScalarType::Double);
  CHECK((!meta.has_storage() || meta.storage().data() == nullptr));
  auto zeros = Dispatcher::singleton().findSchemaOrThrow("dk::zeros", "");
  CHECK(zeros.dumpComputedTable().find("BackendSelect: ") != std::string::npos);
}

TEST_CASE("generated: factories take TensorOptions as in PyTorch's C++ API") {
  Tensor t = dk::empty({2, 3}, dk::TensorOptions().dtype(dk::kDouble).device(dk::kCPU));
  CHECK(t.dtype() == ScalarType::Double);
  Tensor z = dk::zeros({2}, dk::kLong);  // the generated overload, no ambiguity
  CHECK(z.dtype() == ScalarType::Long);
  Tensor m = dk::ones({4, 5}, TensorOptions().device(DeviceType::Meta));
  CHECK(m.device().type == DeviceType::Meta);
  CHECK(dk::full({2}, 7, TensorOptions().dtype(kInt)).data_ptr<int32_t>()[1] == 7);
  CHECK(dk::arange(0, 6, 2, TensorOptions().dtype(kLong)).sizes() == std::vector<int64_t>{3});
}

namespace {
// Stand-ins for generated operator structs (what GeneratedOperatorHandle reads of one).
struct LateOp {
  using signature = int64_t(const Tensor&);
  static constexpr const char* name = "t_gen_late::f";
  static constexpr const char* overload_name = "";
};
struct LateOpWrongSignature {
  using signature = int64_t(const Tensor&, int64_t);
  static constexpr const char* name = "t_gen_late::f";
  static constexpr const char* overload_name = "";
};
struct ObservedOp {
  using signature = int64_t(const Tensor&);
  static constexpr const char* name = "t_gen_late::f";
  static constexpr const char* overload_name = "";
};
struct UntouchedOp {
  using signature = int64_t(const Tensor&);
  static constexpr const char* name = "t_gen_late::g";
  static constexpr const char* overload_name = "";
};
}  // namespace

TEST_CASE("generated: an operator's handle is found on its first call, after its def; until then calls fail") {
  Tensor a = dk::tensor({1.0, 2.0});
  using Late = detail::GeneratedOperatorHandle<LateOp>;
  CHECK_THROWS_WITH(Late::call(a), Catch::Contains("Could not find schema for t_gen_late::f"));
  CHECK_THROWS_WITH(Late::redispatch(DispatchKeySet(DispatchKey::CPU), a), Catch::Contains("t_gen_late::f"));
  Library def(Library::DEF, "t_gen_late");
  def.def("f(Tensor a) -> int");
  def.impl("f", DispatchKey::CPU, [](const Tensor& x) -> int64_t { return x.numel() + 40; });
  def.def("g(Tensor a) -> int");
  def.impl("g", DispatchKey::CPU, [](const Tensor& x) -> int64_t { return x.numel() + 50; });
  CHECK(Late::call(a) == 42);
  CHECK(Late::redispatch(DispatchKeySet(DispatchKey::CPU), a) == 42);
  CHECK(&Late::handle().entry() == &Dispatcher::singleton().findSchemaOrThrow("t_gen_late::f", "").entry());
  // A struct whose signature is not the operator's is refused on every call, not only the first.
  using Wrong = detail::GeneratedOperatorHandle<LateOpWrongSignature>;
  CHECK_THROWS(Wrong::call(a, 1));
  CHECK_THROWS(Wrong::call(a, 1));
  // Turning the slow path on and off for every operator leaves a handle that was never
  // called unresolved, so its first call still finds its operator.
  Dispatcher::singleton().setSlowPathEnabled(true);
  Dispatcher::singleton().setSlowPathEnabled(false);
  CHECK(detail::unresolved_operator_entry.slowPathEnabled());
  CHECK(detail::GeneratedOperatorHandle<UntouchedOp>::call(a) == 52);
}

TEST_CASE("generated: a resolved handle's calls take the slow path while it is on (observers see them)") {
  Tensor a = dk::tensor({1.0, 2.0});
  Library def(Library::DEF, "t_gen_late");
  def.def("f(Tensor a) -> int");
  def.impl("f", DispatchKey::CPU, [](const Tensor& x) -> int64_t { return x.numel() + 40; });
  using Late = detail::GeneratedOperatorHandle<ObservedOp>;
  CHECK(Late::call(a) == 42);
  std::vector<std::string> seen;
  Observer observer;
  observer.on_enter = [&](const ObservedCall& c) { seen.push_back(c.op.operator_name().toString()); };
  {
    ScopedObserver scoped(observer);
    CHECK(Late::call(a) == 42);
    CHECK(Late::redispatch(DispatchKeySet(DispatchKey::CPU), a) == 42);
  }
  CHECK(Late::call(a) == 42);
  CHECK(seen == std::vector<std::string>{"t_gen_late::f", "t_gen_late::f"});
}
