// The registration API: macros, run-time libraries, RAII undo, and every registration error
// of docs/semantics.md sections 5 and 7 (a rejected registration changes nothing).
#include <catch2/catch.hpp>

#include <algorithm>

#include "dispatch_test_util.h"

using namespace dk;
using namespace dk::testing;

namespace {
void noopBoxed(const OperatorHandle&, Stack*) {}

// The backend fallback registered at `k`, as getRegistrationsForDispatchKey lists it.
std::vector<std::string> fallbacksAt(DispatchKey k) {
  std::vector<std::string> out;
  for (const std::string& r : Dispatcher::singleton().getRegistrationsForDispatchKey(k))
    if (r.rfind("(fallback)", 0) == 0) out.push_back(r);
  return out;
}
}  // namespace

namespace {
int64_t add_sizes(const Tensor& a, const Tensor& b) { return a.numel() + b.numel(); }
int64_t static_kernel(const Tensor& x, int64_t n) { return x.numel() * n; }

bool hasOp(const std::string& name, const std::string& overload = "") {
  auto names = Dispatcher::singleton().getAllOpNames();
  return std::find(names.begin(), names.end(), OperatorName{name, overload}) != names.end();
}

// Everything the dispatcher knows about an operator, for before/after comparisons.
std::string stateOf(const std::string& name) {
  auto op = Dispatcher::singleton().findOp(OperatorName{name, ""});
  return op ? op->dumpState() + op->dumpComputedTable() : std::string("(absent)");
}
}  // namespace

// ---- registration at static-initialization time ----
DK_LIBRARY(t_static, m) { m.def("scale(Tensor x, *, int n=1) -> int"); }
DK_LIBRARY_FRAGMENT(t_static, m) { m.def("first(Tensor x) -> int"); }
DK_LIBRARY_FRAGMENT(t_static, m) { m.def("second(Tensor x) -> int"); }
DK_LIBRARY_IMPL(t_static, CPU, m) { m.impl("scale", DK_FN(static_kernel)); }
DK_LIBRARY_IMPL(t_static, CompositeImplicitAutograd, m) {
  m.impl("first", [](const Tensor&) -> int64_t { return 1; });
  m.impl("second", [](const Tensor&) -> int64_t { return 2; });
}

TEST_CASE("registration: DK_LIBRARY, DK_LIBRARY_FRAGMENT and DK_LIBRARY_IMPL register at startup") {
  auto scale = Dispatcher::singleton().findSchemaOrThrow("t_static::scale", "");
  CHECK(scale.schema().str() == "t_static::scale(Tensor x, *, int n=1) -> int");
  CHECK(scale.typed<int64_t(const Tensor&, int64_t)>().call(make_tensor({2, 3}), 2) == 12);
  CHECK(unaryIntOp("t_static", "first").call(cpuTensor()) == 1);
  CHECK(unaryIntOp("t_static", "second").call(cpuTensor()) == 2);
  CHECK(scale.dumpState().find("debug: registered at ") != std::string::npos);
  CHECK(scale.dumpState().find("test_registration.cpp:") != std::string::npos);
}

TEST_CASE("registration: a run-time Library undoes everything when destroyed") {
  {
    Library lib(Library::DEF, "t_runtime");
    lib.def("add_sizes(Tensor a, Tensor b) -> int");
    lib.impl("add_sizes", DispatchKey::CPU, &add_sizes);
    CHECK(hasOp("t_runtime::add_sizes"));
    auto op = Dispatcher::singleton().findSchemaOrThrow("t_runtime::add_sizes", "");
    CHECK(op.typed<int64_t(const Tensor&, const Tensor&)>().call(make_tensor({2}), make_tensor({3})) == 5);
  }
  CHECK_FALSE(hasOp("t_runtime::add_sizes"));
  CHECK_FALSE(Dispatcher::singleton().findSchema(OperatorName{"t_runtime::add_sizes", ""}).has_value());
  // The namespace is free again for a new DK_LIBRARY.
  Library again(Library::DEF, "t_runtime");
  again.def("add_sizes(Tensor a, Tensor b) -> int");
  CHECK(hasOp("t_runtime::add_sizes"));
}

