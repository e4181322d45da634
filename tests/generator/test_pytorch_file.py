"""PyTorch 1.13.1's native_functions.yaml as real-world input: every schema round-trips,
every entry validates (foreign dispatch keys recorded), and the model says the right things."""

import collections
import unittest

from codegen.dispatch_key import DispatchKey
from codegen.errors import GenError
from codegen.model import BackendMetadata, FunctionSchema, OperatorName
from codegen.native_yaml import load_tags, parse_native_functions
from codegen.yaml_loader import load_yaml

from . import support

K = DispatchKey


@unittest.skipUnless(support.HAVE_PYTORCH_FILE, support.NO_PYTORCH_FILE)
class PyTorchFileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.raw = load_yaml(support.PYTORCH_NATIVE_FUNCTIONS)
        cls.nfs = parse_native_functions(
            support.PYTORCH_NATIVE_FUNCTIONS,
            known_tags=load_tags(support.PYTORCH_TAGS),
            foreign_keys="ignore",
        )
        cls.by_name = {str(nf.name): nf for nf in cls.nfs}

    def test_every_schema_round_trips(self):
        schemas = [entry["func"] for entry in self.raw]
        self.assertEqual(len(schemas), 2493)
        for text in schemas:
            self.assertEqual(str(FunctionSchema.parse(text)), text)

    def test_every_entry_validates(self):
        self.assertEqual(len(self.nfs), 2493)
        self.assertEqual(len(self.by_name), 2493)
        self.assertEqual([nf.loc.line for nf in self.nfs], self.raw.item_lines)

    def test_kinds(self):
        kinds = collections.Counter(nf.func.kind for nf in self.nfs)
        self.assertEqual(sum(kinds.values()), 2493)
        self.assertEqual(kinds["out"], sum(1 for nf in self.nfs if nf.func.out))

    def test_add(self):
        add = self.by_name["add.Tensor"]
        self.assertEqual(add.variants, ("function", "method"))
        self.assertEqual(add.structured_delegate, OperatorName("add", "out"))
        self.assertEqual(dict(add.dispatch), {K.SparseCPU: BackendMetadata("add_sparse"),
                                              K.SparseCUDA: BackendMetadata("add_sparse")})
        self.assertEqual(sorted(add.foreign_dispatch), ["MkldnnCPU", "NestedTensorCPU", "NestedTensorCUDA",
                                                        "SparseCsrCPU", "SparseCsrCUDA", "ZeroTensor"])
        out = self.by_name["add.out"]
        self.assertTrue(out.structured)
        self.assertEqual(out.structured_inherits, "TensorIteratorBase")
        self.assertEqual(out.device_check, "NoCheck")
        self.assertEqual(dict(out.ufunc_inner_loop),
                         {"Generic": "add (AllAndComplex, BFloat16, Half, ComplexHalf)", "ScalarOnly": "add (Bool)"})

    def test_default_dispatch(self):
        nf = self.by_name["_cast_Byte"]
        self.assertEqual(dict(nf.dispatch), {K.CompositeImplicitAutograd: BackendMetadata("_cast_Byte")})
        self.assertTrue(nf.dispatch_is_default)

    def test_other_keys(self):
        self.assertEqual(self.by_name["normal.Tensor_float"].tags, ("nondeterministic_seeded",))
        self.assertEqual(self.by_name["conv1d"].cpp_no_default_args, ())
        self.assertIn("nn", {nf.python_module for nf in self.nfs})
        with_precompute = [nf for nf in self.nfs if nf.precomputed is not None]
        self.assertEqual(len(with_precompute), 11)
        self.assertTrue(all(nf.structured for nf in with_precompute))
        self.assertEqual(sum(1 for nf in self.nfs if nf.autogen), 431)

    def test_strict_mode_rejects_only_foreign_keys(self):
        with self.assertRaises(GenError) as caught:
            parse_native_functions(support.PYTORCH_NATIVE_FUNCTIONS,
                                   known_tags=load_tags(support.PYTORCH_TAGS))
        foreign = set()
        for message in caught.exception.messages:
            self.assertRegex(message, r": unknown dispatch key '\w+'$")
            foreign.add(message.rsplit("'", 2)[1])
        self.assertFalse(foreign & set(K.__members__))
        self.assertIn("MPS", foreign)
        self.assertNotIn("QuantizedCPU", foreign)


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(support.HAVE_PYTORCH_FILE, support.NO_PYTORCH_FILE)
class PyTorchKeysGenerateTest(unittest.TestCase):
    """With PyTorch's own key universe (schemas/pytorch_keys.yaml), PyTorch's file is ordinary
    input: no compatibility flag, no foreign key, every operator through the same checks and a
    whole generation in memory (gen.py --check)."""

    def test_check_with_pytorch_keys_and_no_compat_flag(self):
        import os
        import subprocess
        import sys
        keys = os.path.join(support.REPO_ROOT, "schemas", "pytorch_keys.yaml")
        result = subprocess.run(
            [sys.executable, support.GEN_PY, "--keys", keys, "--check", "--tags", support.PYTORCH_TAGS,
             support.PYTORCH_NATIVE_FUNCTIONS], capture_output=True, text=True, timeout=600)
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertEqual(result.stdout.strip(), "2493 operators OK")
        self.assertEqual(result.stderr, "")
        # With the project's keys the same file names keys that do not exist.
        result = subprocess.run(
            [sys.executable, support.GEN_PY, "--check", "--tags", support.PYTORCH_TAGS,
             support.PYTORCH_NATIVE_FUNCTIONS], capture_output=True, text=True, timeout=600)
        self.assertEqual(result.returncode, 1)
        self.assertIn("unknown dispatch key 'MPS'", result.stderr)
