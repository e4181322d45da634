"""Fails when generated/ (checked in) differs from what the generator makes of schemas/ now.

Prints a unified diff of every difference and the command that fixes it (tools/regen).
"""

import difflib
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def files_under(folder):
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            out[os.path.relpath(path, folder)] = path
    return out


def main():
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(ROOT, "codegen", "gen.py"), "--out", tmp,
                        os.path.join(ROOT, "schemas", "native_functions.yaml")], check=True, cwd=ROOT)
        fresh = files_under(tmp)
        checked_in = files_under(os.path.join(ROOT, "generated"))
        problems = 0
        for rel in sorted(set(fresh) | set(checked_in)):
            if rel not in checked_in:
                print(f"generated/{rel}: missing (the generator makes it)")
                problems += 1
                continue
            if rel not in fresh:
                print(f"generated/{rel}: stale (the generator no longer makes it)")
                problems += 1
                continue
            with open(checked_in[rel], encoding="utf-8") as f:
                old = f.readlines()
            with open(fresh[rel], encoding="utf-8") as f:
                new = f.readlines()
            if old != new:
                problems += 1
                sys.stdout.writelines(difflib.unified_diff(old, new, f"generated/{rel}", f"fresh/{rel}"))
        if problems:
            print(f"\n{problems} generated file(s) out of date. Run: tools/regen")
            return 1
        print(f"generated/ is current ({len(fresh)} files)")
        return 0


if __name__ == "__main__":
    sys.exit(main())
