"""Tests of codegen/native_yaml.py and codegen/model.py: entries that parse, and what they give."""

import unittest
from unittest import mock

from codegen.dispatch_key import DispatchKey
from codegen.errors import Location
from codegen.model import BackendMetadata, NativeFunction, OperatorName

from . import support

K = DispatchKey


class DispatchKeyTableTest(unittest.TestCase):
    def test_backend_and_cuda_keys(self):
        """dispatch_key.py says which keys are backend keys and which are CUDA's (no name
        prefixes): the per-backend keys of dk/core/dispatch_key.h, Autograd's excluded."""
        backend = {k.name for k in DispatchKey if k.is_backend}
        self.assertEqual(backend, {f + b for f in ("", "Quantized", "Sparse")
                                   for b in ("CPU", "CUDA", "PrivateUse1", "PrivateUse2", "Meta")})
        self.assertEqual({k for k in DispatchKey if k.is_cuda}, {K.CUDA, K.QuantizedCUDA, K.SparseCUDA})
        self.assertEqual((K.AutogradCUDA.backend, K.AutogradCUDA.functionality),
                         ("CUDA", "AutogradFunctionality"))
        self.assertFalse(K.AutogradCUDA.is_backend or K.AutogradCUDA.is_cuda)
        for key in (K.AutocastCUDA, K.BackendSelect, K.CompositeExplicitAutograd):
            self.assertIsNone(key.backend, key)
            self.assertFalse(key.is_backend, key)