TEST_CASE("registration: kernels may arrive before their schema; the operator exists from the first") {
  auto impl = std::make_unique<Library>(Library::IMPL, "t_impl_first", DispatchKey::CPU);
  impl->impl("op", [](const Tensor&) -> int64_t { return 5; });
  CHECK(Dispatcher::singleton().findOp(OperatorName{"t_impl_first::op", ""}).has_value());
  CHECK_FALSE(Dispatcher::singleton().findSchema(OperatorName{"t_impl_first::op", ""}).has_value());
  CHECK(hasOp("t_impl_first::op"));
  CHECK_THROWS_WITH(Dispatcher::singleton().findSchemaOrThrow("t_impl_first::op", ""),
                    "Could not find schema for t_impl_first::op: kernels were registered for it, but no def() with "
                    "its schema");
  CHECK_THROWS_WITH(Dispatcher::singleton().findSchemaOrThrow("t_nowhere::op", "x"),
                    "Could not find schema for t_nowhere::op.x: no operator with this name and overload is registered");
  {
    Library def(Library::DEF, "t_impl_first");
    def.def("op(Tensor x) -> int");
    CHECK(unaryIntOp("t_impl_first", "op").call(cpuTensor()) == 5);
  }
  CHECK(hasOp("t_impl_first::op"));  // the kernel is still there
  impl.reset();
  CHECK_FALSE(hasOp("t_impl_first::op"));
}

TEST_CASE("registration: defining the same operator twice names both sites") {
  Library lib(Library::DEF, "t_dup", std::nullopt, "first.cpp", 10);
  lib.def("op(Tensor x) -> Tensor");
  std::string before = stateOf("t_dup::op");
  Library frag(Library::FRAGMENT, "t_dup", std::nullopt, "second.cpp", 20);
  CHECK_THROWS_WITH(frag.def("op(Tensor x) -> Tensor"),
                    "Tried to register an operator (t_dup::op(Tensor x) -> Tensor) with the same name and overload "
                    "name multiple times. Each overload's schema should only be registered with a single call to "
                    "def(). Duplicate registration: registered at second.cpp:20. Original registration: registered "
                    "at first.cpp:10");
  CHECK(stateOf("t_dup::op") == before);
  frag.def("op.other(Tensor x) -> Tensor");  // another overload is fine
  CHECK(hasOp("t_dup::op", "other"));
}

TEST_CASE("registration: a second DK_LIBRARY for a namespace points to DK_LIBRARY_FRAGMENT") {
  Library first(Library::DEF, "t_twice", std::nullopt, "a.cpp", 1);
  CHECK_THROWS_WITH(Library(Library::DEF, "t_twice", std::nullopt, "b.cpp", 2),
                    "Only a single DK_LIBRARY can be used to register the namespace 't_twice'; but there is a "
                    "duplicate DK_LIBRARY registered at b.cpp:2 (the first one is registered at a.cpp:1). If you "
                    "want several places to define operators in one namespace, use DK_LIBRARY_FRAGMENT.");
  Library fragment(Library::FRAGMENT, "t_twice");  // fine
}

