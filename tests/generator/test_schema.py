"""Tests of codegen/schema.py: each construct of the schema language, field by field."""

import unittest

from codegen.errors import GenError
from codegen.schema import (
    AliasInfo,
    Argument,
    BaseType,
    FunctionSchema,
    ListType,
    OperatorName,
    OptionalType,
    Return,
)

T = BaseType("Tensor")


def parse(text):
    schema = FunctionSchema.parse(text)
    assert str(schema) == text, (str(schema), text)
    return schema


class OperatorNameTest(unittest.TestCase):
    def test_parse_and_print(self):
        self.assertEqual(OperatorName.parse("add.Tensor"), OperatorName("add", "Tensor"))
        self.assertEqual(OperatorName.parse("relu"), OperatorName("relu", ""))
        self.assertEqual(str(OperatorName("add", "out")), "add.out")
        self.assertEqual(str(OperatorName("relu")), "relu")
        self.assertEqual(OperatorName("add", "Tensor").unambiguous_name, "add_Tensor")
        self.assertEqual(OperatorName("relu").unambiguous_name, "relu")

    def test_malformed(self):
        for text in ("add..out", "add.", "1add", "add.Tensor.x", ""):
            with self.assertRaises(GenError) as caught:
                OperatorName.parse(text)
            self.assertEqual(str(caught.exception), f"malformed operator name '{text}'")

    def test_inplace_and_dunder(self):
        self.assertTrue(OperatorName("add_", "Tensor").is_inplace)
        self.assertEqual(OperatorName("add_", "Tensor").base_name, "add")
        self.assertFalse(OperatorName("add", "Tensor").is_inplace)
        self.assertTrue(OperatorName("__and__").is_dunder)
        self.assertFalse(OperatorName("__and__").is_inplace)
        self.assertTrue(OperatorName("__iand__").is_inplace)
        self.assertEqual(OperatorName("__iand__").base_name, "__and__")
        self.assertEqual(OperatorName("__and__").base_name, "__and__")


class TypeTest(unittest.TestCase):
    def arg_type(self, type_text):
        return parse(f"f({type_text} x) -> ()").positional[0].type

    def test_base_types(self):
        for name in ("Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType",
                     "Layout", "Device", "MemoryFormat", "Generator", "Dimname", "Storage",
                     "Stream", "QScheme", "complex"):
            self.assertEqual(self.arg_type(name), BaseType(name))

    def test_optional_and_lists(self):
        self.assertEqual(self.arg_type("int?"), OptionalType(BaseType("int")))
        self.assertEqual(self.arg_type("int[]"), ListType(BaseType("int")))
        self.assertEqual(self.arg_type("int[2]"), ListType(BaseType("int"), 2))
        self.assertEqual(self.arg_type("int[1]?"), OptionalType(ListType(BaseType("int"), 1)))
        self.assertEqual(self.arg_type("Tensor?[]"), ListType(OptionalType(T)))
        self.assertEqual(self.arg_type("SymInt[]?"), OptionalType(ListType(BaseType("SymInt"))))
        self.assertEqual(self.arg_type("Dimname[]?"), OptionalType(ListType(BaseType("Dimname"))))

    def test_type_queries(self):
        for text in ("Tensor", "Tensor?", "Tensor[]", "Tensor?[]"):
            self.assertTrue(self.arg_type(text).is_tensor_like(), text)
        for text in ("int", "Scalar", "int[]", "ScalarType?"):
            self.assertFalse(self.arg_type(text).is_tensor_like(), text)
        # The runtime's dk::Type::isTensorLike (tests/test_function_schema.cpp): fixed sizes
        # count, other wrappings of Tensor are not dispatch arguments.
        self.assertTrue(self.arg_type("Tensor[2]").is_tensor_like())
        for text in ("Tensor[]?", "Tensor[][]", "Tensor?[]?", "Scalar[]", "Dimname[]", "Storage"):
            self.assertFalse(self.arg_type(text).is_tensor_like(), text)
        self.assertTrue(self.arg_type("int[1]?").is_list_like())
        self.assertFalse(self.arg_type("int?").is_list_like())
        self.assertEqual(self.arg_type("Tensor?[]").innermost, T)
        self.assertEqual(self.arg_type("int?").strip_optional(), BaseType("int"))
        self.assertEqual(str(ListType(OptionalType(T), 3)), "Tensor?[3]")


class AliasTest(unittest.TestCase):
    def test_forms(self):
        cases = {
            "Tensor(a) x": AliasInfo(("a",)),
            "Tensor(a!) x": AliasInfo(("a",), is_write=True),
            "Tensor(a -> *) x": AliasInfo(("a",), after=("*",)),
            "Tensor(a|b) x": AliasInfo(("a", "b")),
            "Tensor(a! -> b|c) x": AliasInfo(("a",), True, ("b", "c")),
        }
        for text, alias in cases.items():
            arg = parse(f"f({text}) -> ()").positional[0]
            self.assertEqual(arg.alias, alias, text)
            self.assertEqual(arg.type, T)
            self.assertEqual(str(arg), text)

    def test_alias_sits_on_the_element_type(self):
        schema = parse("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]")
        (ret,) = schema.returns
        self.assertEqual(ret, Return(ListType(T), None, AliasInfo(("a",))))
        arg = parse("f(Tensor(a!)[] self) -> ()").positional[0]
        self.assertEqual((arg.type, arg.alias), (ListType(T), AliasInfo(("a",), True)))
        self.assertTrue(arg.is_write)
        self.assertEqual(str(parse("f(Tensor(a)? x) -> ()").positional[0]), "Tensor(a)? x")


