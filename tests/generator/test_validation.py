"""Every validation error of native_functions.yaml parsing, asserted by its exact text.

P stands for the fixture's path; the line is that of the offending key, or of the
entry's ``- func:`` when no single key is to blame.
"""

import unittest

from . import support

RELU = "relu(Tensor self) -> Tensor"
ADD_OUT = "add.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)"


class EntryShapeErrorsTest(support.NativeYamlTestCase):
    def test_unknown_keys(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU}
                  dispach:
                    CPU: relu_cpu
                  frobnicate: 1
                """),
            [f"P:2: {RELU}: unknown key 'dispach' (did you mean 'dispatch'?)",
             f"P:4: {RELU}: unknown key 'frobnicate'"],
        )

    def test_missing_func(self):
        self.assertError("- variants: function\n", "P:1: entry has no 'func' key")

    def test_func_not_a_string(self):
        self.assertError("- func: 3\n", "P:1: 'func' must be a schema string, got int")

    def test_malformed_schema_has_the_column(self):
        self.assertError(
            "- func: relu(Tensor self -> Tensor\n",
            "P:1: relu(Tensor self -> Tensor: malformed schema at column 17: expected ', ' or ')', found ' '",
        )

    def test_unknown_type(self):
        self.assertError(
            "- func: relu(Tensr self) -> Tensor\n",
            "P:1: relu(Tensr self) -> Tensor: unknown type 'Tensr' at column 6",
        )

    def test_default_of_the_wrong_type(self):
        # As the runtime's schema parser (Note [Default value types]): caught here, with the line,
        # instead of at registration when the program starts.
        self.assertError(
            "- func: f(Tensor x=3) -> Tensor\n",
            "P:1: f(Tensor x=3) -> Tensor: malformed schema at column 12: default value 3 of argument 'x' (Tensor): "
            "a Tensor default can only be None",
        )
        self.assertError(
            "- func: f(Tensor x, int[] l=[\"a\"]) -> Tensor\n",
            "P:1: f(Tensor x, int[] l=[\"a\"]) -> Tensor: malformed schema at column 21: default value [\"a\"] of "
            "argument 'l' (int[]): list element: not a value of type int",
        )
        self.assertError(
            "- func: f(Tensor x, int n=bogus) -> Tensor\n",
            "P:1: f(Tensor x, int n=bogus) -> Tensor: malformed schema at column 19: default value bogus of argument "
            "'n' (int): not a value of type int",
        )

    def test_top_level_must_be_a_list(self):
        self.assertError("func: relu(Tensor self) -> Tensor\n",
                         "P:1: expected a list of operator entries, got mapping")

    def test_entry_must_be_a_mapping(self):
        self.assertError(f"- func: {RELU}\n- just a string\n",
                         "P:2: entry must be a mapping with a 'func' key, got str")

    def test_wrong_value_types(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU}
                  device_guard: "no"
                  structured: 1
                  variants: [function]
                  autogen: [relu.out]
                  python_module: 7
                  cpp_no_default_args: self
                  precomputed: [1]
                  tags: 5
                  ufunc_inner_loop: add
                  autocast: [fp32]
                  dispatch: relu_kernel
                """),
            [f"P:2: {RELU}: 'device_guard' must be True or False, got str",
             f"P:3: {RELU}: 'structured' must be True or False, got int",
             f"P:4: {RELU}: 'variants' must be a string such as 'function, method', got list",
             f"P:5: {RELU}: 'autogen' must be a string such as 'foo.out, bar.out', got list",
             f"P:6: {RELU}: 'python_module' must be an identifier, got int",
             f"P:7: {RELU}: 'cpp_no_default_args' must be a list of strings, got str",
             f"P:8: {RELU}: 'precomputed' must be a list of strings, got a int item",
             f"P:9: {RELU}: 'tags' must be a string or a list of strings, got int",
             f"P:10: {RELU}: 'ufunc_inner_loop' must be a mapping of ufunc keys to loop descriptions, got str",
             f"P:11: {RELU}: 'autocast' must be a policy or a mapping of device types to policies, got list",
             f"P:12: {RELU}: 'dispatch' must be a mapping of dispatch keys to kernel names, got str"],
        )

    def test_bad_enumerated_values(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU}
                  device_check: Sometimes
                  autocast: bf16
                  python_module: not a name
                  structured_inherits: Base<int>
                  category_override: 1x
                """),
            [f"P:2: {RELU}: 'device_check' must be NoCheck or ExactSame, got 'Sometimes'",
             f"P:3: {RELU}: 'autocast' must be one of lower_precision_fp, fp32, promote, fp32_set_opt_dtype, got 'bf16'",
             f"P:4: {RELU}: 'python_module' must be an identifier, got 'not a name'",
             f"P:5: {RELU}: 'structured_inherits' must be a C++ class name, got 'Base<int>'",
             f"P:6: {RELU}: 'category_override' must be an identifier, got '1x'"],
        )

    def test_errors_of_many_entries_come_in_line_order(self):
        self.assertEqual(
            self.errors("""
                - func: a(Tensor self) -> Tensor
                  variants: fn
                - func: b(Tensor self) -> Tensor
                  device_check: no
                - func: a(Tensor self) -> Tensor
                """),
            ["P:2: a(Tensor self) -> Tensor: unknown variant 'fn' (expected function or method)",
             "P:4: b(Tensor self) -> Tensor: 'device_check' must be NoCheck or ExactSame, got bool",
             "P:5: a(Tensor self) -> Tensor: duplicate operator 'a' (first defined at line 1)"],
        )


class DispatchErrorsTest(support.NativeYamlTestCase):
    def test_unknown_dispatch_key(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU}
                  dispatch:
                    CPU: relu_cpu
                    CPUU, MPS: relu_other
                    Undefined: relu_undefined
                """),
            [f"P:4: {RELU}: unknown dispatch key 'CPUU'",
             f"P:4: {RELU}: unknown dispatch key 'MPS'",
             f"P:5: {RELU}: unknown dispatch key 'Undefined'"],
        )

    def test_compat_mode_still_checks_spelling(self):
        self.assertError(f"""
            - func: {RELU}
              dispatch:
                CPU CUDA: relu_kernel
            """, f"P:3: {RELU}: malformed dispatch key 'CPU CUDA'", foreign_keys="ignore")

    def test_empty_dispatch_key(self):
        self.assertError(f"""
            - func: {RELU}
              dispatch:
                "CPU,": relu_kernel
            """, f"P:3: {RELU}: empty dispatch key in 'CPU,'")

    def test_dispatch_key_given_twice(self):
        self.assertError(f"""
            - func: {RELU}
              dispatch:
                CPU: relu_cpu
                CUDA, CPU: relu_other
            """, f"P:4: {RELU}: dispatch key 'CPU' given twice (first at line 3)")

    def test_kernel_names(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU}
                  dispatch:
                    CPU: relu-cpu
                    CUDA: delete
                    Meta: ::relu_meta
                    SparseCPU: "at::native::"
                    SparseCUDA: 3
                    QuantizedCPU: at::native::relu_quantized
                    QuantizedCUDA: std::system
                    SparseMeta: dk::relu_nested
                """),
            [f"P:3: {RELU}: kernel name 'relu-cpu' is not a C++ identifier",
             f"P:4: {RELU}: kernel name 'delete' is not a C++ identifier",
             f"P:5: {RELU}: kernel name '::relu_meta': a kernel cannot live in the global namespace",
             f"P:6: {RELU}: kernel name 'at::native::' is not a C++ identifier",
             f"P:7: {RELU}: kernel for 'SparseCUDA' must be a string, got int",
             f"P:8: {RELU}: kernel name 'at::native::relu_quantized' names a namespace outside dk: write it "
             "fully qualified, '::at::native::relu_quantized', or relative to dk, 'dk::...'",
             f"P:9: {RELU}: kernel name 'std::system': a kernel cannot live in namespace std",
             f"P:10: {RELU}: kernel name 'dk::relu_nested': namespace dk is generated code's; use dk::native "
             "or your own"],
        )

    def test_more_than_one_composite_key(self):
        self.assertError(f"""
            - func: {RELU}
              dispatch:
                CompositeExplicitAutograd: relu_explicit
                CompositeImplicitAutograd: relu_implicit
            """, f"P:2: {RELU}: more than one composite key (CompositeImplicitAutograd, "
                 "CompositeExplicitAutograd); give one, each subsumes the next")

    def test_manual_kernel_registration_with_dispatch(self):
        self.assertError(f"""
            - func: {RELU}
              manual_kernel_registration: True
              dispatch:
                CPU: relu_cpu
            """, f"P:3: {RELU}: 'dispatch' has no effect with 'manual_kernel_registration: True'")


class ListValueErrorsTest(support.NativeYamlTestCase):
    def test_variants(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU}
                  variants: function, fn, function
                - func: zeros(int[] size) -> Tensor
                  variants: method
                - func: b(Tensor other) -> Tensor
                  variants: function,
                """),
            [f"P:2: {RELU}: unknown variant 'fn' (expected function or method)",
             f"P:2: {RELU}: variant 'function' given twice",
             "P:4: zeros(int[] size) -> Tensor: variant 'method' needs a positional Tensor argument named 'self'",
             "P:6: b(Tensor other) -> Tensor: 'variants' has an empty item: 'function,'"],
        )

    def test_tags(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU}
                  tags: [fast, inplace_view, inplace_view]
                """),
            [f"P:2: {RELU}: unknown tag 'fast'",
             f"P:2: {RELU}: tag 'inplace_view' given twice"],
        )

    def test_no_tags_known(self):
        self.assertError(f"- func: {RELU}\n  tags: view_copy\n",
                         f"P:2: {RELU}: unknown tag 'view_copy'", tags=frozenset())

    def test_autogen(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU}
                  autogen: relu..out
                - func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
                - func: relu_(Tensor(a!) self) -> Tensor(a!)
                  autogen: relu.out, relu.functional
                - func: relu.other(Tensor self) -> Tensor
                  autogen: relu.functional
                """),
            [f"P:2: {RELU}: 'autogen' names 'relu..out', which is not an operator name",
             "P:5: relu_(Tensor(a!) self) -> Tensor(a!): autogen operator 'relu.out' is also defined at line 3",
             "P:7: relu.other(Tensor self) -> Tensor: autogen operator 'relu.functional' "
             "is also generated at line 5"],
        )

    def test_cpp_no_default_args(self):
        self.assertError(f"""
            - func: {RELU}
              cpp_no_default_args: [self, alpha]
            """, f"P:2: {RELU}: 'cpp_no_default_args' names 'alpha', which is not an argument")

    def test_ufunc_inner_loop_values(self):
        self.assertError(f"""
            - func: {RELU}
              ufunc_inner_loop:
                Generic: [add]
            """, f"P:3: {RELU}: 'ufunc_inner_loop' value for 'Generic' must be a string, got list")


