// Library: turns def/impl/fallback calls into dispatcher registrations it owns.
#include "dk/dispatch/library.h"

#include <cctype>

namespace dk {

namespace {
bool isIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}
std::string_view kindName(Library::Kind k) {
  switch (k) {
    case Library::DEF: return "DK_LIBRARY";
    case Library::IMPL: return "DK_LIBRARY_IMPL";
    case Library::FRAGMENT: return "DK_LIBRARY_FRAGMENT";
  }
  return "Library";
}
}  // namespace

std::string RegistrationSite::toString() const {
  if (!known()) return {};
  std::string_view f = file;
  while (f.starts_with("../") || f.starts_with("./")) f.remove_prefix(f.starts_with("./") ? 2 : 3);
  return std::string(f) + ":" + std::to_string(line);
}

Library::Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file, uint32_t line)
    : kind_(kind),
      ns_(std::move(ns)),
      key_(key),
      file_(file ? file : ""),
      line_(line),
      site_(std::make_shared<const std::string>(file_.empty() ? "registered at (unknown site)"
                                                              : "registered at " + file_ + ":" + std::to_string(line_))) {
  DK_CHECK(isIdentifier(ns_), kindName(kind_), " ", site(), ": '", ns_,
           "' is not a valid namespace (use a C++ identifier such as 'myops')");
  DK_CHECK(ns_ != "_" || kind_ == IMPL, kindName(kind_), " ", site(),
           ": the '_' namespace is only for backend fallbacks, in DK_LIBRARY_IMPL(_, Key, m)");
  DK_CHECK(kind_ == IMPL || !key_, kindName(kind_), " ", site(), ": only DK_LIBRARY_IMPL takes a dispatch key");
  DK_CHECK(kind_ != IMPL || key_, "DK_LIBRARY_IMPL ", site(), ": a dispatch key is required");
  if (kind_ == DEF) registrations_.push_back(Dispatcher::singleton().registerLibrary(ns_, site()));
}

Library::~Library() {
  // Undo in reverse order of registration.
  while (!registrations_.empty()) registrations_.pop_back();
}

OperatorName Library::qualify(std::string_view name, const char* what) const {
  return qualify(parseOperatorName(name), what);
}

OperatorName Library::qualify(OperatorName op, const char* what) const {
  auto sep = op.name.find("::");
  if (sep == std::string::npos) {
    std::string qualified;  // one allocation: the name is usually past the short-string size
    qualified.reserve(ns_.size() + 2 + op.name.size());
    qualified.append(ns_).append("::").append(op.name);
    op.name = std::move(qualified);
  } else {
    std::string_view given = std::string_view(op.name).substr(0, sep);
    DK_CHECK(given == ns_, kindName(kind_), " for namespace '", ns_, "' ", site(), " cannot ", what, " '",
             op, "': it belongs to namespace '", given, "'. Use a library for that namespace.");
  }
  return op;
}

Library& Library::def(std::string_view schema_text) & {
  defSchema(schema_text);
  return *this;
}

Library& Library::def(std::string_view schema_text, DispatchArgumentBitmap bitmap) & {
  defSchema(schema_text, bitmap.bits);
  return *this;
}

void Library::checkMayDefine() const {
  DK_CHECK(kind_ != IMPL, "def() is not allowed in ", kindName(kind_), " ", site(),
           ": define operators in DK_LIBRARY or DK_LIBRARY_FRAGMENT");
}

Library& Library::def(std::span<const schema_data::SchemaData> schemas) & {
  checkMayDefine();
  for (const schema_data::SchemaData& data : schemas) {
    const char* strings = static_cast<const char*>(data.strings);
    if (std::string_view(strings + data.name).find("::") != std::string_view::npos)
      qualify(OperatorName{strings + data.name, strings + data.overload_name}, "define");  // the namespace's check
  }
  registrations_.push_back(Dispatcher::singleton().registerDefs(schemas, ns_, site_));
  return *this;
}

Library& Library::def(const schema_data::SchemaData& schema) & { return def(std::span(&schema, 1)); }

OperatorName Library::defSchema(std::string_view schema_text, std::optional<uint64_t> bitmap) {
  checkMayDefine();
  auto parsed = parseSchemaOrName(schema_text);
  DK_CHECK(std::holds_alternative<FunctionSchema>(parsed), "def(\"", schema_text, "\") ", site(),
           ": needs a full schema, e.g. \"foo(Tensor x) -> Tensor\"");
  FunctionSchema schema = std::get<FunctionSchema>(std::move(parsed));
  OperatorName name = qualify(schema.operator_name(), "define");
  schema.set_operator_name(name);
  registrations_.push_back(Dispatcher::singleton().registerDef(std::move(schema), site_, bitmap));
  return name;
}

Library& Library::def(std::string_view schema_text, CppFunction fn, RegistrationSite where) & {
  OperatorName name = defSchema(schema_text);
  // All or nothing: a kernel the schema rejects takes the def back with it.
  try {
    return implAt(name.toString(), key_.value_or(DispatchKey::CompositeImplicitAutograd), std::move(fn), where);
  } catch (...) {
    registrations_.pop_back();
    throw;
  }
}

Library& Library::impl(std::string_view name, CppFunction fn, RegistrationSite where) & {
  return implAt(name, std::nullopt, std::move(fn), where);
}

Library& Library::impl(std::string_view name, DispatchKey key, CppFunction fn, RegistrationSite where) & {
  DK_CHECK(!key_ || *key_ == key, "Explicitly provided dispatch key (", key,
           ") is inconsistent with the dispatch key of the enclosing ", kindName(kind_), " block (", *key_, ") ",
           site());
  return implAt(name, key, std::move(fn), where);
}

Library& Library::implAt(std::string_view name, std::optional<DispatchKey> key, CppFunction fn,
                         RegistrationSite where) {
  DK_CHECK(ns_ != "_", "impl(\"", name, "\") ", site(),
           ": the '_' namespace registers backend fallbacks only; use m.fallback(...)");
  OperatorName op = qualify(name, "register a kernel for");
  DispatchKey k = key ? *key : key_.value_or(DispatchKey::CompositeImplicitAutograd);
  std::string debug = fn.debug_ ? *fn.debug_ : site();
  registrations_.push_back(Dispatcher::singleton().registerImpl(op, k, std::move(fn.kernel_), fn.cpp_signature_,
                                                                fn.infer_schema_, std::move(debug), where));
  return *this;
}

Library& Library::fallback(CppFunction fn, RegistrationSite where) & {
  DK_CHECK(kind_ == IMPL && ns_ == "_", "fallback() ", site(),
           ": backend fallbacks are registered in DK_LIBRARY_IMPL(_, Key, m), not in ", kindName(kind_), "(", ns_,
           ")");
  DispatchKey key = *key_;
  std::string debug = fn.debug_ ? *fn.debug_ : site();
  if (!isAliasDispatchKey(key)) {
    registrations_.push_back(
        Dispatcher::singleton().registerFallback(key, std::move(fn.kernel_), std::move(debug), where));
    return *this;
  }
  // An alias key registers the fallback at every runtime key it covers, all or nothing.
  std::vector<RegistrationHandleRAII> added;
  for (DispatchKey k : getRuntimeKeySetForAlias(key)) {
    added.push_back(Dispatcher::singleton().registerFallback(k, fn.kernel_, debug, where));
  }
  for (auto& h : added) registrations_.push_back(std::move(h));
  return *this;
}

}  // namespace dk
