"""Tests of codegen/api/: schema -> C++ types, signatures, defaults, overload rules, and the
boxed code snippets, with exact expected text."""

import unittest

from codegen.api import cpp, dispatcher, native
from codegen.errors import GenError
from codegen.model import Argument, BackendMetadata, FunctionSchema, OperatorName
from codegen.schema import _SchemaParser

from . import support


def parse_type(text):
    return _SchemaParser(text, "type").type_and_alias()[0]


class ArgumentTypeTest(unittest.TestCase):
    TABLE = [
        ("Tensor", "const Tensor&", "tensor"),
        ("Tensor(a)", "const Tensor&", "tensor"),
        ("Tensor(a!)", "const Tensor&", "tensor"),
        ("Tensor?", "const std::optional<Tensor>&", "optional_tensor"),
        ("Tensor[]", "ArrayRef<Tensor>", "tensor_list"),
        ("Tensor(a!)[]", "ArrayRef<Tensor>", "tensor_list"),
        ("Tensor?[]", "ArrayRef<std::optional<Tensor>>", "optional_tensor_list"),
        ("int", "int64_t", None),
        ("SymInt", "int64_t", None),
        ("int?", "std::optional<int64_t>", None),
        ("SymInt?", "std::optional<int64_t>", None),
        ("int[]", "IntArrayRef", None),
        ("SymInt[]", "IntArrayRef", None),
        ("int[2]", "IntArrayRef", None),
        ("int[]?", "std::optional<IntArrayRef>", None),
        ("int[1]?", "std::optional<IntArrayRef>", None),
        ("float", "double", None),
        ("float?", "std::optional<double>", None),
        ("float[]", "ArrayRef<double>", None),
        ("float[]?", "std::optional<ArrayRef<double>>", None),
        ("bool", "bool", None),
        ("bool?", "std::optional<bool>", None),
        ("bool[3]", "std::array<bool, 3>", None),
        ("bool[]", "IValue", None),
        ("str", "std::string_view", None),
        ("str?", "std::optional<std::string_view>", None),
        ("str[]", "IValue", None),
        ("Scalar", "const Scalar&", None),
        ("Scalar?", "const std::optional<Scalar>&", None),
        ("Scalar[]", "ArrayRef<Scalar>", None),
        ("ScalarType", "ScalarType", None),
        ("ScalarType?", "std::optional<ScalarType>", None),
        ("Layout?", "std::optional<Layout>", None),
        ("Device", "Device", None),
        ("Device?", "std::optional<Device>", None),
        ("MemoryFormat", "MemoryFormat", None),
        ("MemoryFormat?", "std::optional<MemoryFormat>", None),
        ("Generator?", "std::optional<Generator>", None),
        ("Dimname", "IValue", None),
        ("Dimname[]", "IValue", None),
        ("Dimname[]?", "IValue", None),
        ("Storage", "IValue", None),
        ("Stream", "IValue", None),
        ("QScheme", "IValue", None),
        ("Tensor[2]", "ArrayRef<Tensor>", "tensor_list"),
        ("Tensor[]?", "IValue", None),
        ("Tensor?[]?", "IValue", None),
    ]

    def test_table(self):
        for schema_type, cpp_text, dispatch in self.TABLE:
            with self.subTest(schema_type):
                ctype = dispatcher.argument_type(parse_type(schema_type))
                self.assertEqual((ctype.text, ctype.dispatch), (cpp_text, dispatch))
                # One definition of a dispatch argument: the model's (dk::Type::isTensorLike).
                self.assertEqual(dispatch is not None, parse_type(schema_type).is_tensor_like())

    def test_returns(self):
        cases = {
            "f(Tensor self) -> Tensor": "Tensor",
            "f(Tensor(a!) self) -> Tensor(a!)": "Tensor",
            "f(Tensor self) -> (Tensor values, Tensor indices)": "std::tuple<Tensor, Tensor>",
            "f(Tensor(a -> *) self) -> Tensor(a)[]": "std::vector<Tensor>",
            "f(Tensor self) -> Scalar": "Scalar",
            "f(Tensor self) -> int": "int64_t",
            "f(Tensor self) -> int[]": "std::vector<int64_t>",
            "f(Tensor self) -> ()": "void",
            "f(Tensor self) -> QScheme": "IValue",
            "f(Tensor self) -> (Tensor[], Tensor)": "std::tuple<std::vector<Tensor>, Tensor>",
        }
        for schema, expected in cases.items():
            with self.subTest(schema):
                self.assertEqual(dispatcher.returns_type(FunctionSchema.parse(schema)), expected)


