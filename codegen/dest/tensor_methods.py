"""The ``tensor.op(args...)`` methods: ``TensorMethodDecls.inc`` (declarations, included
inside ``class Tensor``), ``TensorMethodTypes.h`` (what those declarations name, included
before ``class Tensor``) and ``TensorMethods.h`` (the inline definitions, each a call of
``dk::ops::X::call`` with ``*this`` as self)."""

from __future__ import annotations

from codegen.api import cpp
from codegen.dest.common import GenContext, render


def emit(ctx: GenContext, files) -> None:
    sigs = cpp.public_methods([op.nf for op in ctx.operators])
    entries = [(op, sig) for op in ctx.operators for sig in sigs.get(op.nf, ())]
    files.write(ctx.header("TensorMethodTypes.h"), render(ctx, "TensorMethodTypes.h.j2"))
    files.write(ctx.header("TensorMethodDecls.inc"), render(ctx, "TensorMethodDecls.inc.j2", entries=entries))
    files.write(ctx.header("TensorMethods.h"), render(ctx, "TensorMethods.h.j2", entries=entries))
    groups = [g for g, ops in ctx.groups.items() if any(sigs.get(op.nf) for op in ops)]
    files.write(ctx.header("MethodOperators.h"), render(ctx, "MethodOperators.h.j2", groups=groups))
