"""``ops/<name>_ops.h`` and ``Operators.h``: the per-operator structs of ``dk::ops``, one
header per operator name (``header_group``) and an umbrella that includes them.

Each struct holds the operator's name, schema and dispatch-argument bitmap, and
defines ``call`` and ``redispatch`` inline as the typed handle's (Note [Generated calls]),
so no generated source file defines them. The umbrella also holds ``all_operators()``, one
row per operator.
"""

from __future__ import annotations

from codegen.dest.common import GenContext, forward_all, render


def emit(ctx: GenContext, files) -> None:
    groups = ctx.groups
    files.write(ctx.header("Operators.h"), render(ctx, "Operators.h.j2", groups=list(groups),
                                                  operators=ctx.operators))
    for group, ops in groups.items():
        # The structs' inline calls instantiate their signatures' boxing adapters only where
        # the signature header declares them extern (Note [One boxing family]).
        includes = ctx.includes_for(ops, structs=False)
        files.write(ctx.op_header(group, "_ops"),
                    render(ctx, "OperatorStructs.h.j2", group=group, operators=ops,
                           forward_all=forward_all, includes=includes))
