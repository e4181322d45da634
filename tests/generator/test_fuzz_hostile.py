"""Hypothesis mutates the project's own schemas/ (issue 25): whatever comes out, the generator
either succeeds deterministically (the same output twice) or fails with one-line located
errors, never a traceback or an internal error, and within a time limit.

Mutations are line edits (delete, duplicate, swap) and insertions of hostile snippets
(anchors, aliases, merge keys, brackets, quotes, bad escapes, huge numbers and list sizes,
namespaces, reserved overload names, tabs, NUL, bytes that are not UTF-8) into
native_functions.yaml or derivatives.yaml. Runs are derandomized and short (MAX_EXAMPLES;
DK_FUZZ_EXAMPLES=2000 for a deeper run).
"""

import contextlib
import io
import os
import re
import shutil
import tempfile
import time
import unittest

from codegen import gen
from codegen.writer import FileManager

from . import support

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from hypothesis.configuration import set_hypothesis_home_dir
except ImportError:  # pragma: no cover - tools/lib/setup.sh installs python3-hypothesis
    raise unittest.SkipTest("python3-hypothesis is not installed")

set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "dk-hypothesis"))

MAX_EXAMPLES = int(os.environ.get("DK_FUZZ_EXAMPLES", "100"))  # more for a deeper run
TIME_LIMIT = 5.0  # seconds per example, loosely

SCHEMAS = os.path.join(support.REPO_ROOT, "schemas")
FILES = ("native_functions.yaml", "derivatives.yaml")


def _read(name):
    with open(os.path.join(SCHEMAS, name), encoding="utf-8") as f:
        return f.read()


ORIGINALS = {name: _read(name) for name in FILES}

# "\udcff" is written as the byte 0xff (surrogateescape): not UTF-8.
HOSTILE_SNIPPETS = [
    "&a ", "*a", "<<: *a", "[", "]", "{", "}", "(", ")", '"', "'", "\\x", "\\q", "\t", "\x00", "\udcff",
    "\ufeff", "99999999999999999999", "[1000000000]", "[][][][][][]", "?", "::", "std::", "ns::",
    ".default", ".__x", ": ", "#", "\n", "  ", "- ", "int ", "Tensor(a!) ", "=", ", ", "grad(", "result9",
    "x" * 2000,
]


@st.composite
def mutation(draw):
    """(file name, mutated text) for one of FILES."""
    name = draw(st.sampled_from(FILES))
    lines = ORIGINALS[name].splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["insert", "insert", "insert", "delete", "duplicate", "swap"]))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            snippet = draw(st.one_of(st.sampled_from(HOSTILE_SNIPPETS), st.text(max_size=4)))
            pos = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:pos] + snippet + lines[i][pos:]
        if not lines:
            lines = ["\n"]
    return name, "".join(lines)


class FuzzHostileTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="dk-fuzz-hostile-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        for name in FILES + ("tags.yaml",):
            shutil.copyfile(os.path.join(SCHEMAS, name), os.path.join(self.dir, name))
        self.input = os.path.join(self.dir, "native_functions.yaml")
        paths = "|".join(re.escape(os.path.join(self.dir, n)) for n in FILES + ("tags.yaml",))
        self.located = re.compile(rf"(?:{paths}):[0-9]+: \S")

    def generate_in_memory(self):
        """Every output of the run, by name (the run already succeeded once)."""
        args = gen._parse_args(["--out", "unused", self.input])
        native_functions = gen.load_model(args)
        files = FileManager()
        gen.generate(native_functions, files, gen.input_names(args), gen.load_derivatives(args, native_functions))
        return {name: files.contents(name) for name in files.names()}

    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutation())
    def test_mutated_schemas(self, example):
        name, text = example
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(text.encode("utf-8", "surrogateescape"))
        try:
            out, err = io.StringIO(), io.StringIO()
            start = time.monotonic()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = gen.main(["--check", self.input])
            self.assertLess(time.monotonic() - start, TIME_LIMIT)
            if status == 0:
                self.assertEqual(err.getvalue(), "")
                self.assertEqual(self.generate_in_memory(), self.generate_in_memory())
                return
            self.assertEqual((status, out.getvalue()), (1, ""))
            lines = err.getvalue().splitlines()
            self.assertTrue(lines, "a failed run printed no error")
            if lines[-1].startswith("... and "):
                self.assertRegex(lines.pop(), r"^\.\.\. and [0-9]+ more errors?$")
                self.assertEqual(len(lines), 20)
            for line in lines:
                self.assertRegex(line, self.located, "not a located error")
                self.assertNotIn("internal error", line)
                self.assertNotIn("Traceback", line)
        finally:
            shutil.copyfile(os.path.join(SCHEMAS, name), os.path.join(self.dir, name))


if __name__ == "__main__":
    unittest.main()
