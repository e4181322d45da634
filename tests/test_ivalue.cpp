// Boxed values: every kind, checked accessors, ownership, and the Stack helpers.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>

#include "dk/dispatch/ivalue.h"
#include "dk/util/error.h"

using namespace dk;

TEST_CASE("ivalue: an IValue is 16 bytes") { STATIC_REQUIRE(sizeof(IValue) == 16); }

TEST_CASE("ivalue: scalar kinds hold their values") {
  CHECK(IValue().isNone());
  CHECK(IValue(std::nullopt).isNone());
  CHECK(IValue(int64_t{-7}).toInt() == -7);
  CHECK(IValue(7).isInt());
  CHECK(IValue(2.5).toDouble() == 2.5);
  CHECK(IValue(true).toBool());
  CHECK_FALSE(IValue(false).toBool());
  CHECK(IValue("hello").toStringRef() == "hello");
  CHECK(IValue(std::string("abc")).toStringValue() == "abc");
  CHECK(IValue(Device("cuda:1")).toDevice() == Device(DeviceType::CUDA, 1));
  CHECK(IValue(Device(DeviceType::Meta)).toDevice().index == -1);
  CHECK(IValue(ScalarType::BFloat16).toScalarType() == ScalarType::BFloat16);
  CHECK(IValue(Layout::Sparse).toLayout() == Layout::Sparse);
  CHECK(IValue(MemoryFormat::ChannelsLast).toMemoryFormat() == MemoryFormat::ChannelsLast);
  CHECK(IValue(std::optional<int64_t>(3)).toInt() == 3);
  CHECK(IValue(std::optional<int64_t>()).isNone());
  CHECK(IValue(1).isScalar());
  CHECK(IValue(1.0).isScalar());
  CHECK(IValue(true).isScalar());
  CHECK_FALSE(IValue("x").isScalar());
}

TEST_CASE("ivalue: asking for the wrong kind is a dk::Error naming both kinds") {
  Tensor t = make_tensor({2});
  CHECK_THROWS_WITH(IValue(t).toInt(), "expected an IValue of kind Int but got Tensor");
  CHECK_THROWS_WITH(IValue(3).toTensor(), "expected an IValue of kind Tensor but got Int");
  CHECK_THROWS_WITH(IValue().toDouble(), "expected an IValue of kind Double but got None");
  CHECK_THROWS_WITH(IValue(1.0).toStringRef(), "expected an IValue of kind String but got Double");
  CHECK_THROWS_WITH(IValue(1).toListElements(), "expected an IValue of kind GenericList but got Int");
  CHECK_THROWS_AS(IValue(true).toDevice(), Error);
}

TEST_CASE("ivalue: tensors are shared, not copied, and released when the last holder goes") {
  Tensor t = make_tensor({3, 4});
  CHECK(t.use_count() == 1);
  {
    IValue v(t);
    CHECK(t.use_count() == 2);
    IValue copy = v;
    CHECK(t.use_count() == 3);
    CHECK(copy.toTensor().is_same(t));
    IValue moved = std::move(copy);
    CHECK(t.use_count() == 3);
    Tensor out = std::move(moved).toTensor();
    CHECK(t.use_count() == 3);
    CHECK(out.sizes() == std::vector<int64_t>{3, 4});
  }
  CHECK(t.use_count() == 1);
  IValue undefined{Tensor()};
  CHECK(undefined.isTensor());
  CHECK_FALSE(undefined.toTensor().defined());
}

TEST_CASE("ivalue: lists carry an element type and check it") {
  IValue ints = IValue::makeList(Type::base(TypeKind::Int), {IValue(1), IValue(2)});
  CHECK(ints.isList());
  CHECK(ints.listElementType() == Type::base(TypeKind::Int));
  CHECK(ints.toListElements().size() == 2);
  CHECK(ints.matchesType(Type::list(Type::base(TypeKind::Int))));
  CHECK(ints.matchesType(Type::list(Type::base(TypeKind::Int), 2)));
  CHECK_FALSE(ints.matchesType(Type::list(Type::base(TypeKind::Int), 3)));
  CHECK_FALSE(ints.matchesType(Type::list(Type::base(TypeKind::Float))));
  CHECK_THROWS_WITH(IValue::makeList(Type::base(TypeKind::Int), {IValue(1), IValue(2.0)}),
                    "cannot make a list of int: element 1 is of kind Double");
  IValue opt_tensors =
      IValue::makeList(Type::optional(Type::base(TypeKind::Tensor)), {IValue(make_tensor({1})), IValue()});
  CHECK(opt_tensors.matchesType(Type::list(Type::optional(Type::base(TypeKind::Tensor)))));
  IValue copy = ints;
  CHECK(copy == ints);
  CHECK_FALSE(copy == IValue::makeList(Type::base(TypeKind::Int), {IValue(1)}));
}