TEST_CASE("registration: schema and kernel are checked against each other whichever comes first") {
  SECTION("schema first") {
    Library lib(Library::DEF, "t_mismatch_a", std::nullopt, "defs.cpp", 3);
    lib.def("op(Tensor x, int n) -> int");
    std::string before = stateOf("t_mismatch_a::op");
    Library impl(Library::IMPL, "t_mismatch_a", DispatchKey::CPU, "kernels.cpp", 7);
    CHECK_THROWS_WITH(impl.impl("op", [](const Tensor&, double) -> int64_t { return 0; }),
                      "Inferred operator schema for a C++ kernel function doesn't match the expected function "
                      "schema.\n  operator: t_mismatch_a::op\n  expected schema: t_mismatch_a::op(Tensor x, int n) "
                      "-> int\n    registered at defs.cpp:3\n  inferred schema: (Tensor _0, float _1) -> int\n    "
                      "registered at kernels.cpp:7\n  reason: Type mismatch in argument 2: int vs float.");
    CHECK(stateOf("t_mismatch_a::op") == before);
    CHECK_THROWS_WITH(impl.impl("op", [](const Tensor&) -> int64_t { return 0; }),
                      Catch::Contains("reason: The number of arguments is different. 2 vs 1."));
    CHECK_THROWS_WITH(impl.impl("op", [](const Tensor&, int64_t) -> Tensor { return Tensor(); }),
                      Catch::Contains("reason: Type mismatch in return 1: int vs Tensor."));
    CHECK(stateOf("t_mismatch_a::op") == before);
  }
  SECTION("kernel first") {
    Library impl(Library::IMPL, "t_mismatch_b", DispatchKey::CPU, "kernels.cpp", 7);
    impl.impl("op", [](const Tensor&, double) -> int64_t { return 0; });
    std::string before = stateOf("t_mismatch_b::op");
    Library lib(Library::DEF, "t_mismatch_b", std::nullopt, "defs.cpp", 3);
    CHECK_THROWS_WITH(lib.def("op(Tensor x, int n) -> int"),
                      Catch::Contains("operator: t_mismatch_b::op") &&
                          Catch::Contains("reason: Type mismatch in argument 2: int vs float."));
    CHECK(stateOf("t_mismatch_b::op") == before);
    CHECK_FALSE(Dispatcher::singleton().findSchema(OperatorName{"t_mismatch_b::op", ""}).has_value());
  }
  SECTION("SymInt and fixed-size lists accept int64_t and any list") {
    Library lib(Library::DEF, "t_symint");
    lib.def("op(Tensor x, SymInt[2] size, SymInt n) -> int");
    lib.impl("op", DispatchKey::CPU, [](const Tensor&, IntArrayRef size, int64_t n) -> int64_t {
      return static_cast<int64_t>(size.size()) + n;
    });
    auto op = Dispatcher::singleton().findSchemaOrThrow("t_symint::op", "");
    CHECK(op.typed<int64_t(const Tensor&, IntArrayRef, int64_t)>().call(cpuTensor(), {4, 5}, 3) == 5);
  }
}

TEST_CASE("registration: def(schema, fn) with a kernel the schema rejects defines nothing") {
  Library lib(Library::DEF, "t_def_fn");
  CHECK_THROWS_WITH(lib.def("op(Tensor x, int n) -> int", [](const Tensor&, double) -> int64_t { return 0; }),
                    Catch::Contains("reason: Type mismatch in argument 2: int vs float."));
  CHECK_FALSE(hasOp("t_def_fn::op"));
  CHECK_FALSE(Dispatcher::singleton().findSchema(OperatorName{"t_def_fn::op", ""}).has_value());
  CHECK(stateOf("t_def_fn::op") == "(absent)");
  // Nothing is left half-done: the same def with a matching kernel now succeeds.
  lib.def("op(Tensor x, int n) -> int", [](const Tensor& x, int64_t n) -> int64_t { return x.numel() * n; });
  auto op = Dispatcher::singleton().findSchemaOrThrow("t_def_fn::op", "").typed<int64_t(const Tensor&, int64_t)>();
  CHECK(op.call(cpuTensor(), 3) == 3);
}

TEST_CASE("registration: error messages escape control bytes of names they quote") {
  const std::string ns("bad\0ns\x01", 7);
  try {
    Library lib(Library::DEF, ns);
    FAIL("a namespace with a NUL byte was accepted");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what == "DK_LIBRARY registered at (unknown site): 'bad\\x00ns\\x01' is not a valid namespace (use a C++ "
                  "identifier such as 'myops')");
  }
  Library lib(Library::DEF, "t_escape");
  CHECK_THROWS_WITH(lib.def(std::string("op\0x(Tensor x) -> Tensor", 24)), Catch::Contains("op\\x00x"));
  // Line breaks and tabs are kept as they are.
  CHECK(std::string(Error("a\tb\nc").what()) == "a\tb\nc");
}

TEST_CASE("registration: kernels of one operator must share a C++ signature") {
  Library lib(Library::IMPL, "t_cppsig", DispatchKey::CPU, "one.cpp", 1);
  lib.impl("op", [](const Tensor&) -> int64_t { return 0; });
  std::string before = stateOf("t_cppsig::op");
  Library other(Library::IMPL, "t_cppsig", DispatchKey::CUDA, "two.cpp", 2);
  CHECK_THROWS_WITH(other.impl("op", [](Tensor) -> int64_t { return 0; }),
                    "Mismatch in kernel C++ signatures\n  operator: t_cppsig::op\n    kernel 1: long (dk::Tensor "
                    "const&)\n    registered at one.cpp:1\n    kernel 2: long (dk::Tensor)\n    registered at two.cpp:2");
  CHECK(stateOf("t_cppsig::op") == before);
}

