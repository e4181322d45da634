// dk/dispatch/function_schema.h: operator names, argument types and function schemas, with the parser
// and printer for PyTorch's schema language ("ns::name.overload(args) -> returns").
//
// Note [Schema round trip]
// FunctionSchema::str() prints the canonical PyTorch form: ", " between arguments, "*, "
// before the first keyword-only argument, " -> " before the returns, a single return (named or
// not, without varret) printed bare ("-> Tensor", "-> Tensor grid"), as is a lone varret
// ("-> ..."); every other return list in parentheses ("-> ()", "-> (Tensor, Tensor)"). Default
// values keep the text they were written with. Every schema in PyTorch's native_functions.yaml
// prints back to exactly its source text; input using other spacing parses to the same schema and
// prints in the canonical form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dk {

// ---- operator names ----

struct OperatorName {
  std::string name{};           // includes the namespace when given: "aten::add"
  std::string overload_name{};  // "" when none

  std::string toString() const;  // "aten::add.Tensor" or "aten::add"
  bool operator==(const OperatorName&) const = default;
  auto operator<=>(const OperatorName&) const = default;
};
std::ostream& operator<<(std::ostream&, const OperatorName&);

// ---- types ----

enum class TypeKind : uint8_t {
  Tensor,
  Int,
  SymInt,
  Float,
  Bool,
  Str,
  Scalar,
  ScalarType,
  Layout,
  Device,
  MemoryFormat,
  Generator,
  Dimname,
  Storage,
  Stream,
  QScheme,
  Complex,
  Any,
  // compound kinds (have an element type); stay last
  Optional,
  List,
};

// The schema spelling of a base kind ("Tensor", "int", "complex", ...); "Optional"/"List" for
// the compound kinds, which have no spelling of their own.
std::string_view typeKindName(TypeKind kind);
// The base kind spelled `name` in a schema, or nullopt when `name` names no base type.
std::optional<TypeKind> typeKindFromName(std::string_view name);

// A schema type: a base kind, or Optional/List of an element type. A value type; copying
// shares the element.
class Type {
 public:
  Type() = default;  // Tensor

  static Type base(TypeKind kind);  // DK_CHECKs kind is not Optional/List
  static Type optional(Type elem);
  static Type list(Type elem, std::optional<int64_t> fixed_size = std::nullopt);  // T[] or T[N]

  TypeKind kind() const { return kind_; }
  bool isBase() const { return kind_ != TypeKind::Optional && kind_ != TypeKind::List; }
  const Type& element() const;  // Optional/List only; DK_CHECK otherwise
  std::optional<int64_t> fixedSize() const { return fixed_size_; }  // List only

  std::string str() const;  // "Tensor", "int?", "Tensor?[]", "int[2]", "SymInt[]", "int[1]?"
  // Tensor, Tensor?, Tensor[] and Tensor?[] (any fixed size): the types dispatch looks at.
  bool isTensorLike() const;

  bool operator==(const Type& other) const;  // structural, fixed sizes included
  // Like ==, but list sizes are ignored at every level: int[2] equals int[].
  bool equalsIgnoringSize(const Type& other) const;

 private:
  TypeKind kind_ = TypeKind::Tensor;
  std::optional<int64_t> fixed_size_;
  std::shared_ptr<const Type> elem_;
};
std::ostream& operator<<(std::ostream&, const Type&);

// ---- alias annotations ----

// "(a)", "(a!)", "(a -> *)", "(a|b)", "(a! -> b|c)". An empty after_set means no "->" was
// written (the after set is then the before set).
struct AliasInfo {
  std::vector<std::string> before_set{};  // Tensor(a!) -> {"a"}; "*" is the wildcard set
  std::vector<std::string> after_set{};   // Tensor(a -> *) -> {"*"}
  bool is_write = false;                  // "!"
  // True when the annotation was written between the base type and the type's "[]"/"?"
  // suffixes, so it belongs to the element: Tensor(a!)[] (false for Tensor[](a!), and for
  // types without suffixes).
  bool on_element = false;

  std::string str() const;  // "(a!)", "(a -> *)", "(a|b)"
  bool operator==(const AliasInfo&) const = default;
};

// ---- arguments and schemas ----

// Every member has a default initializer, so designated initializers may name any subset
// without -Wmissing-field-initializers: Argument{.name = "self", .type = Type::base(...)}.
struct Argument {
  std::string name{};  // may be empty for unnamed returns
  Type type{};
  std::optional<std::string> default_value{};  // text as written: "1", "None", "[0,1]", "\"mean\""
  bool kwarg_only = false;
  std::optional<AliasInfo> alias_info{};

  bool is_out() const;  // keyword-only and written to (alias_info with is_write)
  // "Tensor(a!) self", "int[2] stride=1", "Tensor(a)[]" (no "*"; that belongs to the schema).
  std::string str() const;
  bool operator==(const Argument&) const = default;
};
std::ostream& operator<<(std::ostream&, const Argument&);

class FunctionSchema {
 public:
  FunctionSchema(OperatorName name, std::vector<Argument> arguments, std::vector<Argument> returns,
                 bool is_vararg = false, bool is_varret = false);

  const OperatorName& operator_name() const { return name_; }
  void set_operator_name(OperatorName name) { name_ = std::move(name); }  // Library qualifies names
  const std::vector<Argument>& arguments() const { return arguments_; }
  const std::vector<Argument>& returns() const { return returns_; }
  bool is_vararg() const { return is_vararg_; }
  bool is_varret() const { return is_varret_; }

  std::string str() const;  // see Note [Schema round trip]
  bool is_mutable() const;  // some argument has a write alias

  bool operator==(const FunctionSchema&) const = default;

 private:
  OperatorName name_;
  std::vector<Argument> arguments_;
  std::vector<Argument> returns_;
  bool is_vararg_ = false;
  bool is_varret_ = false;
};

// The argument that return `ret` of an in-place or out= schema is (the written argument with the
// same alias set: self for add_, out for add.out); nullopt for any other return.
std::optional<size_t> writtenArgumentOfReturn(const FunctionSchema& schema, size_t ret);
std::ostream& operator<<(std::ostream&, const FunctionSchema&);

// ---- parsing ----
// All parse functions throw dk::Error on malformed input, with a message of the form
//   schema parse error at column 12: expected ',' or ')' but found 'x'
//     foo(Tensor x x) -> Tensor
//                  ^
// (columns are 1-based byte offsets into the text). Whitespace between tokens is free;
// leading and trailing whitespace is ignored.

FunctionSchema parseSchema(std::string_view text);
// "aten::foo.bar" alone (no parenthesis) is an OperatorName; with "(...)" it is a schema.
std::variant<OperatorName, FunctionSchema> parseSchemaOrName(std::string_view text);
OperatorName parseOperatorName(std::string_view text);
// A type as written in a schema, e.g. "Tensor?[]" or "int[2]" (no alias annotation).
Type parseType(std::string_view text);

}  // namespace dk

template <>
struct std::hash<dk::OperatorName> {
  size_t operator()(const dk::OperatorName& n) const noexcept {
    size_t h = std::hash<std::string>{}(n.name);
    return h ^ (std::hash<std::string>{}(n.overload_name) + 0x9e3779b97f4a7c15ULL + (h << 6) +
                (h >> 2));
  }
};
