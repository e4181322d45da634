"""Checks that every CUDA source is compiled with machine code for each -Dgpu_arch architecture
and PTX for the newest (kernels/cuda/meson.build), from the build's compile_commands.json.

    check_cuda_gencode.py BUILD_DIR ARCH...

Without PTX a GPU newer than every listed architecture fails each launch with "no kernel image
is available for execution on the device"; this catches a build that loses it, without a GPU.
"""

import json
import os
import shlex
import sys


def gencodes(command):
    """The -gencode values of a compile command, in order."""
    args = shlex.split(command)
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-gencode"]


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build, archs = argv[1], [a.strip() for a in argv[2:]]
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = [e for e in json.load(f) if e["file"].endswith(".cu")]
    if not entries:
        print(f"{build}/compile_commands.json: no .cu sources (is CUDA enabled?)", file=sys.stderr)
        return 1
    newest = max(archs, key=int)
    wanted = [f"arch=compute_{a},code=sm_{a}" for a in archs] + [f"arch=compute_{newest},code=compute_{newest}"]
    problems = []
    for e in entries:
        have = gencodes(e.get("command") or " ".join(e["arguments"]))
        missing = [w for w in wanted if w not in have]
        if missing:
            problems.append(f"{e['file']}: no -gencode {', '.join(missing)} (has {', '.join(have) or 'none'})")
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"{len(entries)} CUDA sources: machine code for sm_{', sm_'.join(archs)}, PTX for compute_{newest}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