TEST_CASE("registration: a typed handle with the wrong signature is rejected, printing both") {
  Library lib(Library::DEF, "t_typed", std::nullopt, "defs.cpp", 4);
  lib.def("op(Tensor x) -> int");
  auto op = Dispatcher::singleton().findSchemaOrThrow("t_typed::op", "");
  // No kernel yet: checked against the schema.
  CHECK_THROWS_WITH(op.typed<double(const Tensor&)>(),
                    "Tried to access or call an operator with a wrong signature.\n  operator: t_typed::op\n    "
                    "schema:             t_typed::op(Tensor x) -> int\n        registered at defs.cpp:4\n    "
                    "accessed/called as: double (dk::Tensor const&) ((Tensor _0) -> float)\n  reason: Type mismatch "
                    "in return 1: int vs float.");
  lib.impl("op", DispatchKey::CPU, [](const Tensor&) -> int64_t { return 1; });
  // With a kernel: checked against the kernel's exact C++ signature.
  CHECK_THROWS_WITH(op.typed<int64_t(Tensor)>(),
                    Catch::StartsWith("Tried to access or call an operator with a wrong signature.\n  operator: "
                                      "t_typed::op\n    correct signature:  long (dk::Tensor const&)\n") &&
                        Catch::Contains("accessed/called as: long (dk::Tensor)"));
  CHECK(op.typed<int64_t(const Tensor&)>().call(cpuTensor()) == 1);
}

TEST_CASE("registration: duplicate backend fallbacks are rejected") {
  Library first(Library::IMPL, "_", DispatchKey::PrivateUse2, "fb1.cpp", 1);
  first.fallback(CppFunction::makeFromBoxedFunction<&noopBoxed>());
  Library second(Library::IMPL, "_", DispatchKey::PrivateUse2, "fb2.cpp", 2);
  CHECK_THROWS_WITH(second.fallback(CppFunction::makeFromBoxedFunction<&noopBoxed>()),
                    "Tried to register multiple backend fallbacks for the same dispatch key PrivateUse2; previous "
                    "registration registered at fb1.cpp:1, new registration registered at fb2.cpp:2");
  // The defaults count as registrations too.
  Library third(Library::IMPL, "_", DispatchKey::AutogradCPU);
  CHECK_THROWS_WITH(third.fallback(CppFunction::makeFallthrough()),
                    Catch::StartsWith("Tried to register multiple backend fallbacks for the same dispatch key "
                                      "AutogradCPU; previous registration autograd_fallback (default)"));
}

TEST_CASE("registration: an alias-key fallback covers every runtime key, all or nothing") {
  {
    Library lib(Library::IMPL, "_", DispatchKey::CompositeExplicitAutograd);
    lib.fallback(CppFunction::makeFromBoxedFunction<&noopBoxed>().debug("everywhere"));
    for (DispatchKey k : {DispatchKey::CPU, DispatchKey::QuantizedCUDA, DispatchKey::SparseMeta}) {
      CHECK(fallbacksAt(k) == std::vector<std::string>{"(fallback): everywhere"});
    }
  }
  CHECK(fallbacksAt(DispatchKey::CPU).empty());
  // CompositeImplicitAutograd covers the backend keys (free), Functionalize and the autograd
  // keys (taken by functionalization's and autograd's default fallbacks): rejected, and the free
  // keys it reached first are released again.
  Library clash(Library::IMPL, "_", DispatchKey::CompositeImplicitAutograd);
  CHECK_THROWS_WITH(clash.fallback(CppFunction::makeFromBoxedFunction<&noopBoxed>()),
                    Catch::StartsWith("Tried to register multiple backend fallbacks for the same dispatch key "
                                      "Functionalize"));
  CHECK(fallbacksAt(DispatchKey::CPU).empty());
  CHECK(fallbacksAt(DispatchKey::QuantizedCUDA).empty());
}

