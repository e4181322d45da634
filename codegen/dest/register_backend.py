"""The kernel registrations: ``Register<Key>.cpp`` for every key a ``dispatch:`` map names,
``NativeFunctions.h`` (the ``dk::native`` kernel declarations they call) and
``DeviceCheck.h`` (the helper their wrappers use).

Each registration goes through a generated wrapper ``wrapper_<Key>_<op>`` that checks that
every tensor argument is on one device (backend keys only, unless the entry says
``device_check: NoCheck``), sets the CUDA device guard (CUDA keys, under
``DK_WITH_CUDA``, unless ``device_guard: False``), and calls the kernel. The wrapper is
registered with the boxing adapters of its signature (Note [One boxing family]). The wrapper
of a structured family's member (codegen/structured.py) runs the family's meta function and,
except at Meta, the key's impl class instead (Note [Structured kernels] in
runtime/include/dk/tensor/structured.h); ``NativeFunctions.h`` declares those classes. A key
with more than ``MAX_OPERATORS_PER_FILE`` operators is split into ``Register<Key>_<i>.cpp``
files, a power of two of them; each operator's file is chosen by a stable hash of its name, so
adding an operator moves no other one (until the count of files doubles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from codegen import structured
from codegen.api import native
from codegen.api.native import NativeKernel
from codegen.dest.common import GenContext, Operator, forward_all, header_group, render, shard_by_hash
from codegen.model import BackendMetadata, DispatchKey, OperatorName
from codegen.structured import StructuredFamily

MAX_OPERATORS_PER_FILE = 50


@dataclass(frozen=True)
class Registration:
    """One operator's kernel at one key."""

    op: Operator
    key: DispatchKey
    kernel: NativeKernel
    family: Optional[StructuredFamily] = None  # set for the members of a structured family

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

    @property
    def structured(self) -> Optional["StructuredCall"]:
        return StructuredCall(self) if self.family is not None else None


def _split_outputs(sig):
    """(the other bindings, the out= output bindings) of a signature, each in order."""
    outs = {a.name for a in sig.func.out}
    return (tuple(b for b in sig.bindings if b.argument.name not in outs),
            tuple(b for b in sig.bindings if b.argument.name in outs))


_STRUCTURED_WRAPPERS = {"functional": "StructuredFunctional", "inplace": "StructuredInplace", "out": "StructuredOut"}


@dataclass(frozen=True)
class StructuredCall:
    """How a structured member's wrapper runs (Note [Structured kernels]): the wrapper class
    of its form, made with the operator's name and its given outputs; meta(), then impl()
    except at Meta; then its result."""

    reg: Registration

    @property
    def _func(self):
        return self.reg.op.nf.func

    @property
    def wrapper_class(self) -> str:
        outputs = len(self.reg.family.out.func.out)
        return f"detail::{_STRUCTURED_WRAPPERS[self._func.kind]}<{self.reg.kernel.qualified}, {outputs}>"

    @property
    def constructor(self) -> str:
        """``"dk::add", {out}, {"out"}``: the name messages give, and the outputs of in-place
        and out= calls with their argument names."""
        name = f'"{self.reg.op.name}"'
        given = self.given
        if not given:
            return name
        tensors = ", ".join(b.name for b in given)
        names = ", ".join(f'"{b.argument.name}"' for b in given)
        return f"{name}, {{{tensors}}}, {{{names}}}"

    @property
    def given(self):
        """The bindings of the tensors written: self (in-place), the outputs (out=)."""
        if self._func.kind == "inplace":
            return self.reg.op.sig.bindings[:1]
        return _split_outputs(self.reg.op.sig)[1]

    @property
    def arguments(self) -> str:
        """meta()'s arguments: the operator's, less the out= outputs."""
        return ", ".join(b.name for b in _split_outputs(self.reg.op.sig)[0])

    @property
    def runs_impl(self) -> bool:
        return self.reg.key != DispatchKey.Meta

    @property
    def impl_outputs(self) -> str:
        return ", ".join(f"op.maybe_get_output({i})" for i in range(len(self.reg.family.out.func.out)))

    @property
    def result(self) -> List[str]:
        """The statements after the calls."""
        given = self.given
        if self._func.kind == "functional":
            outs = [f"op.take_output({i})" for i in range(len(self._func.returns))]
            return [f"return {outs[0]};" if len(outs) == 1 else f"return {{{', '.join(outs)}}};"]
        values = [b.name for b in given]
        ret = f"return {values[0]};" if len(values) == 1 else f"return {{{', '.join(values)}}};"
        return ["op.finish();", ret]


def structured_kernel(key: DispatchKey, metadata: BackendMetadata, signature) -> NativeKernel:
    """The class a structured kernel names: ``native::structured_add_out_cpu``, at Meta
    ``meta::structured_add_Tensor``."""
    if key == DispatchKey.Meta:
        return NativeKernel(metadata.namespace, metadata.kernel, signature)
    return NativeKernel(metadata.namespace or native.DEFAULT_NAMESPACE, StructuredFamily.impl_class(metadata),
                        signature)


