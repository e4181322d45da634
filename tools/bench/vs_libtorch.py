#!/usr/bin/env python3
"""The timed half of tools/bench/run --vs-libtorch: for each case both programs have, runs
dk-bench and then c10-bench on that case alone (interleaved, so both see the same machine
load), 5 repetitions each, and writes results/vs_libtorch_timings.csv with the ns per call of
each side (median, min, max) and the ratio dispatchkit / c10 of the medians. A case named
..._t<N> (the kernel cases) runs with N threads: both programs set it, and the environment
gives OpenMP and OpenBLAS the same count from the start (libtorch's set_num_threads does not
reach OpenBLAS's own threads).

    vs_libtorch.py DK_BENCH C10_BENCH [--reps N] [--out FILE]
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gbench_csv  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def run(program, case, reps):
    env = dict(os.environ)
    threads = re.search(r"_t(\d+)$", case)
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "DK_NUM_THREADS"):
            env[var] = threads.group(1)
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        p = subprocess.run([program, f"--benchmark_filter=^{case}$", f"--benchmark_repetitions={reps}",
                            "--benchmark_report_aggregates_only=true", f"--benchmark_out={f.name}",
                            "--benchmark_out_format=csv"], capture_output=True, text=True, env=env)
        if p.returncode != 0:
            sys.exit(f"{program} {case}: exit {p.returncode}\n{p.stdout}{p.stderr}")
        return gbench_csv.per_call(open(f.name).read()).get(case)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dk")
    ap.add_argument("c10")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="vs_libtorch_timings.csv", help="file name under results/")
    args = ap.parse_args()
    list_cases = lambda prog: subprocess.run([prog, "--benchmark_list_tests=true"], check=True, capture_output=True,
                                             text=True).stdout.split()
    c10_cases = set(list_cases(args.c10))
    cases = [c for c in list_cases(args.dk) if c in c10_cases]
    rows = []
    for case in cases:
        dk, c10 = run(args.dk, case, args.reps), run(args.c10, case, args.reps)
        ratio = dk["median"] / c10["median"]
        print(f"{case}: dispatchkit {dk['median']:.2f} ns, c10 {c10['median']:.2f} ns, ratio {ratio:.3f}", flush=True)
        rows.append({"case": case, "dk_ns": f"{dk['median']:.3f}", "dk_min": f"{dk['min']:.3f}", "dk_max": f"{dk['max']:.3f}",
                     "c10_ns": f"{c10['median']:.3f}", "c10_min": f"{c10['min']:.3f}", "c10_max": f"{c10['max']:.3f}",
                     "ratio": f"{ratio:.3f}"})
    with open(os.path.join(RESULTS, args.out), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
