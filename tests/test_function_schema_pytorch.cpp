// dk/dispatch/function_schema.h against PyTorch's own operator file: every schema of PyTorch 1.13.1's
// native_functions.yaml parses and prints back unchanged. The file comes from Debian's
// python3-torch package (meson option pytorch_yaml_dir); tests/skip_unless_file.sh runs this
// program only when the file is there, and reports the test as skipped otherwise.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dk/dispatch/function_schema.h"
#include "dk/util/error.h"

using dk::Argument;
using dk::FunctionSchema;
using dk::OperatorName;

#ifndef DK_PYTORCH_NATIVE_FUNCTIONS
#error "DK_PYTORCH_NATIVE_FUNCTIONS must name PyTorch's native_functions.yaml"
#endif

TEST_CASE("schema: every schema in native_functions.yaml round-trips") {
  std::ifstream in(DK_PYTORCH_NATIVE_FUNCTIONS);
  REQUIRE(in.good());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);

  const std::string prefix = "- func: ";
  std::vector<std::string> schemas;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind(prefix, 0) != 0) continue;
    schemas.push_back(lines[i].substr(prefix.size()));
    // The value is never continued on the next line: what follows is a blank line, a comment,
    // a new entry, or another key of this entry ("  name:").
    if (i + 1 < lines.size()) {
      const std::string& next = lines[i + 1];
      size_t first = next.find_first_not_of(' ');
      bool ok = next.empty() || first == std::string::npos || next[0] == '-' || next[first] == '#';
      if (!ok && first > 0) {
        size_t colon = next.find(':', first);
        ok = colon != std::string::npos &&
             next.find_first_not_of(
                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", first) == colon;
      }
      INFO("line " << i + 2 << ": " << next);
      CHECK(ok);
    }
  }
  CHECK(schemas.size() == 2493);

  size_t failures = 0;
  std::map<std::string, int> stats;
  std::set<OperatorName> names;
  for (const std::string& text : schemas) {
    try {
      FunctionSchema s = dk::parseSchema(text);
      if (s.str() != text) {
        ++failures;
        FAIL_CHECK("round trip: " << text << "\n   printed: " << s.str());
      }
      names.insert(s.operator_name());
      if (s.is_mutable()) ++stats["mutable"];
      for (const Argument& a : s.arguments()) {
        if (a.is_out()) ++stats["out"];
        if (a.type.isTensorLike()) ++stats["tensor-like"];
      }
    } catch (const dk::Error& e) {
      ++failures;
      FAIL_CHECK(e.what());
    }
  }
  CHECK(failures == 0);
  CHECK(names.size() == schemas.size());  // operator names are unique
  // Counts for PyTorch 1.13.1's file.
  CHECK(stats["mutable"] == 978);
  CHECK(stats["out"] == 741);
}