def registrations(ctx: GenContext, families: Dict[OperatorName, StructuredFamily]
                  ) -> Dict[DispatchKey, List[Registration]]:
    """Every (operator, key) with a kernel, by key in key order, operators sorted."""
    by_key: Dict[DispatchKey, List[Registration]] = {}
    for op in ctx.operators:
        if op.nf.manual_kernel_registration:
            continue
        for key, metadata in op.nf.dispatch.items():
            if metadata.structured:
                reg = Registration(op, key, structured_kernel(key, metadata, op.sig), families[op.nf.name])
            else:
                reg = Registration(op, key, native.kernel(metadata, op.sig))
            by_key.setdefault(key, []).append(reg)
    return dict(sorted(by_key.items()))


def native_kernels(regs: Dict[DispatchKey, List[Registration]]) -> List[Tuple[NativeKernel, List[str]]]:
    """Each distinct kernel declaration, sorted, with the "op @ Key" uses it serves."""
    uses: Dict[tuple, Tuple[NativeKernel, List[str]]] = {}
    for key, rows in regs.items():
        for reg in rows:
            if reg.family is not None:
                continue
            entry = uses.setdefault(reg.kernel.key, (reg.kernel, []))
            entry[1].append(f"{reg.op.nf.func.name} @ {key.name}")
    return [uses[k] for k in sorted(uses)]


@dataclass(frozen=True)
class StructuredDecl:
    """A family's classes in its native header: the meta class and one impl class per key."""

    family: StructuredFamily
    sig: object  # the out= operator's DispatcherSignature

    @property
    def meta_params(self) -> str:
        return ", ".join(b.decl() for b in _split_outputs(self.sig)[0])

    @property
    def impl_params(self) -> str:
        return ", ".join(b.decl() for b in self.sig.bindings)

    @property
    def members(self) -> str:
        return ", ".join(str(nf.name) for nf in self.family.members)

    @property
    def impls(self) -> List[Tuple[str, str]]:
        """(class name, keys) of each impl class, sorted by name."""
        by_class: Dict[str, List[str]] = {}
        for key, metadata in self.family.out.dispatch.items():
            if metadata.structured and key != DispatchKey.Meta:
                by_class.setdefault(StructuredFamily.impl_class(metadata), []).append(key.name)
        return [(name, ", ".join(keys)) for name, keys in sorted(by_class.items())]


def register_file_names(key: DispatchKey, count: int) -> List[str]:
    runs = 1
    while runs * MAX_OPERATORS_PER_FILE < count:
        runs *= 2
    base = f"Register{key.name}"
    return [f"{base}.cpp"] if runs == 1 else [f"{base}_{i}.cpp" for i in range(runs)]


def emit(ctx: GenContext, files) -> None:
    families = structured.families([op.nf for op in ctx.operators])
    regs = registrations(ctx, families)
    # Each operator's header declares the kernels it uses: a kernel shared by operators of two
    # headers is declared in both (a repeated declaration is fine), so adding an operator that
    # shares a kernel changes no other operator's header.
    native_groups = []
    for group, ops in ctx.groups.items():
        rows = {key: [r for r in rs if header_group(r.op.nf) == group] for key, rs in regs.items()}
        kernels = native_kernels({key: rs for key, rs in rows.items() if rs})
        decls = [StructuredDecl(families[op.nf.name], op.sig) for op in ops
                 if op.nf.structured and op.nf.name in families]
        if kernels or decls:
            native_groups.append(group)
            namespaces = sorted({k.namespace for k, _ in kernels})
            files.write(ctx.op_header(group, "_native"),
                        render(ctx, "OperatorNatives.h.j2", group=group, namespaces=namespaces, kernels=kernels,
                               operator_namespace=ops[0].namespace,
                               structured=decls))
    files.write(ctx.header("NativeFunctions.h"), render(ctx, "NativeFunctions.h.j2", groups=native_groups))
    files.write(ctx.header("DeviceCheck.h"), render(ctx, "DeviceCheck.h.j2"))
    for key, rows in regs.items():
        names = register_file_names(key, len(rows))
        runs = shard_by_hash(rows, lambda reg: reg.op.qualified, len(names))
        for index, (name, run) in enumerate(zip(names, runs)):
            files.write(name, render(
                ctx, "RegisterKey.cpp.j2", key=key.name, registrations=run, part=index, parts=len(names),
                checks_devices=key.is_backend, guards_cuda=key.is_cuda,
                has_structured=any(r.family is not None for r in run),
                includes=ctx.includes_for([r.op for r in run], natives={header_group(r.op.nf) for r in run}),
            ))
