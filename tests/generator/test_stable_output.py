"""Adding an operator changes the generated output by added lines only.

Reviewers read generated/ as a diff: an operator's rows must not move between files, be
renumbered, or rename another operator's adapters when a new one arrives. The project's own
schemas/ are generated, one entry is added (an operator with a signature no other operator
has, a CPU kernel and a derivative), and every file of the second run is compared with the
first: no line may disappear.
"""

import difflib
import os
import shutil
import tempfile
import unittest

from . import support
from .test_generated import generate_in_memory

SCHEMAS_DIR = os.path.join(support.REPO_ROOT, "schemas")

NEW_OPERATOR = """
- func: softplus(Tensor self, Scalar beta=1, Scalar threshold=20, bool approximate=False) -> Tensor
  dispatch:
    CPU: softplus_cpu
    Meta: softplus_meta
"""

NEW_DERIVATIVE = """
- name: softplus(Tensor self, Scalar beta=1, Scalar threshold=20, bool approximate=False) -> Tensor
  self: grad * sigmoid(self * beta)
"""


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
        for name in ("native_functions.yaml", "tags.yaml", "derivatives.yaml"):
            shutil.copy(os.path.join(SCHEMAS_DIR, name), tmp)
        paths = [os.path.join(tmp, n) for n in ("native_functions.yaml", "tags.yaml", "derivatives.yaml")]
        before = generate_in_memory(*paths)
        with open(paths[0], "a", encoding="utf-8") as f:
            f.write(NEW_OPERATOR)
        with open(paths[2], "a", encoding="utf-8") as f:
            f.write(NEW_DERIVATIVE)
        after = generate_in_memory(*paths)
        self.assertTrue(any("softplus" in text for text in after.values()))
        gone = deleted_lines(before, after)
        report = "\n".join(f"{name}: {len(lines)} deleted, e.g. {lines[0][:160]!r}" for name, lines in sorted(gone.items()))
        self.assertEqual(gone, {}, "adding one operator deleted lines:\n" + report)

    def test_the_check_can_fail(self):
        self.assertEqual(deleted_lines({"a": "x\ny\n"}, {"a": "x\nz\n"}), {"a": ["y"]})
        self.assertEqual(deleted_lines({"a": "x\n"}, {}), {"a": ["x"]})


if __name__ == "__main__":
    unittest.main()