TEST_CASE("registration: namespaces, keys and library kinds are checked") {
  Library lib(Library::DEF, "t_ns", std::nullopt, "ns.cpp", 5);
  CHECK_THROWS_WITH(lib.def("other::op(Tensor x) -> Tensor"),
                    "DK_LIBRARY for namespace 't_ns' registered at ns.cpp:5 cannot define 'other::op': it belongs to "
                    "namespace 'other'. Use a library for that namespace.");
  lib.def("t_ns::op(Tensor x) -> Tensor");  // its own namespace, spelled out, is fine
  CHECK_THROWS_WITH(Library(Library::DEF, "bad-name"),
                    "DK_LIBRARY registered at (unknown site): 'bad-name' is not a valid namespace (use a C++ "
                    "identifier such as 'myops')");
  CHECK_THROWS_WITH(Library(Library::DEF, "_"), Catch::Contains("the '_' namespace is only for backend fallbacks"));
  Library impl(Library::IMPL, "t_ns", DispatchKey::CPU);
  CHECK_THROWS_WITH(impl.def("op2(Tensor x) -> Tensor"), Catch::StartsWith("def() is not allowed in DK_LIBRARY_IMPL"));
  CHECK_THROWS_WITH(impl.fallback(CppFunction::makeFallthrough()),
                    Catch::Contains("backend fallbacks are registered in DK_LIBRARY_IMPL(_, Key, m)"));
  CHECK_THROWS_WITH(impl.impl("op", DispatchKey::CUDA, [](const Tensor& x) -> Tensor { return x; }),
                    Catch::StartsWith("Explicitly provided dispatch key (CUDA) is inconsistent with the dispatch key of "
                                      "the enclosing DK_LIBRARY_IMPL block (CPU)"));
  Library fallbacks(Library::IMPL, "_", DispatchKey::CPU);
  CHECK_THROWS_WITH(fallbacks.impl("op", [](const Tensor& x) -> Tensor { return x; }),
                    Catch::Contains("the '_' namespace registers backend fallbacks only"));
  CHECK_THROWS_WITH(lib.def("op3(Tensor x"), Catch::StartsWith("schema parse error"));
  CHECK_THROWS_WITH(lib.def("op4"), Catch::Contains("needs a full schema"));
}

TEST_CASE("registration: more than 64 arguments is an error at registration") {
  std::string schema = "wide(";
  for (int i = 0; i < 65; ++i) schema += (i ? ", Tensor a" : "Tensor a") + std::to_string(i);
  schema += ") -> Tensor";
  Library lib(Library::DEF, "t_wide");
  CHECK_THROWS_WITH(lib.def(schema), "operator 't_wide::wide' has 65 arguments; the dispatcher supports at most 64");
  CHECK_FALSE(hasOp("t_wide::wide"));
}

// ---- defs from schema data: entries made on first lookup (Note [Entries made on first use]) ----

namespace {
using namespace dk::schema_data;
// p(Tensor self) -> Tensor, q(Tensor self) -> Tensor, r(Tensor self) -> Tensor, and
// t_pending::s written qualified, as the generator lays them out.
constexpr char kPool[] = "\0p\0q\0r\0self\0t_pending::s\0other::s";
enum : StringOffset { p_ = 1, q_ = 3, r_ = 5, self_ = 7, s_qualified = 12, s_other = 25 };
constexpr ArgumentData kSelf[] = {{.name = self_, .type = {TypeKind::Tensor}}};
constexpr ArgumentData kResult[] = {{.type = {TypeKind::Tensor}}};
constexpr SchemaData schemaNamed(StringOffset name) {
  return SchemaData{.strings = kPool, .name = name, .arguments = kSelf, .returns = kResult, .dispatch_bitmap = 0b1};
}
constexpr SchemaData kPQ[] = {schemaNamed(p_), schemaNamed(q_)};
constexpr SchemaData kRR[] = {schemaNamed(r_), schemaNamed(r_)};
constexpr SchemaData kRP[] = {schemaNamed(r_), schemaNamed(p_)};
constexpr SchemaData kR = schemaNamed(r_);
constexpr SchemaData kS[] = {schemaNamed(s_qualified)};
constexpr SchemaData kOther = schemaNamed(s_other);

int fallback_calls = 0;
void countingFallback(const OperatorHandle& op, Stack* stack) {
  ++fallback_calls;
  stack->clear();
  stack->push_back(IValue(op.operator_name().name));
}
}  // namespace

