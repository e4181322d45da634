#!/usr/bin/env python3
"""Instructions per call of every case of a callgrind driver (callgrind_main.h).

    callgrind_counts.py [--preload LIB] DRIVER OUT.csv [CASE...]

Runs DRIVER once under valgrind --tool=callgrind --instr-atstart=no; the driver dumps the
counters after running each case n and 2n times ("CASE n", "CASE 2n"); the instructions per
call are (count(2n) - count(n)) / n. Writes OUT.csv: case,instructions_per_call.
--preload LIB runs the driver with LD_PRELOAD=LIB (torch/valgrind_hwy_shim.cpp says why).
"""
import csv
import glob
import os
import re
import subprocess
import sys
import tempfile


def main():
    args = sys.argv[1:]
    env = dict(os.environ)
    if args[:1] == ["--preload"]:
        env["LD_PRELOAD"] = os.path.abspath(args[1])
        args = args[2:]
    driver, out_csv, cases = args[0], args[1], args[2:]
    tmp = tempfile.mkdtemp(prefix="dk-callgrind-")
    base = os.path.join(tmp, "cg.out")
    run = subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-line=no",
                          f"--callgrind-out-file={base}", driver] + cases, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
        sys.exit(f"{driver} failed under callgrind (exit {run.returncode})")
    ns = dict(line.split() for line in run.stdout.splitlines() if line.strip())
    totals = {}
    for path in glob.glob(base + ".*"):
        text = open(path).read()
        trigger = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
        total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
        if trigger and total:
            totals[trigger.group(1)] = int(total.group(1))
    subprocess.run(["rm", "-rf", tmp], check=True)
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["case", "instructions_per_call"])
        for case, n in ns.items():
            a, b = totals.get(f"{case} n"), totals.get(f"{case} 2n")
            if a is None or b is None:
                sys.exit(f"no callgrind dump for {case}")
            per_call = (b - a) / int(n)
            w.writerow([case, f"{per_call:.1f}" if per_call < 1000 else f"{per_call:.0f}"])
            print(f"{case}: {per_call:.1f} instructions per call", flush=True)


if __name__ == "__main__":
    main()
