"""Meson's entry point to the generator: one part of the output into one flat folder.

Meson custom targets cannot name outputs inside subfolders, so the build runs the generator
twice, once per part: `headers` (the files gen.py writes under dk/generated/, written flat
into a build folder that is itself .../dk/generated) and `sources` (the top-level files).
Files are written only when their contents changed, so an edit that does not change a file
rebuilds nothing that depends on it.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HEADER_PREFIX = "dk/generated/"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["headers", "sources"], required=True)
    parser.add_argument("--outdir", required=True)
    parser.add_argument("yaml")
    args = parser.parse_args(argv)

    gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen.py")
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run([sys.executable, gen, "--out", tmp, args.yaml])
        if result.returncode != 0:
            return result.returncode
        listed = subprocess.run([sys.executable, gen, "--list-outputs", args.yaml], check=True,
                                capture_output=True, text=True).stdout.split()
        os.makedirs(args.outdir, exist_ok=True)
        for name in listed:
            is_header = name.startswith(HEADER_PREFIX)
            if is_header != (args.part == "headers"):
                continue
            target = os.path.join(args.outdir, name[len(HEADER_PREFIX):] if is_header else name)
            source = os.path.join(tmp, name)
            with open(source, "rb") as f:
                new = f.read()
            if os.path.exists(target):
                with open(target, "rb") as f:
                    if f.read() == new:
                        continue
            shutil.copyfile(source, target + ".tmp")
            os.replace(target + ".tmp", target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
