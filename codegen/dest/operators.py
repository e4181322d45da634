"""``ops/<name>_ops.h``, ``Operators.h`` and ``Operators_<n>.cpp``: the per-operator structs of
``dk::ops``, one header per operator name (``header_group``) and an umbrella that includes them.

Each struct holds the operator's name, schema and dispatch-argument bitmap, and
defines ``call`` (extract the key set from exactly the arguments the bitmap selects,
look up the kernel, invoke it) and ``redispatch`` (look up with the caller's key set).
The header also holds ``all_operators()``, one row per operator. Definitions are
spread over shards by a stable hash of the operator name.
"""

from __future__ import annotations

from typing import List

from codegen.dest.common import GenContext, Operator, forward_all, render, shard_by_hash, shard_name

DEFAULT_SHARDS = 4


def key_set_lines(op: Operator) -> List[str]:
    """Statements that leave the dispatch arguments' key sets, OR-ed, in ``arg_ks``."""
    bindings = op.dispatch_bindings
    direct = [f"{b.name}.key_set()" for b in bindings if b.type.dispatch == "tensor"]
    lines = [f"DispatchKeySet arg_ks = {' | '.join(direct)};" if direct else "DispatchKeySet arg_ks;"]
    for b in bindings:
        if b.type.dispatch == "optional_tensor":
            lines.append(f"if ({b.name}) arg_ks = arg_ks | {b.name}->key_set();")
        elif b.type.dispatch == "tensor_list":
            lines.append(f"for (const Tensor& t : {b.name}) arg_ks = arg_ks | t.key_set();")
        elif b.type.dispatch == "optional_tensor_list":
            lines += [f"for (const std::optional<Tensor>& t : {b.name}) {{",
                      "  if (t) arg_ks = arg_ks | t->key_set();",
                      "}"]
    return lines


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
                   key_set_lines=key_set_lines, forward_all=forward_all, includes=ctx.includes_for(ops)),
        )
