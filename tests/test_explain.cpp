// dk::explain and dk::ExplainGuard (dk/explain.h, Note [explain]): the key sets, the chosen key,
// the slot's rule and the FILE:LINE of the registration call, for a plain CPU call, a tensor that
// requires grad, NoGradGuard, an exclude guard, a backend fallback, a fallthrough, and every hop
// of a real call.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/dispatch/library.h"
#include "dk/explain.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/ones.h"
#include "dk/tensor/tensor.h"

using namespace dk;
using Catch::Matchers::Contains;

namespace {

OperatorHandle addTensor() { return Dispatcher::singleton().findSchemaOrThrow("dk::add", "Tensor"); }

Tensor cpuKernel(const Tensor& x) { return x; }

void countingFallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  op.redispatchBoxed(ks.remove(DispatchKey::TESTING_ONLY_GenericMode), stack);
}

// "file.cpp:LINE" as the registration sites print (the path as compiled, less its "../").
std::string here(int line) { return std::string("tests/test_explain.cpp:") + std::to_string(line); }

}  // namespace

TEST_CASE("explain: one whole explanation of a CPU call") {
  Tensor a = dk::ones({2}), b = dk::ones({2});
  const std::string text = dk::explain(addTensor(), {a, b, 1.0});
  CHECK_THAT(text, Catch::Matchers::StartsWith(
      "call dk::add.Tensor\n"
      "  argument self: DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU)\n"
      "  argument other: DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU)\n"
      "  thread included: DispatchKeySet(BackendSelect, ADInplaceOrView)\n"
      "  thread excluded: DispatchKeySet(AutocastCPU, AutocastCUDA)\n"
      "  dropped as fallthrough: DispatchKeySet(BackendSelect, ADInplaceOrView)\n"
      "  merged key set: DispatchKeySet(CPU, AutogradCPU)\n"
      "  selects: AutogradCPU\n"
      "  slot: autograd kernel, registered at RegisterAutograd.cpp:"));
  // The generated registration names its generated file and the line of its m.impl(...) call.
  CHECK_THAT(text, Catch::Matchers::EndsWith("\n"));
}

TEST_CASE("explain: requires grad, NoGradGuard and an exclude guard") {
  Tensor a = dk::ones({2}), b = dk::ones({2});
  a.requires_grad_(true);
  CHECK_THAT(dk::explain(addTensor(), {a, b, 1.0}), Contains("selects: AutogradCPU\n  slot: autograd kernel"));
  {
    // Grad mode is read by the autograd kernel, not by dispatch (as in PyTorch).
    NoGradGuard no_grad;
    CHECK_THAT(dk::explain(addTensor(), {a, b, 1.0}), Contains("selects: AutogradCPU"));
  }
  {
    ExcludeDispatchKeyGuard below(autograd_dispatch_keyset);
    const std::string text = dk::explain(addTensor(), {a, b, 1.0});
    CHECK_THAT(text, Contains("thread excluded: DispatchKeySet(AutogradOther, AutogradFunctionality"));
    CHECK_THAT(text, Contains("merged key set: DispatchKeySet(CPU)\n  selects: CPU\n"
                              "  slot: kernel: wrapper_CPU_add_Tensor, registered at RegisterCPU_"));
  }
}

TEST_CASE("explain: a library's kernel, a fallthrough, and a backend fallback name their registration lines") {
  Library defs(Library::DEF, "explain_test");
  defs.def("f(Tensor x) -> Tensor");
  Library cpu(Library::IMPL, "explain_test", DispatchKey::CPU);
  const int impl_line = __LINE__ + 1;
  cpu.impl("f", &cpuKernel);
  OperatorHandle f = Dispatcher::singleton().findSchemaOrThrow("explain_test::f", "");
  Tensor x = dk::ones({2});
  const std::string plain = dk::explain(f, {x});
  // No autograd kernel: AutogradCPU's slot is the autograd fallthrough, so the mask drops it.
  CHECK_THAT(plain, Contains("dropped as fallthrough: DispatchKeySet(BackendSelect, ADInplaceOrView, AutogradCPU)"));
  CHECK(plain ==
        "call explain_test::f\n"
        "  argument x: DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU)\n"
        "  thread included: DispatchKeySet(BackendSelect, ADInplaceOrView)\n"
        "  thread excluded: DispatchKeySet(AutocastCPU, AutocastCUDA)\n"
        "  dropped as fallthrough: DispatchKeySet(BackendSelect, ADInplaceOrView, AutogradCPU)\n"
        "  merged key set: DispatchKeySet(CPU)\n"
        "  selects: CPU\n"
        "  slot: kernel, registered at " + here(impl_line) + "\n");
  CHECK(impl_line == 78);  // the line docs/design.md section 11 shows

  Library fallbacks(Library::IMPL, "_", DispatchKey::TESTING_ONLY_GenericMode);
  const int fallback_line = __LINE__ + 1;
  fallbacks.fallback(CppFunction::makeFromBoxedFunction<&countingFallback>());
  IncludeDispatchKeyGuard mode(DispatchKey::TESTING_ONLY_GenericMode);
  const std::string through = dk::explain(f, {x});
  CHECK_THAT(through, Contains("selects: TESTING_ONLY_GenericMode\n  slot: backend fallback, registered at " +
                               here(fallback_line) + "\n"));
}

TEST_CASE("explain: ExplainGuard prints every hop of a real call, redispatches indented") {
  Tensor a = dk::ones({2}), b = dk::ones({2});
  std::ostringstream out;
  {
    ExplainGuard guard(out);
    dk::add(a, b);
  }
  const std::string text = out.str();
  CHECK_THAT(text, Catch::Matchers::StartsWith("call dk::add.Tensor\n  argument self:"));
  CHECK_THAT(text, Contains("\n  redispatch dk::add.Tensor\n    given key set: DispatchKeySet(CPU)\n"
                            "    dropped as fallthrough: DispatchKeySet()\n    merged key set: DispatchKeySet(CPU)\n"
                            "    selects: CPU\n    slot: kernel: wrapper_CPU_add_Tensor, registered at RegisterCPU_"));
  // Off again: nothing more is printed.
  dk::add(a, b);
  CHECK(out.str() == text);
}

TEST_CASE("explain: DK_EXPLAIN=1 prints every call of the process on stderr") {
  // Run twice by tools/test: as part of this file (DK_EXPLAIN unset: nothing is printed) and as
  // the test explain_environment (DK_EXPLAIN=1).
  const char* env = std::getenv("DK_EXPLAIN");
  const bool on = env && std::string(env) == "1";
  std::ostringstream captured;
  std::streambuf* previous = std::cerr.rdbuf(captured.rdbuf());
  dk::add(dk::ones({2}), dk::ones({2}));
  std::cerr.rdbuf(previous);
  if (on) {
    CHECK_THAT(captured.str(), Contains("call dk::add.Tensor\n  argument self:"));
    CHECK_THAT(captured.str(), Contains("  redispatch dk::add.Tensor\n    given key set: DispatchKeySet(CPU)"));
  } else {
    CHECK(captured.str().empty());
  }
}
