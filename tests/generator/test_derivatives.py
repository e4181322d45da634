"""derivatives.yaml: validation errors by their exact text, what each formula saves, and which
autograd kernel each operator gets (codegen/derivatives.py)."""

import os
import tempfile
import textwrap
import unittest

from codegen.api import autograd as autograd_api
from codegen.derivatives import (ARGS_SIZES, PROPERTIES, SAVEABLE_BASE_TYPES, SAVEABLE_LIST_ELEMENTS, autograd_plan,
                                 node_name, parse_derivatives, unsaveable_part, untracked_views)
from codegen.errors import GenError
from codegen.model import OperatorName
from codegen.native_yaml import load_tags, parse_native_functions

from . import support
from .test_api import parse_type

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

    def test_twice_differentiable(self):
        self.assertEqual(self.errors("""
            - name: neg(Tensor self) -> Tensor
              self: -grad
              twice_differentiable: "no"
            """), ["P:3: neg(Tensor self) -> Tensor: twice_differentiable must be True or False, not a str"])
        [default] = self.parse("""
            - name: neg(Tensor self) -> Tensor
              self: -grad
            """)
        self.assertTrue(default.twice_differentiable)
        [once] = self.parse("""
            - name: neg(Tensor self) -> Tensor
              self: -grad
              twice_differentiable: False
            """)
        self.assertFalse(once.twice_differentiable)

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
        mm = self.infos["bmm"]
        self.assertEqual([(s.member, s.kind, s.source, sorted(s.users)) for s in mm.saved],
                         [("mat2_", "tensor", "mat2", ["self"]), ("self_", "tensor", "self", ["mat2"])])
        view = self.infos["view"]
        self.assertEqual([(s.member, s.kind, s.property) for s in view.saved], [("self_sizes_", "property", "sizes")])
        self.assertIn("self_sizes_", view.formulas[0].cpp)
        exp = self.infos["exp"]
        self.assertEqual([(s.member, s.kind, str(s.type)) for s in exp.saved], [("result_", "output", "Tensor")])
        cat = self.infos["cat"]
        self.assertEqual([(s.member, s.kind, str(s.type), s.property) for s in cat.saved],
                         [("dim_", "value", "int", None), ("tensors_args_sizes_", "property", "Tensor[]", "args_sizes")])

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

    def test_untracked_views(self):
        """A view whose every output is non-differentiable (detach) gets no ADInplaceOrView view
        tracking; differentiable views keep it."""
        untracked = untracked_views(self.nfs, list(self.infos.values()))
        self.assertEqual(sorted(untracked), ["detach"])
        from codegen.dest.autograd import inplace_or_view_kernel
        from codegen.dest.common import GenContext
        ctx = GenContext.build(self.nfs, "dk", ("native_functions.yaml",))
        ops = {str(op.nf.func.name): op for op in ctx.operators}
        self.assertIsNone(inplace_or_view_kernel(ops["detach"], untracked))
        self.assertEqual(inplace_or_view_kernel(ops["view"], untracked).what, "view")
        self.assertEqual(inplace_or_view_kernel(ops["detach"]).what, "view")  # without the rule

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


class UnsaveableTest(unittest.TestCase):
    def test_an_argument_a_node_cannot_save(self):
        with tempfile.TemporaryDirectory() as tmp:
            schema = "f(Tensor self, Dimname[]? names) -> Tensor"
            with open(os.path.join(tmp, "native_functions.yaml"), "w", encoding="utf-8") as f:
                f.write(f"- func: {schema}\n  dispatch:\n    CPU: f_cpu\n")
            path = os.path.join(tmp, "derivatives.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(f"- name: {schema}\n  self: grad.sum(names)\n")
            nfs = parse_native_functions(os.path.join(tmp, "native_functions.yaml"), known_tags=frozenset())
            with self.assertRaises(GenError) as caught:
                parse_derivatives(path, nfs)
        self.assertEqual([m.replace(path, "P") for m in caught.exception.messages],
                         [f"P:2: {schema}: argument 'names': cannot save a Dimname[]"])


class SpellingTest(DerivativesTestCase):
    """codegen/api/autograd.py: how C++ writes what the model says a node saves."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.infos = {str(i.name): i for i in parse_derivatives(DERIVATIVES, cls.nfs)}

    def members(self, op):
        return [autograd_api.saved_member(s) for s in self.infos[op].saved]

    def test_one_spelling_for_every_saveable_type(self):
        self.assertEqual(set(autograd_api.VALUE_TYPES), SAVEABLE_BASE_TYPES)
        self.assertEqual(set(autograd_api.LIST_TYPES), SAVEABLE_LIST_ELEMENTS)
        self.assertEqual(set(autograd_api.PROPERTY_TYPES), set(PROPERTIES) | {ARGS_SIZES})

    def test_member_types_and_initialisers(self):
        self.assertEqual([(m.type, m.name, m.initializer) for m in self.members("bmm")],
                         [("SavedVariable", "mat2_", ""), ("SavedVariable", "self_", "")])
        self.assertEqual([(m.type, m.name, m.initializer) for m in self.members("view")],
                         [("std::vector<int64_t>", "self_sizes_", "")])
        self.assertEqual([(m.type, m.name, m.initializer) for m in self.members("cat")],
                         [("int64_t", "dim_", "{}"), ("std::vector<std::vector<int64_t>>", "tensors_args_sizes_", "")])

    def test_forward_store_and_apply_local(self):
        mm_self = self.members("bmm")[1]
        self.assertEqual((mm_self.save("self"), mm_self.local_type, mm_self.local, mm_self.unpack, mm_self.releases),
                         ("SavedVariable(self, false)", "const Tensor", "self", "self_.unpack()", True))
        (result,) = self.members("exp")
        self.assertEqual((result.save("result"), result.unpack), ("SavedVariable(result, true)",
                                                                  "result_.unpack(shared_from_this())"))
        dim, sizes = self.members("cat")
        self.assertEqual((dim.save("dim"), dim.local_type, dim.local, dim.unpack), ("dim", "const auto&", "dim", "dim_"))
        self.assertEqual((sizes.save("tensors"), sizes.local), ("autograd::detail::args_sizes(tensors)", None))

    def test_value_types(self):
        self.assertEqual(autograd_api.value_type(parse_type("int[]?")),
                         ("std::optional<std::vector<int64_t>>", "autograd::detail::owned({})"))
        self.assertEqual(autograd_api.value_type(parse_type("str")), ("std::string", "std::string({})"))
        self.assertEqual(autograd_api.value_type(parse_type("float?")), ("std::optional<double>", "{}"))
        self.assertIsNone(unsaveable_part(parse_type("SymInt[]?")))
        self.assertEqual(str(unsaveable_part(parse_type("Dimname[]?"))), "Dimname[]")


if __name__ == "__main__":
    unittest.main()
