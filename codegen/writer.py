"""The generator's output files: collected in memory, written together at the end.

Emitters call ``FileManager.write(name, text)``; nothing touches the disk until
``commit(out_dir)``, and ``commit`` refuses to run once anything went wrong (a
file written twice, or an exception inside ``with manager:``), so a failed run
leaves the previous outputs as they were. ``commit`` rewrites only files whose
contents changed (unchanged files keep their timestamps: no rebuild churn).

``commit`` is all or nothing: it first writes every changed file to a temporary name
beside its target (``.NAME.XXXX.tmp``) and checks that every target can be replaced;
only when all of that succeeded does it rename the temporaries over their targets. When
anything fails (a target path blocked by a folder, a full disk, no permission) it removes
its temporaries and the folders it created, so the output folder is as it was, and
raises a ``GenError`` naming the path. No reader ever sees half a file.
``names()`` is what ``gen.py --list-outputs`` prints for the build system.
"""

from __future__ import annotations

import errno
import os
import tempfile
from typing import Dict, List, Tuple

from codegen.errors import GenError


def _check_name(name: str) -> None:
    """Output names are relative POSIX paths that stay inside the output folder."""
    parts = name.split("/")
    if (
        not name
        or name.startswith("/")
        or "\\" in name
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise GenError(f"output name '{name}' must be a relative path inside the output folder")


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class FileManager:
    """Outputs by name (``"ops/add.h"``), held in memory until ``commit``."""

    def __init__(self) -> None:
        self._files: Dict[str, str] = {}
        self._failed = False

    # --- collecting -------------------------------------------------------------

    def write(self, name: str, contents: str) -> None:
        """Record output ``name``. A second write of the same name is an error."""
        try:
            _check_name(name)
            if name in self._files:
                raise GenError(f"output '{name}' written twice")
            if not isinstance(contents, str):
                raise GenError(f"output '{name}': contents must be text, got {type(contents).__name__}")
        except GenError:
            self._failed = True
            raise
        self._files[name] = contents

    def mark_failed(self) -> None:
        """Record that generation went wrong: ``commit`` will write nothing."""
        self._failed = True

    @property
    def failed(self) -> bool:
        return self._failed

    def names(self) -> List[str]:
        """Every output name, sorted."""
        return sorted(self._files)

    def contents(self, name: str) -> str:
        return self._files[name]

    def __enter__(self) -> "FileManager":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            self._failed = True
        return False

    # --- writing ----------------------------------------------------------------

    def commit(self, out_dir: str) -> List[str]:
        """Write every changed output under ``out_dir``, all or nothing; return the names written."""
        if self._failed:
            raise GenError("not writing any output: generation reported errors")
        staged = _Staging(_current_umask())
        try:
            for name in self.names():
                data = self._files[name].encode("utf-8")
                path = os.path.join(out_dir, *name.split("/"))
                if _read_or_none(path) != data:
                    staged.add(name, path, data)
        except BaseException:
            staged.discard()
            raise
        return staged.publish()


class _Staging:
    """Temporary files written beside their targets, renamed over them together."""

    def __init__(self, umask: int) -> None:
        self.umask = umask
        self.entries: List[Tuple[str, str, str]] = []  # (name, target path, temporary path)
        self.created: List[str] = []                   # folders made for them, outermost first

    def add(self, name: str, path: str, data: bytes) -> None:
        """Write ``data`` to a temporary file beside ``path`` (raises GenError naming ``path``)."""
        try:
            if os.path.lexists(path) and (os.path.isdir(path) or not os.path.isfile(path)):
                raise IsADirectoryError(errno.EISDIR, "is a folder, not a file" if os.path.isdir(path)
                                        else "is not a regular file", path)
            self._make_folders(os.path.dirname(path))
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix="." + os.path.basename(path) + ".",
                                       suffix=".tmp")
            self.entries.append((name, path, tmp))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o666 & ~self.umask)  # mkstemp makes 0600; outputs are ordinary files
        except OSError as e:
            raise GenError(f"{e.filename or path}: cannot write: {e.strerror or e}; "
                           "no output was changed") from None

    def _make_folders(self, folder: str) -> None:
        missing = []
        while folder and not os.path.isdir(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        for path in reversed(missing):
            os.mkdir(path)
            self.created.append(path)

    def discard(self) -> None:
        """Remove every temporary file and every folder made for them."""
        for _, _, tmp in self.entries:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        for folder in reversed(self.created):
            try:
                os.rmdir(folder)
            except OSError:
                pass
        self.entries, self.created = [], []

    def publish(self) -> List[str]:
        """Rename every temporary over its target; return the names written."""
        written = []
        try:
            for name, path, tmp in self.entries:
                os.replace(tmp, path)
                written.append(name)
        except OSError as e:
            # Only a target changed between the checks and now gets here: keep what was
            # renamed, remove the rest.
            self.entries = self.entries[len(written):]
            self.discard()
            raise GenError(f"{e.filename or path}: cannot write: {e.strerror or e}") from None
        return written


def _read_or_none(path: str):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None
