"""``RegisterSchema*.cpp``: the ``m.def(schema, bitmap)`` of every operator, sorted by name.

Each def passes the operator struct's dispatch-argument bitmap, which the runtime checks
once against the schema's and then uses (Note [Dispatch-argument bitmap]).

With one shard it is one ``DK_LIBRARY(ns, m)`` block; with several, the first shard
holds ``DK_LIBRARY`` and the others ``DK_LIBRARY_FRAGMENT`` (a namespace has one
``DK_LIBRARY`` per process). Each operator's shard is chosen by a stable hash of its name, so
adding an operator moves no other one.
"""

from __future__ import annotations

from codegen.dest.common import GenContext, render, shard_by_hash, shard_name

DEFAULT_SHARDS = 1


def emit(ctx: GenContext, files, shards: int = DEFAULT_SHARDS) -> None:
    for index, ops in enumerate(shard_by_hash(ctx.operators, lambda op: op.qualified, shards)):
        files.write(shard_name("RegisterSchema", index, shards, "cpp"),
                    render(ctx, "RegisterSchema.cpp.j2", operators=ops, shard=index, shards=shards,
                           includes=ctx.includes_for(ops, adapters=False)))
