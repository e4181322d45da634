"""Lint at generation time: the three mistakes gen.py refuses with FILE:LINE before writing
anything, each asserted by its exact text (P stands for the fixture's path).

  - an in-place or out= form whose written argument lacks its ``(a!)``, or that does not return
    it (Note [Written arguments] in codegen/native_yaml.py);
  - a derivative formula that can never run or reads a gradient there is not (Note [Gradients of
    differentiable outputs] in codegen/derivatives.py);
  - a structured delegate whose signature is not its out= form's (codegen/structured.py).
"""

import contextlib
import io
import os
import unittest

from codegen import gen
from codegen.derivatives import parse_derivatives
from codegen.errors import GenError
from codegen.native_yaml import parse_native_functions

from . import support

RELU_ = "relu_(Tensor(a!) self) -> Tensor"
RELU_OUT = "relu.out(Tensor self, *, Tensor out) -> Tensor"
MAX_OUT = ("max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) "
           "-> (Tensor(a!) max, Tensor(b!) max_values)")


class WrittenArgumentsTest(support.NativeYamlTestCase):
    def test_forms_that_follow_the_rules_pass(self):
        nfs = self.parse(f"""
            - func: relu_(Tensor(a!) self) -> Tensor(a!)
            - func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
            - func: {MAX_OUT}
            - func: _foreach_abs_(Tensor(a!)[] self) -> ()
            - func: split_copy.Tensor_out(Tensor self, int split_size, *, Tensor(a!)[] out) -> ()
            - func: resize_as(Tensor(a!) self, Tensor other) -> Tensor(a!)
            - func: _fill_buffer(Tensor self, Tensor(a!) buffer) -> Tensor
            """)
        self.assertEqual([nf.func.kind for nf in nfs],
                         ["inplace", "out", "out", "inplace", "out", "mutable", "mutable"])

    def test_inplace_returns_its_self(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU_}
                - func: relu_.nothing(Tensor(a!) self) -> ()
                - func: _foreach_abs_(Tensor(a!)[] self) -> Tensor(a!)[]
                - func: relu_.out(Tensor(a!) self, *, Tensor(b!) out) -> Tensor(b!)
                """),
            [f"P:1: {RELU_}: an in-place operator returns its 'self': '-> Tensor(a!)', not '-> Tensor'",
             "P:2: relu_.nothing(Tensor(a!) self) -> (): an in-place operator returns its 'self': '-> Tensor(a!)', "
             "not '-> ()'",
             "P:3: _foreach_abs_(Tensor(a!)[] self) -> Tensor(a!)[]: an in-place operator whose 'self' is a "
             "Tensor(a!)[] returns nothing: '-> ()', not '-> Tensor(a!)[]'",
             "P:4: relu_.out(Tensor(a!) self, *, Tensor(b!) out) -> Tensor(b!): an in-place operator writes its "
             "'self', not out arguments ('Tensor(b!) out'): an out= form is named without the trailing '_', as in "
             "'relu.out'"])

    def test_out_argument_without_its_annotation(self):
        # Without the `!`, `out` is an input and the operator a functional one: the name gives it away.
        self.assertEqual(
            self.errors(f"""
                - func: {RELU_OUT}
                - func: relu.aliased_out(Tensor self, *, Tensor(a) out) -> Tensor(a!)
                - func: relu.Tensor_out(Tensor self, Tensor(a!) result) -> Tensor(a!)
                """),
            [f"P:1: {RELU_OUT}: keyword-only argument 'out' is named as an output but is not written: "
             "write 'Tensor(a!) out'",
             "P:2: relu.aliased_out(Tensor self, *, Tensor(a) out) -> Tensor(a!): keyword-only argument 'out' is "
             "named as an output but is not written: write 'Tensor(a!) out'",
             "P:3: relu.Tensor_out(Tensor self, Tensor(a!) result) -> Tensor(a!): overload 'Tensor_out' is named as "
             "an out= form but has no out argument: an out argument is keyword-only and written, as in "
             "'*, Tensor(a!) out'"])

    def test_out_arguments_are_returned_in_order(self):
        arguments = "(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values)"
        swapped = f"max.dim_max{arguments} -> (Tensor(b!) max_values, Tensor(a!) max)"
        one = f"max.names_max{arguments} -> Tensor(a!)"
        expected = "an out= operator returns its out arguments, in order: '-> (Tensor(a!) max, Tensor(b!) max_values)'"
        self.assertEqual(
            self.errors(f"""
                - func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor
                - func: {swapped}
                - func: {one}
                - func: relu.two_out(Tensor self, *, Tensor(a!) out) -> (Tensor(a!), Tensor)
                - func: split_copy.Tensor_out(Tensor self, int split_size, *, Tensor(a!)[] out) -> Tensor(a!)[]
                """),
            ["P:1: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor: out argument 'out' (Tensor(a!)) is not "
             "returned; an out= operator returns its out arguments, in order: '-> Tensor(a!)'",
             f"P:2: {swapped}: out argument 'max' (Tensor(a!)) is not returned as return 1; {expected}",
             f"P:3: {one}: out argument 'max_values' (Tensor(b!)) is not returned as return 2; {expected}",
             "P:4: relu.two_out(Tensor self, *, Tensor(a!) out) -> (Tensor(a!), Tensor): return 'Tensor' is not an "
             "out argument; an out= operator returns its out arguments, in order: '-> Tensor(a!)'",
             "P:5: split_copy.Tensor_out(Tensor self, int split_size, *, Tensor(a!)[] out) -> Tensor(a!)[]: an out= "
             "operator whose out argument 'out' is a Tensor(a!)[] returns nothing: '-> ()', not '-> Tensor(a!)[]'"])

    def test_written_returns_of_other_operators(self):
        self.assertEqual(
            self.errors("""
                - func: _fill_buffer(Tensor self, Tensor(a!) buffer) -> Tensor(a!)
                - func: _fill_both(Tensor(a!) self, Tensor other) -> (Tensor(a!), Tensor)
                """),
            ["P:1: _fill_buffer(Tensor self, Tensor(a!) buffer) -> Tensor(a!): written return 'Tensor(a!)' is not "
             "the written 'self': a written output is a keyword-only out argument, as in '*, Tensor(a!) out' (or is "
             "not returned)",
             "P:2: _fill_both(Tensor(a!) self, Tensor other) -> (Tensor(a!), Tensor): returns are all written or "
             "none is, not '-> (Tensor(a!), Tensor)': return a written argument alone, or do not return it"])

    def test_one_mistake_one_error(self):
        # The unwritten `out` also leaves `-> Tensor(a!)` aliasing nothing: reported once, as the cause.
        self.assertError("- func: relu.out(Tensor self, *, Tensor out) -> Tensor(a!)\n",
                         "P:1: relu.out(Tensor self, *, Tensor out) -> Tensor(a!): keyword-only argument 'out' is "
                         "named as an output but is not written: write 'Tensor(a!) out'")


NATIVE_FUNCTIONS = """
- func: neg(Tensor self) -> Tensor
  dispatch:
    CPU: neg_cpu
