"""derivatives.yaml: validation errors by their exact text, what each formula saves, and which
autograd kernel each operator gets (codegen/derivatives.py)."""

import os
import tempfile
import textwrap
import unittest

from codegen.derivatives import autograd_plan, node_name, parse_derivatives
from codegen.errors import GenError
from codegen.model import OperatorName
from codegen.native_yaml import load_tags, parse_native_functions

from . import support

SCHEMAS = os.path.join(support.REPO_ROOT, "schemas", "native_functions.yaml")
SCHEMAS_TAGS = os.path.join(support.REPO_ROOT, "schemas", "tags.yaml")
DERIVATIVES = os.path.join(support.REPO_ROOT, "schemas", "derivatives.yaml")
MUL = "mul.Tensor(Tensor self, Tensor other) -> Tensor"


class DerivativesTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.nfs = parse_native_functions(SCHEMAS, known_tags=load_tags(SCHEMAS_TAGS))

    def parse(self, text):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "derivatives.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text).lstrip("\n"))
            try:
                return parse_derivatives(path, self.nfs)
            except GenError as e:
                raise GenError(str(e).replace(path, "P"), tuple(m.replace(path, "P") for m in e.messages))

    def errors(self, text):
        with self.assertRaises(GenError) as caught:
            self.parse(text)
        return list(caught.exception.messages)


class ValidationTest(DerivativesTestCase):
    def test_formula_for_a_name_that_is_not_an_argument(self):
        self.assertEqual(self.errors(f"""
            - name: {MUL}
              self: grad * other
              othr: grad * self
            """), [f"P:1: {MUL}: missing formula for differentiable input 'other' (give a formula or "
                   f"'other: non_differentiable')",
                   f"P:3: {MUL}: formula for 'othr', which is not an argument of mul.Tensor"])

    def test_unknown_operator(self):
        self.assertEqual(self.errors("""
            - name: mull.Tensor(Tensor self, Tensor other) -> Tensor
              self: grad
            """), ["P:1: mull.Tensor(Tensor self, Tensor other) -> Tensor: entry for unknown operator "
                   "'mull.Tensor' (not in native_functions.yaml)"])

    def test_schema_must_match(self):
        [message] = self.errors("""
            - name: mul.Tensor(Tensor a, Tensor b) -> Tensor
              a: grad
              b: grad
            """)
        self.assertTrue(message.startswith("P:1: mul.Tensor(Tensor a, Tensor b) -> Tensor: schema differs from "
                                           "native_functions.yaml ("), message)
        self.assertTrue(message.endswith(f"): '{MUL}'"), message)

    def test_missing_formula(self):
        self.assertEqual(self.errors(f"""
            - name: {MUL}
              self: grad * other
            """), [f"P:1: {MUL}: missing formula for differentiable input 'other' (give a formula or "
                   f"'other: non_differentiable')"])

    def test_formula_for_a_non_tensor_argument(self):
        self.assertEqual(self.errors("""
            - name: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
              self: grad
              exponent: grad
            """), ["P:3: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor: formula for 'exponent', "
                   "which is not a tensor argument (Scalar)"])

    def test_duplicate_entry_and_formula(self):
        self.assertEqual(self.errors(f"""
            - name: {MUL}
              self: grad * other
              other: grad * self
              self, other: mul_backward(grad, self, other)
            - name: {MUL}
              self: grad
              other: grad
            """), [f"P:4: {MUL}: second formula for 'self' (the first is at line 2)",
                   f"P:4: {MUL}: second formula for 'other' (the first is at line 3)",
                   "P:5: second entry for 'mul.Tensor' (the first is at line 1)"])

    def test_result_out_of_range(self):
        self.assertEqual(self.errors("""
            - name: neg(Tensor self) -> Tensor
              self: grad * result1
            """), ["P:2: neg(Tensor self) -> Tensor: 'result1' in a formula, but the operator has 1 return(s) "
                   "(use result for one, result0, result1, ... for several)"])

    def test_output_differentiability_length(self):
        self.assertEqual(self.errors("""
            - name: neg(Tensor self) -> Tensor
              self: -grad
              output_differentiability: [True, False]
            """), ["P:3: neg(Tensor self) -> Tensor: output_differentiability has 2 entries but the operator "
                   "returns 1"])

    def test_composites_and_out_take_no_entry(self):
        messages = self.errors("""
            - name: matmul(Tensor self, Tensor other) -> Tensor
              self: grad
              other: grad
            - name: mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
              self: grad
              mat2: grad
            """)
        self.assertEqual(len(messages), 2)
        self.assertIn("a CompositeImplicitAutograd operator differentiates through its decomposition", messages[0])
        self.assertIn("out= operators are not differentiable", messages[1])

    def test_not_a_list(self):
        self.assertEqual(self.errors("name: neg(Tensor self) -> Tensor\n"),
                         ["P:1: the file must be a list of entries, not a mapping"])