class StructureErrorsTest(support.NativeYamlTestCase):
    def test_autocast_per_device_type_errors(self):
        self.assertEqual(
            self.errors(f"""
                - func: {RELU}
                  autocast: {{MPS: fp32, CUDA: bf16, CPU: [fp32]}}
                """),
            [f"P:2: {RELU}: 'autocast' names the device type 'MPS'; expected one of CPU, CUDA",
             f"P:2: {RELU}: 'autocast' policy for CUDA must be one of lower_precision_fp, fp32, promote, "
             "fp32_set_opt_dtype, got 'bf16'",
             f"P:2: {RELU}: 'autocast' policy for CPU must be one of lower_precision_fp, fp32, promote, "
             "fp32_set_opt_dtype, got list"],
        )

    def test_batching_family_errors(self):
        self.assertError(f"- func: {RELU}\n  batching: elementwise\n",
                         f"P:2: {RELU}: 'batching' must be one of pointwise, along_dims, none, got 'elementwise'")
        message = ("the pointwise batching rule is for an operator with tensor arguments (no tensor lists) that returns "
                   "tensors, functional or in-place: not out= or a view; set 'batching: none' to leave it to vmap's "
                   "for-loop fallback")
        for func in ("cat(Tensor[] tensors, int dim=0) -> Tensor", "view(Tensor(a) self, int[] size) -> Tensor(a)",
                     "item(Tensor self) -> Scalar", "relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"):
            with self.subTest(func):
                self.assertError(f"- func: {func}\n  batching: pointwise\n", f"P:2: {func}: {message}")
        # Implied by the tag: the error points at the tags.
        self.assertError("- func: view(Tensor(a) self, int[] size) -> Tensor(a)\n  tags: pointwise\n",
                         f"P:2: view(Tensor(a) self, int[] size) -> Tensor(a): {message}")

    def test_fp32_set_opt_dtype_needs_a_dtype_argument(self):
        message = ("autocast policy 'fp32_set_opt_dtype' is for a functional operator that takes a Tensor first and "
                   "a 'ScalarType? dtype' argument")
        self.assertError(f"- func: {RELU}\n  autocast: {{CUDA: fp32_set_opt_dtype}}\n", f"P:2: {RELU}: {message}")
        self.assertError("- func: f(Tensor self, ScalarType dtype) -> Tensor\n  autocast: fp32_set_opt_dtype\n",
                         f"P:2: f(Tensor self, ScalarType dtype) -> Tensor: {message}")

    def test_duplicate_operator(self):
        self.assertError(f"""
            - func: {RELU}

            - func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
            - func: {RELU}
              variants: method
            """, f"P:4: {RELU}: duplicate operator 'relu' (first defined at line 1)")

    def test_structured_needs_an_out_function(self):
        self.assertError(f"- func: {RELU}\n  structured: True\n",
                         f"P:2: {RELU}: 'structured: True' is only for out= functions")

    def test_structured_and_delegate(self):
        self.assertError(f"""
            - func: {ADD_OUT}
              structured: True
              structured_delegate: add.other
            - func: add.other(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
              structured: True
            """, f"P:3: {ADD_OUT}: 'structured' and 'structured_delegate' cannot both be given")

    def test_structured_inherits_and_precomputed_need_structured(self):
        self.assertEqual(
            self.errors(f"""
                - func: {ADD_OUT}
                  structured_inherits: TensorIteratorBase
                  precomputed:
                  - other -> int x
                """),
            [f"P:2: {ADD_OUT}: 'structured_inherits' needs 'structured: True'",
             f"P:3: {ADD_OUT}: 'precomputed' needs 'structured: True'"],
        )

    def test_precomputed_items(self):
        self.assertEqual(
            self.errors(f"""
                - func: {ADD_OUT}
                  structured: True
                  precomputed:
                  - dim -> int dim
                  - other -> int x int y
                  - other -> Bogus z
                """),
            [f"P:3: {ADD_OUT}: 'precomputed' replaces 'dim', which is not an argument",
             f"P:3: {ADD_OUT}: 'precomputed' item 'other -> int x int y': "
             "malformed argument at column 6: expected the end of the argument, found ' '",
             f"P:3: {ADD_OUT}: 'precomputed' item 'other -> Bogus z': unknown type 'Bogus' at column 1"],
        )

    def test_structured_delegate_must_exist_and_be_structured(self):
        self.assertEqual(
            self.errors(f"""
                - func: add(Tensor self, Tensor other) -> Tensor
                  structured_delegate: add.out
                - func: {ADD_OUT}
                - func: add_(Tensor(a!) self, Tensor other) -> Tensor(a!)
                  structured_delegate: add.nowhere
                - func: sub(Tensor self, Tensor other) -> Tensor
                  structured_delegate: sub..out
                """),
            ["P:2: add(Tensor self, Tensor other) -> Tensor: structured_delegate 'add.out' is not structured",
             "P:5: add_(Tensor(a!) self, Tensor other) -> Tensor(a!): "
             "structured_delegate 'add.nowhere' is not a defined operator",
             "P:7: sub(Tensor self, Tensor other) -> Tensor: "
             "'structured_delegate' names 'sub..out', which is not an operator name"],
        )

    def test_inplace_needs_a_written_self_first(self):
        self.assertEqual(
            self.errors("""
                - func: relu_(Tensor self) -> Tensor
                - func: __iand__(Tensor other, Tensor(a!) self) -> Tensor(a!)
                """),
            ["P:1: relu_(Tensor self) -> Tensor: an in-place operator takes a written 'self' first, "
             "as in 'Tensor(a!) self'",
             "P:2: __iand__(Tensor other, Tensor(a!) self) -> Tensor(a!): an in-place operator takes "
             "a written 'self' first, as in 'Tensor(a!) self'"],
        )


class YamlErrorsTest(support.NativeYamlTestCase):
    def test_syntax_error(self):
        (message,) = self.errors(f"- func: {RELU}\n  dispatch: [CPU\n- func: b() -> ()\n")
        # The problem's wording is PyYAML's (libyaml and pure-Python parsers differ).
        self.assertTrue(message.startswith("P:3: invalid YAML: "), message)
        self.assertIn("expected ',' or ']'", message)

    def test_duplicate_yaml_key(self):
        self.assertError(f"- func: {RELU}\n  variants: function\n  func: {RELU}\n",
                         "P:3: duplicate key 'func' (first given at line 1)")

    def test_non_string_key(self):
        self.assertError(f"- func: {RELU}\n  dispatch:\n    1: relu_cpu\n",
                         "P:3: mapping keys must be strings, got int 1")


if __name__ == "__main__":
    unittest.main()
