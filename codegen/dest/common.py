"""What every emitter shares: the operators as emitters see them, the banner, templates,
shards and the distinct C++ signatures.

``GenContext.build(native_functions, ...)`` sorts the operators by name, computes each
one's dispatcher signature and bitmap once, and names the distinct signatures by their types
(``sig_Tensor__Tensor_Scalar``: Note [Signature ids] in codegen/api/dispatcher.py). Emitters read the context
and render templates; they never look at YAML.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, replace
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import jinja2

from codegen.api import dispatcher
from codegen.api.cpp import cpp_string_literal
from codegen.api.dispatcher import DispatcherSignature
from codegen.errors import GenError
from codegen.model import NativeFunction
from codegen.validate import dispatcher_errors

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")
GENERATOR = "codegen/gen.py"


@dataclass(frozen=True)
class Operator:
    """One operator, with everything its generated code needs."""

    nf: NativeFunction
    namespace: str               # "dk"
    struct: str                  # "add_Tensor"
    sig: DispatcherSignature
    sig_id: str                  # "sig_Tensor__Tensor_Scalar"

    @property
    def name(self) -> str:
        """``dk::add``"""
        return f"{self.namespace}::{self.nf.func.name.name}"

    @property
    def overload(self) -> str:
        return self.nf.func.name.overload_name

    @property
    def qualified(self) -> str:
        """``dk::add.Tensor`` (the operator banner's text)."""
        return f"{self.namespace}::{self.nf.func.name}"

    @property
    def schema(self) -> str:
        return str(self.nf.func)

    @property
    def schema_literal(self) -> str:
        return cpp_string_literal(self.schema)

    @property
    def bitmap(self) -> int:
        return dispatcher.dispatch_bitmap(self.nf.func)

    @property
    def bitmap_literal(self) -> str:
        return dispatcher.bitmap_literal(self.nf.func)

    @property
    def dispatch_bindings(self) -> Tuple[dispatcher.Binding, ...]:
        """The parameters of the dispatch arguments (``Type.is_tensor_like``), in order."""
        return tuple(b for b in self.sig.bindings if b.argument.type.is_tensor_like())

    @property
    def bitmap_comment(self) -> str:
        names = [b.name for b in self.dispatch_bindings]
        return ", ".join(names) if names else "no dispatch arguments"


@dataclass(frozen=True)
class Signature:
    """One distinct C++ signature and the adapters generated for it."""

    id: str                      # "sig_Tensor__Tensor_Scalar"
    sig: DispatcherSignature     # of the first operator that has it (names unused)
    users: Tuple[str, ...]       # the operators with it, "add.Tensor"

    @property
    def canonical(self) -> str:
        return self.sig.canonical

    @property
    def returns(self) -> str:
        return self.sig.returns

    @property
    def types(self) -> Tuple[dispatcher.CType, ...]:
        return tuple(b.type for b in self.sig.bindings)

    def params(self) -> str:
        """``const Tensor& a0, int64_t a1``: adapters name arguments by position."""
        return ", ".join(f"{t.text} a{i}" for i, t in enumerate(self.types))

    def args(self) -> str:
        return ", ".join(forward(t, f"a{i}") for i, t in enumerate(self.types))

    def types_text(self) -> str:
        return ", ".join(t.text for t in self.types)


forward = dispatcher.forward


def forward_all(bindings: Iterable[dispatcher.Binding]) -> str:
    return ", ".join(forward(b.type, b.name) for b in bindings)


# Note [Operator namespaces]
# An entry of native_functions.yaml belongs to namespace dk unless its func names another, as
# torchgen spells it: "- func: c10d::all_reduce_(...)". Such an operator gets everything an operator
# needs to be called and dispatched: its ops struct (dk::ops::<name>, whose name string is
# "c10d::all_reduce_"), its public function in dk::<namespace> (dk::c10d::all_reduce_), its schema
# in a library block of its own namespace (DK_LIBRARY(c10d, m)), its boxing adapter, and its kernel
# registrations (DK_LIBRARY_IMPL(c10d, Key, m)). dk's layers are not generated for it: no autograd
# kernel (the autograd fallback runs it), no vmap rule, no functionalization kernel, no autocast
# policy, no Tensor method; the YAML loader refuses the keys that ask for them. Operator names are
# unique across namespaces, so the generator's by-name tables stay keyed by the bare name.


@dataclass(frozen=True)
class GenContext:
    namespace: str               # the operator namespace: "dk" or "aten"
    cpp_namespace: str           # the C++ namespace of generated code: "dk" or "dk::aten"
    header_dir: str              # "dk/generated": where headers go, and how they are included
    inputs: Tuple[str, ...]      # input files as the banner names them
    operators: Tuple[Operator, ...]
    signatures: Tuple[Signature, ...]

    @classmethod
    def build(cls, native_functions: Sequence[NativeFunction], namespace: str, inputs: Sequence[str]) -> "GenContext":
        nfs = sorted(native_functions, key=lambda nf: (nf.func.name.name, nf.func.name.overload_name))
        errors = dispatcher_errors(nfs)  # gen.py has checked them already (codegen/validate.py)
        if errors:
            raise GenError.combine(errors)
        sigs = {nf: dispatcher.signature(nf.func) for nf in nfs}
        by_text: Dict[str, List[NativeFunction]] = {}
        for nf in nfs:
            by_text.setdefault(sigs[nf].canonical, []).append(nf)
        signatures = tuple(
            Signature(sigs[users[0]].id, sigs[users[0]], tuple(str(nf.func.name) for nf in users))
            for _, users in sorted(by_text.items())
        )
        sig_ids = {s.canonical: s.id for s in signatures}
        if len(set(sig_ids.values())) != len(sig_ids):
            raise GenError("internal error: two C++ signatures got the same id (Note [Signature ids] in "
                           "codegen/api/dispatcher.py): " + ", ".join(sorted(sig_ids)))
        operators = tuple(
            Operator(nf, nf.namespace if nf.namespace != "dk" else namespace, dispatcher.struct_name(nf.func.name),
                     sigs[nf], sig_ids[sigs[nf].canonical])
            for nf in nfs
        )
        cpp_namespace = "dk" if namespace == "dk" else f"dk::{namespace}"
        header_dir = "dk/generated" if namespace == "dk" else f"dk/generated/{namespace}"
        return cls(namespace, cpp_namespace, header_dir, tuple(inputs), operators, signatures)

    def of_namespace(self, namespace: str) -> "GenContext":
        """This context with only the operators of ``namespace``: what dk's layers (autograd,
        vmap, functionalization, autocast, Tensor methods) generate for (Note [Operator namespaces])."""
        return replace(self, operators=tuple(op for op in self.operators if op.namespace == namespace))

    @property
    def operator_namespaces(self) -> List[str]:
        """The namespaces of the operators, ``ctx.namespace`` first, then the others sorted."""
        others = sorted({op.namespace for op in self.operators} - {self.namespace})
        return [self.namespace] + others

    def cpp_namespace_of(self, op: "Operator") -> str:
        """The C++ namespace of ``op``'s public function: ``dk``, or ``dk::c10d``."""
        return self.cpp_namespace if op.namespace == self.namespace else f"{self.cpp_namespace}::{op.namespace}"

    def header(self, name: str) -> str:
        """The output name, and include path, of generated header ``name``."""
        return f"{self.header_dir}/{name}"

    @property
    def groups(self) -> Dict[str, Tuple[Operator, ...]]:
        """The operators by header group (header_group), groups sorted by name."""
        out: Dict[str, List[Operator]] = {}
        for op in self.operators:
            out.setdefault(header_group(op.nf), []).append(op)
        return {g: tuple(out[g]) for g in sorted(out)}

    def op_header(self, group: str, kind: str) -> str:
        """``dk/generated/ops/add_ops.h`` (kind "_ops"), ``ops/add.h`` (""), ``ops/add_native.h``."""
        return self.header(f"ops/{group}{kind}.h")

    def sig_header(self, sig_id: str) -> str:
        """``dk/generated/boxing/sig_Tensor__Tensor.h``: one signature's adapters."""
        return self.header(f"boxing/{sig_id}.h")

    def includes_for(self, ops: Iterable[Operator], structs: bool = True, adapters: bool = True,
                     natives: Iterable[str] = ()) -> List[str]:
        """The generated headers a file about ``ops`` needs: their structs, their signatures'
        adapters, and the native headers of the groups named in ``natives``; sorted, each once."""
        out = set()
        for op in ops:
            if structs:
                out.add(self.op_header(header_group(op.nf), "_ops"))
            if adapters:
                out.add(self.sig_header(op.sig_id))
        out.update(self.op_header(g, "_native") for g in natives)
        return sorted(out)


def header_group(nf: NativeFunction) -> str:
    """The per-operator headers an operator is declared in: its name without the in-place
    underscore, so add.Tensor, add_.Tensor and add.out share ops/add_ops.h, ops/add.h and
    ops/add_native.h (as ATen/ops/ groups PyTorch's operators)."""
    name = nf.func.name.name
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


# ---------------------------------------------------------------- files and text


def banner(ctx: GenContext, template: str) -> str:
    """The fixed first lines of every generated C++ file (no dates, no absolute paths)."""
    return (f"// @generated by {GENERATOR} from {', '.join(ctx.inputs)}\n"
            f"// (template codegen/templates/{template}). Do not edit: change the YAML or the generator.")


_ENV: Optional[jinja2.Environment] = None


def _environment() -> jinja2.Environment:
    global _ENV
    if _ENV is None:
        _ENV = jinja2.Environment(
            loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
            autoescape=False,
        )
    return _ENV


def render(ctx: GenContext, template: str, **values) -> str:
    """Render ``template`` with ``values`` (plus ``ctx`` and ``banner``); trailing spaces
    are removed and the text ends with exactly one newline."""
    text = _environment().get_template(template).render(ctx=ctx, banner=banner(ctx, template), **values)
    lines = [line.rstrip() for line in text.split("\n")]
    return "\n".join(lines).rstrip("\n") + "\n"


def stable_shard(key: str, shards: int) -> int:
    """A shard that depends only on ``key``: adding an operator moves no other one."""
    return zlib.crc32(key.encode("utf-8")) % shards


def shard_by_hash(items: Sequence, key, shards: int) -> List[List]:
    out: List[List] = [[] for _ in range(shards)]
    for item in items:
        out[stable_shard(key(item), shards)].append(item)
    return out


def shard_name(base: str, index: int, count: int, ext: str) -> str:
    """``Operators_2.cpp``, or ``Operators.cpp`` when there is one shard."""
    return f"{base}.{ext}" if count == 1 else f"{base}_{index}.{ext}"


def display_path(path: str, repo_root: str) -> str:
    """How the banner names an input: relative to the repository when inside it, else
    ``parent/name`` (never absolute, so output does not depend on where it is built)."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute, repo_root)
    if not rel.startswith(os.pardir + os.sep) and rel != os.pardir:
        return rel.replace(os.sep, "/")
    return f"{os.path.basename(os.path.dirname(absolute))}/{os.path.basename(absolute)}"
