#!/usr/bin/env python3
"""Runs desync_prog (rank 1 skips an all_reduce) under tools/dkrun with N ranks, then
tools/dk-ranklogs on the logs: the ranks must name rank 1 in their timeout errors (the program's
exit status), and dk-ranklogs must blame rank 1 at the all_reduce it skipped.

Usage: check_desync.py DKRUN DK_RANKLOGS PROGRAM N
"""
import subprocess
import sys
import tempfile


def main(argv):
    dkrun, ranklogs, program, n = argv[1:5]
    with tempfile.TemporaryDirectory(prefix="dk-desync-") as logs:
        run = subprocess.run([sys.executable, dkrun, "-n", n, "--timeout", "120", program, logs],
                             capture_output=True, text=True)
        print(run.stdout, run.stderr, sep="\n")
        if run.returncode != 0:
            print(f"FAIL: the ranks did not all report rank 1 (dkrun exit status {run.returncode})")
            return 1
        report = subprocess.run([sys.executable, ranklogs, logs], capture_output=True, text=True)
        print(report.stdout, report.stderr, sep="\n")
        if report.returncode != 1:
            print(f"FAIL: dk-ranklogs exit status {report.returncode}, expected 1 (the logs differ)")
            return 1
        blame = [line for line in report.stdout.splitlines() if line.startswith("diverged:")]
        if not blame or "rank 1" not in blame[0] or "c10d::all_reduce_" not in blame[0]:
            print("FAIL: dk-ranklogs does not blame rank 1 at c10d::all_reduce_")
            return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