class ModelTest(DerivativesTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.infos = {str(i.name): i for i in parse_derivatives(DERIVATIVES, cls.nfs)}

    def test_node_names_follow_pytorch(self):
        self.assertEqual(node_name(OperatorName.parse("_log_softmax"), 0), "LogSoftmaxBackward0")
        self.assertEqual(node_name(OperatorName.parse("add_.Tensor"), 0), "AddBackward0")
        self.assertEqual(self.infos["sum.dim_IntList"].node, "SumBackward1")
        self.assertEqual(self.infos["mse_loss"].node, "MseLossBackward0")

    def test_saved_values(self):
        mm = self.infos["mm"]
        self.assertEqual([(s.member, s.cpp_type, sorted(s.users)) for s in mm.saved],
                         [("mat2_", "SavedVariable", ["self"]), ("self_", "SavedVariable", ["mat2"])])
        view = self.infos["view"]
        self.assertEqual([(s.member, s.cpp_type) for s in view.saved], [("self_sizes_", "std::vector<int64_t>")])
        self.assertIn("self_sizes_", view.formulas[0].cpp)
        exp = self.infos["exp"]
        self.assertEqual([(s.member, s.kind) for s in exp.saved], [("result_", "output")])
        cat = self.infos["cat"]
        self.assertEqual([(s.member, s.cpp_type) for s in cat.saved],
                         [("dim_", "int64_t"), ("tensors_args_sizes_", "std::vector<std::vector<int64_t>>")])

    def test_plan(self):
        plan = {str(p.nf.func.name): p for p in autograd_plan(self.nfs, list(self.infos.values()))}
        self.assertEqual(plan["mul.Tensor"].kind, "derivative")
        self.assertEqual(plan["mul_.Tensor"].info.node, "MulBackward0")  # the functional entry
        self.assertEqual(plan["add.out"].kind, "out")
        self.assertEqual(plan["gelu_backward"].info.node, "GeluBackwardBackward0")
        for absent in ("matmul", "zeros", "item", "eq.Tensor", "argmax", "linear"):
            self.assertNotIn(absent, plan)
        self.assertTrue(plan["view"].is_view)
        self.assertTrue(plan["relu_"].is_inplace)

    def test_every_differentiable_operator_has_a_formula(self):
        """The project's schemas: every operator with a kernel of its own and a tensor output has
        an entry (none is left to a NotImplemented node)."""
        plan = autograd_plan(self.nfs, list(self.infos.values()))
        missing = sorted(str(p.nf.func.name) for p in plan if p.kind == "not_implemented")
        self.assertEqual(missing, [])

    def test_an_operator_without_entry_gets_a_not_implemented_kernel(self):
        fixture = os.path.join(support.REPO_ROOT, "tests", "generator", "fixtures")
        nfs = parse_native_functions(os.path.join(fixture, "native_functions.yaml"),
                                     known_tags=load_tags(os.path.join(fixture, "tags.yaml")))
        infos = parse_derivatives(os.path.join(fixture, "derivatives.yaml"), nfs)
        plan = {str(p.nf.func.name): p.kind for p in autograd_plan(nfs, infos)}
        self.assertEqual(plan, {"add.Tensor": "derivative", "add.out": "out", "cat": "not_implemented"})


if __name__ == "__main__":
    unittest.main()
