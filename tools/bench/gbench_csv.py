"""Reading Google Benchmark CSV output (gbench_main.h) into ns per call; shared by
tools/bench/report and tools/bench/vs_libtorch.py."""
import csv
import io
import re


def base_name(name):
    """'concurrent_unboxed_2_threads/real_time/threads:2_median' -> ('concurrent_unboxed_2_threads', 'median')."""
    head, _, stat = name.rpartition("_")
    if stat not in ("mean", "median", "stddev", "cv", "min", "max"):
        return name.split("/")[0], ""
    return head.split("/")[0], stat


def per_call(text):
    """{case: {'median': ns, 'min': ns, 'max': ns, 'threads': n, 'ops_per_call': k}} from gbench CSV text."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("name,")), None)
    out = {}
    if start is None:
        return out
    for r in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if r.get("error_occurred") == "true":
            continue
        case, stat = base_name(r["name"])
        if stat not in ("median", "min", "max"):
            continue
        threads = int(m.group(1)) if (m := re.search(r"/threads:(\d+)", r["name"])) else 1
        calls = float(r.get("calls_per_iteration") or 1)
        unit = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[r["time_unit"]]
        # One thread: CPU time (robust on a shared machine). Several: wall time per thread.
        t = float(r["real_time"] if threads > 1 else r["cpu_time"]) * unit / calls
        d = out.setdefault(case, {"threads": threads})
        d[stat] = t
        if float(r.get("ops_per_call") or 0) > 0:
            d["ops_per_call"] = float(r["ops_per_call"])
    return out