TEST_CASE("registration: defs from schema data are listed, refused and withdrawn before their entries exist") {
  Library lib(Library::FRAGMENT, "t_pending", std::nullopt, "pending.cpp", 7);
  lib.def(std::span(kPQ));
  CHECK(hasOp("t_pending::p"));
  CHECK(hasOp("t_pending::q"));
  // A second def of a pending name names both sites; so does a def from text.
  CHECK_THROWS_WITH(lib.def(kPQ[0]), "Tried to register an operator (t_pending::p(Tensor self) -> Tensor) with the "
                                     "same name and overload name multiple times. Each overload's schema should only "
                                     "be registered with a single call to def(). Duplicate registration: registered "
                                     "at pending.cpp:7. Original registration: registered at pending.cpp:7");
  CHECK_THROWS_WITH(lib.def("q(Tensor self) -> Tensor"), Catch::StartsWith("Tried to register an operator (t_pending::q("));
  // A refused def refuses its whole call: r is not left behind.
  CHECK_THROWS_WITH(lib.def(std::span(kRR)), Catch::StartsWith("Tried to register an operator (t_pending::r("));
  CHECK_THROWS_WITH(lib.def(std::span(kRP)), Catch::StartsWith("Tried to register an operator (t_pending::p("));
  CHECK_FALSE(hasOp("t_pending::r"));
  CHECK_FALSE(Dispatcher::singleton().findOp(OperatorName{"t_pending::r", ""}).has_value());
  // A name written qualified keeps its namespace, which must be the library's.
  lib.def(std::span(kS));
  CHECK(Dispatcher::singleton().findSchemaOrThrow("t_pending::s", "").schema().str() == "t_pending::s(Tensor self) -> Tensor");
  CHECK_THROWS_WITH(lib.def(kOther), Catch::Contains("cannot define 'other::s': it belongs to namespace 'other'"));
  {
    Library scoped(Library::FRAGMENT, "t_pending");
    scoped.def(kR);
    CHECK(hasOp("t_pending::r"));
  }
  // Withdrawn without ever being looked up: the name is free again.
  CHECK_FALSE(hasOp("t_pending::r"));
  Library again(Library::FRAGMENT, "t_pending");
  again.def(kR);
  CHECK(Dispatcher::singleton().findSchema(OperatorName{"t_pending::r", ""}).has_value());
}

TEST_CASE("registration: an entry made on first lookup has the fallbacks and kernels registered by then") {
  Library lib(Library::FRAGMENT, "t_pending_table");
  lib.def(std::span(kPQ));
  // No kernel and no fallback: the usual error.
  {
    auto p = Dispatcher::singleton().findSchemaOrThrow("t_pending_table::p", "");
    Stack stack{IValue(cpuTensor())};
    CHECK_THROWS_WITH(p.callBoxed(stack), Catch::StartsWith("Could not run 't_pending_table::p' with arguments from "
                                                            "the 'CPU' backend. 't_pending_table::p' is only available "
                                                            "for these backends: ["));
  }
  // q's entry is made after a CPU fallback came: its table has it.
  Library fb(Library::IMPL, "_", DispatchKey::CPU);
  fb.fallback(CppFunction::makeFromBoxedFunction<&countingFallback>());
  fallback_calls = 0;
  auto q = Dispatcher::singleton().findSchemaOrThrow("t_pending_table::q", "");
  Stack stack{IValue(cpuTensor())};
  q.callBoxed(stack);
  CHECK(fallback_calls == 1);
  CHECK(stack.back().toStringRef() == "t_pending_table::q");
  // Kernels first, then the def: the def joins the existing entry, and leaves it when withdrawn.
  Library impl(Library::IMPL, "t_pending_table", DispatchKey::CompositeImplicitAutograd);
  impl.impl("r", [](const Tensor& x) { return x; });
  {
    Library def_r(Library::FRAGMENT, "t_pending_table");
    def_r.def(kR);
    auto r = Dispatcher::singleton().findSchemaOrThrow("t_pending_table::r", "");
    CHECK(r.schema().str() == "t_pending_table::r(Tensor self) -> Tensor");
    CHECK(r.typed<Tensor(const Tensor&)>().call(cpuTensor()).numel() == 1);
  }
  CHECK_FALSE(Dispatcher::singleton().findSchema(OperatorName{"t_pending_table::r", ""}).has_value());
  CHECK(Dispatcher::singleton().findOp(OperatorName{"t_pending_table::r", ""}).has_value());
}
