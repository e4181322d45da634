"""Shared helpers for the generator tests: paths, and YAML fixtures in a temp folder."""

import os
import shutil
import tempfile
import textwrap
import unittest

from codegen.errors import GenError
from codegen.native_yaml import parse_native_functions

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN_PY = os.path.join(REPO_ROOT, "codegen", "gen.py")
# PyTorch 1.13.1's operator file, from Debian's python3-torch (meson option pytorch_yaml_dir,
# passed as DK_PYTORCH_YAML_DIR). Tests that read it skip, with NO_PYTORCH_FILE as the reason.
PYTORCH_DIR = os.environ.get("DK_PYTORCH_YAML_DIR") or "/usr/lib/python3/dist-packages/torchgen/packaged/ATen/native"
PYTORCH_NATIVE_FUNCTIONS = os.path.join(PYTORCH_DIR, "native_functions.yaml")
PYTORCH_TAGS = os.path.join(PYTORCH_DIR, "tags.yaml")
HAVE_PYTORCH_FILE = os.path.isfile(PYTORCH_NATIVE_FUNCTIONS) and os.path.isfile(PYTORCH_TAGS)
NO_PYTORCH_FILE = (f"PyTorch 1.13.1's native_functions.yaml and tags.yaml not found in {PYTORCH_DIR} "
                   "(install Debian's python3-torch, or set DK_PYTORCH_YAML_DIR)")

TAGS = frozenset({"inplace_view", "view_copy", "pointwise"})


class TempDirTestCase(unittest.TestCase):
    """A test with a fresh temporary folder, ``self.dir``, removed afterwards."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="dk-codegen-test-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def write(self, name, text):
        """Write ``text`` (dedented) to ``self.dir/name``; return its path."""
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text).lstrip("\n"))
        return path


class NativeYamlTestCase(TempDirTestCase):
    """Parse small native_functions.yaml fixtures; ``self.path`` is the fixture's path."""

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.dir, "native_functions.yaml")

    def parse(self, text, tags=TAGS, foreign_keys="error"):
        self.write("native_functions.yaml", text)
        return parse_native_functions(self.path, known_tags=tags, foreign_keys=foreign_keys)

    def parse_one(self, text, **kwargs):
        (nf,) = self.parse(text, **kwargs)
        return nf

    def errors(self, text, tags=TAGS, foreign_keys="error"):
        """The error lines parsing ``text`` gives, with the fixture's path shown as P."""
        with self.assertRaises(GenError) as caught:
            self.parse(text, tags=tags, foreign_keys=foreign_keys)
        self.assertEqual(str(caught.exception), "\n".join(caught.exception.messages))
        return [m.replace(self.path, "P") for m in caught.exception.messages]

    def assertError(self, text, expected, **kwargs):
        """Parsing ``text`` gives exactly one error, ``expected`` (P stands for the path)."""
        self.assertEqual(self.errors(text, **kwargs), [expected])
