"""``manifest.json``: what was generated, per operator, for tools and reviewers.

One object per operator (sorted by name): name, overload, schema, variants, kernels by
dispatch key, tags, dispatch bitmap, C++ signature and its adapter id, and whether it
gets a BackendSelect kernel. JSON with sorted keys and 2-space indentation.
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
        "signatures": [{"id": s.id, "signature": s.canonical, "operators": list(s.users)} for s in ctx.signatures],
    }


def emit(ctx: GenContext, files) -> None:
    files.write("manifest.json", json.dumps(manifest(ctx), indent=2, sort_keys=True) + "\n")