class CTypeStructureTest(unittest.TestCase):
    """A CType is built from parts, so emitters ask what a type is instead of reading its text."""

    def test_parts_of_argument_types(self):
        t = dispatcher.argument_type(parse_type("int[]?"))
        self.assertTrue(t.is_optional and t.by_value)
        self.assertEqual(t.elem, dispatcher.INT_LIST)
        self.assertTrue(t.elem.is_list and t.elem.elem == dispatcher.INT64)
        self.assertEqual((t.text, t.elem.value), ("std::optional<IntArrayRef>", "IntArrayRef"))
        tensor = dispatcher.argument_type(parse_type("Tensor"))
        self.assertTrue(tensor.is_tensor and tensor.const_ref and not tensor.by_value)
        optional = dispatcher.argument_type(parse_type("Tensor?"))
        self.assertFalse(optional.is_tensor)
        self.assertTrue(optional.strip_optional().is_tensor)
        lists = dispatcher.argument_type(parse_type("Tensor?[]"))
        self.assertTrue(lists.is_list and lists.elem.is_optional and lists.elem.elem.is_tensor)
        device = dispatcher.argument_type(parse_type("Device?"))
        self.assertTrue(device.is_optional and device.elem.is_device and not device.is_device)
        self.assertTrue(dispatcher.argument_type(parse_type("Generator?")).holds_reference_count)
        self.assertFalse(dispatcher.argument_type(parse_type("Scalar?")).holds_reference_count)
        with self.assertRaises(TypeError):
            tensor.elem

    def test_parts_of_returns(self):
        t = dispatcher.return_ctype(FunctionSchema.parse("f(Tensor self) -> (Tensor[], int)"))
        self.assertTrue(t.is_tuple)
        first, second = t.elements
        self.assertTrue(first.is_vector and first.elem.is_tensor)
        self.assertEqual(second, dispatcher.INT64)
        self.assertTrue(dispatcher.return_ctype(FunctionSchema.parse("f() -> ()")).is_void)
        with self.assertRaises(TypeError):
            first.elements

    def test_spelled_outside_dk(self):
        t = dispatcher.argument_type(parse_type("int[]?"))
        self.assertEqual(native.qualify_dk_type(t), "std::optional<::dk::IntArrayRef>")
        self.assertEqual(native.qualify_dk_type(dispatcher.argument_type(parse_type("Tensor?[]"))),
                         "::dk::ArrayRef<std::optional<::dk::Tensor>>")
        self.assertEqual(native.qualify_dk_type(dispatcher.argument_type(parse_type("str?"))),
                         "std::optional<std::string_view>")

    def test_signature_ids_from_parts(self):
        sig = dispatcher.signature(FunctionSchema.parse(
            "f(Tensor self, int[]? dim, float[] w, Tensor?[] t, Generator? g) -> (Tensor, int[])"))
        self.assertEqual(sig.id, "sig_Tup2TensorIntVec__Tensor_OptIntList_DoubleList_OptTensorList_OptGenerator")