TEST_CASE("ivalue: tuples and printing") {
  IValue tup = IValue::makeTuple({IValue(1), IValue("a"), IValue()});
  CHECK(tup.isTuple());
  CHECK(tup.toTupleElements().size() == 3);
  std::ostringstream out;
  out << tup << " " << IValue::makeList(Type::base(TypeKind::Float), {IValue(1.5)}) << " " << IValue(true);
  CHECK(out.str() == "(1, \"a\", None) [1.5] True");
}

namespace {
struct Counter : CustomObject {
  std::string typeName() const override { return "Counter"; }
  int value = 0;
};
}  // namespace

TEST_CASE("ivalue: opaque objects") {
  auto obj = make_intrusive<Counter>();
  obj->value = 5;
  IValue v{intrusive_ptr<CustomObject>(obj)};
  CHECK(v.isObject());
  CHECK(static_cast<Counter*>(v.toObject().get())->value == 5);
  CHECK(obj->use_count() == 2);
  CHECK(v.matchesType(Type::base(TypeKind::Generator)));
}

TEST_CASE("ivalue: stack helpers push left to right and pop from the top") {
  Stack stack;
  push(stack, 1, 2.0, "three");
  CHECK(stack.size() == 3);
  CHECK(peek(stack, 0, 3).toInt() == 1);
  CHECK(peek(stack, 2, 3).toStringRef() == "three");
  CHECK(pop(stack).toStringRef() == "three");
  auto rest = pop(stack, 2);
  CHECK(rest[0].toInt() == 1);
  CHECK(rest[1].toDouble() == 2.0);
  CHECK(stack.empty());
  CHECK_THROWS_WITH(pop(stack), "cannot pop from an empty stack");
  push(stack, true);
  CHECK_THROWS_WITH(peek(stack, 1, 2), "cannot peek at value 1 of the top 2 of a stack of 1");
  drop(stack, 1);
  CHECK(stack.empty());
}

// Found by the boxed-calls fuzz target (tools/fuzz): a double int64 cannot hold is an error,
// not an undefined cast.
TEST_CASE("ivalue: Scalar::toLong refuses doubles outside int64") {
  CHECK(Scalar(-2.5).toLong() == -2);
  CHECK(Scalar(9.2e18).toLong() == int64_t{9200000000000000000});
  CHECK_THROWS_WITH(Scalar(1e300).toLong(), Catch::Contains("value cannot be converted to type int64_t without overflow"));
  CHECK_THROWS_AS(Scalar(std::nan("")).toLong(), Error);
  CHECK_THROWS_AS(Scalar(9.3e18).to<int32_t>(), Error);
}

TEST_CASE("ivalue: deeply nested lists print with a depth limit and are destroyed without recursion") {
  // Note [Deep IValue nesting]: a million nested destructor calls, or printing 100,000 levels,
  // would overflow the stack.
  auto nest = [](int depth) {
    IValue v = IValue::makeList(Type::base(TypeKind::Int), {IValue(1)});
    for (int i = 0; i < depth; ++i) v = IValue::makeList(Type::base(TypeKind::Any), {std::move(v)});
    return v;
  };
  {
    IValue deep = nest(100000);
    std::ostringstream out;
    out << deep;
    const std::string text = out.str();
    CHECK(text.rfind(std::string(65, '[') + "...]", 0) == 0);  // depths 0-64, then elided
    CHECK(text.size() == 65 + 3 + 65);
  }
  { IValue deeper = nest(1000000); }  // destroyed here
  std::ostringstream shallow;
  shallow << nest(2) << " " << IValue::makeTuple({IValue(1), IValue::makeTuple({IValue(2)})});
  CHECK(shallow.str() == "[[[1]]] (1, (2,))");
  // A nested list someone else still holds survives its parent.
  IValue inner = nest(3);
  { IValue outer = IValue::makeList(Type::base(TypeKind::Any), {inner}); }
  std::ostringstream kept;
  kept << inner;
  CHECK(kept.str() == "[[[[1]]]]");
}
