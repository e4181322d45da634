// libFuzzer target: the schema parser (dk/dispatch/function_schema.h).
//
// Any text must either parse or raise dk::Error; anything else (another exception, a crash,
// a sanitizer report) is a finding. What parses must also round-trip (Note [Schema round
// trip]): printing it and parsing the print gives an equal value, and printing that gives
// the same text again.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "dk/dispatch/function_schema.h"
#include "dk/util/error.h"

namespace {

[[noreturn]] void roundTripFailure(std::string_view what, std::string_view input, const std::string& printed) {
  std::fprintf(stderr, "round trip of %.*s failed\n  input:   %.*s\n  printed: %s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(input.size()), input.data(), printed.c_str());
  std::abort();
}

void checkSchema(std::string_view input, const dk::FunctionSchema& schema) {
  const std::string printed = schema.str();
  // The printed form must parse: a dk::Error escaping here is a finding too (not caught below).
  dk::FunctionSchema again = [&] {
    try {
      return dk::parseSchema(printed);
    } catch (const dk::Error& e) {
      std::fprintf(stderr, "printed schema does not parse: %s\n", e.what());
      roundTripFailure("a schema", input, printed);
    }
  }();
  if (!(again == schema) || again.str() != printed) roundTripFailure("a schema", input, printed);
  // Cheap queries must not throw on anything the parser accepted.
  (void)schema.is_mutable();
  for (const dk::Argument& a : schema.arguments()) {
    (void)a.is_out();
    (void)a.type.isTensorLike();
    if (!a.type.equalsIgnoringSize(a.type)) roundTripFailure("a type (equalsIgnoringSize)", input, a.type.str());
  }
}

void checkName(std::string_view input, const dk::OperatorName& name) {
  const std::string printed = name.toString();
  try {
    if (!(dk::parseOperatorName(printed) == name)) roundTripFailure("an operator name", input, printed);
  } catch (const dk::Error&) {
    roundTripFailure("an operator name", input, printed);
  }
}

void checkType(std::string_view input, const dk::Type& type) {
  const std::string printed = type.str();
  try {
    if (!(dk::parseType(printed) == type)) roundTripFailure("a type", input, printed);
  } catch (const dk::Error&) {
    roundTripFailure("a type", input, printed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Each entry point sees the whole input: schema-or-name, then a bare type, then a bare name.
  try {
    auto parsed = dk::parseSchemaOrName(text);
    if (auto* schema = std::get_if<dk::FunctionSchema>(&parsed)) {
      checkSchema(text, *schema);
      checkName(text, schema->operator_name());
    } else {
      checkName(text, std::get<dk::OperatorName>(parsed));
    }
  } catch (const dk::Error&) {
  }
  try {
    checkType(text, dk::parseType(text));
  } catch (const dk::Error&) {
  }
  try {
    checkName(text, dk::parseOperatorName(text));
  } catch (const dk::Error&) {
  }
  return 0;
}