class SignatureTest(unittest.TestCase):
    def test_signature_texts(self):
        sig = dispatcher.signature(FunctionSchema.parse(
            "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"))
        self.assertEqual(sig.canonical, "Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&)")
        self.assertEqual(sig.params(),
                         "const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias")
        self.assertEqual(sig.names(), "input, weight, bias")
        self.assertEqual(sig.decl("call"), "Tensor call(const Tensor& input, const Tensor& weight, "
                                           "const std::optional<Tensor>& bias)")
        self.assertEqual(sig.decl("redispatch", "DispatchKeySet ks").split("(")[1].split(",")[0], "DispatchKeySet ks")

    def test_reserved_argument_names_get_an_underscore(self):
        sig = dispatcher.signature(FunctionSchema.parse(
            "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)"))
        self.assertEqual(sig.names(), "self, k_, dim, largest, sorted")
        sig = dispatcher.signature(FunctionSchema.parse("f(Tensor self, int default, Tensor ks) -> Tensor"))
        self.assertEqual(sig.names(), "self, default_, ks_")

    def test_bitmap(self):
        cases = {
            "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor": (0b110, "0b110"),
            "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)": (0b1101, "0b1101"),
            "cat(Tensor[] tensors, int dim=0) -> Tensor": (0b10, "0b10"),
            "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor": (0b11, "0b11"),
            "zeros(SymInt[] size, *, ScalarType? dtype=None) -> Tensor": (0, "0b00"),
            "f() -> Tensor": (0, "0b0"),
        }
        for schema, (bitmap, literal) in cases.items():
            with self.subTest(schema):
                func = FunctionSchema.parse(schema)
                self.assertEqual((dispatcher.dispatch_bitmap(func), dispatcher.bitmap_literal(func)), (bitmap, literal))

    def test_struct_names(self):
        self.assertEqual(dispatcher.struct_name(OperatorName("add", "Tensor")), "add_Tensor")
        self.assertEqual(dispatcher.struct_name(OperatorName("relu")), "relu")
        self.assertEqual(dispatcher.struct_name(OperatorName("std")), "std_")
        self.assertEqual(dispatcher.struct_name(OperatorName("std", "dim")), "std_dim")

    def test_native_kernel(self):
        sig = dispatcher.signature(FunctionSchema.parse("relu(Tensor self) -> Tensor"))
        k = native.kernel(BackendMetadata("relu_cpu"), sig)
        self.assertEqual((k.qualified, k.declaration()), ("native::relu_cpu", "Tensor relu_cpu(const Tensor& self);"))
        k = native.kernel(BackendMetadata.parse("my::ns::relu_x"), sig)
        self.assertEqual((k.namespace, k.qualified), ("my::ns", "::my::ns::relu_x"))


class DefaultTest(unittest.TestCase):
    def default(self, arg_text):
        arg = Argument.parse(arg_text)
        return cpp.default_expr(arg, dispatcher.argument_type(arg.type))

    def test_defaults(self):
        cases = {
            "Scalar alpha=1": "1",
            "Scalar alpha=0.5": "0.5",
            "Scalar? min=None": "std::nullopt",
            "Tensor? bias=None": "std::nullopt",
            "bool keepdim=False": "false",
            "bool? pin_memory=None": "std::nullopt",
            "int dim=-1": "-1",
            "int reduction=Mean": "::dk::Reduction::Mean",
            "float eps=1e-05": "1e-05",
            "float p=1": "1",
            "str approximate='none'": '"none"',
            'str mode="reflect"': '"reflect"',
            "str? rounding_mode=None": "std::nullopt",
            "int[] dims=[0,1]": "{0, 1}",
            "int[1] dim=[-2,-1]": "{-2, -1}",
            "SymInt[] size=[]": "{}",
            "int[2] stride=1": "{1, 1}",
            "int[3] padding=0": "{0, 0, 0}",
            "MemoryFormat memory_format=contiguous_format": "MemoryFormat::Contiguous",
            "MemoryFormat? memory_format=contiguous_format": "MemoryFormat::Contiguous",
            "ScalarType? dtype=long": "ScalarType::Long",
            "Dimname? name=None": "std::nullopt",
            "bool[3] output_mask=[True,True,True]": "{true, true, true}",
            "bool[2] mask=[False, True]": "{false, true}",
            "int dim": None,
        }
        for text, expected in cases.items():
            with self.subTest(text):
                self.assertEqual(self.default(text), expected)

    def test_string_escapes(self):
        self.assertEqual(self.default('str s="\\"\'\\\\"'), '"\\"\'\\\\"')
        self.assertEqual(cpp.cpp_string_literal('a"b\\c\nd\x01'), '"a\\"b\\\\c\\nd\\001"')

    def test_unknown_default_is_an_error(self):
        with self.assertRaises(ValueError) as caught:
            self.default("ScalarType dtype=Short")
        self.assertEqual(str(caught.exception),
                         "no C++ spelling for the default 'Short' of argument 'dtype' (ScalarType)")


