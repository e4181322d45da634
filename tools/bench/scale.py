#!/usr/bin/env python3
"""Cases 7 (startup registration, memory per operator entry) and 9 (the generator) of
tools/bench/run; writes tools/bench/results/scale.csv (case,median,min,max,unit,note).

    scale.py BUILD_DIR [--reps N]

- generate_project_schemas: codegen/gen.py --out on schemas/native_functions.yaml; checked:
  it writes every file --list-outputs names, identical to the checked-in generated/.
- generate_pytorch_2493: gen.py --pytorch-compat --tags tags.yaml --scale-out on PyTorch
  1.13.1's native_functions.yaml; checked: 2,493 schemas in the RegisterSchema tables.
- compile_*: one compilation (g++, the library's own flags from compile_commands.json, object
  discarded) of generated files: the project's TensorMethods.cpp (every method's inline
  dispatcher call), shard 0 of each source family of the PyTorch-scale output, from which the
  whole scale output is estimated (shards x median), and one file including all 2,493 scale
  operator structs (aten/Operators.h: what a file including every operator pays for the
  inline calls, Note [Generated calls]).
- startup_registration_2493: dk-bench-startup loading a library of the 16 RegisterSchema shards
  (the only scale sources with static registrations), one process per repetition; checked:
  2,493 aten schemas afterwards.
- memory_per_operator_entry: dk-bench-memory (and c10-bench-memory with --c10 BUILD_DIR).
"""
import argparse
import csv
import filecmp
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# PyTorch 1.13.1's operator file, from Debian's python3-torch (as the meson option pytorch_yaml_dir).
PYTORCH = os.environ.get("DK_PYTORCH_YAML_DIR") or "/usr/lib/python3/dist-packages/torchgen/packaged/ATen/native"
RESULTS = os.path.join(ROOT, "tools", "bench", "results")
GEN = [sys.executable, os.path.join(ROOT, "codegen", "gen.py")]


def timed(cmd, **kw):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, **kw)
    return time.perf_counter() - t0


def stats(xs):
    return statistics.median(xs), min(xs), max(xs)


def fail(msg):
    sys.exit("WRONG ANSWER: " + msg)


