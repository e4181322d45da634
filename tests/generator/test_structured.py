"""Structured families (codegen/structured.py): the rules, the kernels each member gets, and what
the generator emits for them (meta and impl classes, one wrapper per form and key)."""

import os
import unittest

from codegen.model import BackendMetadata, DispatchKey as K
from codegen.native_yaml import load_tags
from tests.generator import support
from tests.generator.test_generated import generate_in_memory

FAMILY = """
- func: gelu(Tensor self, *, str approximate='none') -> Tensor
  structured_delegate: gelu.out
  variants: function, method
- func: gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)
  structured_delegate: gelu.out
  variants: method
- func: gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU: gelu_out_cpu
    CUDA: gelu_out_cuda
    SparseCPU: gelu_out_sparse
"""


class RulesTest(support.NativeYamlTestCase):
    def test_members_get_the_family_kernels(self):
        functional, inplace, out = self.parse(FAMILY)
        family = {K.CPU: BackendMetadata("gelu_out_cpu", structured=True),
                  K.CUDA: BackendMetadata("gelu_out_cuda", structured=True),
                  K.Meta: BackendMetadata("structured_gelu", "dk::meta", structured=True)}
        self.assertEqual(dict(functional.dispatch), family)
        self.assertEqual(dict(inplace.dispatch), family)
        # A kernel at a key that is not structured (SparseCPU) stays the out= operator's own.
        self.assertEqual(dict(out.dispatch), {**family, K.SparseCPU: BackendMetadata("gelu_out_sparse")})

    def test_out_needs_a_functional(self):
        self.assertError("""
            - func: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
              structured: True
              dispatch:
                CPU: gelu_out_cpu
            """, "P:1: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!): structured operator 'gelu.out' has "
                 "no functional form: give one entry 'structured_delegate: gelu.out'")

    def test_meta_is_generated_not_given(self):
        self.assertError("""
            - func: gelu(Tensor self) -> Tensor
              structured_delegate: gelu.out
            - func: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
              structured: True
              dispatch:
                CPU: gelu_out_cpu
                Meta: gelu_out_meta
            """, "P:3: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!): structured operator 'gelu.out' gets "
                 "its Meta kernel from its meta function; remove 'Meta' from its dispatch")

    def test_delegate_takes_the_out_arguments(self):
        self.assertError("""
            - func: gelu(Tensor self, int n) -> Tensor
              structured_delegate: gelu.out
            - func: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
              structured: True
              dispatch:
                CPU: gelu_out_cpu
            """, "P:1: gelu(Tensor self, int n) -> Tensor: a structured delegate takes the arguments of 'gelu.out' "
                 "less its outputs (Tensor self), not (Tensor self, int n)")

    def test_delegate_has_no_kernel_at_family_keys(self):
        self.assertError("""
            - func: gelu(Tensor self) -> Tensor
              structured_delegate: gelu.out
              dispatch:
                CPU: gelu_cpu
                SparseCPU: gelu_sparse
            - func: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
              structured: True
              dispatch:
                CPU: gelu_out_cpu
            """, "P:1: gelu(Tensor self) -> Tensor: kernels at CPU come from structured_delegate 'gelu.out'; "
                 "remove them")

    def test_one_functional_delegate(self):
        self.assertError("""
            - func: gelu(Tensor self) -> Tensor
              structured_delegate: gelu.out
            - func: gelu.other(Tensor self) -> Tensor
              structured_delegate: gelu.out
            - func: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
              structured: True
              dispatch:
                CPU: gelu_out_cpu
            """, "P:3: gelu.other(Tensor self) -> Tensor: 'gelu.out' already has a functional delegate")

    def test_no_composite_kernel(self):
        errors = self.errors("""
            - func: gelu(Tensor self) -> Tensor
              structured_delegate: gelu.out
            - func: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
              structured: True
              dispatch:
                CompositeExplicitAutograd: gelu_out
            """)
        self.assertEqual(errors, ["P:3: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!): structured operator "
                                  "'gelu.out' has backend kernels only, not composite ones"])


class EmitTest(support.TempDirTestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="dk-structured-")
        path = os.path.join(cls.tmp, "native_functions.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(FAMILY.lstrip("\n").replace("    SparseCPU: gelu_out_sparse\n", ""))
        tags = os.path.join(cls.tmp, "tags.yaml")
        with open(tags, "w", encoding="utf-8") as f:
            f.write("- tag: pointwise\n  desc: x\n")
        cls.out = generate_in_memory(path, tags)

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_native_header_declares_the_classes(self):
        header = self.out["dk/generated/ops/gelu_native.h"]
        self.assertIn('#include "dk/tensor/structured.h"', header)
        self.assertIn("struct structured_gelu : public TensorIteratorBase {\n"
                      "  void meta(const Tensor& self, std::string_view approximate);\n};", header)
        for backend in ("cpu", "cuda"):
            self.assertIn(f"struct structured_gelu_out_{backend} : public meta::structured_gelu {{\n"
                          "  void impl(const Tensor& self, std::string_view approximate, const Tensor& out);\n};",
                          header)
        self.assertNotIn("gelu_out_cpu(", header)  # no kernel function: the class is the kernel

    def test_each_form_runs_meta_then_impl(self):
        cpu = self.out["RegisterCPU.cpp"]
        self.assertIn('#include "meta/structured_wrappers.h"', cpu)
        self.assertIn("  detail::StructuredFunctional<native::structured_gelu_out_cpu, 1> op(\"dk::gelu\");\n"
                      "  op.meta(self, approximate);\n"
                      "  op.impl(self, approximate, op.maybe_get_output(0));\n"
                      "  return op.take_output(0);\n", cpu)
        self.assertIn("  detail::StructuredInplace<native::structured_gelu_out_cpu, 1> op(\"dk::gelu_\", {self}, "
                      "{\"self\"});\n  op.meta(self, approximate);\n"
                      "  op.impl(self, approximate, op.maybe_get_output(0));\n  op.finish();\n  return self;\n", cpu)
        self.assertIn("  detail::StructuredOut<native::structured_gelu_out_cpu, 1> op(\"dk::gelu\", {out}, "
                      "{\"out\"});\n  op.meta(self, approximate);\n"
                      "  op.impl(self, approximate, op.maybe_get_output(0));\n  op.finish();\n  return out;\n", cpu)
        for name in ("gelu", "gelu_", "gelu.out"):
            self.assertIn(f'm.impl("{name}"', cpu)
            self.assertIn(f'm.impl("{name}"', self.out["RegisterMeta.cpp"])

    def test_meta_runs_meta_alone(self):
        meta = self.out["RegisterMeta.cpp"]
        self.assertIn("  detail::StructuredFunctional<::dk::meta::structured_gelu, 1> op(\"dk::gelu\");\n"
                      "  op.meta(self, approximate);\n  return op.take_output(0);\n", meta)
        self.assertNotIn("op.impl(", meta)


if __name__ == "__main__":
    unittest.main()
