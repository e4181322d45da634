"""Tests of codegen/yaml_loader.py (line-keeping YAML) and of tags.yaml loading."""

import unittest

from codegen.errors import GenError, Location
from codegen.native_yaml import load_tags
from codegen.yaml_loader import LocatedDict, LocatedList, load_yaml, load_yaml_text

from . import support


class LoaderTest(unittest.TestCase):
    def test_lines_of_mappings_keys_and_items(self):
        data = load_yaml_text(
            "# header\n"
            "- func: a\n"
            "  dispatch:\n"
            "    CPU: k\n"
            "\n"
            "    CUDA: j\n"
            "- {func: b}\n",
            "f.yaml",
        )
        self.assertIsInstance(data, LocatedList)
        self.assertEqual(data.item_lines, [2, 7])
        self.assertEqual(data.item_loc(1), Location("f.yaml", 7))
        first = data[0]
        self.assertIsInstance(first, LocatedDict)
        self.assertEqual(first, {"func": "a", "dispatch": {"CPU": "k", "CUDA": "j"}})
        self.assertEqual(first.loc, Location("f.yaml", 2))
        self.assertEqual(first.key_lines, {"func": 2, "dispatch": 3})
        self.assertEqual(first["dispatch"].key_lines, {"CPU": 4, "CUDA": 6})
        self.assertEqual(first.key_loc("dispatch"), Location("f.yaml", 3))
        self.assertEqual(first.key_loc("missing"), Location("f.yaml", 2))

    def test_plain_values_stay_plain(self):
        data = load_yaml_text("a: [1, 2.5, true, null, 'x']\n", "f.yaml")
        self.assertEqual(data, {"a": [1, 2.5, True, None, "x"]})

    def test_merge_keys_still_work(self):
        data = load_yaml_text("base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n", "f.yaml")
        self.assertEqual(data["derived"], {"x": 1, "y": 2})

    def assertLoadError(self, text, message):
        with self.assertRaises(GenError) as caught:
            load_yaml_text(text, "f.yaml")
        self.assertEqual(str(caught.exception), message)

    def test_duplicate_key(self):
        self.assertLoadError("a: 1\nb: 2\na: 3\n", "f.yaml:3: duplicate key 'a' (first given at line 1)")

    def test_non_string_key(self):
        self.assertLoadError("a: 1\ntrue: 2\n", "f.yaml:2: mapping keys must be strings, got bool True")

    def test_unsafe_tags_are_refused(self):
        with self.assertRaises(GenError) as caught:
            load_yaml_text("a: !!python/object:os.system x\n", "f.yaml")
        self.assertTrue(str(caught.exception).startswith("f.yaml:1: invalid YAML: "))

    def test_syntax_error_line(self):
        with self.assertRaises(GenError) as caught:
            load_yaml_text("a: 1\nb: [\n", "f.yaml")
        self.assertRegex(str(caught.exception), r"^f\.yaml:3: invalid YAML: ")

    def test_unreadable_file(self):
        with self.assertRaises(GenError) as caught:
            load_yaml("/nonexistent/dir/x.yaml")
        self.assertEqual(str(caught.exception), "/nonexistent/dir/x.yaml: cannot read: No such file or directory")


class TagsFileTest(support.TempDirTestCase):
    def test_tag_names(self):
        path = self.write("tags.yaml", """
            - tag: inplace_view
              desc: |
                modifies metadata only
            - tag: pointwise
              desc: elementwise
            """)
        self.assertEqual(load_tags(path), frozenset({"inplace_view", "pointwise"}))

    @unittest.skipUnless(support.HAVE_PYTORCH_FILE, support.NO_PYTORCH_FILE)
    def test_pytorch_tags(self):
        self.assertEqual(load_tags(support.PYTORCH_TAGS), frozenset({
            "inplace_view", "view_copy", "dynamic_output_shape", "data_dependent_output",
            "generated", "nondeterministic_seeded", "nondeterministic_bitwise"}))

    def test_errors(self):
        path = self.write("tags.yaml", """
            - tag: a
              desc: x
              colour: red
            - tag: a
              desc: again
            - tag: not a name
              desc: x
            - tag: b
            - just text
            """)
        with self.assertRaises(GenError) as caught:
            load_tags(path)
        self.assertEqual([m.replace(path, "T") for m in caught.exception.messages], [
            "T:3: unknown key 'colour' in tag entry",
            "T:4: tag 'a' defined twice (first at line 1)",
            "T:6: tag entry needs 'tag: NAME' with NAME an identifier",
            "T:8: tag 'b' needs 'desc: TEXT'",
            "T:9: tag entry must be a mapping, got str",
        ])

    def test_not_a_list(self):
        path = self.write("tags.yaml", "tag: a\n")
        with self.assertRaises(GenError) as caught:
            load_tags(path)
        self.assertEqual(str(caught.exception), f"{path}:1: expected a list of tag entries, got mapping")


if __name__ == "__main__":
    unittest.main()
