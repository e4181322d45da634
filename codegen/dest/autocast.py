"""``RegisterAutocast.cpp``: kernels at AutocastCPU and AutocastCUDA for operators with an
``autocast:`` policy (Note [Autocast] in dk/layers/autocast.h).

Each kernel casts the floating tensor arguments that live on its device type (to the
guard's lower-precision dtype, to float32, or to the widest dtype among them), then calls
the operator again with its autocast key excluded, so the call continues below autocast.
"""

from __future__ import annotations

from typing import List

from codegen import dispatch_key
from codegen.dest.common import GenContext, Operator, render

# Arguments the cast applies to (dispatcher.CType.dispatch kinds); Tensor?[] is left alone.
TENSOR_KINDS = {"tensor", "optional_tensor", "tensor_list"}

# (dispatch key, device type expression), from the model's table of autocast keys.
AUTOCAST_KEYS = tuple((key.name, f"DeviceType::{device}") for key, device in dispatch_key.AUTOCAST_KEYS)


def is_tensor(binding) -> bool:
    return binding.type.dispatch in TENSOR_KINDS


def emit(ctx: GenContext, files) -> None:
    ops: List[Operator] = [op for op in ctx.operators if op.nf.autocast]
    files.write("RegisterAutocast.cpp", render(
        ctx, "RegisterAutocast.cpp.j2", operators=ops, keys=AUTOCAST_KEYS, is_tensor=is_tensor,
        includes=ctx.includes_for(ops)))