def compile_command(build):
    """The library's compile command for generated TensorMethods.cpp (the build's fresh copy of
    generated/TensorMethods.cpp), as argv without input and output, the input, and directory."""
    for e in json.load(open(os.path.join(build, "compile_commands.json"))):
        if e["file"].endswith("TensorMethods.cpp") and "libdispatchkit" in e["command"]:
            argv = shlex.split(e["command"])
            out = []
            skip = False
            for a in argv:
                if skip:
                    skip = False
                    continue
                if a in ("-MQ", "-MF", "-o", "-c"):
                    skip = True
                    continue
                if a in ("-MD", "ccache") or a == e["file"]:
                    continue
                out.append(a)
            return out, os.path.join(e["directory"], e["file"]), e["directory"]
    fail("no compile command for TensorMethods.cpp in " + build)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--c10", help="the c10 build directory (build/bench-torch), for its memory figure")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    rows = []

    def add(case, values, unit, note=""):
        med, lo, hi = stats(values)
        rows.append({"case": case, "median": f"{med:.4g}", "min": f"{lo:.4g}", "max": f"{hi:.4g}", "unit": unit, "note": note})
        print(f"{case}: {med:.4g} {unit} (min {lo:.4g}, max {hi:.4g}) {note}", flush=True)

    work = tempfile.mkdtemp(prefix="dk-bench-scale-", dir=build)
    # ---- case 9: generation
    yaml = os.path.join(ROOT, "schemas", "native_functions.yaml")
    listed = subprocess.run(GEN + ["--list-outputs", yaml], check=True, capture_output=True, text=True).stdout.split()
    times = []
    for i in range(args.reps):
        out = os.path.join(work, f"project{i}")
        times.append(timed(GEN + ["--out", out, yaml], stdout=subprocess.DEVNULL))
        missing = [f for f in listed if not os.path.exists(os.path.join(out, f))]
        if missing:
            fail(f"gen.py did not write {missing[:3]}")
    differ = [f for f in listed if not filecmp.cmp(os.path.join(out, f), os.path.join(ROOT, "generated", f), shallow=False)]
    add("generate_project_schemas", times, "s",
        f"{len(listed)} files" + ("" if not differ else f"; {len(differ)} differ from generated/ (schemas changed since tools/regen)"))

    # ---- case 9: compile time of generated code (one compilation each; a busy machine)
    argv, project_source, cwd = compile_command(build)
    t = timed(argv + ["-c", project_source, "-o", "/dev/null"], cwd=cwd)
    add("compile_project_TensorMethods", [t], "s", "generated/TensorMethods.cpp, library flags (-O2 -g)")

    # ---- PyTorch 1.13.1's 2,493 operators (Debian's python3-torch, as the pytorch_scale option)
    pt_yaml = os.path.join(PYTORCH, "native_functions.yaml")
    if not os.path.exists(pt_yaml):
        print(f"skipped the PyTorch-scale cases: no {pt_yaml}", flush=True)
    else:
        pt_tags = os.path.join(PYTORCH, "tags.yaml")
        times = []
        for i in range(args.reps):
            out = os.path.join(work, f"scale{i}")
            times.append(timed(GEN + ["--pytorch-compat", "--tags", pt_tags, "--scale-out", out, pt_yaml], stdout=subprocess.DEVNULL))
        scale = out
        shards = sorted(f for f in os.listdir(scale) if f.endswith(".cpp"))
        # One SchemaData initializer per operator (Note [Pre-built schemas]).
        defs = sum(open(os.path.join(scale, f)).read().count("    {.strings = &kStrings, .name = ")
                   for f in shards if f.startswith("RegisterSchema_"))
        if defs != 2493:
            fail(f"the scale output registers {defs} schemas, not 2493")
        add("generate_pytorch_2493", times, "s", f"{len(shards)} source files, {defs} schemas")

        scale_argv = argv + ["-I", scale]
        total = 0.0
        for family in ("BoxingAdapters", "RegisterSchema"):
            n = sum(1 for f in shards if f.startswith(family + "_"))
            t = timed(scale_argv + ["-c", os.path.join(scale, f"{family}_0.cpp"), "-o", "/dev/null"], cwd=cwd)
            total += n * t
            add(f"compile_scale_{family}_0", [t], "s", f"shard 0 of {n}")
        rows.append({"case": "compile_scale_all_estimated", "median": f"{total:.4g}", "min": "", "max": "", "unit": "s",
                     "note": "sum over families of shards x shard-0 time, one core"})
        print(f"compile_scale_all_estimated: {total:.4g} s", flush=True)
        every_struct = os.path.join(work, "every_scale_operator.cpp")
        with open(every_struct, "w") as f:
            f.write('#include "dk/generated/aten/Operators.h"\n')
        t = timed(scale_argv + ["-c", every_struct, "-o", "/dev/null"], cwd=cwd)
        add("compile_scale_every_operator_struct", [t], "s", "one file including aten/Operators.h (2,493 structs)")

        # ---- case 7: startup registration of the 2,493 schemas
        objs = []
        for f in shards:
            if f.startswith("RegisterSchema_"):
                o = os.path.join(work, f + ".o")
                subprocess.run(scale_argv + ["-c", os.path.join(scale, f), "-o", o], check=True, cwd=cwd)
                objs.append(o)
        lib = os.path.join(work, "libdk_bench_scale_schemas.so")
        subprocess.run(["c++", "-shared", "-o", lib] + objs + ["-L" + build, "-ldispatchkit", "-Wl,-rpath," + build], check=True)
        startup = os.path.join(build, "tools", "bench", "dk-bench-startup")
        times = []
        for _ in range(args.reps):
            out = subprocess.run([startup, lib, "2493"], capture_output=True, text=True)
            vals = dict(line.split(",") for line in out.stdout.split())
            if out.returncode != 0:
                fail(f"startup: {vals.get('operators')} aten schemas registered, not 2493 {out.stderr}")
            times.append(float(vals["startup_ms"]))
        add("startup_registration_2493", times, "ms", "dlopen of the 16 RegisterSchema shards, one process each")

    # ---- case 7: memory per operator entry
    for side, path in (("dk", os.path.join(build, "tools", "bench", "dk-bench-memory")),
                       ("c10", os.path.join(os.path.abspath(args.c10), "c10-bench-memory") if args.c10 else None)):
        if path is None:
            continue
        out = subprocess.run([path], check=True, capture_output=True, text=True).stdout
        vals = dict(line.split(",") for line in out.split())
        name = "memory_per_operator_entry" + ("" if side == "dk" else "_c10")
        rows.append({"case": name, "median": vals["bytes_per_operator"], "min": "", "max": "", "unit": "bytes",
                     "note": f"heap growth per schema + CPU kernel; sizeof(OperatorEntry) = {vals['sizeof_operator_entry']}"})
        print(f"{name}: {vals['bytes_per_operator']} bytes (sizeof entry {vals['sizeof_operator_entry']})", flush=True)
        if "table_and_history_bytes" in vals:
            rows.append({"case": name.replace("memory_per_operator_entry", "memory_table_and_history"),
                         "median": vals["table_and_history_bytes"], "min": "", "max": "", "unit": "bytes",
                         "note": f"the same without the schema's argument vectors ({vals['schema_heap_bytes']} bytes)"})

    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "scale.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["case", "median", "min", "max", "unit", "note"], lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
