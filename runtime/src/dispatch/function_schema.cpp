// Function schemas: the type model, the printer, and a hand-written recursive-descent parser
// for PyTorch's schema language. See Note [Schema round trip] in dk/dispatch/function_schema.h.
#include "dk/dispatch/function_schema.h"

#include <array>
#include <charconv>
#include <iterator>
#include <utility>

#include "dk/util/error.h"

namespace dk {

// ---------------------------------------------------------------------------------------------
// Operator names

std::string OperatorName::toString() const {
  if (overload_name.empty()) return name;
  std::string out;
  out.reserve(name.size() + 1 + overload_name.size());
  out += name;
  out += '.';
  out += overload_name;
  return out;
}

std::ostream& operator<<(std::ostream& os, const OperatorName& n) {
  os << n.name;
  if (!n.overload_name.empty()) os << '.' << n.overload_name;
  return os;
}

// ---------------------------------------------------------------------------------------------
// Types

namespace {

constexpr int kNumBaseKinds = static_cast<int>(TypeKind::Optional);

constexpr std::array<std::string_view, kNumBaseKinds> kBaseKindNames = {
    "Tensor",  "int",        "SymInt", "float",   "bool",         "str",
    "Scalar",  "ScalarType", "Layout", "Device",  "MemoryFormat", "Generator",
    "Dimname", "Storage",    "Stream", "QScheme", "complex",      "Any"};
static_assert(kBaseKindNames[static_cast<int>(TypeKind::Tensor)] == "Tensor");
static_assert(kBaseKindNames[static_cast<int>(TypeKind::MemoryFormat)] == "MemoryFormat");
static_assert(kBaseKindNames[static_cast<int>(TypeKind::Any)] == "Any");

bool isCompound(TypeKind k) { return k == TypeKind::Optional || k == TypeKind::List; }

void appendType(std::string& out, const Type& t) {
  switch (t.kind()) {
    case TypeKind::Optional:
      appendType(out, t.element());
      out += '?';
      return;
    case TypeKind::List:
      appendType(out, t.element());
      out += '[';
      if (auto n = t.fixedSize()) out += std::to_string(*n);
      out += ']';
      return;
    default:
      out += kBaseKindNames[static_cast<int>(t.kind())];
      return;
  }
}

void appendAlias(std::string& out, const AliasInfo& a) {
  out += '(';
  for (size_t i = 0; i < a.before_set.size(); ++i) {
    if (i > 0) out += '|';
    out += a.before_set[i];
  }
  if (a.is_write) out += '!';
  if (!a.after_set.empty()) {
    out += " -> ";
    for (size_t i = 0; i < a.after_set.size(); ++i) {
      if (i > 0) out += '|';
      out += a.after_set[i];
    }
  }
  out += ')';
}

// Prints the type with the alias annotation right after the innermost base type.
void appendTypeAliasOnElement(std::string& out, const Type& t, const AliasInfo& a) {
  if (t.isBase()) {
    appendType(out, t);
    appendAlias(out, a);
    return;
  }
  appendTypeAliasOnElement(out, t.element(), a);
  if (t.kind() == TypeKind::Optional) {
    out += '?';
  } else {
    out += '[';
    if (auto n = t.fixedSize()) out += std::to_string(*n);
    out += ']';
  }
}

void appendTypeAndAlias(std::string& out, const Argument& arg) {
  if (!arg.alias_info) {
    appendType(out, arg.type);
  } else if (arg.alias_info->on_element && !arg.type.isBase()) {
    appendTypeAliasOnElement(out, arg.type, *arg.alias_info);
  } else {
    appendType(out, arg.type);
    appendAlias(out, *arg.alias_info);
  }
}

void appendArgument(std::string& out, const Argument& arg) {
  appendTypeAndAlias(out, arg);
  if (!arg.name.empty()) {
    out += ' ';
    out += arg.name;
  }
  if (arg.default_value) {
    out += '=';
    out += *arg.default_value;
  }
}

}  // namespace

std::string_view typeKindName(TypeKind kind) {
  if (kind == TypeKind::Optional) return "Optional";
  if (kind == TypeKind::List) return "List";
  auto i = static_cast<size_t>(kind);
  DK_CHECK(i < kBaseKindNames.size(), "invalid TypeKind ", static_cast<int>(kind));
  return kBaseKindNames[i];
}

std::optional<TypeKind> typeKindFromName(std::string_view name) {
  for (size_t i = 0; i < kBaseKindNames.size(); ++i) {
    if (kBaseKindNames[i] == name) return static_cast<TypeKind>(i);
  }
  return std::nullopt;
}

Type Type::base(TypeKind kind) {
  DK_CHECK(!isCompound(kind), "Type::base needs a base kind, got ", typeKindName(kind));
  DK_CHECK(static_cast<int>(kind) < kNumBaseKinds, "invalid TypeKind ", static_cast<int>(kind));
  Type t;
  t.kind_ = kind;
  return t;
}

Type Type::optional(Type elem) {
  Type t;
  t.kind_ = TypeKind::Optional;
  t.elem_ = std::make_shared<const Type>(std::move(elem));
  return t;
}

Type Type::list(Type elem, std::optional<int64_t> fixed_size) {
  DK_CHECK(!fixed_size || *fixed_size >= 0, "list size must not be negative, got ", *fixed_size);
  Type t;
  t.kind_ = TypeKind::List;
  t.fixed_size_ = fixed_size;
  t.elem_ = std::make_shared<const Type>(std::move(elem));
  return t;
}

const Type& Type::element() const {
  DK_CHECK(elem_ != nullptr, "type ", str(), " has no element type");
  return *elem_;
}

std::string Type::str() const {
  std::string out;
  appendType(out, *this);
  return out;
}

bool Type::isTensorLike() const {
  switch (kind_) {
    case TypeKind::Tensor:
      return true;
    case TypeKind::Optional:
      return elem_->kind_ == TypeKind::Tensor;
    case TypeKind::List:
      return elem_->kind_ == TypeKind::Tensor ||
             (elem_->kind_ == TypeKind::Optional && elem_->elem_->kind_ == TypeKind::Tensor);
    default:
      return false;
  }
}

bool Type::operator==(const Type& other) const {
  if (kind_ != other.kind_ || fixed_size_ != other.fixed_size_) return false;
  if (!elem_) return true;
  return elem_ == other.elem_ || *elem_ == *other.elem_;
}

bool Type::equalsIgnoringSize(const Type& other) const {
  if (kind_ != other.kind_) return false;
  if (!elem_) return true;
  return elem_ == other.elem_ || elem_->equalsIgnoringSize(*other.elem_);
}

std::ostream& operator<<(std::ostream& os, const Type& t) { return os << t.str(); }

// ---------------------------------------------------------------------------------------------
// Aliases, arguments, schemas

std::string AliasInfo::str() const {
  std::string out;
  appendAlias(out, *this);
  return out;
}

bool Argument::is_out() const { return kwarg_only && alias_info && alias_info->is_write; }

std::string Argument::str() const {
  std::string out;
  appendArgument(out, *this);
  return out;
}

std::ostream& operator<<(std::ostream& os, const Argument& a) { return os << a.str(); }

FunctionSchema::FunctionSchema(OperatorName name, std::vector<Argument> arguments,
                               std::vector<Argument> returns, bool is_vararg, bool is_varret)
    : name_(std::move(name)),
      arguments_(std::move(arguments)),
      returns_(std::move(returns)),
      is_vararg_(is_vararg),
      is_varret_(is_varret) {}

std::string FunctionSchema::str() const {
  std::string out;
  out.reserve(64 + 24 * (arguments_.size() + returns_.size()));
  out += name_.name;
  if (!name_.overload_name.empty()) {
    out += '.';
    out += name_.overload_name;
  }
  out += '(';
  bool seen_kwarg_only = false;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (i > 0) out += ", ";
    if (arguments_[i].kwarg_only && !seen_kwarg_only) {
      out += "*, ";
      seen_kwarg_only = true;
    }
    appendArgument(out, arguments_[i]);
  }
  if (is_vararg_) {
    if (!arguments_.empty()) out += ", ";
    out += "...";
  }
  out += ") -> ";
  // A lone return prints bare, named or not ("-> Tensor grid" occurs in PyTorch's file); so
  // does a lone "..." (varret and no returns). Everything else is parenthesised.
  bool bare = !is_varret_ ? returns_.size() == 1 : returns_.empty();
  if (!bare) out += '(';
  for (size_t i = 0; i < returns_.size(); ++i) {
    if (i > 0) out += ", ";
    appendArgument(out, returns_[i]);
  }
  if (is_varret_) {
    if (!returns_.empty()) out += ", ";
    out += "...";
  }
  if (!bare) out += ')';
  return out;
}