class DispatchMapTest(support.NativeYamlTestCase):
    def test_comma_lists_and_single_keys(self):
        nf = self.parse_one("""
            - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
              dispatch:
                CPU, CUDA: add_kernel
                Meta: add_meta
                SparseCPU,SparseCUDA:   add_sparse
            """)
        self.assertEqual(dict(nf.dispatch), {
            K.CPU: BackendMetadata("add_kernel"),
            K.CUDA: BackendMetadata("add_kernel"),
            K.Meta: BackendMetadata("add_meta"),
            K.SparseCPU: BackendMetadata("add_sparse"),
            K.SparseCUDA: BackendMetadata("add_sparse"),
        })
        self.assertEqual(list(nf.dispatch), [K.CPU, K.CUDA, K.Meta, K.SparseCPU, K.SparseCUDA])
        self.assertFalse(nf.dispatch_is_default)
        self.assertFalse(nf.has_composite_kernel)
        self.assertEqual(dict(nf.foreign_dispatch), {})

    def test_alias_keys(self):
        nfs = self.parse("""
            - func: a(Tensor self) -> Tensor
              dispatch:
                CompositeExplicitAutograd: a_composite
                Autograd: a_autograd
            - func: b(Tensor self) -> Tensor
              dispatch:
                CompositeExplicitAutogradNonFunctional: b_nonfunctional
            - func: c(Tensor self) -> Tensor
              dispatch:
                CompositeImplicitAutograd: c_math
                AutocastCUDA, TESTING_ONLY_GenericWrapper: c_wrapper
            """)
        a, b, c = nfs
        self.assertEqual(dict(a.dispatch), {K.Autograd: BackendMetadata("a_autograd"),
                                            K.CompositeExplicitAutograd: BackendMetadata("a_composite")})
        self.assertTrue(a.has_composite_explicit_autograd_kernel)
        self.assertFalse(a.has_composite_implicit_autograd_kernel)
        self.assertTrue(b.has_composite_explicit_autograd_non_functional_kernel)
        self.assertTrue(c.has_composite_implicit_autograd_kernel)
        self.assertEqual(c.kernel(K.AutocastCUDA), BackendMetadata("c_wrapper"))
        self.assertIsNone(c.kernel(K.CPU))
        self.assertTrue(K.Autograd.is_alias and K.CompositeImplicitAutograd.is_alias)
        self.assertTrue(K.CPU.is_runtime and K.AutogradOther.is_runtime)

    def test_qualified_kernel_names(self):
        nf = self.parse_one("""
            - func: a(Tensor self) -> Tensor
              dispatch:
                CPU: ::at::native::a_cpu
                CUDA: a_cuda
                Meta: dk::meta::a_meta
            """)
        self.assertEqual(nf.kernel(K.CPU), BackendMetadata("a_cpu", "at::native"))
        self.assertEqual(str(nf.kernel(K.CPU)), "::at::native::a_cpu")
        self.assertEqual(str(nf.kernel(K.CUDA)), "a_cuda")
        self.assertEqual(str(nf.kernel(K.Meta)), "dk::meta::a_meta")

    def test_no_dispatch_means_composite_implicit(self):
        relu, relu_, out = self.parse("""
            - func: relu(Tensor self) -> Tensor
            - func: relu_(Tensor(a!) self) -> Tensor(a!)
            - func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
            """)
        self.assertEqual(dict(relu.dispatch), {K.CompositeImplicitAutograd: BackendMetadata("relu")})
        self.assertEqual(dict(relu_.dispatch), {K.CompositeImplicitAutograd: BackendMetadata("relu_")})
        self.assertEqual(dict(out.dispatch), {K.CompositeImplicitAutograd: BackendMetadata("relu_out")})
        self.assertTrue(relu.dispatch_is_default and relu.has_composite_implicit_autograd_kernel)

    def test_structured_entries_get_no_default(self):
        functional, out = self.parse("""
            - func: gelu(Tensor self) -> Tensor
              structured_delegate: gelu.out
            - func: gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
              structured: True
              structured_inherits: TensorIteratorBase
              dispatch:
                CPU: gelu_out_cpu
            """)
        # The family's kernels (codegen/structured.py): the out= operator's, and Meta from meta().
        family = {K.CPU: BackendMetadata("gelu_out_cpu", structured=True),
                  K.Meta: BackendMetadata("structured_gelu", "dk::meta", structured=True)}
        self.assertEqual(dict(functional.dispatch), family)
        self.assertEqual(dict(out.dispatch), family)
        self.assertFalse(functional.dispatch_is_default)
        self.assertEqual(functional.structured_delegate, OperatorName("gelu", "out"))
        self.assertTrue(out.structured)
        self.assertEqual(out.structured_inherits, "TensorIteratorBase")

    def test_foreign_keys_are_recorded_in_compat_mode(self):
        nf = self.parse_one("""
            - func: abs(Tensor self) -> Tensor
              dispatch:
                CPU, MPS: abs_kernel
                SparseCsrCPU: abs_sparse_csr
            """, foreign_keys="ignore")
        self.assertEqual(dict(nf.dispatch), {K.CPU: BackendMetadata("abs_kernel")})
        self.assertEqual(dict(nf.foreign_dispatch), {"MPS": BackendMetadata("abs_kernel"),
                                                     "SparseCsrCPU": BackendMetadata("abs_sparse_csr")})

    def test_foreign_key_mode_is_checked(self):
        with self.assertRaises(ValueError):
            self.parse("- func: f() -> ()\n", foreign_keys="warn")