- func: eq.Tensor(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: eq_cpu
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  dispatch:
    CPU: max_dim_cpu
- func: unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]
  dispatch:
    CPU: unbind_cpu
- func: _sum_into(Tensor self, Tensor(a!) total) -> ()
  dispatch:
    CPU: sum_into_cpu
"""
EQ = "eq.Tensor(Tensor self, Tensor other) -> Tensor"
MAX_DIM = "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"


class DerivativeFormulasTest(support.TempDirTestCase):
    def setUp(self):
        super().setUp()
        self.nfs = parse_native_functions(self.write("native_functions.yaml", NATIVE_FUNCTIONS))
        self.path = os.path.join(self.dir, "derivatives.yaml")

    def parse(self, text):
        self.write("derivatives.yaml", text)
        return parse_derivatives(self.path, self.nfs)

    def errors(self, text):
        with self.assertRaises(GenError) as caught:
            self.parse(text)
        return [m.replace(self.path, "P") for m in caught.exception.messages]

    def test_formulas_that_read_existing_gradients_pass(self):
        infos = self.parse(f"""
            - name: {EQ}
              self: non_differentiable
              other: non_differentiable
              output_differentiability: [False]
            - name: {MAX_DIM}
              self: value_selecting_reduction_backward(grads[0], dim, result1, self.sizes(), keepdim)
              output_differentiability: [True, False]
            - name: unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]
              self: unbind_backward(grads, dim, self.sizes(), self.scalar_type(), self.device())
            """)
        self.assertEqual([i.has_differentiable_output for i in infos], [False, True, True])

    def test_formula_of_an_entry_without_differentiable_output(self):
        self.assertEqual(
            self.errors(f"""
                - name: {EQ}
                  self: grad
                  other: non_differentiable
                  output_differentiability: [False]
                - name: _sum_into(Tensor self, Tensor(a!) total) -> ()
                  self: total
                  total: non_differentiable
                """),
            [f"P:2: {EQ}: formula for 'self', but no output of eq.Tensor is differentiable (output_differentiability: "
             "[False]): the formula would never run; write 'self: non_differentiable'",
             "P:6: _sum_into(Tensor self, Tensor(a!) total) -> (): formula for 'self', but no output of _sum_into is "
             "differentiable: the formula would never run; write 'self: non_differentiable'"])

    def test_gradient_of_a_non_differentiable_output(self):
        # grads holds one gradient per differentiable output: max.dim's indices have none.
        self.assertEqual(
            self.errors(f"""
                - name: {MAX_DIM}
                  self: value_selecting_reduction_backward(grads[1], dim, result1, self.sizes(), keepdim)
                  output_differentiability: [True, False]
                - name: neg(Tensor self) -> Tensor
                  self: -grads[1] /* grads[0] would be right */
                """),
            [f"P:2: {MAX_DIM}: 'grads[1]' in the formula for 'self', but max.dim has 1 differentiable output(s) "
             "(output_differentiability: [True, False]): grads holds the gradients of the differentiable outputs, "
             "in order",
             "P:5: neg(Tensor self) -> Tensor: 'grads[1]' in the formula for 'self', but neg has 1 differentiable "
             "output(s): grads holds the gradients of the differentiable outputs, in order"])

    def test_formula_for_an_argument_that_cannot_be_differentiable(self):
        # These existed before the lint: a non-tensor argument, and one also marked non_differentiable.
        self.assertEqual(
            self.errors(f"""
                - name: {MAX_DIM}
                  self: grad
                  dim: grad
                  output_differentiability: [True, False]
                - name: {EQ}
                  self, other: non_differentiable
                  other: grad
                """),
            [f"P:3: {MAX_DIM}: formula for 'dim', which is not a tensor argument (int)",
             f"P:7: {EQ}: second formula for 'other' (the first is at line 6)"])


GELU_OUT = "gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out) -> Tensor(a!)"
GELU_FAMILY = f"""
- func: gelu(Tensor self, *, str approximate='none') -> Tensor
  structured_delegate: gelu.out
