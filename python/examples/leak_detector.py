#!/usr/bin/env python3
"""A memory-leak detector as a Python dispatch mode (the seed's first example).

Inside ``with LeakDetector() as leaks:`` every tensor an operator allocates is remembered by a
weak reference, with the operator that made it. At the end of the block, the ones still alive
are the leaks: something kept them past the scope.

    PYTHONPATH=build/release/python python3 python/examples/leak_detector.py
"""

import weakref

import dispatchkit as dk


class LeakDetector(dk.DispatchMode):
    def __init__(self):
        self._made = []  # (weak reference, operator, shape, dtype)
        self.leaks = []

    def __dk_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {id(a) for a in args if isinstance(a, dk.Tensor)}
        for t in (out if isinstance(out, tuple) else (out,)):
            # An allocation: a new tensor that is not a view of (or one of) the inputs.
            if isinstance(t, dk.Tensor) and id(t) not in inputs and not t._is_view():
                self._made.append((weakref.ref(t), func.name(), tuple(t.shape), t.dtype))
        return out

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.leaks = [(op, shape, dtype) for ref, op, shape, dtype in self._made if ref() is not None]
        self._made = []
        return False

    def report(self):
        if not self.leaks:
            return "no tensors leaked"
        lines = [f"{len(self.leaks)} tensor(s) made in the block are still alive:"]
        lines += [f"  {op} made {dtype} {list(shape)}" for op, shape, dtype in self.leaks]
        return "\n".join(lines)


_cache = []


def step(x, w):
    h = dk.relu(x @ w)
    _cache.append(h * 2)  # the leak: a global cache keeps an intermediate alive
    return h.sum().item()


def main():
    x = dk.randn(4, 3)
    w = dk.randn(3, 5)
    with LeakDetector() as detector:
        loss = step(x, w)
    print(f"loss {loss:.4f}")
    print(detector.report())


if __name__ == "__main__":
    main()
