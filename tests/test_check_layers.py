"""tests/check_layers.py finds each kind of violation in a small tree, and none in this project."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_layers  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class CheckLayersTest(unittest.TestCase):
    def tree(self, files):
        root = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(root))
        base = {
            "runtime/include/dk/util/error.h": "#pragma once\n",
            "runtime/include/dk/core/dispatch_key.h": '#include "dk/util/error.h"\n',
            "runtime/include/dk/tensor/tensor.h": '#include "dk/core/dispatch_key.h"\n',
            "runtime/src/tensor/tensor.cpp": '#include "dk/tensor/tensor.h"\n',
            "runtime/compat/dk/tensor.h": '#include "dk/tensor/tensor.h"\n',
        }
        base.update(files)
        for rel, text in base.items():
            write(root, rel, text)
        return root

    def test_clean_tree_passes(self):
        self.assertEqual(check_layers.check(self.tree({})), [])

    def test_lower_layer_including_higher_fails_with_file_and_line(self):
        root = self.tree({"runtime/include/dk/core/dispatch_key.h": '// keys\n#include "dk/tensor/tensor.h"\n'})
        problems = check_layers.check(root)
        self.assertEqual(len(problems), 1)
        self.assertIn("runtime/include/dk/core/dispatch_key.h:2", problems[0])
        self.assertIn("core layer includes dk/tensor/tensor.h from the higher tensor layer", problems[0])

    def test_generated_header_has_the_layer_of_what_it_declares(self):
        root = self.tree({"runtime/include/dk/core/dispatch_key.h": '#include "dk/generated/Functions.h"\n'})
        self.assertIn("higher dispatch layer", check_layers.check(root)[0])
        root = self.tree({"runtime/include/dk/core/dispatch_key.h": '#include "dk/generated/TensorMethodDecls.inc"\n'})
        self.assertIn("higher tensor layer", check_layers.check(root)[0])

    def test_entry_point_is_above_every_layer(self):
        root = self.tree({"runtime/include/dk/dk.h": "#pragma once\n",
                          "runtime/src/tensor/tensor.cpp": '#include "dk/tensor/tensor.h"\n#include "dk/dk.h"\n'})
        self.assertIn("higher entry-point layer", check_layers.check(root)[0])

    def test_compatibility_path_is_refused_inside_the_project(self):
        root = self.tree({"kernels/cpu/add.cpp": '#include "dk/tensor.h"\n'})
        problems = check_layers.check(root)
        self.assertEqual(len(problems), 1)
        self.assertIn("kernels/cpu/add.cpp:1: includes dk/tensor.h, a compatibility path; include "
                      "dk/tensor/tensor.h instead", problems[0])

    def test_missing_header_is_reported(self):
        root = self.tree({"tests/test_x.cpp": '#include "dk/tensor/tensr.h"\n'})
        self.assertIn("dk/tensor/tensr.h, which does not exist", check_layers.check(root)[0])

    def test_source_must_start_with_its_own_header(self):
        root = self.tree({"runtime/src/tensor/tensor.cpp": '#include "dk/core/dispatch_key.h"\n'
                                                           '#include "dk/tensor/tensor.h"\n',
                          "runtime/src/tensor/orphan.cpp": '#include "dk/tensor/tensor.h"\n'})
        problems = check_layers.check(root)
        self.assertEqual(len(problems), 2)
        self.assertIn("orphan.cpp: has no header dk/tensor/orphan.h", problems[0])
        self.assertIn("tensor.cpp: its first include should be its own header", problems[1])

    def test_this_project_keeps_the_rule(self):
        self.assertEqual(check_layers.check(ROOT), [])


if __name__ == "__main__":
    unittest.main()
