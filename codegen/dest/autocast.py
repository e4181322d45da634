"""``RegisterAutocast.cpp``: kernels at AutocastCPU and AutocastCUDA for operators with an
``autocast:`` policy (Note [Autocast] in dk/layers/autocast.h).

Each kernel casts the floating tensor arguments that live on its device type (to the
guard's lower-precision dtype, to float32, or to the widest dtype among them), or, for
``fp32_set_opt_dtype``, fills an unset ``dtype`` argument with float32, then calls the
operator again with its autocast key excluded, so the call continues below autocast.
The policy is decided here, per kernel (``AutocastKernel``); the template only lays it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

from codegen import dispatch_key
from codegen.dest.common import GenContext, Operator, render

# Arguments the cast applies to (dispatcher.CType.dispatch kinds); Tensor?[] is left alone.
TENSOR_KINDS = {"tensor", "optional_tensor", "tensor_list"}

# (dispatch key, device type name), from the model's table of autocast keys.
AUTOCAST_KEYS = tuple((key.name, device) for key, device in dispatch_key.AUTOCAST_KEYS)


def is_tensor(binding) -> bool:
    return binding.type.dispatch in TENSOR_KINDS


@dataclass(frozen=True)
class AutocastKernel:
    """One operator's kernel at one autocast key: the dtype it casts to and its call."""

    op: Operator
    key: str                      # "AutocastCPU"
    policy: str                   # the entry's autocast: policy
    dtype_type: str               # the declared type of `to`: "const ScalarType", or "ScalarType" when widened;
                                  # "" when the kernel casts nothing (policy fp32_set_opt_dtype)
    dtype: str                    # the dtype `to` starts as
    widen: Tuple[str, ...]        # the tensor arguments `to` is widened over (policy promote)
    device: str                   # "DeviceType::CPU": the device type whose tensors are cast
    args: Tuple[str, ...]         # the call's arguments, the tensors cast

    @property
    def function(self) -> str:
        return f"{self.key}_{self.op.struct}"


def autocast_kernel(op: Operator, key: str, device_type: str) -> AutocastKernel:
    """``op``'s kernel at ``key``, the autocast key of ``device_type`` ("CPU"), per its policy there."""
    policy = op.nf.autocast[device_type]
    device = f"DeviceType::{device_type}"
    tensors = [b.name for b in op.sig.bindings if is_tensor(b)]
    lower = f"autocast::get_autocast_dtype({device})"
    if policy == "lower_precision_fp":
        dtype_type, dtype, widen = "const ScalarType", lower, ()
    elif policy == "fp32":
        dtype_type, dtype, widen = "const ScalarType", "ScalarType::Float", ()
    elif policy == "promote":
        dtype_type, dtype, widen = "ScalarType", lower, tuple(tensors)
    elif policy == "fp32_set_opt_dtype":
        # The tensors stay as they are; an unset dtype becomes float32 when the first argument
        # is eligible (native_yaml checks that the operator has both).
        first = op.sig.bindings[0].name
        args = tuple(f"autocast::set_opt_dtype(ScalarType::Float, {b.name}, {first}, {device})" if b.name == "dtype"
                     else b.name for b in op.sig.bindings)
        return AutocastKernel(op, key, policy, "", "", (), device, args)
    else:
        raise ValueError(f"internal error: no autocast kernel for the policy '{policy}'")
    args = tuple(f"autocast::cast(to, {b.name}, {device})" if is_tensor(b) else b.name for b in op.sig.bindings)
    return AutocastKernel(op, key, policy, dtype_type, dtype, widen, device, args)


@dataclass(frozen=True)
class AutocastKey:
    """One autocast key's kernels, one per operator with a policy."""

    key: str
    kernels: Tuple[AutocastKernel, ...]


def emit(ctx: GenContext, files) -> None:
    ops: List[Operator] = [op for op in ctx.operators if op.nf.autocast]
    keys = [AutocastKey(key, tuple(autocast_kernel(op, key, device) for op in ops if device in op.nf.autocast))
            for key, device in AUTOCAST_KEYS]
    files.write("RegisterAutocast.cpp", render(
        ctx, "RegisterAutocast.cpp.j2", keys=keys, includes=ctx.includes_for(ops)))
