// Builds FunctionSchemas from the generator's constant tables (Note [Pre-built schemas]).
#include "dk/dispatch/schema_data.h"

#include <string_view>
#include <utility>
#include <vector>

namespace dk::schema_data {
namespace {

Type toType(const TypeData& data) {
  Type t = Type::base(data.base);
  for (uint8_t w : data.wrappers) {
    if (w == 0) break;
    if (w == kOptional) {
      t = Type::optional(std::move(t));
    } else if (w == kList) {
      t = Type::list(std::move(t));
    } else {  // kList + N
      t = Type::list(std::move(t), static_cast<int64_t>(w - kList));
    }
  }
  return t;
}

// "a|b" -> {"a", "b"}.
std::vector<std::string> splitAliasSet(std::string_view text) {
  std::vector<std::string> out;
  for (;;) {
    size_t bar = text.find('|');
    out.emplace_back(text.substr(0, bar));
    if (bar == std::string_view::npos) return out;
    text.remove_prefix(bar + 1);
  }
}

std::vector<Argument> toArguments(const char* strings, std::span<const ArgumentData> data) {
  std::vector<Argument> out(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    const ArgumentData& d = data[i];
    Argument& a = out[i];
    a.name = strings + d.name;
    a.type = toType(d.type);
    if (d.default_value != kNoString) a.default_value = strings + d.default_value;
    a.kwarg_only = d.kwarg_only;
    if (d.alias.before != kNoString) {
      // The generator writes an annotation right after the base type, so on a wrapped type it
      // belongs to the element (Note [Schema round trip]).
      a.alias_info = AliasInfo{
          .before_set = splitAliasSet(strings + d.alias.before),
          .after_set = d.alias.after == kNoString ? std::vector<std::string>{} : splitAliasSet(strings + d.alias.after),
          .is_write = d.alias.is_write,
          .on_element = !a.type.isBase()};
    }
  }
  return out;
}

// Type::isTensorLike on the table form: Tensor, Tensor?, Tensor[] (any size) and Tensor?[].
bool isTensorLike(const TypeData& type) {
  if (type.base != TypeKind::Tensor) return false;
  size_t i = 0;
  if (type.wrappers[i] == kOptional) ++i;  // Tensor?, or the element of Tensor?[]
  if (type.wrappers[i] >= kList) ++i;      // Tensor[], Tensor[N], Tensor?[]
  return type.wrappers[i] == 0;            // nothing around that: not Tensor[]? nor Tensor[][]
}

}  // namespace

std::optional<uint64_t> dispatchArgumentBitmap(const SchemaData& data) {
  const size_t n = data.arguments.size();
  if (n > 64) return std::nullopt;
  uint64_t bitmap = 0;
  for (size_t i = 0; i < n; ++i)
    if (isTensorLike(data.arguments[i].type)) bitmap |= uint64_t{1} << (n - 1 - i);
  return bitmap;
}

FunctionSchema toFunctionSchema(const SchemaData& data, OperatorName name) {
  const char* strings = static_cast<const char*>(data.strings);
  return FunctionSchema(std::move(name), toArguments(strings, data.arguments), toArguments(strings, data.returns));
}

}  // namespace dk::schema_data
