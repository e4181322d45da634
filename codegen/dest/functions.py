"""``Functions.h``: the public free functions ``dk::op(args...)``, one per operator with
the function variant, each a one-line call of ``dk::ops::X::call`` (defaults and
overload rules in ``codegen.api.cpp``)."""

from __future__ import annotations

from codegen.api import cpp
from codegen.dest.common import GenContext, render


def emit(ctx: GenContext, files) -> None:
    sigs = cpp.public_functions([op.nf for op in ctx.operators])
    entries = [(op, sig) for op in ctx.operators for sig in sigs.get(op.nf, ())]
    files.write(ctx.header("Functions.h"), render(ctx, "Functions.h.j2", entries=entries))
