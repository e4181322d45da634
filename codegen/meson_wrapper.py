"""Meson's entry point to the generator: one part of the output into one flat folder.

Meson custom targets cannot name outputs inside subfolders, so the build runs the generator
once per part: `headers` (the files gen.py writes in dk/generated/, written flat into a build
folder that is itself .../dk/generated), `op-headers`, `sig-headers` and `key-headers` (those of
its ops/, boxing/ and keys/ subfolders, the same way) and `sources` (the top-level files).
Files are written only when their contents changed, so an edit that does not change a file
rebuilds nothing that depends on it, and all or nothing (codegen/writer.py's FileManager): a run
that fails leaves the part's folder as it was.
"""

import argparse
import os
import subprocess
import sys
import tempfile

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from codegen.errors import GenError  # noqa: E402
from codegen.writer import FileManager  # noqa: E402

HEADER_PREFIX = "dk/generated/"
SCALE_HEADER_PREFIX = "dk/generated/aten/"
# The header parts and the subfolder of the header folder each one holds ("" is the folder
# itself, without its subfolders).
HEADER_PARTS = {"headers": "", "op-headers": "ops/", "sig-headers": "boxing/", "key-headers": "keys/"}


def generate(args, tmp):
    """Runs the generator into `tmp`; returns (status, relative paths written)."""
    gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen.py")
    if args.scale:
        cmd = [sys.executable, gen, "--pytorch-compat", "--tags", args.tags, "--scale-out", tmp, args.yaml]
    else:
        cmd = [sys.executable, gen, "--out", tmp, args.yaml]
    if args.keys:
        cmd[2:2] = ["--keys", args.keys]
    result = subprocess.run(cmd)
    written = []
    for root, _, names in os.walk(tmp):
        for name in names:
            written.append(os.path.relpath(os.path.join(root, name), tmp).replace(os.sep, "/"))
    return result.returncode, sorted(written)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=sorted(HEADER_PARTS) + ["sources"], required=True)
    parser.add_argument("--outdir", help="where to write the part (omit with --list)")
    parser.add_argument("--list", action="store_true", help="print the part's file names instead")
    parser.add_argument("--scale", action="store_true", help="PyTorch-scale output (gen.py --scale-out)")
    parser.add_argument("--tags", help="tags.yaml, with --scale")
    parser.add_argument("--keys", help="the dispatch key file (gen.py --keys)")
    parser.add_argument("yaml")
    args = parser.parse_args(argv)
    prefix = SCALE_HEADER_PREFIX if args.scale else HEADER_PREFIX
    if args.part in HEADER_PARTS:
        prefix += HEADER_PARTS[args.part]

    with tempfile.TemporaryDirectory() as tmp:
        status, written = generate(args, tmp)
        if status != 0:
            return status
        base = SCALE_HEADER_PREFIX if args.scale else HEADER_PREFIX
        files = FileManager()
        for name in written:
            if args.part == "sources":
                if name.startswith(base):
                    continue
            elif not name.startswith(prefix) or "/" in name[len(prefix):]:
                continue
            flat = name[len(prefix):] if args.part != "sources" else name
            if args.list:
                print(flat)
                continue
            with open(os.path.join(tmp, name), encoding="utf-8", newline="") as f:
                files.write(flat, f.read())
        if args.outdir and not args.list:
            try:
                os.makedirs(args.outdir, exist_ok=True)
                files.commit(args.outdir)
            except (GenError, OSError) as e:
                print(f"meson_wrapper: {e}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