- func: gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)
  structured_delegate: gelu.out
- func: {GELU_OUT}
  structured: True
  dispatch:
    CPU: gelu_out_cpu
"""


class StructuredSignatureTest(support.NativeYamlTestCase):
    def test_a_matching_family_passes(self):
        self.assertEqual(len(self.parse(GELU_FAMILY)), 3)

    def test_delegate_returns_what_the_out_form_returns(self):
        # The generated wrapper would take output 1 of a family that has one.
        self.assertError(GELU_FAMILY.replace("approximate='none') -> Tensor\n", "approximate='none') -> "
                                                                                 "(Tensor, Tensor)\n"),
                         "P:1: gelu(Tensor self, *, str approximate='none') -> (Tensor, Tensor): a structured "
                         "delegate returns what 'gelu.out' returns (Tensor), not (Tensor, Tensor)")

    def test_delegate_arguments_match_in_name_type_order_and_default(self):
        for schema in ("gelu(Tensor input, *, str approximate='none') -> Tensor",
                       "gelu(Tensor self, *, str? approximate='none') -> Tensor",
                       "gelu(Tensor self, str approximate='none') -> Tensor",
                       "gelu(Tensor self, *, str approximate='tanh') -> Tensor"):
            with self.subTest(schema):
                have = schema[len("gelu("):-len(") -> Tensor")]
                self.assertError(
                    GELU_FAMILY.replace("gelu(Tensor self, *, str approximate='none') -> Tensor", schema),
                    f"P:1: {schema}: a structured delegate takes the arguments of 'gelu.out' less its outputs "
                    f"(Tensor self, *, str approximate='none'), not ({have})")

    def test_delegate_of_another_operator(self):
        self.assertError(GELU_FAMILY.replace("gelu_(", "relu_("),
                         "P:3: relu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!): 'gelu.out' is an "
                         "out= form of another operator: a structured delegate is a form of the same one, 'gelu' or "
                         "'gelu_'")

    def test_meta_kernel_of_a_delegate(self):
        # Existed before the lint: the Meta kernel is the family's meta function.
        self.assertError(GELU_FAMILY.replace("  structured_delegate: gelu.out\n- func: gelu_",
                                             "  structured_delegate: gelu.out\n  dispatch:\n    Meta: gelu_meta\n"
                                             "- func: gelu_", 1),
                         "P:1: gelu(Tensor self, *, str approximate='none') -> Tensor: kernels at Meta come from "
                         "structured_delegate 'gelu.out'; remove them")


class GenRefusesTest(support.TempDirTestCase):
    """gen.py --out: each lint fails the run with FILE:LINE (D: the fixture's folder), and
    nothing is written."""

    def gen(self, native_functions, derivatives=None):
        self.write("tags.yaml", "- tag: pointwise\n  desc: x\n")
        path = self.write("native_functions.yaml", native_functions)
        if derivatives is not None:
            self.write("derivatives.yaml", derivatives)  # found beside native_functions.yaml
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            status = gen.main(["--out", out, path])
        self.assertEqual(os.listdir(out), [], "a failed run wrote into the output folder")
        return status, stderr.getvalue().replace(self.dir, "D").splitlines()

    def test_written_argument(self):
        self.assertEqual(self.gen(f"- func: {RELU_OUT}\n"),
                         (1, [f"D/native_functions.yaml:1: {RELU_OUT}: keyword-only argument 'out' is named as an "
                              "output but is not written: write 'Tensor(a!) out'"]))

    def test_derivative_formula(self):
        derivatives = f"- name: {EQ}\n  self: grad\n  other: non_differentiable\n  output_differentiability: [False]\n"
        self.assertEqual(self.gen(NATIVE_FUNCTIONS, derivatives),
                         (1, [f"D/derivatives.yaml:2: {EQ}: formula for 'self', but no output of eq.Tensor is "
                              "differentiable (output_differentiability: [False]): the formula would never run; write "
                              "'self: non_differentiable'"]))

    def test_structured_signature(self):
        family = GELU_FAMILY.replace("approximate='none') -> Tensor\n", "approximate='none') -> (Tensor, Tensor)\n")
        self.assertEqual(self.gen(family),
                         (1, ["D/native_functions.yaml:1: gelu(Tensor self, *, str approximate='none') -> (Tensor, "
                              "Tensor): a structured delegate returns what 'gelu.out' returns (Tensor), not (Tensor, "
                              "Tensor)"]))


if __name__ == "__main__":
    unittest.main()
