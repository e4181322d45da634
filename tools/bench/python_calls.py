#!/usr/bin/env python3
"""Python call overhead, dispatchkit beside PyTorch 1.13.1 in one process (issue 21).

    PYTHONPATH=build/bench/python python3 tools/bench/python_calls.py [--reps N] [--out CSV]

Each case times a call on 1-element float32 tensors (the call is all there is to time), both
libraries alternating within every repetition; the figure is the median over repetitions of
the best-of-5 mean per call. Every case checks that both give the same value first.
"""

import argparse
import csv
import statistics
import sys
import timeit

import dispatchkit as dk
import torch

torch.set_num_threads(1)


def cases():
    a, b = dk.ones(1), dk.ones(1)
    ta, tb = torch.ones(1), torch.ones(1)
    yield "add(a, b)", (lambda: dk.add(a, b)), (lambda: torch.add(ta, tb))
    yield "a + b", (lambda: a + b), (lambda: ta + tb)
    yield "add(a, b, alpha=2)", (lambda: dk.add(a, b, alpha=2)), (lambda: torch.add(ta, tb, alpha=2))
    yield "a.mul(2.0)", (lambda: a.mul(2.0)), (lambda: ta.mul(2.0))
    yield "zeros(2, 3)", (lambda: dk.zeros(2, 3)), (lambda: torch.zeros(2, 3))
    yield "x.view(1)", (lambda: a.view(1)), (lambda: ta.view(1))


class _DkForward(dk.DispatchMode):
    def __dk_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _torch_forward_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class TorchForward(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    return TorchForward()


def mode_cases():
    """add(a, b) under a Python mode that only forwards: the mode is entered once, around the timing."""
    a, b = dk.ones(1), dk.ones(1)
    ta, tb = torch.ones(1), torch.ones(1)
    yield "add under a forwarding mode", _DkForward, _torch_forward_mode, (lambda: dk.add(a, b)), \
        (lambda: torch.add(ta, tb))


def per_call_us(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--number", type=int, default=50000, help="calls per timing")
    parser.add_argument("--out", help="write the CSV here")
    args = parser.parse_args(argv)
    rows = []
    for name, dk_fn, torch_fn in cases():
        d, t = dk_fn(), torch_fn()
        if d.tolist() != t.tolist():
            sys.exit(f"{name}: dispatchkit gives {d.tolist()}, torch {t.tolist()}")
        dk_times, torch_times = [], []
        for _ in range(args.reps):
            dk_times.append(per_call_us(dk_fn, args.number))
            torch_times.append(per_call_us(torch_fn, args.number))
        dk_us, torch_us = statistics.median(dk_times), statistics.median(torch_times)
        rows.append({"case": name, "dk_us": round(dk_us, 3), "torch_us": round(torch_us, 3),
                     "dk_vs_torch": round(dk_us / torch_us, 3)})
        print(f"{name:28s} dispatchkit {dk_us:6.3f} us   torch {torch_us:6.3f} us   ratio {dk_us / torch_us:.2f}",
              flush=True)
    for name, dk_mode, torch_mode, dk_fn, torch_fn in mode_cases():
        with dk_mode():
            d = dk_fn()
        with torch_mode():
            t = torch_fn()
        if d.tolist() != t.tolist():
            sys.exit(f"{name}: dispatchkit gives {d.tolist()}, torch {t.tolist()}")
        dk_times, torch_times = [], []
        number = max(1, args.number // 10)
        for _ in range(args.reps):
            with dk_mode():
                dk_times.append(per_call_us(dk_fn, number))
            with torch_mode():
                torch_times.append(per_call_us(torch_fn, number))
        dk_us, torch_us = statistics.median(dk_times), statistics.median(torch_times)
        rows.append({"case": name, "dk_us": round(dk_us, 3), "torch_us": round(torch_us, 3),
                     "dk_vs_torch": round(dk_us / torch_us, 3)})
        print(f"{name:28s} dispatchkit {dk_us:6.3f} us   torch {torch_us:6.3f} us   ratio {dk_us / torch_us:.2f}",
              flush=True)
    if args.out:
        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
