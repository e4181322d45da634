"""Adding an operator changes the generated output by added lines only.

Reviewers read generated/ as a diff: an operator's rows must not move between files, be
renumbered, or rename another operator's adapters when a new one arrives. The project's own
schemas/ are generated, one entry is added (three cases: a new signature with a derivative, a
shared signature with a method, a name that sorts last), and every file of the second run is
compared with the first: no line may disappear.
"""

import difflib
import os
import shutil
import tempfile
import unittest

from . import support
from .test_generated import generate_in_memory

SCHEMAS_DIR = os.path.join(support.REPO_ROOT, "schemas")

# (YAML entry, derivatives entry or None): one with a signature no other operator has, a CPU
# kernel and a derivative; one that shares a signature (its adapters exist) with a method
# variant; one that sorts after every operator (the end of every list).
NEW_OPERATORS = {
    "new_signature": ("""
- func: softplus(Tensor self, Scalar beta=1, Scalar threshold=20, bool approximate=False) -> Tensor
  dispatch:
    CPU: softplus_cpu
    Meta: softplus_meta
""", """
- name: softplus(Tensor self, Scalar beta=1, Scalar threshold=20, bool approximate=False) -> Tensor
  self: grad * sigmoid(self * beta)
"""),
    "shared_signature_method": ("""
- func: softshrink(Tensor self, Scalar lambd=0.5) -> Tensor
  variants: function, method
  dispatch:
    CPU: softshrink_cpu
""", None),
    "sorts_last": ("""
- func: zzz_last(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: zzz_last_cpu
    CUDA: zzz_last_cuda
""", None),
}


def deleted_lines(before, after):
    """{file: [deleted lines]} between two runs (files only in `before` count as all deleted)."""
    out = {}
    for name, old in before.items():
        new = after.get(name, "")
        gone = [l[1:] for l in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
                if l.startswith("-") and not l.startswith("---")]
        if gone:
            out[name] = gone
    return out


class StableOutputTest(unittest.TestCase):
    def test_adding_an_operator_only_adds_lines(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        names = ("native_functions.yaml", "tags.yaml", "derivatives.yaml")
        for name in names:
            shutil.copy(os.path.join(SCHEMAS_DIR, name), tmp)
        paths = [os.path.join(tmp, n) for n in names]
        before = generate_in_memory(*paths)
        for case, (entry, derivative) in NEW_OPERATORS.items():
            with self.subTest(case):
                for name in names:
                    shutil.copy(os.path.join(SCHEMAS_DIR, name), tmp)
                with open(paths[0], "a", encoding="utf-8") as f:
                    f.write(entry)
                if derivative:
                    with open(paths[2], "a", encoding="utf-8") as f:
                        f.write(derivative)
                after = generate_in_memory(*paths)
                self.assertGreater(len(after), len(before))  # the new operator's own headers
                gone = deleted_lines(before, after)
                report = "\n".join(f"{name}: {len(lines)} deleted, e.g. {lines[0][:160]!r}"
                                   for name, lines in sorted(gone.items()))
                self.assertEqual(gone, {}, f"adding an operator ({case}) deleted lines:\n" + report)

    def test_the_check_can_fail(self):
        self.assertEqual(deleted_lines({"a": "x\ny\n"}, {"a": "x\nz\n"}), {"a": ["y"]})
        self.assertEqual(deleted_lines({"a": "x\n"}, {}), {"a": ["x"]})


if __name__ == "__main__":
    unittest.main()
