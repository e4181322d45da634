// An operator author's test outside the project, built against the installed testing library:
//   g++ opcheck_prog.cpp $(pkg-config --cflags --libs dispatchkit-testing)
// (tests/check_installed_package.sh; CMake: dispatchkit::testing, tests/check_installed_cmake.sh).
// Defines an operator with a CPU kernel and opchecks it; prints "opcheck passed: <checks>".
#include <iostream>

#include "dk/dk.h"
#include "dk/testing/opcheck.h"

namespace {
dk::Tensor scaled(const dk::Tensor& x, double factor) { return dk::mul(x, factor); }
}  // namespace

DK_LIBRARY(downstream_opcheck, m) { m.def("scaled(Tensor x, float factor) -> Tensor"); }
DK_LIBRARY_IMPL(downstream_opcheck, CompositeImplicitAutograd, m) { m.impl("scaled", &scaled); }

int main() {
  dk::OperatorHandle op = dk::Dispatcher::singleton().findSchemaOrThrow("downstream_opcheck::scaled", "");
  dk::testing::OpcheckOptions options;
  options.typed_call = dk::testing::typedCall<dk::Tensor(const dk::Tensor&, double)>();
  dk::testing::OpcheckResult result = dk::testing::opcheck(op, {dk::ones({2, 3}, dk::kDouble), 2.5}, options);
  if (!result.passed()) {
    std::cout << result.toString();
    return 1;
  }
  std::cout << "opcheck passed:";
  for (const auto& [check, outcome] : result.outcome) std::cout << " " << check << "=" << outcome;
  std::cout << "\n";
  return 0;
}
