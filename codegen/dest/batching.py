"""``RegisterBatching.cpp``: the batching rules at FuncTorchBatched of the operators with a
``batching:`` family (Note [Pointwise batching rule] and Note [Along-dims batching rule] in
dk/func/batching_rules.h), the view copies' rule (tag ``view_copy``, Note [View copy batching
rule]), and the
randomness rule at FuncTorchVmapMode of the random ones (tag ``nondeterministic_seeded``, Note
[vmap randomness]).

Each family has one boxed rule in the runtime; the file registers it for every operator of the
family. Operators without a family run vmap's for-loop fallback (Note [vmap]).
"""

from __future__ import annotations

from typing import List

from codegen.dest.common import GenContext, Operator, render

# The runtime's boxed rule of each family (codegen.model.BATCHING_FAMILIES).
RULES = {"pointwise": "::dk::func::pointwiseBatchingRule", "along_dims": "::dk::func::alongDimsBatchingRule"}
# The tag that marks a random operator, and the rule it gets at FuncTorchVmapMode.
RANDOM_TAG = "nondeterministic_seeded"
RANDOMNESS_RULE = "::dk::func::randomnessBatchingRule"
# The tag of a view's copying twin, whose rule runs the view (Note [View copy batching rule]).
VIEW_COPY_TAG = "view_copy"


def view_of_copy(name) -> str:
    """``select_copy.int`` -> ``select.int``: the view a view copy copies."""
    base = name.name[:-len("_copy")] if name.name.endswith("_copy") else name.name
    return base + ("." + name.overload_name if name.overload_name else "")


def emit(ctx: GenContext, files) -> None:
    ops: List[Operator] = [op for op in ctx.operators if op.nf.batching]
    families = sorted({op.nf.batching for op in ops})
    files.write("RegisterBatching.cpp", render(
        ctx, "RegisterBatching.cpp.j2", families=[(f, RULES[f]) for f in families],
        ops=[(str(op.nf.func.name), op.nf.batching) for op in ops],
        random_ops=[str(op.nf.func.name) for op in ctx.operators if RANDOM_TAG in op.nf.tags],
        view_copies=[(str(op.nf.func.name), f"{ctx.namespace}::{view_of_copy(op.nf.func.name)}")
                     for op in ctx.operators if VIEW_COPY_TAG in op.nf.tags],
        randomness_rule=RANDOMNESS_RULE))
