"""PythonFunctions.cpp (codegen/dest/python_bindings.py; Note [Python bindings]): which overloads
Python sees, under which names, in which order, with out= merged into the functional overload."""

import re
import unittest

from codegen import gen
from codegen.writer import FileManager
from tests.generator import support

ENTRIES = """
- func: mul.Scalar(Tensor self, Scalar other) -> Tensor
  variants: function, method
  dispatch:
    CPU: mul_scalar_cpu

- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CPU: mul_cpu

- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: mul_inplace_cpu

- func: mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: mul_out_cpu

- func: lonely.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: lonely_out_cpu

- func: soft(Tensor self) -> Tensor
  python_module: nn
  dispatch:
    CPU: soft_cpu

- func: c10d::ping_(Tensor(a!) self, str group) -> Tensor(a!)
  dispatch:
    CompositeExplicitAutograd: dk::distributed::ping_inplace
"""

ROW = re.compile(r'^    \{"(\w+)", "(\w*)", "([\w:]+)", "(\w*)", (nullptr|"\w+"), ([\w |]+)\},$', re.M)


class PythonBindingsTest(support.NativeYamlTestCase):
    def setUp(self):
        super().setUp()
        files = FileManager()
        gen.generate(self.parse(ENTRIES), files)
        self.text = files.contents("PythonFunctions.cpp")
        self.rows = ROW.findall(self.text)

    def test_rows_in_the_order_the_parser_tries_them(self):
        names = [(r[0], r[3]) for r in self.rows]
        # mul.Tensor before mul.Scalar: a Tensor argument is tried as a Tensor first.
        self.assertEqual(names, [("lonely", "out"), ("mul", "Tensor"), ("mul", "Scalar"), ("mul_", "Tensor"),
                                 ("soft", "")])

    def test_out_overload_is_merged_into_the_functional_one(self):
        mul_tensor = [r for r in self.rows if r[0] == "mul" and r[3] == "Tensor"][0]
        self.assertEqual(mul_tensor[4], '"out"')
        self.assertIn("// dispatchkit.mul(Tensor input, Tensor other, *, Tensor out=None)", self.text)
        inplace = [r for r in self.rows if r[0] == "mul_"][0]
        self.assertEqual((inplace[4], inplace[5]), ("nullptr", "kMethod"))
        self.assertIn("// Tensor.mul_(Tensor self, Tensor other)  (method)", self.text)

    def test_modules_and_namespaces(self):
        soft = [r for r in self.rows if r[0] == "soft"][0]
        self.assertEqual(soft[1], "nn")
        self.assertNotIn("ping", self.text)  # operators of other namespaces are not in this table


if __name__ == "__main__":
    unittest.main()
