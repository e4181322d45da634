// Introspection: dumpState and dumpComputedTable formats (docs/semantics.md section 8), kernel
// queries, operator listings.
#include <catch2/catch.hpp>

#include <algorithm>

#include "dispatch_test_util.h"
#include "dk/generated/ops/empty.h"

using namespace dk;
using namespace dk::testing;

namespace {
void noopBoxed(const OperatorHandle&, Stack*) {}
}  // namespace

TEST_CASE("introspection: dumpState lists the schema and every registered kernel") {
  Library def(Library::DEF, "t_dump", std::nullopt, "defs.cpp", 12);
  def.def("op.overload(Tensor x) -> int");
  auto cpu = implAt("t_dump", "op.overload", DispatchKey::CPU, tagKernel(1, "cpu_v1"));
  auto cpu2 = implAt("t_dump", "op.overload", DispatchKey::CPU, tagKernel(2, "cpu_v2"));
  auto ag = implAt("t_dump", "op.overload", DispatchKey::Autograd,
                   CppFunction::makeFromBoxedFunction<&noopBoxed>().debug("boxed_autograd"));
  auto ft = implAt("t_dump", "op.overload", DispatchKey::Tracer, CppFunction::makeFallthrough().debug("tracer_skip"));
  auto op = Dispatcher::singleton().findSchemaOrThrow("t_dump::op", "overload");
  CHECK(op.dumpState() ==
        "name: t_dump::op.overload\n"
        "schema: t_dump::op.overload(Tensor x) -> int\n"
        "debug: registered at defs.cpp:12\n"
        "CPU: cpu_v2 :: (Tensor _0) -> int [ boxed unboxed ]\n"
        "CPU (inactive): cpu_v1 :: (Tensor _0) -> int [ boxed unboxed ]\n"
        "Tracer: tracer_skip :: (none) [ fallthrough ]\n"
        "Autograd[alias]: boxed_autograd :: (none) [ boxed ]\n");
  CHECK(op.dumpComputedTable() ==
        "CPU: cpu_v2 [kernel]\n"
        "BackendSelect: fallthrough backend_select_fallthrough (default) [backend fallback]\n"
        "Python: dispatch_mode_fallback (default) [backend fallback]\n"
        "FuncTorchDynamicLayerBackMode: dynamic_layer_back (default) [backend fallback]\n"
        "Functionalize: functionalize (default) [backend fallback]\n"
        "ADInplaceOrView: fallthrough ad_inplace_or_view_fallthrough (default) [backend fallback]\n"
        "AutogradOther: boxed_autograd [autograd kernel]\n"
        "AutogradCPU: boxed_autograd [autograd kernel]\n"
        "AutogradCUDA: boxed_autograd [autograd kernel]\n"
        "AutogradPrivateUse1: boxed_autograd [autograd kernel]\n"
        "AutogradPrivateUse2: boxed_autograd [autograd kernel]\n"
        "AutogradMeta: boxed_autograd [autograd kernel]\n"
        "Tracer: fallthrough tracer_skip [kernel]\n"
        "AutocastCPU: fallthrough autocast_fallthrough (default) [backend fallback]\n"
        "AutocastCUDA: fallthrough autocast_fallthrough (default) [backend fallback]\n"
        "FuncTorchBatched: vmap_fallback (default) [backend fallback]\n"
        "FuncTorchVmapMode: fallthrough vmap_mode_fallthrough (default) [backend fallback]\n"
        "FuncTorchDynamicLayerFrontMode: dynamic_layer_front (default) [backend fallback]\n");
}

TEST_CASE("introspection: the computed table starts with Undefined when slot 0 is filled") {
  Library def(Library::DEF, "t_dump_undefined");
  def.def("op(Tensor x) -> int");
  auto cea = implAt("t_dump_undefined", "op", DispatchKey::CompositeExplicitAutograd, tagKernel(1, "explicit"));
  auto table = Dispatcher::singleton().findSchemaOrThrow("t_dump_undefined::op", "").dumpComputedTable();
  CHECK(table.rfind("Undefined: explicit [default backend kernel]\nCPU: explicit [default backend kernel]\n", 0) == 0);
}

