// dk-opcheck: dk::testing::opcheck over the operators of schemas/native_functions.yaml, with
// the samples of tests/opcheck/samples.cpp, against the expected failures of
// tests/opcheck/expected_failures.txt (run by tools/opcheck and by tools/test).
//
//   dk-opcheck --expected FILE [--accept] [OP...]
//
// Prints one row per operator (ok, skip, xfail (an expected failure) or FAIL per check; the
// failures' messages below the table) and exits 1 when a check fails that FILE does not expect, or when FILE expects a
// failure that no longer happens (a stale entry). --accept rewrites FILE instead: entries that
// still fail keep their reasons, new failures get their message as the reason (edit it), stale
// entries go. With OP... (dk::mm, dk::add.Tensor) only those operators run and only their
// entries are compared.
//
// FILE holds one expected failure per line, "OPERATOR CHECK: REASON" ('#' starts a comment).
// CHECK "*" marks an operator that is not run here (REASON says where it is tested instead).
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dk/dispatch/dispatcher.h"
#include "dk/generated/Operators.h"
#include "dk/testing/opcheck.h"
#include "samples.h"

namespace {

const std::vector<std::string> kChecks = {"schema", "meta", "boxed_unboxed", "autograd_registration", "gradcheck"};

struct Expected {
  std::string reason;
  int line = 0;
};
// (operator, check) -> why it fails.
using ExpectedFailures = std::map<std::pair<std::string, std::string>, Expected>;

ExpectedFailures readExpected(const std::string& path, std::vector<std::string>* errors) {
  ExpectedFailures expected;
  std::ifstream in(path);
  if (!in) {
    errors->push_back(path + ": cannot read the expected failures");
    return expected;
  }
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream words(text);
    std::string op, check;
    words >> op >> check;
    std::string reason;
    std::getline(words, reason);
    const bool known = check == "*:" || (check.size() > 1 && check.back() == ':');
    if (!known || reason.find_first_not_of(' ') == std::string::npos) {
      errors->push_back(path + ":" + std::to_string(line) + ": expected 'OPERATOR CHECK: REASON', got '" + text + "'");
      continue;
    }
    check.pop_back();
    expected[{op, check}] = {reason.substr(reason.find_first_not_of(' ')), line};
  }
  return expected;
}

void writeExpected(const std::string& path, const ExpectedFailures& entries) {
  std::ofstream out(path);
  out << "# The operators' expected opcheck failures (tests/opcheck/opcheck_all.cpp): one per line,\n"
         "# \"OPERATOR CHECK: REASON\"; CHECK * marks an operator not run here. tools/opcheck --accept\n"
         "# rewrites this file; a failure that no longer happens fails tools/test until it is removed.\n";
  for (const auto& [key, entry] : entries) out << key.first << " " << key.second << ": " << entry.reason << "\n";
}

std::string qualified(const dk::ops::OperatorInfo& info) {
  return std::string(info.name) + (*info.overload_name ? std::string(".") + info.overload_name : "");
}

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

int main(int argc, char** argv) {
  std::string expected_path;
  bool accept = false;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--expected" && i + 1 < argc) expected_path = argv[++i];
    else if (arg == "--accept") accept = true;
    else if (arg.rfind("--", 0) == 0) {
      std::cerr << "usage: dk-opcheck --expected FILE [--accept] [OP...]\n";
      return 2;
    } else only.insert(arg.find("::") == std::string::npos ? "dk::" + arg : arg);
  }
  if (expected_path.empty()) {
    std::cerr << "usage: dk-opcheck --expected FILE [--accept] [OP...]\n";
    return 2;
  }
  std::vector<std::string> errors;
  ExpectedFailures expected = readExpected(expected_path, &errors);
  ExpectedFailures now;                // this run's failures (and operators not run)
  std::set<std::string> ran;           // the operators looked at in this run
  std::vector<std::string> messages;   // under the table
  std::cout << std::left << std::setw(34) << "operator";
  for (const std::string& c : kChecks) std::cout << std::setw(c.size() + 2) << c;
  std::cout << "\n";
  for (const dk::ops::OperatorInfo& info : dk::ops::all_operators()) {
    const std::string name = qualified(info);
    if (!only.empty() && !only.count(name)) continue;
    ran.insert(name);
    dk::OperatorHandle op = dk::Dispatcher::singleton().findSchemaOrThrow(info.name, info.overload_name);
    std::string why;
    std::optional<std::vector<dk::Stack>> samples = dk::opcheck_samples::samplesFor(op, &why);
    std::cout << std::setw(34) << name;
    if (!samples) {
      now[{name, "*"}] = {why, 0};
      std::cout << "not run: " << why << "\n";
      continue;
    }
    std::map<std::string, std::string> outcome;  // the first failure of each check over the samples
    for (const dk::Stack& sample : *samples) {
      try {
        dk::testing::OpcheckResult r = dk::testing::opcheck(op, sample);
        for (const auto& [check, text] : r.outcome)
          if (!outcome.count(check) || (r.failed(check) && outcome[check] == "ok")) outcome[check] = text;
      } catch (const std::exception& e) {
        for (const std::string& c : kChecks) outcome[c] = std::string("the sample is invalid: ") + firstLine(e.what());
      }
    }
    for (const std::string& c : kChecks) {
      const std::string& text = outcome[c];
      const bool ok = text == "ok", skipped = text.rfind("skipped", 0) == 0;
      const char* cell = ok ? "ok" : skipped ? "skip" : expected.count({name, c}) ? "xfail" : "FAIL";
      std::cout << std::setw(c.size() + 2) << cell;
      if (!ok && !skipped) {
        now[{name, c}] = {firstLine(text), 0};
        messages.push_back(name + " " + c + ": " + firstLine(text));
      }
    }
    std::cout << "\n";
  }
  if (!messages.empty()) std::cout << "\n";
  for (const std::string& m : messages) std::cout << m << "\n";

  if (accept) {
    ExpectedFailures merged;
    for (const auto& [key, entry] : expected)
      if (!ran.count(key.first)) merged[key] = entry;  // not looked at this run: kept
    for (const auto& [key, entry] : now) {
      auto old = expected.find(key);
      merged[key] = old != expected.end() ? old->second : entry;
    }
    writeExpected(expected_path, merged);
    std::cout << "\n" << expected_path << ": " << merged.size() << " expected failures written\n";
    return errors.empty() ? 0 : 1;
  }
  for (const auto& [key, entry] : now)
    if (!expected.count(key) && key.second != "*")
      errors.push_back("unexpected failure: " + key.first + " " + key.second + ": " + entry.reason);
    else if (!expected.count(key))
      errors.push_back("not run and not listed: " + key.first + " (" + entry.reason + ")");
  for (const auto& [key, entry] : expected)
    if (ran.count(key.first) && !now.count(key))
      errors.push_back(expected_path + ":" + std::to_string(entry.line) + ": stale entry: " + key.first + " " +
                       key.second + " no longer fails (remove it, or run tools/opcheck --accept)");
  std::cout << "\n" << ran.size() << " operators, " << now.size() << " expected failures, " << errors.size()
            << " problems\n";
  for (const std::string& e : errors) std::cout << e << "\n";
  return errors.empty() ? 0 : 1;
}
