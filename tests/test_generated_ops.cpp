// The generated operators (schemas/native_functions.yaml -> generated code): registrations,
// dispatch-argument bitmaps, typed signatures, and boxed adapters.
#include <catch2/catch.hpp>

#include "dk/dispatch.h"
#include "dk/generated/Functions.h"
#include "dk/generated/Operators.h"

using namespace dk;

TEST_CASE("generated: every operator is registered with the schema its struct carries") {
  size_t n = 0;
  for (const ops::OperatorInfo& info : ops::all_operators()) {
    auto op = Dispatcher::singleton().findSchema(OperatorName{info.name, info.overload_name});
    REQUIRE(op.has_value());
    // The struct's schema string is the registered schema, minus the namespace.
    FunctionSchema parsed = parseSchema(info.schema_str);
    CHECK(op->schema().arguments() == parsed.arguments());
    CHECK(op->schema().returns() == parsed.returns());
    ++n;
  }
  CHECK(n == 88);
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
