"""``ops/<name>_ops.h``, ``Operators.h`` and ``Operators_<n>.cpp``: the per-operator structs of
``dk::ops``, one header per operator name (``header_group``) and an umbrella that includes them.

Each struct holds the operator's name, schema and dispatch-argument bitmap, and
defines ``call`` and ``redispatch`` as the typed handle's (Note [Generated calls]).
The header also holds ``all_operators()``, one row per operator. Definitions are
spread over shards by a stable hash of the operator name.
"""

from __future__ import annotations

from codegen.dest.common import GenContext, forward_all, render, shard_by_hash, shard_name

DEFAULT_SHARDS = 4


def emit(ctx: GenContext, files, shards: int = DEFAULT_SHARDS) -> None:
    groups = ctx.groups
    files.write(ctx.header("Operators.h"), render(ctx, "Operators.h.j2", groups=list(groups),
                                                  operators=ctx.operators))
    for group, ops in groups.items():
        files.write(ctx.op_header(group, "_ops"), render(ctx, "OperatorStructs.h.j2", group=group, operators=ops))
    for index, ops in enumerate(shard_by_hash(ctx.operators, lambda op: op.qualified, shards)):
        files.write(
            shard_name("Operators", index, shards, "cpp"),
            render(ctx, "Operators.cpp.j2", operators=ops, shard=index, shards=shards,
                   forward_all=forward_all, includes=ctx.includes_for(ops)),
        )
