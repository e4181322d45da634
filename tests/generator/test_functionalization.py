"""codegen/dest/functionalization.py: which kernel each operator gets at Functionalize (Note
[Functionalization] in dk/func/functionalize.h), and which operators it refuses."""

import unittest

from codegen.dest import functionalization
from codegen.dest.common import GenContext

from . import support

TAGS = support.TAGS | {"view_copy"}


def explicit(text):
    """Gives each entry without a dispatch map a CompositeExplicitAutograd kernel (an entry without
    one is CompositeImplicitAutograd, which decomposes at Functionalize and gets no plan)."""
    out = []
    lines = text.strip("\n").split("\n")
    for i, line in enumerate(lines):
        out.append(line)
        if not line.startswith("- func:"):
            continue
        following = lines[i + 1:]
        entry = following[:next((k for k, rest in enumerate(following) if rest.startswith("- func:")), len(following))]
        if any(rest.strip().startswith("dispatch:") for rest in entry):
            continue
        base = line[len("- func: "):line.index("(")].split(".")[0]
        arguments = line[line.index("("):line.index(") ->")]
        out_form = "*" in arguments and "!)" in arguments.split("*")[-1]  # a written kwarg: out=
        out.append(f"  dispatch:\n    CompositeExplicitAutograd: {base}{'_out' if out_form else ''}")
    return "\n".join(out) + "\n"


class FunctionalizationPlanTest(support.NativeYamlTestCase):
    def plan(self, text):
        ctx = GenContext.build(self.parse(explicit(text), tags=TAGS), "dk", ("native_functions.yaml",))
        return functionalization.plan(ctx)

    def test_writes_map_to_the_functional_form_of_the_same_signature(self):
        mutations, views, refused = self.plan("""
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
- func: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
- func: pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
- func: max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)
""")
        self.assertEqual(sorted(mutations), [
            ("add.out", "dk::add.Tensor"), ("add_.Tensor", "dk::add.Tensor"), ("max.dim_max", "dk::max.dim"),
            ("pow_.Scalar", "dk::pow.Tensor_Scalar")])
        self.assertEqual(views, [])
        self.assertEqual(refused, [])

    def test_views_map_to_their_view_copy_and_inverse(self):
        mutations, views, refused = self.plan("""
- func: select.int(Tensor(a) self, int dim, int index) -> Tensor(a)
- func: select_copy.int(Tensor self, int dim, int index) -> Tensor
  tags: view_copy
- func: unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]
- func: unbind_copy.int(Tensor self, int dim=0) -> Tensor[]
  tags: view_copy
""")
        self.assertEqual([(v[0], v[1], v[2]) for v in views], [
            ("select.int", "dk::select_copy.int", "select_int_inverse"),
            ("unbind.int", "dk::unbind_copy.int", "unbind_int_inverse")])
        self.assertEqual(mutations, [])
        self.assertEqual(refused, [])

    def test_what_it_cannot_functionalize_is_listed_with_the_reason(self):
        mutations, views, refused = self.plan("""
- func: bump_(Tensor(a!) self) -> Tensor(a!)
- func: narrow_view(Tensor(a) self, int n) -> Tensor(a)
- func: diag_view(Tensor(a) self) -> Tensor(a)
- func: diag_view_copy(Tensor self, int k) -> Tensor
  tags: view_copy
- func: decomposed(Tensor(a) self) -> Tensor(a)
  dispatch:
    CompositeImplicitAutograd: decomposed
""")
        self.assertEqual(mutations, [])
        self.assertEqual(views, [])
        self.assertEqual(dict(refused), {
            "bump_": "writes an argument and has no functional form of the same signature",
            "narrow_view": "a view with no narrow_view_copy (tag view_copy) to replay it",
            "diag_view": "a view whose diag_view_copy takes other arguments"})

    def test_the_refusals_are_listed_in_the_generated_file(self):
        ctx = GenContext.build(self.parse(explicit("- func: bump_(Tensor(a!) self) -> Tensor(a!)"), tags=TAGS), "dk",
                               ("native_functions.yaml",))
        files = {}

        class Files:
            def write(self, name, text):
                files[name] = text

        functionalization.emit(ctx, Files())
        text = files["RegisterFunctionalization.cpp"]
        self.assertIn("//   bump_: writes an argument and has no functional form of the same signature", text)
        self.assertIn("(void)m;", text)


if __name__ == "__main__":
    unittest.main()
