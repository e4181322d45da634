"""Tests of codegen/writer.py: in-memory outputs, written only when changed, atomically."""

import os
import unittest

from codegen.errors import GenError
from codegen.writer import FileManager

from . import support


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class FileManagerTest(support.TempDirTestCase):
    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.dir, "out")

    def listing(self):
        found = []
        for root, _, files in os.walk(self.out):
            found += [os.path.relpath(os.path.join(root, f), self.out) for f in files]
        return sorted(found)

    def test_collects_then_writes(self):
        files = FileManager()
        files.write("b.h", "// b\n")
        files.write("ops/a.h", "// a\n")
        self.assertEqual(files.names(), ["b.h", "ops/a.h"])
        self.assertEqual(files.contents("ops/a.h"), "// a\n")
        self.assertFalse(os.path.exists(self.out))  # nothing on disk before commit
        self.assertEqual(files.commit(self.out), ["b.h", "ops/a.h"])
        self.assertEqual(self.listing(), ["b.h", os.path.join("ops", "a.h")])
        self.assertEqual(read(os.path.join(self.out, "ops", "a.h")), "// a\n")

    def test_unchanged_files_are_not_rewritten(self):
        first = FileManager()
        first.write("same.h", "x\n")
        first.write("changes.h", "old\n")
        first.commit(self.out)
        same = os.path.join(self.out, "same.h")
        os.utime(same, ns=(1_000_000_000, 1_000_000_000))
        inode = os.stat(same).st_ino

        second = FileManager()
        second.write("same.h", "x\n")
        second.write("changes.h", "new\n")
        self.assertEqual(second.commit(self.out), ["changes.h"])
        self.assertEqual(os.stat(same).st_mtime_ns, 1_000_000_000)
        self.assertEqual(os.stat(same).st_ino, inode)
        self.assertEqual(read(os.path.join(self.out, "changes.h")), "new\n")
        self.assertEqual(self.listing(), ["changes.h", "same.h"])  # no temporary files left

    def test_contents_are_written_byte_for_byte(self):
        files = FileManager()
        files.write("crlf.txt", "a\r\nb\n\u00e9")
        files.commit(self.out)
        with open(os.path.join(self.out, "crlf.txt"), "rb") as f:
            self.assertEqual(f.read(), "a\r\nb\n\u00e9".encode("utf-8"))

    def test_written_files_are_readable_by_others(self):
        files = FileManager()
        files.write("a.h", "x")
        files.commit(self.out)
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(os.stat(os.path.join(self.out, "a.h")).st_mode & 0o777, 0o666 & ~mask)

    def test_same_file_twice_is_refused_and_nothing_is_written(self):
        files = FileManager()
        files.write("a.h", "one")
        with self.assertRaises(GenError) as caught:
            files.write("a.h", "two")
        self.assertEqual(str(caught.exception), "output 'a.h' written twice")
        self.assertTrue(files.failed)
        with self.assertRaises(GenError) as caught:
            files.commit(self.out)
        self.assertEqual(str(caught.exception), "not writing any output: generation reported errors")
        self.assertFalse(os.path.exists(self.out))

    def test_error_during_generation_writes_nothing(self):
        os.makedirs(self.out)
        with open(os.path.join(self.out, "a.h"), "w") as f:
            f.write("previous")
        files = FileManager()
        with self.assertRaises(ValueError):
            with files:
                files.write("a.h", "new")
                files.write("b.h", "new")
                raise ValueError("an emitter failed")
        with self.assertRaises(GenError):
            files.commit(self.out)
        self.assertEqual(self.listing(), ["a.h"])
        self.assertEqual(read(os.path.join(self.out, "a.h")), "previous")

    def test_mark_failed(self):
        files = FileManager()
        files.write("a.h", "x")
        files.mark_failed()
        with self.assertRaises(GenError):
            files.commit(self.out)
        self.assertFalse(os.path.exists(self.out))

    def test_context_manager_without_error_allows_commit(self):
        with FileManager() as files:
            files.write("a.h", "x")
        self.assertEqual(files.commit(self.out), ["a.h"])

    def test_output_names_must_stay_inside_the_folder(self):
        for name in ("", "/abs.h", "../up.h", "a/../b.h", "a//b.h", "./a.h", "a\\b.h", "dir/"):
            files = FileManager()
            with self.assertRaises(GenError) as caught:
                files.write(name, "x")
            self.assertEqual(str(caught.exception),
                             f"output name '{name}' must be a relative path inside the output folder")
            self.assertTrue(files.failed)

    def test_contents_must_be_text(self):
        files = FileManager()
        with self.assertRaises(GenError) as caught:
            files.write("a.h", b"bytes")
        self.assertEqual(str(caught.exception), "output 'a.h': contents must be text, got bytes")

    def test_a_failed_commit_changes_nothing(self):
        """All or nothing: a blocked path fails the whole commit before any file is replaced,
        and the temporaries and the folders made for them are removed."""
        old = FileManager()
        old.write("a.h", "// old a\n")
        old.write("z.h", "// old z\n")
        old.commit(self.out)
        with open(os.path.join(self.out, "x_blocked"), "w") as f:
            f.write("a file where a folder is wanted\n")
        new = FileManager()
        new.write("a.h", "// new a\n")
        new.write("new/deep/b.h", "// b\n")
        new.write("x_blocked/c.h", "// c\n")
        new.write("z.h", "// new z\n")
        with self.assertRaises(GenError) as caught:
            new.commit(self.out)
        self.assertIn("cannot write", str(caught.exception))
        self.assertIn("no output was changed", str(caught.exception))
        self.assertEqual(self.listing(), ["a.h", "x_blocked", "z.h"])
        self.assertFalse(os.path.exists(os.path.join(self.out, "new")))  # the folders it made are gone
        self.assertEqual(read(os.path.join(self.out, "a.h")), "// old a\n")
        self.assertEqual(read(os.path.join(self.out, "z.h")), "// old z\n")

    def test_nothing_to_write(self):
        self.assertEqual(FileManager().commit(self.out), [])
        self.assertEqual(FileManager().names(), [])


if __name__ == "__main__":
    unittest.main()
