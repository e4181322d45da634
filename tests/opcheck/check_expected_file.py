#!/usr/bin/env python3
"""dk-opcheck's expected-failures file (tests/opcheck/opcheck_all.cpp): a failure it does not list
fails the run, an entry that no longer fails is stale and fails it, --accept rewrites it keeping
the reasons of entries that still fail, and a malformed line is an error with its line number.

Usage: check_expected_file.py DK_OPCHECK"""

import os
import subprocess
import sys
import tempfile
import unittest

DK_OPCHECK = None


def run(expected_text, *args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "expected.txt")
        with open(path, "w") as f:
            f.write(expected_text)
        p = subprocess.run([DK_OPCHECK, "--expected", path, *args], capture_output=True, text=True, timeout=120)
        with open(path) as f:
            return p.returncode, p.stdout + p.stderr, f.read()


class ExpectedFailuresFile(unittest.TestCase):
    VIEW = "dk::view gradcheck: needs compatible strides\n"

    def test_listed_failures_pass(self):
        code, out, _ = run(self.VIEW, "dk::view", "dk::neg")
        self.assertEqual(code, 0, out)
        self.assertIn("2 operators, 1 expected failures, 0 problems", out)

    def test_an_unlisted_failure_fails_the_run(self):
        code, out, _ = run("", "dk::view")
        self.assertEqual(code, 1, out)
        self.assertIn("unexpected failure: dk::view gradcheck: with non-contiguous inputs", out)

    def test_a_stale_entry_fails_the_run(self):
        code, out, _ = run(self.VIEW + "dk::neg meta: once failed\n", "dk::view", "dk::neg")
        self.assertEqual(code, 1, out)
        self.assertIn("expected.txt:2: stale entry: dk::neg meta no longer fails", out)

    def test_entries_of_operators_not_run_are_not_stale(self):
        code, out, _ = run(self.VIEW + "dk::neg meta: once failed\n", "dk::view")
        self.assertEqual(code, 0, out)

    def test_accept_keeps_reasons_adds_failures_and_drops_stale_entries(self):
        code, out, text = run("dk::neg meta: once failed\ndk::mm schema: kept, not run\n", "--accept", "dk::view",
                              "dk::neg")
        self.assertEqual(code, 0, out)
        self.assertIn("dk::view gradcheck: with non-contiguous inputs, running the function raised", text)
        self.assertIn("dk::mm schema: kept, not run", text)
        self.assertNotIn("dk::neg", text)
        code, out, text2 = run(text.replace("with non-contiguous inputs", "edited reason"), "--accept", "dk::view")
        self.assertIn("dk::view gradcheck: edited reason", text2)

    def test_a_malformed_line_names_its_line(self):
        code, out, _ = run("# comment\ndk::view gradcheck\n", "dk::neg")
        self.assertEqual(code, 1, out)
        self.assertIn("expected.txt:2: expected 'OPERATOR CHECK: REASON', got 'dk::view gradcheck'", out)


if __name__ == "__main__":
    DK_OPCHECK = sys.argv.pop(1)
    unittest.main()
