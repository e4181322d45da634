// Tests for dk/dispatch/function_schema.h: the type model, the parser and the printer. The round trip of
// every schema in PyTorch 1.13.1's native_functions.yaml is in test_function_schema_pytorch.cpp.
#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "dk/dispatch/function_schema.h"
#include "dk/util/error.h"

using dk::AliasInfo;
using dk::Argument;
using dk::FunctionSchema;
using dk::OperatorName;
using dk::Type;
using dk::TypeKind;

namespace {

// The message of the dk::Error that parsing `text` throws ("" if it does not throw).
std::string schemaError(std::string_view text) {
  try {
    (void)dk::parseSchema(text);
  } catch (const dk::Error& e) {
    return e.what();
  }
  return "";
}

std::string nameError(std::string_view text) {
  try {
    (void)dk::parseOperatorName(text);
  } catch (const dk::Error& e) {
    return e.what();
  }
  return "";
}

Type T(TypeKind k) { return Type::base(k); }

const Argument& arg(const FunctionSchema& s, size_t i) { return s.arguments().at(i); }

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("schema: operator names parse, print and order") {
  OperatorName n = dk::parseOperatorName("aten::add.Tensor");
  CHECK(n.name == "aten::add");
  CHECK(n.overload_name == "Tensor");
  CHECK(n.toString() == "aten::add.Tensor");

  OperatorName plain = dk::parseOperatorName("add");
  CHECK(plain.name == "add");
  CHECK(plain.overload_name.empty());
  CHECK(plain.toString() == "add");

  OperatorName ns_only = dk::parseOperatorName("aten::__and__");
  CHECK(ns_only.name == "aten::__and__");
  CHECK(ns_only.overload_name.empty());

  OperatorName under = dk::parseOperatorName("_foreach_add_.Scalar_out");
  CHECK(under.name == "_foreach_add_");
  CHECK(under.overload_name == "Scalar_out");

  CHECK(dk::parseOperatorName("  aten::mul.out  ") == OperatorName{"aten::mul", "out"});

  std::ostringstream os;
  os << n << "|" << plain;
  CHECK(os.str() == "aten::add.Tensor|add");

  // Ordering: by name, then overload name.
  std::set<OperatorName> sorted = {{"aten::mul", ""}, {"aten::add", "Tensor"}, {"aten::add", ""}};
  std::vector<std::string> order;
  for (const auto& o : sorted) order.push_back(o.toString());
  CHECK(order == std::vector<std::string>{"aten::add", "aten::add.Tensor", "aten::mul"});
  CHECK(OperatorName{"a", "x"} != OperatorName{"a", "y"});

  std::unordered_set<OperatorName> hashed = {
      {"aten::add", "Tensor"}, {"aten::add", "Tensor"}, {"aten::add", ""}};
  CHECK(hashed.size() == 2);
}

TEST_CASE("schema: operator name errors") {
  CHECK(nameError("") ==
        "schema parse error at column 1: expected operator name but found end of input\n"
        "  \n"
        "  ^");
  CHECK(nameError("aten::") ==
        "schema parse error at column 7: expected operator name after '::' but found end of input\n"
        "  aten::\n"
        "        ^");
  CHECK(nameError("aten::add.") ==
        "schema parse error at column 11: expected overload name but found end of input\n"
        "  aten::add.\n"
        "            ^");
  CHECK(nameError("aten::add.Tensor(Tensor x) -> Tensor") ==
        "schema parse error at column 17: expected end of input but found '('\n"
        "  aten::add.Tensor(Tensor x) -> Tensor\n"
        "                  ^");
  CHECK(nameError("1abc") ==
        "schema parse error at column 1: expected operator name but found '1abc'\n"
        "  1abc\n"
        "  ^");
}

TEST_CASE("schema: parseSchemaOrName tells names from schemas") {
  auto a = dk::parseSchemaOrName("aten::foo.bar");
  REQUIRE(std::holds_alternative<OperatorName>(a));
  CHECK(std::get<OperatorName>(a) == OperatorName{"aten::foo", "bar"});

  auto b = dk::parseSchemaOrName("aten::foo.bar(Tensor self) -> Tensor");
  REQUIRE(std::holds_alternative<FunctionSchema>(b));
  const auto& s = std::get<FunctionSchema>(b);
  CHECK(s.operator_name() == OperatorName{"aten::foo", "bar"});
  CHECK(s.arguments().size() == 1);

  auto c = dk::parseSchemaOrName("foo");
  REQUIRE(std::holds_alternative<OperatorName>(c));
  CHECK(std::get<OperatorName>(c).name == "foo");

  CHECK_THROWS_AS(dk::parseSchemaOrName("foo bar"), dk::Error);
  CHECK_THROWS_AS(dk::parseSchemaOrName("foo(Tensor x)"), dk::Error);
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("schema: every base type name") {
  const std::vector<std::pair<std::string, TypeKind>> names = {
      {"Tensor", TypeKind::Tensor},
      {"int", TypeKind::Int},
      {"SymInt", TypeKind::SymInt},
      {"float", TypeKind::Float},
      {"bool", TypeKind::Bool},
      {"str", TypeKind::Str},
      {"Scalar", TypeKind::Scalar},
      {"ScalarType", TypeKind::ScalarType},
      {"Layout", TypeKind::Layout},
      {"Device", TypeKind::Device},
      {"MemoryFormat", TypeKind::MemoryFormat},
      {"Generator", TypeKind::Generator},
      {"Dimname", TypeKind::Dimname},
      {"Storage", TypeKind::Storage},
      {"Stream", TypeKind::Stream},
      {"QScheme", TypeKind::QScheme},
      {"complex", TypeKind::Complex},
      {"Any", TypeKind::Any}};
  for (const auto& [name, kind] : names) {
    INFO(name);
    Type t = dk::parseType(name);
    CHECK(t.kind() == kind);
    CHECK(t.isBase());
    CHECK(t.str() == name);
    CHECK(dk::typeKindName(kind) == name);
    CHECK(dk::typeKindFromName(name) == kind);
    // Also as an argument type inside a schema.
    FunctionSchema s = dk::parseSchema("f(" + name + " x) -> ()");
    CHECK(arg(s, 0).type == T(kind));
  }
  CHECK(dk::typeKindName(TypeKind::Optional) == "Optional");
  CHECK(dk::typeKindName(TypeKind::List) == "List");
  CHECK_FALSE(dk::typeKindFromName("Tensr").has_value());
  CHECK_FALSE(dk::typeKindFromName("Optional").has_value());
  CHECK(Type() == T(TypeKind::Tensor));
  CHECK_THROWS_AS(Type::base(TypeKind::List), dk::Error);
  CHECK_THROWS_AS(Type::base(TypeKind::Optional), dk::Error);
}

TEST_CASE("schema: optional, list and fixed-size list types") {
  Type opt = dk::parseType("int?");
  CHECK(opt.kind() == TypeKind::Optional);
  CHECK(opt.element() == T(TypeKind::Int));
  CHECK_FALSE(opt.fixedSize().has_value());
  CHECK(opt.str() == "int?");

  Type l = dk::parseType("int[]");
  CHECK(l.kind() == TypeKind::List);
  CHECK(l.element().kind() == TypeKind::Int);
  CHECK_FALSE(l.fixedSize().has_value());

  Type fixed = dk::parseType("int[2]");
  CHECK(fixed.kind() == TypeKind::List);
  CHECK(fixed.fixedSize() == 2);
  CHECK(fixed.str() == "int[2]");
  CHECK(fixed == Type::list(T(TypeKind::Int), 2));

  Type opt_tensor_list = dk::parseType("Tensor?[]");
  CHECK(opt_tensor_list.kind() == TypeKind::List);
  CHECK(opt_tensor_list.element().kind() == TypeKind::Optional);
  CHECK(opt_tensor_list.element().element().kind() == TypeKind::Tensor);
  CHECK(opt_tensor_list == Type::list(Type::optional(T(TypeKind::Tensor))));

  Type opt_list = dk::parseType("int[]?");
  CHECK(opt_list == Type::optional(Type::list(T(TypeKind::Int))));
  CHECK(opt_list.str() == "int[]?");

  Type dimnames = dk::parseType("Dimname[1]?");
  CHECK(dimnames.kind() == TypeKind::Optional);
  CHECK(dimnames.element().fixedSize() == 1);
  CHECK(dimnames.element().element().kind() == TypeKind::Dimname);
  CHECK(dimnames.str() == "Dimname[1]?");

  CHECK(dk::parseType("SymInt[1]").str() == "SymInt[1]");
  CHECK(dk::parseType("bool[3]").str() == "bool[3]");
  CHECK(dk::parseType("SymInt[]").str() == "SymInt[]");
  CHECK(dk::parseType("float[]?").str() == "float[]?");
  CHECK(dk::parseType("int[][]").str() == "int[][]");
  CHECK(dk::parseType(" int [ 2 ] ? ").str() == "int[2]?");

  CHECK(Type::list(T(TypeKind::Int), 0).str() == "int[0]");
  CHECK_THROWS_AS(Type::list(T(TypeKind::Int), -1), dk::Error);
  CHECK_THROWS_WITH(T(TypeKind::Int).element(), "type int has no element type");

  // Copies share structure and compare equal.
  Type copy = opt_tensor_list;
  CHECK(copy == opt_tensor_list);
  CHECK(&copy.element() == &opt_tensor_list.element());

  std::ostringstream os;
  os << dimnames;
  CHECK(os.str() == "Dimname[1]?");
}

TEST_CASE("schema: type equality is structural") {
  CHECK(dk::parseType("int[2]") == dk::parseType("int[2]"));
  CHECK(dk::parseType("int[2]") != dk::parseType("int[3]"));
  CHECK(dk::parseType("int[2]") != dk::parseType("int[]"));
  CHECK(dk::parseType("int?") != dk::parseType("int"));
  CHECK(dk::parseType("int?") != dk::parseType("float?"));
  CHECK(dk::parseType("Tensor?[]") != dk::parseType("Tensor[]?"));
  CHECK(dk::parseType("int[]?") != dk::parseType("int[]"));
}

TEST_CASE("schema: equalsIgnoringSize") {
  CHECK(dk::parseType("int[2]").equalsIgnoringSize(dk::parseType("int[]")));
  CHECK(dk::parseType("int[]").equalsIgnoringSize(dk::parseType("int[3]")));
  CHECK(dk::parseType("int[1]?").equalsIgnoringSize(dk::parseType("int[]?")));
  CHECK(dk::parseType("SymInt[2]").equalsIgnoringSize(dk::parseType("SymInt[]")));
  CHECK(dk::parseType("int[2][3]").equalsIgnoringSize(dk::parseType("int[][]")));
  CHECK(dk::parseType("Tensor").equalsIgnoringSize(dk::parseType("Tensor")));
  CHECK_FALSE(dk::parseType("int[2]").equalsIgnoringSize(dk::parseType("SymInt[2]")));
  CHECK_FALSE(dk::parseType("int[2]").equalsIgnoringSize(dk::parseType("int[2]?")));
  CHECK_FALSE(dk::parseType("int[2]").equalsIgnoringSize(dk::parseType("int")));
  CHECK_FALSE(dk::parseType("bool[3]").equalsIgnoringSize(dk::parseType("int[]")));
}

TEST_CASE("schema: isTensorLike") {
  for (const char* yes : {"Tensor", "Tensor?", "Tensor[]", "Tensor?[]", "Tensor[2]"}) {
    INFO(yes);
    CHECK(dk::parseType(yes).isTensorLike());
  }
  for (const char* no : {"int", "Scalar", "Tensor[]?", "Tensor??", "Tensor[][]", "Scalar[]", "int?",
                         "Storage", "Dimname[]", "Tensor?[]?"}) {
    INFO(no);
    CHECK_FALSE(dk::parseType(no).isTensorLike());
  }
  // Alias annotations do not change the type.
  FunctionSchema s = dk::parseSchema("f(Tensor(a!)[] self, Tensor(b) other) -> ()");
  CHECK(arg(s, 0).type.isTensorLike());
  CHECK(arg(s, 0).type == dk::parseType("Tensor[]"));
  CHECK(arg(s, 1).type.isTensorLike());
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("schema: alias annotations") {
  SECTION("read-only alias") {
    FunctionSchema s = dk::parseSchema("view(Tensor(a) self, int[] size) -> Tensor(a)");
    REQUIRE(arg(s, 0).alias_info.has_value());
    const AliasInfo& ai = *arg(s, 0).alias_info;
    CHECK(ai.before_set == std::vector<std::string>{"a"});
    CHECK(ai.after_set.empty());
    CHECK_FALSE(ai.is_write);
    CHECK_FALSE(ai.on_element);
    CHECK(ai.str() == "(a)");
    CHECK_FALSE(arg(s, 1).alias_info.has_value());
    REQUIRE(s.returns().at(0).alias_info.has_value());
    CHECK(s.returns()[0].alias_info->before_set == std::vector<std::string>{"a"});
    CHECK_FALSE(s.is_mutable());
  }
  SECTION("write alias") {
    FunctionSchema s = dk::parseSchema(
        "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
    const AliasInfo& ai = *arg(s, 0).alias_info;
    CHECK(ai.before_set == std::vector<std::string>{"a"});
    CHECK(ai.is_write);
    CHECK(ai.str() == "(a!)");
    CHECK(s.is_mutable());
    CHECK_FALSE(arg(s, 0).is_out());  // positional
    CHECK(s.returns()[0].alias_info->is_write);
  }
  SECTION("wildcard after set") {
    FunctionSchema s =
        dk::parseSchema("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]");
    const AliasInfo& ai = *arg(s, 0).alias_info;
    CHECK(ai.before_set == std::vector<std::string>{"a"});
    CHECK(ai.after_set == std::vector<std::string>{"*"});
    CHECK_FALSE(ai.is_write);
    CHECK(ai.str() == "(a -> *)");
    const Argument& ret = s.returns().at(0);
    CHECK(ret.type == dk::parseType("Tensor[]"));
    REQUIRE(ret.alias_info.has_value());
    CHECK(ret.alias_info->on_element);
    CHECK(ret.alias_info->before_set == std::vector<std::string>{"a"});
    CHECK(ret.str() == "Tensor(a)[]");
    CHECK(s.str() == "chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]");
  }
  SECTION("alias on list elements, and after the whole list") {
    FunctionSchema s = dk::parseSchema("_foreach_zero_(Tensor(a!)[] self) -> ()");
    CHECK(arg(s, 0).type == dk::parseType("Tensor[]"));
    CHECK(arg(s, 0).alias_info->is_write);
    CHECK(arg(s, 0).alias_info->on_element);
    CHECK(arg(s, 0).str() == "Tensor(a!)[] self");

    FunctionSchema t = dk::parseSchema("f(Tensor[](a!) self) -> ()");
    CHECK(arg(t, 0).type == dk::parseType("Tensor[]"));
    CHECK_FALSE(arg(t, 0).alias_info->on_element);
    CHECK(t.str() == "f(Tensor[](a!) self) -> ()");
    CHECK(arg(s, 0) != arg(t, 0));

    FunctionSchema u = dk::parseSchema("f(Tensor(a)? x, Tensor(b)?[2] y) -> ()");
    CHECK(arg(u, 0).type == dk::parseType("Tensor?"));
    CHECK(u.str() == "f(Tensor(a)? x, Tensor(b)?[2] y) -> ()");
  }
  SECTION("alias sets and arrows with writes") {
    FunctionSchema s = dk::parseSchema("f(Tensor(b|c) x, Tensor(a! -> a|b) y, Tensor(*) z) -> ()");
    CHECK(arg(s, 0).alias_info->before_set == std::vector<std::string>{"b", "c"});
    CHECK(arg(s, 1).alias_info->is_write);
    CHECK(arg(s, 1).alias_info->after_set == std::vector<std::string>{"a", "b"});
    CHECK(arg(s, 2).alias_info->before_set == std::vector<std::string>{"*"});
    CHECK(s.str() == "f(Tensor(b|c) x, Tensor(a! -> a|b) y, Tensor(*) z) -> ()");
    // Spacing inside annotations is free and printed canonically.
    CHECK(dk::parseSchema("f(Tensor( a ->* ) x, Tensor( b | c ! ) y) -> ()").str() ==
          "f(Tensor(a -> *) x, Tensor(b|c!) y) -> ()");
  }
  SECTION("alias annotations on non-tensor types are kept") {
    FunctionSchema s = dk::parseSchema("f(int(a) x) -> int(a)");
    CHECK(arg(s, 0).alias_info.has_value());
    CHECK(s.str() == "f(int(a) x) -> int(a)");
  }
}

TEST_CASE("schema: default values keep their text") {
  FunctionSchema s = dk::parseSchema(
      "f(int a=1, int b=-1, float c=1e-05, float d=0.5, str e=\"mean\", str f='none', "
      "int[] g=[0,1], int[] h=[], bool i=True, bool j=False, Tensor? k=None, "
      "MemoryFormat l=contiguous_format, int m=Mean, ScalarType n=long, float o=-inf, "
      "int[2] p=1, float q=0.3333333333333333, int[] r=[-2,-1], float s=1.0, float t=1E+10) -> ()");
  const std::vector<std::string> want = {"1",
                                         "-1",
                                         "1e-05",
                                         "0.5",
                                         "\"mean\"",
                                         "'none'",
                                         "[0,1]",
                                         "[]",
                                         "True",
                                         "False",
                                         "None",
                                         "contiguous_format",
                                         "Mean",
                                         "long",
                                         "-inf",
                                         "1",
                                         "0.3333333333333333",
                                         "[-2,-1]",
                                         "1.0",
                                         "1E+10"};
  REQUIRE(s.arguments().size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(i);
    REQUIRE(arg(s, i).default_value.has_value());
    CHECK(*arg(s, i).default_value == want[i]);
  }
  CHECK(s.str().find("float o=-inf, int[2] p=1,") != std::string::npos);

  SECTION("strings with escapes and the other quote inside") {
    std::string text =
        R"(_test_string_default(Tensor dummy, str a="\"'\\", str b='"\'\\') -> Tensor)";
    FunctionSchema t = dk::parseSchema(text);
    CHECK(*arg(t, 1).default_value == R"("\"'\\")");
    CHECK(*arg(t, 2).default_value == R"('"\'\\')");
    CHECK(t.str() == text);
  }
  SECTION("spaced lists keep their spacing; nested lists and strings in lists") {
    FunctionSchema t =
        dk::parseSchema("f(int[] a=[ 0, 1 ], str[] b=[\"x,]\", 'y'], int[][] c=[[1],[]]) -> ()");
    CHECK(*arg(t, 0).default_value == "[ 0, 1 ]");
    CHECK(*arg(t, 1).default_value == "[\"x,]\", 'y']");
    CHECK(*arg(t, 2).default_value == "[[1],[]]");
  }
  SECTION("spacing around '=' is dropped") {
    CHECK(dk::parseSchema("f(int a = 1) -> ()").str() == "f(int a=1) -> ()");
  }
  SECTION("no default") {
    CHECK_FALSE(dk::parseSchema("f(int a) -> ()").arguments()[0].default_value.has_value());
  }
}

TEST_CASE("schema: keyword-only arguments and is_out") {
  FunctionSchema s = dk::parseSchema(
      "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) "
      "-> (Tensor(a!) values, Tensor(b!) indices)");
  REQUIRE(s.arguments().size() == 5);
  CHECK_FALSE(arg(s, 0).kwarg_only);
  CHECK_FALSE(arg(s, 2).kwarg_only);
  CHECK(arg(s, 3).kwarg_only);
  CHECK(arg(s, 4).kwarg_only);
  CHECK_FALSE(arg(s, 0).is_out());
  CHECK(arg(s, 3).is_out());
  CHECK(arg(s, 4).is_out());
  CHECK(arg(s, 4).alias_info->before_set == std::vector<std::string>{"b"});
  CHECK(s.is_mutable());

  // Keyword-only but not written: not an out argument.
  FunctionSchema g = dk::parseSchema("gelu(Tensor self, *, str approximate='none') -> Tensor");
  CHECK(arg(g, 1).kwarg_only);
  CHECK_FALSE(arg(g, 1).is_out());
  CHECK_FALSE(g.is_mutable());

  // Keyword-only with a read alias: not an out argument.
  FunctionSchema r = dk::parseSchema("f(*, Tensor(a) x) -> ()");
  CHECK(arg(r, 0).kwarg_only);
  CHECK_FALSE(arg(r, 0).is_out());
  CHECK(r.str() == "f(*, Tensor(a) x) -> ()");

  // Lists of outs.
  FunctionSchema l = dk::parseSchema("f.out(Tensor[] self, *, Tensor(a!)[] out) -> ()");
  CHECK(arg(l, 1).is_out());
}

TEST_CASE("schema: return forms") {
  SECTION("single unnamed") {
    FunctionSchema s = dk::parseSchema("f(Tensor self) -> Tensor");
    REQUIRE(s.returns().size() == 1);
    CHECK(s.returns()[0].name.empty());
    CHECK(s.returns()[0].type == T(TypeKind::Tensor));
    CHECK(s.str() == "f(Tensor self) -> Tensor");
  }
  SECTION("none") {
    FunctionSchema s = dk::parseSchema("f(Tensor self) -> ()");
    CHECK(s.returns().empty());
    CHECK(s.str() == "f(Tensor self) -> ()");
  }
  SECTION("tuple") {
    FunctionSchema s = dk::parseSchema("f(Tensor self) -> (Tensor, Tensor, Tensor[])");
    REQUIRE(s.returns().size() == 3);
    CHECK(s.returns()[2].type == dk::parseType("Tensor[]"));
    CHECK(s.str() == "f(Tensor self) -> (Tensor, Tensor, Tensor[])");
  }
  SECTION("named tuple") {
    FunctionSchema s = dk::parseSchema("f(Tensor self) -> (Tensor values, Tensor indices)");
    CHECK(s.returns()[0].name == "values");
    CHECK(s.returns()[1].name == "indices");
    CHECK(s.str() == "f(Tensor self) -> (Tensor values, Tensor indices)");
  }
  SECTION("aliased and named outs") {
    std::string text =
        "f.out(Tensor self, *, Tensor(a!) out, Tensor(b!) out2) -> (Tensor(a!) out, Tensor(b!) out2)";
    FunctionSchema s = dk::parseSchema(text);
    CHECK(s.returns()[1].alias_info->before_set == std::vector<std::string>{"b"});
    CHECK(s.returns()[1].alias_info->is_write);
    CHECK(s.returns()[1].name == "out2");
    CHECK(s.str() == text);
  }
  SECTION("aliased single return and list return") {
    CHECK(dk::parseSchema("f(Tensor(a!) self) -> Tensor(a!)").str() ==
          "f(Tensor(a!) self) -> Tensor(a!)");
    CHECK(dk::parseSchema("f(Tensor self) -> Tensor[]").str() == "f(Tensor self) -> Tensor[]");
  }
  SECTION("a lone named return prints bare") {
    std::string text = "cudnn_grid_sampler(Tensor self, Tensor grid) -> Tensor output";
    FunctionSchema s = dk::parseSchema(text);
    REQUIRE(s.returns().size() == 1);
    CHECK(s.returns()[0].name == "output");
    CHECK(s.str() == text);
  }
  SECTION("a parenthesised lone return prints bare") {
    CHECK(dk::parseSchema("f(Tensor self) -> (Tensor)").str() == "f(Tensor self) -> Tensor");
    CHECK(dk::parseSchema("f(Tensor self) -> (Tensor(a) out)").str() ==
          "f(Tensor self) -> Tensor(a) out");
  }
}

TEST_CASE("schema: varargs and varret") {
  FunctionSchema a = dk::parseSchema("prim::Print(...) -> ()");
  CHECK(a.is_vararg());
  CHECK_FALSE(a.is_varret());
  CHECK(a.arguments().empty());
  CHECK(a.str() == "prim::Print(...) -> ()");

  FunctionSchema b = dk::parseSchema("f(Tensor x, ...) -> (Tensor, ...)");
  CHECK(b.is_vararg());
  CHECK(b.is_varret());
  CHECK(b.arguments().size() == 1);
  CHECK(b.returns().size() == 1);
  CHECK(b.str() == "f(Tensor x, ...) -> (Tensor, ...)");

  FunctionSchema c = dk::parseSchema("f(...) -> ...");
  CHECK(c.is_varret());
  CHECK(c.returns().empty());
  CHECK(c.str() == "f(...) -> ...");

  FunctionSchema d = dk::parseSchema("f() -> (...)");
  CHECK(d.is_varret());
  CHECK(d.str() == "f() -> ...");

  FunctionSchema e = dk::parseSchema("f() -> ()");
  CHECK_FALSE(e.is_vararg());
  CHECK_FALSE(e.is_varret());
  CHECK(e.arguments().empty());
}

TEST_CASE("schema: whitespace is free and printed canonically") {
  FunctionSchema s = dk::parseSchema(
      "  aten::foo.bar ( Tensor ( a! ) self ,int [ 2 ]  k=1 , * ,Tensor ? x = None )->( Tensor a , int b )  ");
  CHECK(s.str() ==
        "aten::foo.bar(Tensor(a!) self, int[2] k=1, *, Tensor? x=None) -> (Tensor a, int b)");
  CHECK(s == dk::parseSchema(s.str()));
}

TEST_CASE("schema: built schemas print and compare") {
  Argument self{.name = "self", .type = T(TypeKind::Tensor)};
  Argument other{.name = "other", .type = T(TypeKind::Tensor)};
  Argument alpha{
      .name = "alpha", .type = T(TypeKind::Scalar), .default_value = "1", .kwarg_only = true};
  Argument out{.name = "out",
               .type = T(TypeKind::Tensor),
               .kwarg_only = true,
               .alias_info = AliasInfo{.before_set = {"a"}, .is_write = true}};
  Argument ret{.type = T(TypeKind::Tensor),
               .alias_info = AliasInfo{.before_set = {"a"}, .is_write = true}};
  FunctionSchema s({"aten::add", "out"}, {self, other, alpha, out}, {ret});
  std::string text =
      "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)";
  CHECK(s.str() == text);
  CHECK(s == dk::parseSchema(text));
  CHECK(s.is_mutable());
  CHECK(s.operator_name().toString() == "aten::add.out");
  CHECK(out.is_out());
  CHECK_FALSE(alpha.is_out());

  std::ostringstream os;
  os << s << "|" << out;
  CHECK(os.str() == text + "|Tensor(a!) out");

  // on_element is ignored for a type without suffixes.
  Argument elem{.name = "x",
                .type = T(TypeKind::Tensor),
                .alias_info = AliasInfo{.before_set = {"a"}, .on_element = true}};
  CHECK(elem.str() == "Tensor(a) x");
  Argument elem_list{.name = "x",
                     .type = Type::list(T(TypeKind::Tensor)),
                     .alias_info = AliasInfo{.before_set = {"a"}, .on_element = true}};
  CHECK(elem_list.str() == "Tensor(a)[] x");

  FunctionSchema v({"f", ""}, {}, {}, /*is_vararg=*/true, /*is_varret=*/true);
  CHECK(v.str() == "f(...) -> ...");
  FunctionSchema named({"f", ""}, {}, {Argument{.name = "r", .type = T(TypeKind::Int)}});
  CHECK(named.str() == "f() -> int r");
  FunctionSchema named_var({"f", ""}, {}, {Argument{.name = "r", .type = T(TypeKind::Int)}}, false,
                           true);
  CHECK(named_var.str() == "f() -> (int r, ...)");
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("schema: a default must be a value of its argument's type") {
  // Note [Default value types]; PyTorch's parser rejects each of these.
  CHECK(schemaError("f(Tensor x=3) -> ()") ==
        "schema parse error at column 12: default value 3 of argument 'x' (Tensor): a Tensor default can only be "
        "None\n"
        "  f(Tensor x=3) -> ()\n"
        "             ^");
  CHECK_THAT(schemaError("f(int[] l=[\"a\"]) -> ()"),
             Catch::StartsWith("schema parse error at column 11: default value [\"a\"] of argument 'l' (int[]): list "
                               "element: not a value of type int"));
  CHECK_THAT(schemaError("f(int n=bogus) -> ()"),
             Catch::StartsWith("schema parse error at column 9: default value bogus of argument 'n' (int): not a "
                               "value of type int"));
  CHECK_THAT(schemaError("f(int n=None) -> ()"),
             Catch::Contains("None is only a default of an optional type (write int?)"));
  CHECK_THAT(schemaError("f(bool b=1) -> ()"), Catch::Contains("not a value of type bool"));
  CHECK_THAT(schemaError("f(str s=abc) -> ()"), Catch::Contains("not a value of type str"));
  CHECK_THAT(schemaError("f(float x=\"1\") -> ()"), Catch::Contains("not a value of type float"));
  CHECK_THAT(schemaError("f(ScalarType t=bogus) -> ()"), Catch::Contains("not a value of type ScalarType"));
  CHECK_THAT(schemaError("f(int[] l=1) -> ()"), Catch::Contains("a list default must be a list literal"));
  CHECK_THAT(schemaError("f(int[2] l=[1, 2.5]) -> ()"), Catch::Contains("list element: not a value of type int"));
  // What PyTorch writes is accepted.
  for (const char* ok : {"f(Tensor? x=None, int? n=None, int[1]? d=None, float? f=None) -> ()",
                         "f(int[2] stride=1, int[1] dim=[], int[] d=[-2,-1], SymInt[] s=[]) -> ()",
                         "f(int reduction=Mean, ScalarType? dtype=long, MemoryFormat m=contiguous_format) -> ()",
                         "f(Scalar a=1, Scalar b=0.5, float c=1, float d=-inf, bool e=True, bool? g=False) -> ()",
                         "f(str s='fro', str t=\"constant\", Generator? g=None, Layout? l=None) -> ()"}) {
    INFO(ok);
    CHECK(schemaError(ok).empty());
  }
}

TEST_CASE("schema: parse errors name the column and quote the schema") {
  CHECK(schemaError("foo(Tensor x x) -> Tensor") ==
        "schema parse error at column 14: expected ',' or ')' but found 'x'\n"
        "  foo(Tensor x x) -> Tensor\n"
        "               ^");
  CHECK(schemaError("foo(Tensr x) -> Tensor") ==
        "schema parse error at column 5: unknown type 'Tensr'\n"
        "  foo(Tensr x) -> Tensor\n"
        "      ^");
  CHECK(schemaError("foo(Tensor x) -> Tensr") ==
        "schema parse error at column 18: unknown type 'Tensr'\n"
        "  foo(Tensor x) -> Tensr\n"
        "                   ^");
  CHECK(schemaError("foo(Tensor x, int x) -> ()") ==
        "schema parse error at column 19: duplicate argument name 'x'\n"
        "  foo(Tensor x, int x) -> ()\n"
        "                    ^");
  CHECK(schemaError("foo(Tensor x) -> (Tensor a, Tensor a)") ==
        "schema parse error at column 36: duplicate return name 'a'\n"
        "  foo(Tensor x) -> (Tensor a, Tensor a)\n"
        "                                     ^");
  CHECK(schemaError("foo(Tensor x, *, int a, *, int b) -> ()") ==
        "schema parse error at column 25: duplicate '*'\n"
        "  foo(Tensor x, *, int a, *, int b) -> ()\n"
        "                          ^");
  CHECK(schemaError("(Tensor x) -> ()") ==
        "schema parse error at column 1: expected operator name but found '('\n"
        "  (Tensor x) -> ()\n"
        "  ^");
  CHECK(schemaError("foo(Tensor x) -> () junk") ==
        "schema parse error at column 21: expected end of input but found 'junk'\n"
        "  foo(Tensor x) -> () junk\n"
        "                      ^");
  CHECK(schemaError("foo(str s=\"abc) -> ()") ==
        "schema parse error at column 11: unterminated string literal\n"
        "  foo(str s=\"abc) -> ()\n"
        "            ^");
  CHECK(schemaError("foo(int[] s=[0,1") ==
        "schema parse error at column 13: unterminated list literal\n"
        "  foo(int[] s=[0,1\n"
        "              ^");
  CHECK(schemaError("foo(int[] s=[0 1]) -> ()") ==
        "schema parse error at column 16: expected ',' or ']' but found '1'\n"
        "  foo(int[] s=[0 1]) -> ()\n"
        "                 ^");
  CHECK(schemaError("foo(Tensor x)") ==
        "schema parse error at column 14: expected '->' but found end of input\n"
        "  foo(Tensor x)\n"
        "               ^");
  CHECK(schemaError("foo") ==
        "schema parse error at column 4: expected '(' but found end of input\n"
        "  foo\n"
        "     ^");
  CHECK(schemaError("foo(Tensor) -> ()") ==
        "schema parse error at column 11: expected argument name but found ')'\n"
        "  foo(Tensor) -> ()\n"
        "            ^");
  CHECK(schemaError("foo(Tensor x,) -> ()") ==
        "schema parse error at column 14: expected type but found ')'\n"
        "  foo(Tensor x,) -> ()\n"
        "               ^");
  CHECK(schemaError("foo(Tensor x, *) -> ()") ==
        "schema parse error at column 16: expected keyword-only argument after '*' but found ')'\n"
        "  foo(Tensor x, *) -> ()\n"
        "                 ^");
  CHECK(schemaError("foo(int x=) -> ()") ==
        "schema parse error at column 11: expected default value but found ')'\n"
        "  foo(int x=) -> ()\n"
        "            ^");
  CHECK(schemaError("foo(int[x] y) -> ()") ==
        "schema parse error at column 9: expected list size or ']' but found 'x'\n"
        "  foo(int[x] y) -> ()\n"
        "          ^");
  CHECK(schemaError("foo(Tensor(a x) -> ()") ==
        "schema parse error at column 14: expected ')' but found 'x'\n"
        "  foo(Tensor(a x) -> ()\n"
        "               ^");
  CHECK(schemaError("foo(Tensor(!) x) -> ()") ==
        "schema parse error at column 12: expected alias set name but found '!'\n"
        "  foo(Tensor(!) x) -> ()\n"
        "             ^");
  CHECK(schemaError("foo(..., Tensor x) -> ()") ==
        "schema parse error at column 8: expected ')' after '...' but found ','\n"
        "  foo(..., Tensor x) -> ()\n"
        "         ^");
  CHECK(schemaError("foo(float x=1e) -> ()") ==
        "schema parse error at column 14: malformed number\n"
        "  foo(float x=1e) -> ()\n"
        "               ^");
  CHECK(schemaError("foo(Tensor x) -> (Tensor") ==
        "schema parse error at column 25: expected ',' or ')' but found end of input\n"
        "  foo(Tensor x) -> (Tensor\n"
        "                          ^");
  CHECK(schemaError("foo.default(Tensor x) -> ()") ==
        "schema parse error at column 5: the overload name 'default' is reserved (it means the overload without "
        "a name)\n"
        "  foo.default(Tensor x) -> ()\n"
        "      ^");
  CHECK(schemaError("aten::foo.__x(Tensor x) -> ()") ==
        "schema parse error at column 11: overload name '__x' is reserved: overload names may not begin with '__'\n"
        "  aten::foo.__x(Tensor x) -> ()\n"
        "            ^");
  CHECK(nameError("aten::add.default") ==
        "schema parse error at column 11: the overload name 'default' is reserved (it means the overload without "
        "a name)\n"
        "  aten::add.default\n"
        "            ^");
  CHECK_NOTHROW(dk::parseSchema("foo.default_(Tensor x) -> ()"));  // only the exact name is reserved
  CHECK_NOTHROW(dk::parseSchema("foo._x(Tensor x) -> ()"));
  CHECK(schemaError("aten::foo.(Tensor x) -> ()") ==
        "schema parse error at column 11: expected overload name but found '('\n"
        "  aten::foo.(Tensor x) -> ()\n"
        "            ^");
  CHECK(schemaError("foo(Tensor(a)[](b) x) -> ()") ==
        "schema parse error at column 16: second alias annotation on one type\n"
        "  foo(Tensor(a)[](b) x) -> ()\n"
        "                 ^");
  CHECK(schemaError("foo(Tensor x) -> Tensor(a -> )") ==
        "schema parse error at column 30: expected alias set name but found ')'\n"
        "  foo(Tensor x) -> Tensor(a -> )\n"
        "                               ^");

  // Absurd nesting is refused instead of recursing without bound.
  std::string deep_type = "int";
  for (int i = 0; i < 64; ++i) deep_type += "[]";
  CHECK(dk::parseType(deep_type).str() == deep_type);
  CHECK_THROWS_WITH(dk::parseType(deep_type + "?"), Catch::Contains("type nested too deeply"));
  std::string deep_list = std::string(64, '[') + std::string(64, ']');
  CHECK(*dk::parseSchema("f(" + deep_type + " x=" + deep_list + ") -> ()").arguments()[0].default_value ==
        deep_list);
  CHECK_THROWS_WITH(
      dk::parseSchema("f(int x=[" + deep_list + "]) -> ()"),
      Catch::StartsWith("schema parse error at column 73: list literal nested too deeply"));

  // Every parse failure is a dk::Error.
  CHECK_THROWS_AS(dk::parseSchema("foo(Tensor x) -> (Tensor, ...), Tensor"), dk::Error);
  CHECK_THROWS_AS(dk::parseType("Tensor(a)"), dk::Error);
  CHECK_THROWS_AS(dk::parseType(""), dk::Error);
  CHECK_THROWS_AS(dk::parseType("int[99999999999999999999]"), dk::Error);
}