class PublicApiTest(support.NativeYamlTestCase):
    def functions(self, text):
        nfs = self.parse(text)
        sigs = cpp.public_functions(nfs)
        return [(f"{s.returns} {s.name}({s.params()})", s.call_args()) for nf in nfs for s in sigs.get(nf, ())]

    def methods(self, text):
        nfs = self.parse(text)
        sigs = cpp.public_methods(nfs)
        return [(f"{s.returns} {s.name}({s.params()}) const", s.call_args()) for nf in nfs for s in sigs.get(nf, ())]

    def test_function_and_method(self):
        text = """
            - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
              variants: function, method
            """
        self.assertEqual(self.functions(text), [
            ("Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1)", "self, other, alpha")])
        self.assertEqual(self.methods(text), [
            ("Tensor add(const Tensor& other, const Scalar& alpha = 1) const", "*this, other, alpha")])

    def test_self_in_the_middle(self):
        self.assertEqual(self.methods("""
            - func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
              variants: method
            """), [("Tensor where(const Tensor& condition, const Tensor& other) const", "condition, *this, other")])

    def test_no_default_before_a_parameter_without_one(self):
        self.assertEqual(self.functions("""
            - func: rand.generator(int[] size, *, Generator? generator, ScalarType? dtype=None) -> Tensor
            - func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
            - func: f(Tensor self, int a=1, int b=2) -> Tensor
              cpp_no_default_args: ['b']
            """), [
            ("Tensor rand(IntArrayRef size, std::optional<Generator> generator, "
             "std::optional<ScalarType> dtype = std::nullopt)", "size, std::move(generator), dtype"),
            ("Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out)",
             "self, other, alpha, out"),
            # Note [Out spellings]: outputs first with the schema's defaults, outputs last without.
            ("Tensor add_out(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1)",
             "self, other, alpha, out"),
            ("Tensor add_outf(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out)",
             "self, other, alpha, out"),
            ("Tensor f(const Tensor& self, int64_t a, int64_t b)", "self, a, b"),
        ])

    def test_ambiguous_defaults_are_dropped_from_the_longer_overload(self):
        nfs = self.parse("""
            - func: arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None) -> Tensor
            - func: arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None) -> Tensor
            - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
            - func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
            """)
        sigs = cpp.public_functions(nfs)
        texts = [s.params() for nf in nfs for s in sigs[nf]]
        self.assertEqual(texts, [
            "const Scalar& start, const Scalar& end, std::optional<ScalarType> dtype = std::nullopt",
            "const Scalar& start, const Scalar& end, const Scalar& step, std::optional<ScalarType> dtype = std::nullopt",
            "const Tensor& self, const Tensor& other, const Scalar& alpha = 1",
            "const Tensor& self, const Scalar& other, const Scalar& alpha = 1",
        ])
        self.assertEqual(sigs[nfs[1]][0].ambiguous_with, ("arange.start",))
        self.assertEqual(sigs[nfs[0]][0].ambiguous_with, ())

    def test_two_overloads_callable_without_arguments(self):
        nfs = self.parse("""
            - func: f(Tensor self, *, ScalarType? dtype=None) -> Tensor
              variants: method
            - func: f.dim(Tensor self, int dim=0) -> Tensor
              variants: method
            """)
        sigs = cpp.public_methods(nfs)
        self.assertEqual([s.params() for nf in nfs for s in sigs[nf]],
                         ["std::optional<ScalarType> dtype = std::nullopt", "int64_t dim"])

    def test_braced_list_form_for_optional_int_lists(self):
        self.assertEqual(self.functions("""
            - func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
            """), [
            ("Tensor sum(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim = false, "
             "std::optional<ScalarType> dtype = std::nullopt)", "self, dim, keepdim, dtype"),
            ("Tensor sum(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim = false, "
             "std::optional<ScalarType> dtype = std::nullopt)", "self, IntArrayRef(dim), keepdim, dtype"),
        ])

    def test_manual_cpp_binding_gets_nothing(self):
        self.assertEqual(self.functions("""
            - func: f(Tensor self) -> Tensor
              manual_cpp_binding: True
            """), [])

    def test_method_clashing_with_a_hand_written_member(self):
        nfs = self.parse("""
            - func: sizes(Tensor self) -> int[]
              variants: method
            """)
        with self.assertRaises(GenError) as caught:
            cpp.public_methods(nfs)
        self.assertEqual(str(caught.exception).replace(self.path, "P"),
                         "P:1: sizes(Tensor self) -> int[]: method 'sizes' clashes with the hand-written "
                         "dk::Tensor::sizes; drop 'method' from variants or set manual_cpp_binding: True")

    def test_overloading_a_hand_written_member(self):
        # PyTorch's size.Dimname: int64_t size(Dimname) coexists with the hand-written size(int64_t).
        nfs = self.parse("""
            - func: size.Dimname(Tensor self, Dimname dim) -> int
              variants: method
            """)
        ((method,),) = cpp.public_methods(nfs).values()
        self.assertEqual(method.params(), "IValue dim")  # dispatchkit has no Dimname type: an IValue
        for schema in ("size.int(Tensor self, int dim) -> int", "size.other(Tensor self, Dimname dim) -> Tensor"):
            nfs = self.parse(f"- func: {schema}\n  variants: method\n")
            with self.assertRaises(GenError) as caught:
                cpp.public_methods(nfs)
            self.assertIn("method 'size' clashes with the hand-written dk::Tensor::size", str(caught.exception))

    def test_unknown_default_is_a_located_error(self):
        nfs = self.parse("- func: f(Tensor self, ScalarType dtype=Short) -> Tensor\n")
        with self.assertRaises(GenError) as caught:
            cpp.public_functions(nfs)
        self.assertEqual(str(caught.exception).replace(self.path, "P"),
                         "P:1: f(Tensor self, ScalarType dtype=Short) -> Tensor: no C++ spelling for the default "
                         "'Short' of argument 'dtype' (ScalarType)")


