"""``RegisterSchema*.cpp``: the ``m.def(schema)`` of every operator, sorted by name.

With one shard it is one ``DK_LIBRARY(ns, m)`` block; with several, the first shard
holds ``DK_LIBRARY`` and the others ``DK_LIBRARY_FRAGMENT`` (a namespace has one
``DK_LIBRARY`` per process). Shards are consecutive runs of the sorted operators.
"""

from __future__ import annotations

from codegen.dest.common import GenContext, chunks, render, shard_name

DEFAULT_SHARDS = 1


def emit(ctx: GenContext, files, shards: int = DEFAULT_SHARDS) -> None:
    size = max(1, -(-len(ctx.operators) // shards))
    runs = chunks(ctx.operators, size)
    runs += [[] for _ in range(shards - len(runs))]
    first = 0
    for index, ops in enumerate(runs):
        files.write(shard_name("RegisterSchema", index, shards, "cpp"),
                    render(ctx, "RegisterSchema.cpp.j2", operators=ops, shard=index, shards=shards, first=first))
        first += len(ops)
