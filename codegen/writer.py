"""The generator's output files: collected in memory, written together at the end.

Emitters call ``FileManager.write(name, text)``; nothing touches the disk until
``commit(out_dir)``, and ``commit`` refuses to run once anything went wrong (a
file written twice, or an exception inside ``with manager:``), so a failed run
leaves the previous outputs as they were. ``commit`` rewrites only files whose
contents changed (unchanged files keep their timestamps: no rebuild churn), each
through a temporary file renamed over the target, so no reader ever sees half a
file. ``names()`` is what ``gen.py --list-outputs`` prints for the build system.
"""

from __future__ import annotations

import os
import tempfile
from typing import Dict, List

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
        """Write every changed output under ``out_dir``; return the names written."""
        if self._failed:
            raise GenError("not writing any output: generation reported errors")
        umask = _current_umask()
        written = []
        for name in self.names():
            data = self._files[name].encode("utf-8")
            path = os.path.join(out_dir, *name.split("/"))
            if _read_or_none(path) == data:
                continue
            _write_atomically(path, data, umask)
            written.append(name)
        return written


def _read_or_none(path: str):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _write_atomically(path: str, data: bytes, umask: int) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
