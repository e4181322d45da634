"""Tests of codegen/gen.py, run as the build runs it: a separate process."""

import os
import subprocess
import sys
import unittest

from . import support

GOOD = """
    - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
      variants: function, method
      dispatch:
        CPU, CUDA: add_kernel
      tags: pointwise
    - func: relu(Tensor self) -> Tensor
    """

TAGS = """
    - tag: pointwise
      desc: elementwise
    """


class GenCliTest(support.TempDirTestCase):
    def gen(self, *args):
        """Run gen.py in self.dir; return (exit status, stdout, stderr)."""
        result = subprocess.run(
            [sys.executable, support.GEN_PY, *args],
            cwd=self.dir, capture_output=True, text=True, timeout=120,
        )
        return result.returncode, result.stdout, result.stderr

    def test_check_ok(self):
        self.write("schemas/native_functions.yaml", GOOD)
        self.write("schemas/tags.yaml", TAGS)  # found beside the input
        self.assertEqual(self.gen("--check", "schemas/native_functions.yaml"),
                         (0, "2 operators OK\n", ""))

    def test_check_with_explicit_tags(self):
        self.write("ops.yaml", GOOD)
        self.write("my_tags.yaml", TAGS)
        self.assertEqual(self.gen("--check", "--tags", "my_tags.yaml", "ops.yaml"),
                         (0, "2 operators OK\n", ""))

    def test_check_reports_every_error_and_fails(self):
        self.write("schemas/native_functions.yaml", """
            - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
              dispatch:
                CPU, MPS: add_kernel
            - func: relu(Tensor self) -> Tensr
              tags: pointwise
            - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
            """)
        status, out, err = self.gen("--check", "schemas/native_functions.yaml")
        self.assertEqual((status, out), (1, ""))
        self.assertEqual(err.splitlines(), [
            "schemas/native_functions.yaml:3: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) "
            "-> Tensor: unknown dispatch key 'MPS'",
            "schemas/native_functions.yaml:4: relu(Tensor self) -> Tensr: unknown type 'Tensr' at column 22",
            "schemas/native_functions.yaml:6: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) "
            "-> Tensor: duplicate operator 'add.Tensor' (first defined at line 1)",
        ])

    def test_no_tags_file_means_no_tags(self):
        self.write("ops.yaml", GOOD)
        status, out, err = self.gen("--check", "ops.yaml")
        self.assertEqual((status, out), (1, ""))
        self.assertEqual(err, "ops.yaml:5: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) "
                              "-> Tensor: unknown tag 'pointwise'\n")

    def test_pytorch_compat_accepts_foreign_keys(self):
        self.write("ops.yaml", "- func: abs(Tensor self) -> Tensor\n  dispatch:\n    CPU, MPS: abs_kernel\n")
        self.assertEqual(self.gen("--check", "--pytorch-compat", "ops.yaml"), (0, "1 operators OK\n", ""))

    def test_list_outputs_equals_files_written(self):
        self.write("schemas/native_functions.yaml", GOOD)
        self.write("schemas/tags.yaml", TAGS)
        status, out, err = self.gen("--list-outputs", "schemas/native_functions.yaml")
        self.assertEqual((status, err), (0, ""))
        listed = out.splitlines()
        self.assertIn("dk/generated/Operators.h", listed)
        self.assertIn("RegisterCPU.cpp", listed)
        self.assertEqual(self.gen("--out", "build/generated", "schemas/native_functions.yaml"), (0, "", ""))
        written = sorted(
            os.path.relpath(os.path.join(root, name), os.path.join(self.dir, "build/generated")).replace(os.sep, "/")
            for root, _, names in os.walk(os.path.join(self.dir, "build/generated")) for name in names
        )
        self.assertEqual(written, listed)

    def test_out_with_bad_input_fails(self):
        self.write("ops.yaml", "- func: relu(Tensor self -> Tensor\n")
        status, out, err = self.gen("--out", "gen", "ops.yaml")
        self.assertEqual((status, out), (1, ""))
        self.assertEqual(err, "ops.yaml:1: relu(Tensor self -> Tensor: malformed schema at column 17: "
                              "expected ', ' or ')', found ' '\n")

    def test_usage_errors(self):
        status, _, err = self.gen("ops.yaml")
        self.assertEqual(status, 2)
        self.assertIn("nothing to do: give --check, --list-outputs, --out DIR or --scale-out DIR", err)
        status, _, _ = self.gen("--check")
        self.assertEqual(status, 2)

    def test_missing_input(self):
        self.assertEqual(self.gen("--check", "missing.yaml"),
                         (1, "", "missing.yaml: cannot read: No such file or directory\n"))

    def test_runs_as_a_module_too(self):
        self.write("ops.yaml", "- func: relu(Tensor self) -> Tensor\n")
        result = subprocess.run(
            [sys.executable, "-m", "codegen.gen", "--check", os.path.join(self.dir, "ops.yaml")],
            cwd=support.REPO_ROOT, capture_output=True, text=True, timeout=120,
        )
        self.assertEqual((result.returncode, result.stdout), (0, "1 operators OK\n"))


@unittest.skipUnless(support.HAVE_PYTORCH_FILE, support.NO_PYTORCH_FILE)
class GenCliPyTorchTest(support.TempDirTestCase):
    def test_check_pytorch_file(self):
        result = subprocess.run(
            [sys.executable, support.GEN_PY, "--check", "--pytorch-compat", "--tags",
             support.PYTORCH_TAGS, support.PYTORCH_NATIVE_FUNCTIONS],
            capture_output=True, text=True, timeout=120,
        )
        self.assertEqual((result.returncode, result.stdout, result.stderr), (0, "2493 operators OK\n", ""))


if __name__ == "__main__":
    unittest.main()