class EntryFieldsTest(support.NativeYamlTestCase):
    def test_defaults(self):
        nf = self.parse_one("- func: relu(Tensor self) -> Tensor\n")
        self.assertIsInstance(nf, NativeFunction)
        self.assertEqual(nf.name, OperatorName("relu"))
        self.assertEqual(nf.loc, Location(self.path, 1))
        self.assertEqual(nf.variants, ("function",))
        self.assertTrue(nf.has_function_variant)
        self.assertFalse(nf.has_method_variant)
        self.assertEqual(nf.tags, ())
        self.assertEqual(nf.device_check, "ExactSame")
        self.assertTrue(nf.device_guard)
        for flag in ("manual_cpp_binding", "manual_kernel_registration", "structured",
                     "use_const_ref_for_mutable_tensors"):
            self.assertFalse(getattr(nf, flag), flag)
        self.assertEqual((nf.autogen, nf.cpp_no_default_args), ((), ()))
        for name in ("structured_delegate", "structured_inherits", "python_module",
                     "category_override", "precomputed"):
            self.assertIsNone(getattr(nf, name), name)
        self.assertEqual(dict(nf.ufunc_inner_loop), {})
        self.assertEqual(dict(nf.autocast), {})

    def test_every_key(self):
        _, nf = self.parse("""
            - func: avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[]) -> Tensor
              structured_delegate: avg_pool2d.out
            - func: avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], *, Tensor(a!) out) -> Tensor(a!)
              variants: method, function
              tags: [inplace_view, pointwise]
              device_check: NoCheck
              device_guard: False
              manual_cpp_binding: True
              manual_kernel_registration: False
              autogen: avg_pool2d.foo, avg_pool2d.bar_out
              structured: True
              structured_inherits: at::TensorIteratorBase
              python_module: nn
              category_override: factory
              precomputed:
              - kernel_size -> int kH, int kW
              - int extra
              cpp_no_default_args: ['stride']
              use_const_ref_for_mutable_tensors: True
              ufunc_inner_loop:
                Generic: add (AllAndComplex, BFloat16)
                ScalarOnly: add (Bool)
              autocast: fp32
              dispatch:
                CPU: avg_pool2d_out_cpu
            """)
        self.assertEqual(nf.variants, ("function", "method"))
        self.assertEqual(nf.tags, ("inplace_view", "pointwise"))
        self.assertEqual(nf.device_check, "NoCheck")
        self.assertFalse(nf.device_guard)
        self.assertTrue(nf.manual_cpp_binding)
        self.assertEqual(nf.autogen, (OperatorName("avg_pool2d", "foo"), OperatorName("avg_pool2d", "bar_out")))
        self.assertEqual(nf.structured_inherits, "at::TensorIteratorBase")
        self.assertEqual((nf.python_module, nf.category_override), ("nn", "factory"))
        self.assertEqual([(name, [str(a) for a in args]) for name, args in nf.precomputed.replace],
                         [("kernel_size", ["int kH", "int kW"])])
        self.assertEqual([str(a) for a in nf.precomputed.add], ["int extra"])
        self.assertEqual(nf.cpp_no_default_args, ("stride",))
        self.assertTrue(nf.use_const_ref_for_mutable_tensors)
        self.assertEqual(dict(nf.ufunc_inner_loop),
                         {"Generic": "add (AllAndComplex, BFloat16)", "ScalarOnly": "add (Bool)"})
        self.assertEqual(dict(nf.autocast), {"CPU": "fp32", "CUDA": "fp32"})

    def test_tags_as_comma_string(self):
        nf = self.parse_one("- func: relu(Tensor self) -> Tensor\n  tags: inplace_view, view_copy\n")
        self.assertEqual(nf.tags, ("inplace_view", "view_copy"))

    def test_tags_unchecked_without_a_tag_list(self):
        nf = self.parse_one("- func: relu(Tensor self) -> Tensor\n  tags: anything\n", tags=None)
        self.assertEqual(nf.tags, ("anything",))

    def test_autocast_policies(self):
        for policy in ("lower_precision_fp", "fp32", "promote"):
            nf = self.parse_one(f"- func: mm(Tensor self, Tensor mat2) -> Tensor\n  autocast: {policy}\n")
            self.assertEqual(dict(nf.autocast), {"CPU": policy, "CUDA": policy})

    def test_autocast_per_device_type(self):
        nf = self.parse_one("- func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor\n"
                            "  autocast: {CUDA: fp32_set_opt_dtype}\n")
        self.assertEqual(dict(nf.autocast), {"CUDA": "fp32_set_opt_dtype"})
        nf = self.parse_one("- func: cat(Tensor[] tensors, int dim=0) -> Tensor\n"
                            "  autocast: {CPU: promote, CUDA: fp32}\n")
        self.assertEqual(dict(nf.autocast), {"CPU": "promote", "CUDA": "fp32"})

    def test_batching_family(self):
        # A pointwise tag implies the family for functional and in-place forms, not out=.
        nf = self.parse_one("- func: relu(Tensor self) -> Tensor\n  tags: pointwise\n")
        self.assertEqual(nf.batching, "pointwise")
        nf = self.parse_one("- func: relu_(Tensor(a!) self) -> Tensor(a!)\n  tags: pointwise\n")
        self.assertEqual(nf.batching, "pointwise")
        nf = self.parse_one("- func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  tags: pointwise\n")
        self.assertIsNone(nf.batching)
        nf = self.parse_one("- func: relu(Tensor self) -> Tensor\n  tags: pointwise\n  batching: none\n")
        self.assertIsNone(nf.batching)
        nf = self.parse_one("- func: f(Tensor a, Tensor b, Scalar c) -> Tensor\n  batching: pointwise\n")
        self.assertEqual(nf.batching, "pointwise")
        self.assertIsNone(self.parse_one("- func: relu(Tensor self) -> Tensor\n").batching)
        nf = self.parse_one("- func: cumsum(Tensor self, int dim) -> Tensor\n  batching: along_dims\n")
        self.assertEqual(nf.batching, "along_dims")
        nf = self.parse_one("- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False) -> Tensor\n"
                            "  batching: along_dims\n")
        self.assertEqual(nf.batching, "along_dims")

    def test_a_family_or_an_own_rule_not_both(self):
        errors = self.errors("- func: cumsum(Tensor self, int dim) -> Tensor\n  batching: along_dims\n"
                             "  dispatch:\n    CPU: cumsum_cpu\n    FuncTorchBatched: dk::func::cumsum_batched\n")
        self.assertEqual(len(errors), 1)
        self.assertIn("either a 'batching:' family or its own FuncTorchBatched rule", errors[0])

    def test_a_view_copy_is_batched_through_its_view(self):
        errors = self.errors("- func: t_copy(Tensor self) -> Tensor\n  tags: view_copy\n"
                             "  dispatch:\n    CPU: t_copy_cpu\n    FuncTorchBatched: dk::func::t_copy_batched\n")
        self.assertEqual(len(errors), 1)
        self.assertIn("a view copy (tag view_copy) is batched by running its view", errors[0])

    def test_along_dims_family_needs_one_tensor_and_a_dim(self):
        for func in ("add(Tensor self, Tensor other, int dim) -> Tensor",   # two tensors
                     "norm(Tensor self, int p) -> Tensor",                  # no dim argument
                     "cumsum_(Tensor(a!) self, int dim) -> Tensor(a!)",     # writes
                     "unbind(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]"):  # a list of views
            with self.subTest(func):
                errors = self.errors(f"- func: {func}\n  batching: along_dims\n")
                self.assertEqual(len(errors), 1)
                self.assertIn("the along_dims batching rule is for a functional operator of one Tensor argument", errors[0])
                self.assertTrue(errors[0].startswith("P:2"), errors[0])

    def test_locations_are_the_func_lines(self):
        nfs = self.parse("""
            # a comment
            - func: a(Tensor self) -> Tensor
              variants: function

            - func: b(Tensor self) -> Tensor
            - variants: method
              func: c(Tensor self) -> Tensor
            """)
        self.assertEqual([nf.loc.line for nf in nfs], [2, 5, 6])
        self.assertEqual(str(nfs[1].loc), f"{self.path}:5")

    def test_model_is_frozen(self):
        nf = self.parse_one("- func: relu(Tensor self) -> Tensor\n")
        with self.assertRaises(AttributeError):
            nf.variants = ("method",)
        with self.assertRaises(TypeError):
            nf.dispatch[K.CPU] = BackendMetadata("x")
        self.assertEqual(len({nf, nf}), 1)


class RoundTripCheckTest(support.NativeYamlTestCase):
    def test_a_schema_that_prints_differently_is_an_error(self):
        # Unreachable with the real printer; the check is the generator's safety net.
        with mock.patch("codegen.schema.FunctionSchema.__str__", lambda self: "relu(Tensor x) -> Tensor"):
            self.assertError(
                "- func: relu(Tensor self) -> Tensor\n",
                "P:1: relu(Tensor self) -> Tensor: schema does not round-trip: "
                "printed back as 'relu(Tensor x) -> Tensor'",
            )


if __name__ == "__main__":
    unittest.main()