TEST_CASE("introspection: hasKernelForDispatchKey and hasComputedKernelForDispatchKey") {
  Library def(Library::DEF, "t_has");
  def.def("op(Tensor x) -> int");
  auto cia = implAt("t_has", "op", DispatchKey::CompositeImplicitAutograd, tagKernel(3, "implicit"));
  auto cpu = implAt("t_has", "op", DispatchKey::CPU, tagKernel(1, "cpu"));
  auto op = Dispatcher::singleton().findSchemaOrThrow("t_has::op", "");
  CHECK(op.hasKernelForDispatchKey(DispatchKey::CompositeImplicitAutograd));
  CHECK(op.hasKernelForDispatchKey(DispatchKey::CPU));
  CHECK_FALSE(op.hasKernelForDispatchKey(DispatchKey::CUDA));
  CHECK_FALSE(op.hasKernelForDispatchKey(DispatchKey::Autograd));
  CHECK(op.hasComputedKernelForDispatchKey(DispatchKey::CUDA));  // math kernel
  CHECK(op.hasComputedKernelForDispatchKey(DispatchKey::AutogradCPU));  // autograd fallback
  CHECK_FALSE(op.hasComputedKernelForDispatchKey(DispatchKey::Tracer));
  CHECK_THROWS_WITH(op.hasComputedKernelForDispatchKey(DispatchKey::Autograd),
                    "hasComputedKernelForDispatchKey takes a runtime key, not the alias key Autograd");
}

TEST_CASE("introspection: operator names are listed sorted; registrations per key") {
  Library def(Library::DEF, "t_list");
  def.def("zeta(Tensor x) -> int");
  def.def("alpha.b(Tensor x) -> int");
  def.def("alpha.a(Tensor x) -> int");
  auto zeta = implAt("t_list", "zeta", DispatchKey::Meta, tagKernel(1, "zeta_meta"));
  auto names = Dispatcher::singleton().getAllOpNames();
  CHECK(std::is_sorted(names.begin(), names.end()));
  auto a = std::find(names.begin(), names.end(), OperatorName{"t_list::alpha", "a"});
  auto b = std::find(names.begin(), names.end(), OperatorName{"t_list::alpha", "b"});
  CHECK(a != names.end());
  CHECK(b == a + 1);
  auto metas = Dispatcher::singleton().getRegistrationsForDispatchKey(DispatchKey::Meta);
  CHECK(std::find(metas.begin(), metas.end(), "t_list::zeta: zeta_meta") != metas.end());
}

namespace {
Tensor identityKernel(const Tensor& x) { return x; }
}  // namespace

TEST_CASE("introspection: findDanglingImpls lists kernels of operators no library defines") {
  // Every kernel the project ships has its schema.
  CHECK(Dispatcher::singleton().findDanglingImpls().empty());
  {
    Library cpu(Library::IMPL, "t_dangling", DispatchKey::CPU);
    cpu.impl("typo", &identityKernel);
    auto dangling = Dispatcher::singleton().findDanglingImpls();
    REQUIRE(dangling.size() == 1);
    CHECK(dangling[0].operator_name().toString() == "t_dangling::typo");
    {
      Library defs(Library::DEF, "t_dangling");
      defs.def("typo(Tensor x) -> Tensor");
      CHECK(Dispatcher::singleton().findDanglingImpls().empty());
    }
    CHECK(Dispatcher::singleton().findDanglingImpls().size() == 1);  // the def went away
  }
  CHECK(Dispatcher::singleton().findDanglingImpls().empty());
}

TEST_CASE("introspection: a Meta call of an operator with a CPU kernel only warns once, naming it") {
  Library defs(Library::DEF, "t_no_meta");
  defs.def("f(Tensor x) -> Tensor");
  Library cpu(Library::IMPL, "t_no_meta", DispatchKey::CPU);
  cpu.impl("f", &identityKernel);
  OperatorHandle f = Dispatcher::singleton().findSchemaOrThrow("t_no_meta::f", "");
  Tensor meta = dk::empty({2}, kFloat, std::nullopt, Device(DeviceType::Meta));
  WarningCapture warnings;
  for (int i = 0; i < 2; ++i) {
    Stack stack{meta};
    CHECK_THROWS_WITH(f.callBoxed(&stack), Catch::Matchers::StartsWith("Could not run 't_no_meta::f' with arguments "
                                                                       "from the 'Meta' backend"));
  }
  REQUIRE(warnings.messages.size() == 1);
  CHECK(warnings.messages[0] ==
        "t_no_meta::f has a CPU kernel but no Meta kernel, so Meta tensors (FakeTensorMode, opcheck's meta check) "
        "cannot run it: register a Meta kernel, or write it as CompositeExplicitAutograd or structured");
}