if __name__ == "__main__":
    unittest.main()


class SchemaDataTest(unittest.TestCase):
    """codegen/dest/register_schema.py: schemas as dk::schema_data initializers (Note
    [Pre-built schemas]); the runtime side is tested in tests/test_generated_ops.cpp."""

    def test_types_list_their_wrappers_innermost_first(self):
        from codegen.dest.register_schema import type_data
        for text, expected in [
            ("Tensor", "{Tensor}"),
            ("int", "{Int}"),
            ("complex", "{Complex}"),
            ("Tensor?", "{Tensor, {kOptional}}"),
            ("Tensor?[]", "{Tensor, {kOptional, kList}}"),
            ("int[2]", "{Int, {listOf(2)}}"),
            ("SymInt[1]?", "{SymInt, {listOf(1), kOptional}}"),
            ("float[]?", "{Float, {kList, kOptional}}"),
        ]:
            with self.subTest(text):
                self.assertEqual(type_data(parse_type(text), "op"), expected)

    def test_arguments_leave_defaults_out_and_name_strings_from_the_pool(self):
        from codegen.dest.register_schema import StringPool, argument_data
        schema = FunctionSchema.parse(
            'f.out(Tensor(a!) self, Tensor(b -> *)[] xs, *, str mode="a\\"b", int n=-1, Tensor(c!) out) -> Tensor(c!) r')
        pool = StringPool()
        self.assertEqual(argument_data(schema.positional[0], False, pool, "f"),
                         "{.name = s_self, .type = {Tensor}, .alias = {.before = s_a, .is_write = true}}")
        self.assertEqual(argument_data(schema.positional[1], False, pool, "f"),
                         "{.name = s_xs, .type = {Tensor, {kList}}, .alias = {.before = s_b, .after = s_star}}")
        self.assertEqual(argument_data(schema.kwarg_only[0], True, pool, "f"),
                         "{.name = s_mode, .type = {Str}, .default_value = s_str_a__b, .kwarg_only = true}")
        self.assertEqual(argument_data(schema.kwarg_only[1], True, pool, "f"),
                         "{.name = s_n, .type = {Int}, .default_value = s_neg1, .kwarg_only = true}")
        self.assertEqual(argument_data(schema.returns[0], False, pool, "f"),
                         "{.name = s_r, .type = {Tensor}, .alias = {.before = s_c, .is_write = true}}")
        # Strings in order of first use, each once, the empty one first; as char array members.
        self.assertEqual(pool.entries[:4], [("s_empty", ""), ("s_self", "self"), ("s_a", "a"), ("s_xs", "xs")])
        self.assertEqual(pool.member("s_str_a__b", '"a\\"b"'), 'char s_str_a__b[7] = "\\"a\\\\\\"b\\"";')

    def test_pool_names_stay_distinct(self):
        from codegen.dest.register_schema import StringPool
        pool = StringPool()
        self.assertEqual([pool.ref(t) for t in ("0.0", "0_0", "0.0", "_x", "x")],
                         ["s_0_0", "s_0_0_2", "s_0_0", "s__x", "s_x"])

    def test_a_type_the_runtime_lacks_is_refused_with_the_operator(self):
        from codegen.dest.register_schema import type_data
        with self.assertRaisesRegex(GenError, "operator dk::f: type 'DimVector' has no runtime type kind"):
            type_data(parse_type("DimVector"), "operator dk::f")
