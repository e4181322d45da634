"""``BoxingAdapters.h``, ``boxing/sig_<types>.h`` and ``BoxingAdapters*.cpp``: the boxed<->unboxed
adapters of every distinct C++ signature (Note [Generated boxing adapters] in the header).

The adapters themselves are the runtime's templates (Note [One boxing family]); what is
generated is where they are compiled: one explicit instantiation per signature, declared
extern in the signature's header so that no other file compiles it again.
"""

from __future__ import annotations

from codegen.dest.common import GenContext, render, shard_by_hash, shard_name

DEFAULT_SHARDS = 1


def emit(ctx: GenContext, files, shards: int = DEFAULT_SHARDS) -> None:
    files.write(ctx.header("BoxingAdapters.h"), render(ctx, "BoxingAdapters.h.j2", signatures=ctx.signatures))
    for sig in ctx.signatures:
        files.write(ctx.sig_header(sig.id), render(ctx, "BoxingSignature.h.j2", sig=sig))
    # By a stable hash of the signature id: a new signature moves no other one.
    for index, sigs in enumerate(shard_by_hash(ctx.signatures, lambda sig: sig.id, shards)):
        files.write(shard_name("BoxingAdapters", index, shards, "cpp"),
                    render(ctx, "BoxingAdapters.cpp.j2", signatures=sigs, shard=index, shards=shards))
