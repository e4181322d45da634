#!/usr/bin/env python3
"""all_reduce bus bandwidth, dispatchkit against PyTorch 1.13.1's c10d Gloo, side by side.

Runs dk-bench-allreduce and c10d-bench-allreduce under tools/dkrun (N local ranks, default 2),
alternating the two programs for each repetition so that both see the same machine, and writes
tools/bench/results/allreduce_vs_c10d.csv: for each size (float32, 1 KiB to 64 MiB) the median
time per all_reduce of each variant, the bus bandwidth (2 (n-1)/n bytes / time, NCCL's
definition), and the ratios to c10d. Variants: dk (the c10d::all_reduce_ operator through the
dispatcher, with the argument check), dk_nocheck (without the argument check), dk_direct
(ProcessGroup::allReduce, no dispatcher), c10d.

Usage: dist_allreduce.py DK_BENCH C10D_BENCH [--ranks N] [--reps R] [--out CSV]
"""
import argparse
import collections
import csv
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DKRUN = os.path.join(HERE, "..", "dkrun")
VARIANTS = ("c10d", "dk", "dk_nocheck", "dk_direct")


def run_once(program, ranks):
    """{(variant, bytes): [seconds]} from one run of program on `ranks` ranks."""
    out = subprocess.run([sys.executable, DKRUN, "-n", str(ranks), "--no-prefix", "--timeout", "900", program,
                          "--reps", "1"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{program} failed (status {out.returncode}):\n{out.stdout}\n{out.stderr}")
    found = collections.defaultdict(list)
    for line in out.stdout.splitlines():
        parts = line.strip().split(",")
        if len(parts) == 3 and parts[0] in VARIANTS:
            found[(parts[0], int(parts[1]))].append(float(parts[2]))
    return found


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dk_bench")
    parser.add_argument("c10d_bench")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "allreduce_vs_c10d.csv"))
    args = parser.parse_args(argv)
    samples = collections.defaultdict(list)
    for rep in range(args.reps):
        for program in (args.c10d_bench, args.dk_bench) if rep % 2 == 0 else (args.dk_bench, args.c10d_bench):
            for key, values in run_once(program, args.ranks).items():
                samples[key].extend(values)
        print(f"repetition {rep + 1} of {args.reps} done", file=sys.stderr)
    sizes = sorted({b for (_, b) in samples})
    n = args.ranks
    rows = []
    for size in sizes:
        row = {"bytes": size, "ranks": n}
        for v in VARIANTS:
            t = statistics.median(samples[(v, size)])
            row[f"{v}_us"] = round(t * 1e6, 2)
            row[f"{v}_busbw_GBps"] = round(2 * (n - 1) / n * size / t / 1e9, 3)
        for v in VARIANTS[1:]:
            row[f"{v}_vs_c10d"] = round(row[f"{v}_us"] / row["c10d_us"], 3)
        rows.append(row)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{'bytes':>10} {'c10d us':>10} {'dk us':>10} {'dk/c10d':>8} {'nocheck/c10d':>13} {'direct us':>10} "
          f"{'c10d GB/s':>10} {'dk GB/s':>9}")
    for r in rows:
        print(f"{r['bytes']:>10} {r['c10d_us']:>10} {r['dk_us']:>10} {r['dk_vs_c10d']:>8} {r['dk_nocheck_vs_c10d']:>13} "
              f"{r['dk_direct_us']:>10} {r['c10d_busbw_GBps']:>10} {r['dk_busbw_GBps']:>9}")
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