class ArgumentTest(unittest.TestCase):
    def test_defaults_are_kept_as_text(self):
        defaults = [("int", "1"), ("int", "-1"), ("int", "-100"), ("float", "0.5"), ("float", "1e-05"),
                    ("bool", "True"), ("int?", "None"), ("int", "Mean"), ("MemoryFormat", "contiguous_format"),
                    ("int[]", "[]"), ("int[]", "[-2,-1]"), ("int[]", "[0,1]"), ("str", "'fro'"),
                    ("str", '"reflect"'), ("ScalarType", "long")]
        for type_, default in defaults:
            arg = parse(f"f({type_} x={default}) -> ()").positional[0]
            self.assertEqual(arg.default, default)
        self.assertIsNone(parse("f(int x) -> ()").positional[0].default)

    def test_string_defaults_with_quotes_and_escapes(self):
        text = r"""_test_string_default(Tensor dummy, str a="\"'\\", str b='"\'\\') -> Tensor"""
        schema = parse(text)
        self.assertEqual([a.default for a in schema.positional[1:]], [r'"\"' + "'" + r'\\"', r"""'"\'\\'"""])
        self.assertEqual(parse('f(str a=", )") -> ()').positional[0].default, '", )"')

    def test_parse_single_argument(self):
        self.assertEqual(Argument.parse("int kH"), Argument("kH", BaseType("int")))
        with self.assertRaises(GenError) as caught:
            Argument.parse("int kH, int kW")
        self.assertEqual(str(caught.exception),
                         "malformed argument at column 7: expected the end of the argument, found ','")