bool FunctionSchema::is_mutable() const {
  for (const Argument& a : arguments_) {
    if (a.alias_info && a.alias_info->is_write) return true;
  }
  return false;
}

std::optional<size_t> writtenArgumentOfReturn(const FunctionSchema& schema, size_t ret) {
  const auto& r = schema.returns().at(ret).alias_info;
  if (!r || !r->is_write) return std::nullopt;
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const auto& a = schema.arguments()[i].alias_info;
    if (a && a->is_write && a->before_set == r->before_set) return i;
  }
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& os, const FunctionSchema& s) { return os << s.str(); }

// ---------------------------------------------------------------------------------------------
// Parser

namespace {

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }
bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Types and list literals nest at most this deep (printing, comparing and parsing recurse).
constexpr int kMaxNesting = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  // name [ '(' args ')' '->' returns ]; the parenthesised part is required when !allow_name_only.
  std::variant<OperatorName, FunctionSchema> parseTop(bool allow_name_only) {
    skipWs();
    OperatorName name = parseOperatorName();
    skipWs();
    if (allow_name_only && atEnd()) return name;
    if (peek() != '(') fail(pos_, "expected '(' but found " + found(pos_));
    // Parsed into a reused per-thread buffer, then moved into a vector of exactly the right
    // size: one allocation and one move per argument, where growing the vector would move
    // every argument again at each doubling (startup parses thousands of schemas).
    thread_local std::vector<Argument> scratch;
    scratch.clear();
    bool is_vararg = parseArguments(scratch);
    std::vector<Argument> arguments(std::make_move_iterator(scratch.begin()), std::make_move_iterator(scratch.end()));
    scratch.clear();
    skipWs();
    if (!startsWith("->")) fail(pos_, "expected '->' but found " + found(pos_));
    pos_ += 2;
    std::vector<Argument> returns;
    bool is_varret = parseReturns(returns);
    expectEnd();
    return FunctionSchema(std::move(name), std::move(arguments), std::move(returns), is_vararg,
                          is_varret);
  }

  OperatorName parseWholeOperatorName() {
    skipWs();
    OperatorName name = parseOperatorName();
    expectEnd();
    return name;
  }

  Type parseWholeType() {
    skipWs();
    std::optional<AliasInfo> alias;
    Type t = parseType(alias, /*allow_alias=*/false);
    expectEnd();
    return t;
  }

 private:
  // ---- errors ----

  [[noreturn]] void fail(size_t at, const std::string& what) const {
    std::string msg;
    msg.reserve(64 + what.size() + 2 * s_.size());
    msg += "schema parse error at column ";
    msg += std::to_string(at + 1);
    msg += ": ";
    msg += what;
    msg += "\n  ";
    msg += s_;
    msg += "\n  ";
    msg.append(at, ' ');
    msg += '^';
    throw Error(std::move(msg));
  }

  // Describes the token at `at` for "but found ...": "end of input" or the token quoted.
  std::string found(size_t at) const {
    if (at >= s_.size()) return "end of input";
    size_t end = at + 1;
    char c = s_[at];
    if (isIdentChar(c)) {
      while (end < s_.size() && (isIdentChar(s_[end]) || (isDigit(c) && s_[end] == '.'))) ++end;
    } else if (s_.substr(at, 2) == "->") {
      end = at + 2;
    } else if (s_.substr(at, 3) == "...") {
      end = at + 3;
    }
    std::string out = "'";
    out += s_.substr(at, end - at);
    out += '\'';
    return out;
  }

  // ---- scanning ----

  void skipWs() {
    while (pos_ < s_.size() && isSpace(s_[pos_])) ++pos_;
  }
  bool atEnd() const { return pos_ >= s_.size(); }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool startsWith(std::string_view tok) const { return s_.substr(pos_).starts_with(tok); }

  void expectEnd() {
    skipWs();
    if (!atEnd()) fail(pos_, "expected end of input but found " + found(pos_));
  }

  // Skips whitespace, then requires `c`.
  void expectChar(char c) {
    skipWs();
    if (peek() != c) fail(pos_, std::string("expected '") + c + "' but found " + found(pos_));
    ++pos_;
  }

  // [A-Za-z_][A-Za-z0-9_]* at the current position (no whitespace skipping); empty if none.
  std::string_view identifier() {
    if (pos_ >= s_.size() || !isIdentStart(s_[pos_])) return {};
    size_t start = pos_++;
    while (pos_ < s_.size() && isIdentChar(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  // ---- operator names ----

  OperatorName parseOperatorName() {
    OperatorName name;
    size_t start = pos_;
    if (identifier().empty()) fail(pos_, "expected operator name but found " + found(pos_));
    if (startsWith("::")) {
      pos_ += 2;
      if (identifier().empty()) {
        fail(pos_, "expected operator name after '::' but found " + found(pos_));
      }
    }
    name.name.assign(s_.substr(start, pos_ - start));
    if (peek() == '.') {
      ++pos_;
      size_t ov = pos_;
      while (pos_ < s_.size() && isIdentChar(s_[pos_])) ++pos_;
      if (pos_ == ov) fail(pos_, "expected overload name but found " + found(pos_));
      std::string_view overload = s_.substr(ov, pos_ - ov);
      // As PyTorch (and the generator, codegen/schema.py): "default" names the overload without
      // a name, and names beginning with "__" are reserved.
      if (overload == "default") {
        fail(ov, "the overload name 'default' is reserved (it means the overload without a name)");
      }
      if (overload.substr(0, 2) == "__") {
        fail(ov, "overload name '" + std::string(overload) + "' is reserved: overload names may not begin with '__'");
      }
      name.overload_name.assign(overload);
    }
    return name;
  }

  // ---- types ----

  // base-type [alias] { '?' | '[' [N] ']' } [alias]; at most one alias annotation.
  Type parseType(std::optional<AliasInfo>& alias, bool allow_alias) {
    skipWs();
    size_t start = pos_;
    std::string_view id = identifier();
    if (id.empty()) fail(start, "expected type but found " + found(start));
    std::optional<TypeKind> kind = typeKindFromName(id);
    if (!kind) fail(start, "unknown type '" + std::string(id) + "'");
    Type t = Type::base(*kind);

    skipWs();
    if (allow_alias && peek() == '(') alias = parseAlias();
    bool has_suffix = false;
    int depth = 0;
    for (;;) {
      skipWs();
      char c = peek();
      if (c == '?') {
        ++pos_;
        t = Type::optional(std::move(t));
      } else if (c == '[') {
        ++pos_;
        skipWs();
        std::optional<int64_t> size;
        if (isDigit(peek())) {
          size_t num = pos_;
          while (pos_ < s_.size() && isDigit(s_[pos_])) ++pos_;
          int64_t n = 0;
          auto [ptr, ec] = std::from_chars(s_.data() + num, s_.data() + pos_, n);
          if (ec != std::errc() || ptr != s_.data() + pos_) fail(num, "list size out of range");
          size = n;
          skipWs();
        }
        if (peek() != ']') fail(pos_, "expected list size or ']' but found " + found(pos_));
        ++pos_;
        t = Type::list(std::move(t), size);
      } else {
        break;
      }
      if (++depth > kMaxNesting) fail(pos_ - 1, "type nested too deeply");
      has_suffix = true;
    }
    if (alias && has_suffix) alias->on_element = true;
    if (allow_alias && has_suffix && peek() == '(') {
      if (alias) fail(pos_, "second alias annotation on one type");
      alias = parseAlias();
    }
    return t;
  }

  // '(' set ['!'] ['->' set] ')', set = name { '|' name }, name = identifier | '*'.
  AliasInfo parseAlias() {
    ++pos_;  // '('
    AliasInfo info;
    parseAliasSet(info.before_set);
    skipWs();
    if (peek() == '!') {
      ++pos_;
      info.is_write = true;
      skipWs();
    }
    if (startsWith("->")) {
      pos_ += 2;
      parseAliasSet(info.after_set);
    }
    expectChar(')');
    return info;
  }

  void parseAliasSet(std::vector<std::string>& set) {
    for (;;) {
      skipWs();
      if (peek() == '*') {
        ++pos_;
        set.emplace_back("*");
      } else {
        std::string_view id = identifier();
        if (id.empty()) fail(pos_, "expected alias set name but found " + found(pos_));
        set.emplace_back(id);
      }
      skipWs();
      if (peek() != '|') return;
      ++pos_;
    }
  }

  // ---- default values ----

  // What a default value is, as far as its type check needs: a string, a list, an integer, a
  // floating point number, or an identifier (True, None, contiguous_format, Mean, -inf, ...).
  struct Value {
    enum Kind : uint8_t { Str, List, Int, Float, Ident } kind = Ident;
    bool negative = false;      // a leading '-' (-1, -inf)
    std::string_view ident;     // Ident only, without the '-'
    std::vector<Value> elems;   // List only
  };

  // One value. Its text is kept as written; the Value is only for checkDefault.
  Value parseValue(int depth = 0) {
    Value v;
    const size_t start = pos_;
    char c = peek();
    if (c == '"' || c == '\'') {
      v.kind = Value::Str;
      ++pos_;
      while (pos_ < s_.size() && s_[pos_] != c) {
        if (s_[pos_] == '\\') ++pos_;
        ++pos_;
      }
      if (pos_ >= s_.size()) fail(start, "unterminated string literal");
      ++pos_;
    } else if (c == '[') {
      v.kind = Value::List;
      if (depth >= kMaxNesting) fail(start, "list literal nested too deeply");
      ++pos_;
      skipWs();
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        skipWs();
        if (atEnd()) fail(start, "unterminated list literal");
        v.elems.push_back(parseValue(depth + 1));
        skipWs();
        if (atEnd()) fail(start, "unterminated list literal");
        if (peek() == ']') {
          ++pos_;
          return v;
        }
        if (peek() != ',') fail(pos_, "expected ',' or ']' but found " + found(pos_));
        ++pos_;
      }
    } else if (c == '-' || c == '.' || isDigit(c)) {
      if (c == '-') ++pos_, v.negative = true;
      if (std::string_view id = identifier(); !id.empty()) {  // -inf
        v.ident = id;
        return v;
      }
      v.kind = Value::Int;
      size_t digits = 0;
      while (pos_ < s_.size() && isDigit(s_[pos_])) ++pos_, ++digits;
      if (peek() == '.') {
        v.kind = Value::Float;
        ++pos_;
        while (pos_ < s_.size() && isDigit(s_[pos_])) ++pos_, ++digits;
      }
      if (digits == 0) fail(start, "malformed number");
      if (peek() == 'e' || peek() == 'E') {
        v.kind = Value::Float;
        size_t save = pos_++;
        if (peek() == '+' || peek() == '-') ++pos_;
        if (!isDigit(peek())) fail(save, "malformed number");
        while (pos_ < s_.size() && isDigit(s_[pos_])) ++pos_;
      }
    } else if (isIdentStart(c)) {
      v.ident = identifier();
    } else {
      fail(pos_, "expected default value but found " + found(pos_));
    }
    return v;
  }

  // Note [Default value types]
  // A default must be a value of its argument's type, as PyTorch's schema parser requires:
  // None only for Optional and Tensor-like types (and Generator, Storage, Stream, which have
  // no other literal); a number for int/float/Scalar/complex (an int also for float); True or
  // False for bool; a string for str and Device; for the enum-like types (ScalarType, Layout,
  // MemoryFormat, QScheme, and int, which PyTorch lets stand for them, e.g. reduction=Mean)
  // one of their names or an int; a list of element values for T[], and for T[N] also one
  // element value repeated (int[2] stride=1).
  static bool isOneOf(std::string_view id, std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
      if (id == n) return true;
    return false;
  }
  static bool isScalarTypeName(std::string_view id) {
    return isOneOf(id, {"Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double", "ComplexHalf",
                        "ComplexFloat", "ComplexDouble", "Bool", "QInt8", "QUInt8", "QInt32", "BFloat16",
                        "QUInt4x2", "QUInt2x4", "uint8", "int8", "int16", "short", "int32", "int", "int64", "long",
                        "float16", "half", "float32", "float", "float64", "double", "complex32", "complex64",
                        "cfloat", "complex128", "cdouble", "complex", "bool", "bfloat16"});
  }
  static bool isEnumName(TypeKind kind, std::string_view id) {
    switch (kind) {
      case TypeKind::ScalarType: return isScalarTypeName(id);
      case TypeKind::Layout: return isOneOf(id, {"strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
                                                 "sparse_bsc", "_mkldnn", "mkldnn"});
      case TypeKind::MemoryFormat:
        return isOneOf(id, {"contiguous_format", "channels_last", "channels_last_3d", "preserve_format"});
      case TypeKind::QScheme:
        return isOneOf(id, {"per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                            "per_channel_symmetric", "per_channel_affine_float_qparams"});
      case TypeKind::Int:
      case TypeKind::SymInt:
        return isOneOf(id, {"Mean", "Sum"}) || isEnumName(TypeKind::ScalarType, id) ||
               isEnumName(TypeKind::Layout, id) || isEnumName(TypeKind::MemoryFormat, id) ||
               isEnumName(TypeKind::QScheme, id);
      default: return false;
    }
  }
  static bool isFloatName(std::string_view id) { return isOneOf(id, {"inf", "nan"}); }

  // Empty when `v` is a valid default for `t`, else why not.
  static std::string defaultMismatch(const Type& t, const Value& v) {
    const bool is_ident = v.kind == Value::Ident;
    const bool is_none = is_ident && v.ident == "None" && !v.negative;
    const bool is_bool = is_ident && (v.ident == "True" || v.ident == "False") && !v.negative;
    switch (t.kind()) {
      case TypeKind::Optional: return is_none ? std::string() : defaultMismatch(t.element(), v);
      case TypeKind::Any: return {};
      case TypeKind::Tensor:
      case TypeKind::Generator:
      case TypeKind::Storage:
      case TypeKind::Stream:
        return is_none ? std::string() : "a " + std::string(typeKindName(t.kind())) + " default can only be None";
      case TypeKind::List: {
        if (v.kind == Value::List) {
          for (const Value& e : v.elems) {
            std::string why = defaultMismatch(t.element(), e);
            if (!why.empty()) return "list element: " + why;
          }
          return {};
        }
        if (t.fixedSize()) return defaultMismatch(t.element(), v);
        return "a list default must be a list literal such as [] or [0, 1]";
      }
      default: break;
    }
    if (is_none) return "None is only a default of an optional type (write " + t.str() + "?)";
    bool ok = false;
    switch (t.kind()) {
      case TypeKind::Bool: ok = is_bool; break;
      case TypeKind::Int:
      case TypeKind::SymInt: ok = v.kind == Value::Int || (is_ident && !v.negative && isEnumName(t.kind(), v.ident)); break;
      case TypeKind::Float:
      case TypeKind::Complex:
        ok = v.kind == Value::Int || v.kind == Value::Float || (is_ident && isFloatName(v.ident));
        break;
      case TypeKind::Scalar:
        ok = v.kind == Value::Int || v.kind == Value::Float || is_bool || (is_ident && isFloatName(v.ident));
        break;
      case TypeKind::Str:
      case TypeKind::Device:
      case TypeKind::Dimname: ok = v.kind == Value::Str; break;
      case TypeKind::ScalarType:
      case TypeKind::Layout:
      case TypeKind::MemoryFormat:
      case TypeKind::QScheme:
        ok = v.kind == Value::Int || (is_ident && !v.negative && isEnumName(t.kind(), v.ident));
        break;
      default: ok = false;
    }
    if (ok) return {};
    return "not a value of type " + t.str();
  }

  void checkDefault(const Argument& arg, const Value& v, size_t start) const {
    std::string why = defaultMismatch(arg.type, v);
    if (!why.empty()) {
      fail(start, "default value " + std::string(s_.substr(start, pos_ - start)) + " of argument '" + arg.name +
                      "' (" + arg.type.str() + "): " + why);
    }
  }

  // ---- arguments and returns ----

  void checkUnique(const std::vector<Argument>& list, std::string_view name, size_t at,
                   const char* what) {
    for (const Argument& a : list) {
      if (a.name == name)
        fail(at, std::string("duplicate ") + what + " name '" + std::string(name) + "'");
    }
  }

  // '(' [arg {',' arg}] ')' where arg = '*' | '...' | type [alias] name ['=' value]. Returns
  // is_vararg.
  bool parseArguments(std::vector<Argument>& out) {
    ++pos_;  // '('
    skipWs();
    if (peek() == ')') {
      ++pos_;
      return false;
    }
    bool kwarg_only = false;
    for (;;) {
      skipWs();
      if (startsWith("...")) {
        pos_ += 3;
        skipWs();
        if (peek() != ')') fail(pos_, "expected ')' after '...' but found " + found(pos_));
        ++pos_;
        return true;
      }
      if (peek() == '*') {
        if (kwarg_only) fail(pos_, "duplicate '*'");
        kwarg_only = true;
        ++pos_;
        skipWs();
        if (peek() == ')' || startsWith("...")) {
          fail(pos_, "expected keyword-only argument after '*' but found " + found(pos_));
        }
      } else {
        Argument arg;
        arg.type = parseType(arg.alias_info, /*allow_alias=*/true);
        skipWs();
        size_t name_at = pos_;
        std::string_view name = identifier();
        if (name.empty()) fail(pos_, "expected argument name but found " + found(pos_));
        checkUnique(out, name, name_at, "argument");
        arg.name.assign(name);
        arg.kwarg_only = kwarg_only;
        skipWs();
        if (peek() == '=') {
          ++pos_;
          skipWs();
          size_t start = pos_;
          Value value = parseValue();
          checkDefault(arg, value, start);  // Note [Default value types]
          arg.default_value.emplace(s_.substr(start, pos_ - start));
        }
        out.push_back(std::move(arg));
      }
      skipWs();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        return false;
      }
      fail(pos_, "expected ',' or ')' but found " + found(pos_));
    }
  }

  Argument parseReturn() {
    Argument ret;
    ret.type = parseType(ret.alias_info, /*allow_alias=*/true);
    skipWs();
    ret.name.assign(identifier());
    return ret;
  }

  // type [alias] | '...' | '(' [ret {',' ret}] ')' with ret = type [alias] [name] | '...'
  // ('...' last). Returns is_varret.
  bool parseReturns(std::vector<Argument>& out) {
    skipWs();
    if (startsWith("...")) {
      pos_ += 3;
      return true;
    }
    if (peek() != '(') {
      // A lone return may be named: "-> Tensor grid".
      out.push_back(parseReturn());
      return false;
    }
    ++pos_;  // '('
    skipWs();
    if (peek() == ')') {
      ++pos_;
      return false;
    }
    for (;;) {
      skipWs();
      if (startsWith("...")) {
        pos_ += 3;
        skipWs();
        if (peek() != ')') fail(pos_, "expected ')' after '...' but found " + found(pos_));
        ++pos_;
        return true;
      }
      Argument ret = parseReturn();
      if (!ret.name.empty()) checkUnique(out, ret.name, pos_ - ret.name.size(), "return");
      out.push_back(std::move(ret));
      skipWs();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        return false;
      }
      fail(pos_, "expected ',' or ')' but found " + found(pos_));
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

FunctionSchema parseSchema(std::string_view text) {
  return std::get<FunctionSchema>(Parser(text).parseTop(/*allow_name_only=*/false));
}

std::variant<OperatorName, FunctionSchema> parseSchemaOrName(std::string_view text) {
  return Parser(text).parseTop(/*allow_name_only=*/true);
}

OperatorName parseOperatorName(std::string_view text) {
  return Parser(text).parseWholeOperatorName();
}

Type parseType(std::string_view text) { return Parser(text).parseWholeType(); }

}  // namespace dk
