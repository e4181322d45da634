"""``manifest.jsonl``: what was generated, per operator, for tools and reviewers.

JSON Lines: a first line naming the generator, its inputs and the namespace; then one line per
operator (sorted by name): name, overload, schema, variants, kernels by dispatch key, tags,
dispatch bitmap, C++ signature and its adapter id, whether it gets a BackendSelect kernel; then
one line per distinct C++ signature. Each line stands alone (sorted keys), so adding an
operator adds lines and changes none.
"""

from __future__ import annotations

import json

from codegen.dest.backend_select import needs_backend_select
from codegen.dest.common import GENERATOR, GenContext


def manifest(ctx: GenContext) -> dict:
    operators = []
    for op in ctx.operators:
        nf = op.nf
        operators.append({
            "name": op.name,
            "overload": op.overload,
            "schema": op.schema,
            "variants": list(nf.variants),
            "dispatch": {key.name: str(kernel) for key, kernel in nf.dispatch.items()},
            "tags": list(nf.tags),
            "dispatch_bitmap": op.bitmap,
            "dispatch_bitmap_literal": op.bitmap_literal,
            "cpp_signature": op.sig.canonical,
            "cpp_signature_id": op.sig_id,
            "backend_select": needs_backend_select(op),
            "ops_struct": f"{ctx.cpp_namespace}::ops::{op.struct}",
        })
    return {
        "generated_by": GENERATOR,
        "inputs": list(ctx.inputs),
        "namespace": ctx.namespace,
        "operators": operators,
        "signatures": [{"id": s.id, "signature": s.canonical} for s in ctx.signatures],
    }


def lines(m: dict) -> list:
    """The manifest as JSON Lines records: the header, the operators, the signatures."""
    header = {"generated_by": m["generated_by"], "inputs": m["inputs"], "namespace": m["namespace"]}
    return ([header] + [dict(kind="operator", **op) for op in m["operators"]]
            + [dict(kind="signature", **sig) for sig in m["signatures"]])


def emit(ctx: GenContext, files) -> None:
    files.write("manifest.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in lines(manifest(ctx))))
