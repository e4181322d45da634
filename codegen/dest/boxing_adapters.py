"""``BoxingAdapters.h`` and ``BoxingAdapters*.cpp``: the boxed<->unboxed adapters, one set
per distinct C++ signature (Note [Generated boxing adapters] in the header).

The adapters are written out argument by argument (``codegen.api.boxed``) rather than
instantiated from the runtime's templates, so each one reads as plain code in review.
"""

from __future__ import annotations

from typing import List

from codegen.api import boxed
from codegen.dest.common import GenContext, Signature, render, shard_by_hash, shard_name

DEFAULT_SHARDS = 1


def unbox_lines(sig: Signature) -> List[str]:
    """The boxed adapter's statements: unbox every argument into ``a<i>``."""
    lines: List[str] = []
    for i, t in enumerate(sig.types):
        statements, _ = boxed.unbox_argument(t, f"args[{i}]", f"a{i}")
        lines += statements
    return lines


def kernel_args(sig: Signature) -> str:
    return ", ".join(boxed.unbox_argument(t, f"args[{i}]", f"a{i}")[1] for i, t in enumerate(sig.types))


def return_values(sig: Signature) -> List[str]:
    """The C++ value type of each return, in order."""
    r = sig.returns
    if r == "void":
        return []
    if r.startswith("std::tuple<"):
        return list(_split_template_args(r[len("std::tuple<"):-1]))
    return [r]


def _split_template_args(text: str) -> List[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def push_return_lines(sig: Signature) -> List[str]:
    values = return_values(sig)
    if len(values) == 1:
        return [boxed.push_return(values[0], "stack", "result")]
    return [boxed.push_return(v, "stack", f"std::get<{i}>(result)") for i, v in enumerate(values)]


def push_argument_lines(sig: Signature) -> List[str]:
    return [boxed.push_argument(t, "stack", f"a{i}") for i, t in enumerate(sig.types)]


def pop_return_expr(sig: Signature) -> str:
    values = return_values(sig)
    if len(values) == 1:
        return boxed.pop_return(values[0], "stack[0]")
    items = ", ".join(boxed.pop_return(v, f"stack[{i}]") for i, v in enumerate(values))
    return f"{sig.returns}({items})"


def emit(ctx: GenContext, files, shards: int = DEFAULT_SHARDS) -> None:
    helpers = dict(unbox_lines=unbox_lines, kernel_args=kernel_args, return_values=return_values,
                   push_return_lines=push_return_lines, push_argument_lines=push_argument_lines,
                   pop_return_expr=pop_return_expr)
    files.write(ctx.header("BoxingAdapters.h"), render(ctx, "BoxingAdapters.h.j2", signatures=ctx.signatures))
    for sig in ctx.signatures:
        files.write(ctx.sig_header(sig.id), render(ctx, "BoxingSignature.h.j2", sig=sig))
    # By a stable hash of the signature id: a new signature moves no other one.
    for index, sigs in enumerate(shard_by_hash(ctx.signatures, lambda sig: sig.id, shards)):
        files.write(shard_name("BoxingAdapters", index, shards, "cpp"),
                    render(ctx, "BoxingAdapters.cpp.j2", signatures=sigs, shard=index, shards=shards, **helpers))
