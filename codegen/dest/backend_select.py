"""``RegisterBackendSelect.cpp``: kernels at BackendSelect for factory operators.

A factory has no tensor argument to take a backend from, but has a ScalarType?,
Layout? or Device? argument (``FunctionSchema.is_factory``); calls then see only the
thread-local keys, and BackendSelect is among the default included ones. Its kernel
computes the backend from the ``device`` argument (CPU when it is None or absent)
and redispatches to that backend's Dense key (Note [BackendSelect for factories]).
Operators whose only kernel is CompositeImplicitAutograd decompose before reaching a
backend and get none; ``*_like`` operators have a tensor argument and need none.
"""

from __future__ import annotations

from typing import List

from codegen.dest.common import GenContext, Operator, forward_all, render
from codegen.model import DispatchKey


def needs_backend_select(op: Operator) -> bool:
    nf = op.nf
    if not nf.func.is_factory or nf.manual_kernel_registration:
        return False
    return any(key is not DispatchKey.CompositeImplicitAutograd for key in nf.dispatch)


def backend_expr(op: Operator) -> str:
    """A ``DispatchKeySet`` expression for the backend the device argument names."""
    for b in op.sig.bindings:
        if b.type.is_optional and b.type.elem.is_device:
            device = f"{b.name}.value_or(Device(kCPU))"
            break
        if b.type.is_device:
            device = b.name
            break
    else:
        device = "Device(kCPU)"
    return f"DispatchKeySet(toBackendComponent({device}.type)).add(DispatchKey::Dense)"


def emit(ctx: GenContext, files) -> None:
    ops: List[Operator] = [op for op in ctx.operators if needs_backend_select(op)]
    files.write("RegisterBackendSelect.cpp", render(
        ctx, "RegisterBackendSelect.cpp.j2", operators=ops, backend_expr=backend_expr, forward_all=forward_all,
        includes=ctx.includes_for(ops)))