class FunctionSchemaTest(unittest.TestCase):
    def test_add_tensor(self):
        s = parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        self.assertEqual(s.name, OperatorName("add", "Tensor"))
        self.assertEqual(s.positional, (Argument("self", T), Argument("other", T)))
        self.assertEqual(s.kwarg_only, (Argument("alpha", BaseType("Scalar"), "1"),))
        self.assertEqual(s.out, ())
        self.assertEqual(s.returns, (Return(T),))
        self.assertEqual([a.name for a in s.arguments], ["self", "other", "alpha"])
        self.assertEqual(s.kind, "functional")
        self.assertFalse(s.is_out_fn or s.is_inplace or s.is_mutable)
        self.assertTrue(s.is_functional)
        self.assertEqual(s.self_argument, Argument("self", T))
        self.assertEqual(s.argument("alpha").default, "1")
        self.assertIsNone(s.argument("beta"))
        self.assertEqual(s.default_kernel_name, "add")

    def test_out_function(self):
        s = parse("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
        self.assertEqual([a.name for a in s.kwarg_only], ["alpha"])
        self.assertEqual(s.out, (Argument("out", T, None, AliasInfo(("a",), True)),))
        self.assertEqual(s.returns, (Return(T, None, AliasInfo(("a",), True)),))
        self.assertTrue(s.is_out_fn and s.is_mutable)
        self.assertEqual(s.kind, "out")
        self.assertEqual([a.name for a in s.dispatch_arguments], ["self", "other", "out"])
        self.assertEqual([a.name for a in s.mutable_arguments], ["out"])
        self.assertEqual(s.default_kernel_name, "add_out")

    def test_several_outs_and_named_returns(self):
        s = parse("max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, "
                  "Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)")
        self.assertEqual([a.name for a in s.out], ["max", "max_values"])
        self.assertEqual(s.kwarg_only, ())
        self.assertEqual([(r.name, str(r.alias)) for r in s.returns], [("values", "a!"), ("indices", "b!")])

    def test_returns(self):
        self.assertEqual(parse("f(Tensor(a!) self) -> ()").returns, ())
        self.assertEqual(parse("f(Tensor theta) -> Tensor grid").returns, (Return(T, "grid"),))
        self.assertEqual(parse("f(Tensor self) -> (Tensor, Tensor)").returns, (Return(T), Return(T)))
        self.assertEqual(parse("f() -> int[]").returns, (Return(ListType(BaseType("int"))),))
        self.assertEqual(parse("f() -> (bool, ScalarType)").returns[1], Return(BaseType("ScalarType")))

    def test_kinds(self):
        self.assertEqual(parse("add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)").kind, "inplace")
        self.assertEqual(parse("set_data(Tensor(a!) self, Tensor new_data) -> ()").kind, "mutable")
        iand = parse("__iand__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
        self.assertTrue(iand.is_inplace)
        self.assertFalse(parse("__and__.Scalar(Tensor self, Scalar other) -> Tensor").is_inplace)

    def test_dispatch_arguments(self):
        s = parse("f(Tensor a, int b, Tensor? c, Tensor[] d, Tensor?[] e, Scalar f, *, Tensor? g=None, "
                  "Tensor(a!) out) -> Tensor(a!)")
        self.assertEqual([a.name for a in s.dispatch_arguments], ["a", "c", "d", "e", "g", "out"])
        self.assertEqual(parse("f(int x) -> ()").dispatch_arguments, ())

    def test_is_factory(self):
        factories = [
            "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
            "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
            "scalar_tensor(Scalar s, *, ScalarType? dtype=None) -> Tensor",
            "f(Device device) -> Tensor",
        ]
        for text in factories:
            self.assertTrue(parse(text).is_factory, text)
        not_factories = [
            "_nnpack_available() -> bool",
            "empty_like(Tensor self, *, ScalarType? dtype=None) -> Tensor",
            "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        ]
        for text in not_factories:
            self.assertFalse(parse(text).is_factory, text)

    def test_symint(self):
        self.assertTrue(parse("f(SymInt[] size) -> Tensor").has_symint)
        self.assertFalse(parse("f(int[] size) -> Tensor").has_symint)

    def test_signature_groups_variants(self):
        functional = parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        inplace = parse("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
        out = parse("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
        expected = "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
        for s in (functional, inplace, out):
            self.assertEqual(str(s.signature()), expected)
        self.assertEqual(str(parse("max.dim_max(Tensor self, *, Tensor(a!) max) -> (Tensor(a!) values, "
                                   "Tensor(b!) indices)").signature()), "max(Tensor self) -> (Tensor, Tensor)")


class MalformedSchemaTest(unittest.TestCase):
    """Every parse error, with its exact text and column."""

    CASES = [
        ("add(Tensor self", "malformed schema at column 16: expected ', ' or ')', found the end of the schema"),
        ("add(Tensor self -> Tensor", "malformed schema at column 16: expected ', ' or ')', found ' '"),
        ("(Tensor self) -> Tensor", "malformed schema at column 1: expected an operator name, found '('"),
        ("add.(Tensor self) -> Tensor", "malformed schema at column 5: expected an overload name, found '('"),
        ("add Tensor", "malformed schema at column 4: expected '(', found ' '"),
        ("f(Tensor a)->()", "malformed schema at column 12: expected ' -> ', found '-'"),
        ("f(Tensor a) -> () x", "malformed schema at column 18: expected the end of the schema, found ' '"),
        ("f(Tensor) -> ()", "malformed schema at column 9: expected ' ' and an argument name, found ')'"),
        ("f(Tensor 1a) -> ()", "malformed schema at column 10: expected an argument name, found '1'"),
        ("f(int(a) x) -> ()", "malformed schema at column 6: alias annotations are allowed on Tensor only, not on 'int'"),
        ("f(Tensor(A) x) -> ()", "malformed schema at column 10: expected an alias set name such as 'a', found 'A'"),
        ("f(Tensor(a!!) x) -> ()", "malformed schema at column 12: expected ')', found '!'"),
        ("f(int?? x) -> ()", "malformed schema at column 7: type is already optional"),
        ("f(int[0] x) -> ()", "malformed schema at column 7: a list size must be positive"),
        ("f(int[x] y) -> ()", "malformed schema at column 7: expected a list size or ']', found 'x'"),
        ("f(int x=) -> ()", "malformed schema at column 9: expected a default value, found ')'"),
        ("f(str x='a) -> ()", "malformed schema at column 9: unterminated string default"),
        ("f(int[] x=[1, 2) -> ()", "malformed schema at column 11: unterminated list default"),
        ("f(Tensor a, *) -> ()", "malformed schema at column 14: '*' must be followed by keyword-only arguments"),
        ("f(*, int a, *, int b) -> ()", "malformed schema at column 13: '*' given twice"),
        ("f(Tensor a, Tensor a) -> ()", "malformed schema at column 13: duplicate argument name 'a'"),
        ("f(*, Tensor(a!) out, int x) -> ()",
         "malformed schema at column 6: out argument 'out' must come after every other keyword-only argument"),
        ("f() -> (Tensor a)", "malformed schema at column 8: a single return is written without parentheses"),
        ("f() -> (Tensor a, Tensor a)", "malformed schema at column 26: duplicate return name 'a'"),
        ("f() -> (Tensor a Tensor b)", "malformed schema at column 17: expected ', ' or ')', found ' '"),
        ("f(Tensr x) -> ()", "unknown type 'Tensr' at column 3"),
        ("f() -> Tensr", "unknown type 'Tensr' at column 8"),
    ]

    def test_errors(self):
        for text, message in self.CASES:
            with self.subTest(text=text):
                with self.assertRaises(GenError) as caught:
                    FunctionSchema.parse(text)
                self.assertEqual(str(caught.exception), message)


if __name__ == "__main__":
    unittest.main()
