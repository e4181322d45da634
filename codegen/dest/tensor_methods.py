"""The ``tensor.op(args...)`` methods: ``TensorMethodDecls.inc`` (declarations, included
inside ``class Tensor``), ``TensorMethodTypes.h`` (what those declarations name, included
before ``class Tensor``) and ``TensorMethods.cpp`` (their definitions, each a call of
``dk::ops::X::call`` with ``*this`` as self, out of line so that the tensor header does not
include the dispatcher)."""

from __future__ import annotations

from codegen.api import cpp
from codegen.dest.common import GenContext, render


def emit(ctx: GenContext, files) -> None:
    sigs = cpp.public_methods([op.nf for op in ctx.operators])
    entries = [(op, sig) for op in ctx.operators for sig in sigs.get(op.nf, ())]
    files.write(ctx.header("TensorMethodTypes.h"), render(ctx, "TensorMethodTypes.h.j2"))
    files.write(ctx.header("TensorMethodDecls.inc"), render(ctx, "TensorMethodDecls.inc.j2", entries=entries))
    with_methods = [op for op in ctx.operators if sigs.get(op.nf)]
    files.write("TensorMethods.cpp", render(ctx, "TensorMethods.cpp.j2", entries=entries,
                                            includes=ctx.includes_for(with_methods, adapters=False)))
