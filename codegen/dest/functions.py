"""``ops/<name>.h`` and ``Functions.h``: the public free functions ``dk::op(args...)`` (``dk::c10d::op``
for an operator of namespace c10d), one per
operator with the function variant, each a one-line call of ``dk::ops::X::call`` (defaults and
overload rules in ``codegen.api.cpp``); one header per operator name, and an umbrella."""

from __future__ import annotations

from codegen.api import cpp
from codegen.dest.common import GenContext, render


def emit(ctx: GenContext, files) -> None:
    sigs = cpp.public_functions([op.nf for op in ctx.operators])
    groups = []
    for group, ops in ctx.groups.items():
        entries = [(op, sig) for op in ops for sig in sigs.get(op.nf, ())]
        if entries:
            groups.append(group)
            files.write(ctx.op_header(group, ""), render(ctx, "OperatorFunctions.h.j2", group=group, entries=entries,
                                                         cpp_namespace=ctx.cpp_namespace_of(ops[0]),
                                                         namespace=ops[0].namespace))
    files.write(ctx.header("Functions.h"), render(ctx, "Functions.h.j2", groups=groups))
