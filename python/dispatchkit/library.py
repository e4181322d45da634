"""dispatchkit.library: define operators and register kernels from Python, as
``torch.library``::

    lib = dk.library.Library("myops", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    dk.ops.myops.twice(dk.ones(2))      # tensor([2., 2.]); callable from C++ too

A Python kernel is called with the operator's arguments (keyword-only ones as keywords) and
returns its results; it runs with the GIL, taken only for it. A fallback (``IMPL`` library with a
key) is called as ``fn(func, args, kwargs)`` for every operator at that key. Registrations last
as long as the Library object (or until ``_destroy()``)."""

import sys

from dispatchkit import _C


class Library:
    def __init__(self, ns, kind, dispatch_key=""):
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        caller = sys._getframe(1)  # named in dump_state() and registration errors
        self._lib = _C._Library(kind, ns, dispatch_key, caller.f_code.co_filename, caller.f_lineno)

    def define(self, schema, alias_analysis=""):
        """Defines an operator of this library's namespace: ``define("twice(Tensor x) -> Tensor")``."""
        self._lib.define(schema)
        return schema.split("(")[0]

    def impl(self, op_name, fn, dispatch_key=""):
        """Registers ``fn`` as the kernel of ``op_name`` at ``dispatch_key`` (default: the library's
        key, else CompositeImplicitAutograd)."""
        self._lib.impl(op_name, fn, dispatch_key or self.dispatch_key)

    def fallback(self, fn):
        """Registers ``fn(func, args, kwargs)`` for every operator at this library's key."""
        self._lib.fallback(fn)

    def _destroy(self):
        self._lib._destroy()

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"


def impl(lib, name, dispatch_key=""):
    """Decorator form: ``@dk.library.impl(lib, "twice", "CPU")``."""
    def register(fn):
        lib.impl(name, fn, dispatch_key)
        return fn
    return register
