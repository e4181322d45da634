"""Operators of another namespace ("- func: c10d::all_reduce_(...)"; Note [Operator namespaces] in
codegen/dest/common.py): what the loader accepts and refuses, and what the generator makes of them."""

import unittest

from codegen import gen
from codegen.writer import FileManager
from tests.generator import support

ENTRIES = """
- func: add(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: add_cpu

- func: c10d::ping_(Tensor(a!) self, str group) -> Tensor(a!)
  dispatch:
    CompositeExplicitAutograd: dk::distributed::ping_inplace

- func: c10d::wave(str group) -> ()
  dispatch:
    CPU: dk::distributed::wave
"""


class NamespaceLoadingTest(support.NativeYamlTestCase):
    def test_the_prefix_names_the_namespace(self):
        add, ping, wave = self.parse(ENTRIES)
        self.assertEqual(add.namespace, "dk")
        self.assertEqual((ping.namespace, str(ping.func.name)), ("c10d", "ping_"))
        self.assertEqual(str(ping.func), "ping_(Tensor(a!) self, str group) -> Tensor(a!)")
        self.assertEqual(wave.namespace, "c10d")

    def test_reserved_namespaces_are_refused(self):
        for ns in ("dk", "aten", "ops", "native"):
            with self.subTest(ns):
                (error,) = self.errors(f"- func: {ns}::f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f_cpu\n")
                self.assertIn(f"operator namespace '{ns}' is reserved", error)

    def test_dk_layers_are_refused_for_other_namespaces(self):
        (error,) = self.errors("- func: c10d::f(Tensor self) -> Tensor\n  variants: function, method\n"
                               "  dispatch:\n    CPU: f_cpu\n")
        self.assertIn("has the function variant only", error)
        (error,) = self.errors("- func: c10d::f(Tensor self) -> Tensor\n  dispatch:\n    AutogradCPU: f_cpu\n")
        self.assertIn("CPU, CUDA, Meta and the composite keys only, not AutogradCPU", error)

    def test_names_are_unique_across_namespaces(self):
        (error,) = self.errors("- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f_cpu\n\n"
                               "- func: c10d::f(Tensor self) -> Tensor\n  dispatch:\n    CPU: g_cpu\n")
        self.assertIn("duplicate operator 'f'", error)


class NamespaceGenerationTest(support.NativeYamlTestCase):
    def setUp(self):
        super().setUp()
        files = FileManager()
        gen.generate(self.parse(ENTRIES), files)
        self.out = {name: files.contents(name) for name in files.names()}

    def test_schemas_register_in_a_library_block_per_namespace(self):
        schema = self.out["RegisterSchema.cpp"]
        self.assertIn("DK_LIBRARY(dk, m) {\n  m.def(::dk::schema_data::tables_dk::kSchemas);", schema)
        self.assertIn("DK_LIBRARY(c10d, m) {\n  m.def(::dk::schema_data::tables_dk::kSchemas_c10d);", schema)

    def test_kernels_register_in_their_namespace(self):
        cpu = self.out["RegisterCPU.cpp"]
        self.assertIn("DK_LIBRARY_IMPL(dk, CPU, m) {\n  m.impl(\"add\"", cpu)
        self.assertIn("DK_LIBRARY_IMPL(c10d, CPU, m) {\n  m.impl(\"wave\"", cpu)
        self.assertIn("DK_LIBRARY_IMPL(c10d, CompositeExplicitAutograd, m)",
                      self.out["RegisterCompositeExplicitAutograd.cpp"])

    def test_public_function_and_struct(self):
        self.assertIn("namespace dk::c10d {", self.out["dk/generated/ops/ping.h"])
        self.assertIn("inline Tensor ping_(const Tensor& self, std::string_view group)", self.out["dk/generated/ops/ping.h"])
        self.assertIn('static constexpr const char* name = "c10d::ping_";', self.out["dk/generated/ops/ping_ops.h"])

    def test_no_layers_for_other_namespaces(self):
        self.assertNotIn("ping", self.out["RegisterAutograd.cpp"])
        self.assertNotIn("ping", self.out["RegisterADInplaceOrView.cpp"])
        self.assertNotIn("ping", self.out["RegisterFunctionalization.cpp"])
        self.assertNotIn("ping", self.out["dk/generated/TensorMethodDecls.inc"])


if __name__ == "__main__":
    unittest.main()
