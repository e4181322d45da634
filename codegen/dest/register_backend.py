"""The kernel registrations: ``Register<Key>.cpp`` for every key a ``dispatch:`` map names,
``NativeFunctions.h`` (the ``dk::native`` kernel declarations they call) and
``DeviceCheck.h`` (the helper their wrappers use).

Each registration goes through a generated wrapper ``wrapper_<Key>_<op>`` that checks that
every tensor argument is on one device (backend keys only, unless the entry says
``device_check: NoCheck``), sets the CUDA device guard (CUDA keys, under
``DK_WITH_CUDA``, unless ``device_guard: False``), and calls the kernel. The wrapper is
registered with the boxing adapters of its signature (Note [One boxing family]). A key
with more than ``MAX_OPERATORS_PER_FILE`` operators is split into ``Register<Key>_<i>.cpp``
files, a power of two of them; each operator's file is chosen by a stable hash of its name, so
adding an operator moves no other one (until the count of files doubles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from codegen.api import native
from codegen.api.native import NativeKernel
from codegen.dest.common import GenContext, Operator, forward_all, header_group, render, shard_by_hash
from codegen.model import DispatchKey

MAX_OPERATORS_PER_FILE = 50


@dataclass(frozen=True)
class Registration:
    """One operator's kernel at one key."""

    op: Operator
    key: DispatchKey
    kernel: NativeKernel

    @property
    def wrapper(self) -> str:
        return f"wrapper_{self.key.name}_{self.op.struct}"

    @property
    def device_checks(self) -> List[Tuple[str, str]]:
        """(argument, C++ name) of each tensor argument to compare devices of; empty when
        there is nothing to compare."""
        if not self.key.is_backend or self.op.nf.device_check == "NoCheck":
            return []
        bindings = self.op.dispatch_bindings
        if len(bindings) < 2 and not any(b.type.is_list for b in bindings):
            return []
        return [(b.argument.name, b.name) for b in bindings]

    @property
    def device_guard(self) -> Optional[str]:
        """The device a CUDA wrapper guards: its first tensor, else a device argument."""
        if not self.key.is_cuda or not self.op.nf.device_guard:
            return None
        bindings = self.op.sig.bindings
        for kind in ("tensor", "tensor_list", "device", "optional_tensor", "optional_tensor_list"):
            for b in bindings:
                if kind == "device" and b.type.strip_optional().is_device:
                    return b.name
                if b.type.dispatch == kind:
                    return f"{b.name}.device()" if kind == "tensor" else f"detail::firstDevice({b.name})"
        return None

    @property
    def call(self) -> str:
        return f"{self.kernel.qualified}({forward_all(self.op.sig.bindings)})"


def registrations(ctx: GenContext) -> Dict[DispatchKey, List[Registration]]:
    """Every (operator, key) with a kernel, by key in key order, operators sorted."""
    by_key: Dict[DispatchKey, List[Registration]] = {}
    for op in ctx.operators:
        if op.nf.manual_kernel_registration:
            continue
        for key, metadata in op.nf.dispatch.items():
            by_key.setdefault(key, []).append(Registration(op, key, native.kernel(metadata, op.sig)))
    return dict(sorted(by_key.items()))


def native_kernels(regs: Dict[DispatchKey, List[Registration]]) -> List[Tuple[NativeKernel, List[str]]]:
    """Each distinct kernel declaration, sorted, with the "op @ Key" uses it serves."""
    uses: Dict[tuple, Tuple[NativeKernel, List[str]]] = {}
    for key, rows in regs.items():
        for reg in rows:
            entry = uses.setdefault(reg.kernel.key, (reg.kernel, []))
            entry[1].append(f"{reg.op.nf.func.name} @ {key.name}")
    return [uses[k] for k in sorted(uses)]


def register_file_names(key: DispatchKey, count: int) -> List[str]:
    runs = 1
    while runs * MAX_OPERATORS_PER_FILE < count:
        runs *= 2
    base = f"Register{key.name}"
    return [f"{base}.cpp"] if runs == 1 else [f"{base}_{i}.cpp" for i in range(runs)]


def emit(ctx: GenContext, files) -> None:
    regs = registrations(ctx)
    # Each operator's header declares the kernels it uses: a kernel shared by operators of two
    # headers is declared in both (a repeated declaration is fine), so adding an operator that
    # shares a kernel changes no other operator's header.
    native_groups = []
    for group in ctx.groups:
        rows = {key: [r for r in rs if header_group(r.op.nf) == group] for key, rs in regs.items()}
        kernels = native_kernels({key: rs for key, rs in rows.items() if rs})
        if kernels:
            native_groups.append(group)
            namespaces = sorted({k.namespace for k, _ in kernels})
            files.write(ctx.op_header(group, "_native"),
                        render(ctx, "OperatorNatives.h.j2", group=group, namespaces=namespaces, kernels=kernels))
    files.write(ctx.header("NativeFunctions.h"), render(ctx, "NativeFunctions.h.j2", groups=native_groups))
    files.write(ctx.header("DeviceCheck.h"), render(ctx, "DeviceCheck.h.j2"))
    for key, rows in regs.items():
        names = register_file_names(key, len(rows))
        runs = shard_by_hash(rows, lambda reg: reg.op.qualified, len(names))
        for index, (name, run) in enumerate(zip(names, runs)):
            files.write(name, render(
                ctx, "RegisterKey.cpp.j2", key=key.name, registrations=run, part=index, parts=len(names),
                checks_devices=key.is_backend, guards_cuda=key.is_cuda,
                includes=ctx.includes_for([r.op for r in run], natives={header_group(r.op.nf) for r in run}),
            ))
