#!/usr/bin/env python3
"""A rank-aware operator logger as a Python dispatch mode (the seed's second example).

Each rank writes every operator it runs, with its argument shapes, to ``<dir>/ops.rank<R>.log``
in the format of the C++ RankLogger, so ``tools/dk-ranklogs <dir>`` aligns the ranks' logs and
prints where they first differ. Run two ranks (``tools/dkrun`` sets RANK), one of which does
something different at step 2 when DIVERGE=1:

    tools/dkrun -n 2 env PYTHONPATH=build/release/python DIVERGE=1 python3 python/examples/rank_logger.py /tmp/logs
    tools/dk-ranklogs /tmp/logs
"""

import os
import sys

import dispatchkit as dk

_DTYPE_NAMES = {dk.float32: "Float", dk.float64: "Double", dk.float16: "Half", dk.bfloat16: "BFloat16",
                dk.int64: "Long", dk.int32: "Int", dk.int16: "Short", dk.int8: "Char", dk.uint8: "Byte",
                dk.bool: "Bool"}


def describe(value):
    """An argument as the C++ RankLogger writes it: Float[2, 3], 2, "mean", [0, 1], None."""
    if isinstance(value, dk.Tensor):
        return f"{_DTYPE_NAMES.get(value.dtype, str(value.dtype))}[{', '.join(str(s) for s in value.shape)}]"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class RankLogger(dk.DispatchMode):
    def __init__(self, directory, rank):
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, f"ops.rank{rank}.log")
        self._out = open(self.path, "w")
        self._line = 0

    def __dk_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        described = [describe(a) for a in args] + [describe(v) for v in kwargs.values()]
        self._out.write(f"{self._line} {func.name()}({', '.join(described)})\n")
        self._line += 1
        return func(*args, **kwargs)

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self._out.close()
        return False


def train(rank, diverge):
    w = dk.ones(4, 2, dtype=dk.float64, requires_grad=True)
    for step in range(3):
        x = dk.full((8, 4), float(step + 1), dtype=dk.float64)
        if diverge and rank == 1 and step == 2:
            x = x.t().contiguous().t()  # an extra operator on one rank only
        loss = (x @ w).relu().mean()
        loss.backward()
        with dk.no_grad():
            w.sub_(w.grad * 0.1)
            w.grad = None


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "rank-logs"
    rank = int(os.environ.get("RANK", "0"))
    with RankLogger(directory, rank) as logger:
        train(rank, os.environ.get("DIVERGE") == "1")
    print(f"rank {rank}: wrote {logger.path}")


if __name__ == "__main__":
    main()
