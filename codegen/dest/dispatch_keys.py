"""``dk/generated/keys/``: the key universe of ``schemas/dispatch_keys.yaml`` as C++.

- ``DispatchKeys.h`` (included by dk/core/dispatch_key.h): the ``BackendComponent``,
  ``DeviceType`` and ``DispatchKey`` enums in the layout of Note [Key layout], the per-backend
  block of each functionality, the autograd functionality of each backend functionality, the
  names, and the default fallthrough fallbacks.
- ``DispatchKeySets.h`` (included by dk/core/dispatch_key_set.h): the named key sets and the
  runtime keys each alias key covers.

Everything here is a constant; the hot path's tables (Note [Slot index table]) are computed from
these at compile time by the hand-written headers, so they keep their shape whatever the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

from codegen.dest.common import render
from codegen.keys_yaml import Functionality, KeySetValue, KeyUniverse


@dataclass(frozen=True)
class _BannerContext:
    """What ``render``'s banner reads of a context: the inputs it names."""

    inputs: Tuple[str, ...]


@dataclass(frozen=True)
class EnumEntry:
    name: str
    value: str      # "" or " = EndOfFunctionalityKeys"
    comment: str    # "" or "// per-backend: CPU, CUDA, ..."


@dataclass(frozen=True)
class KeySetConstant:
    name: str
    yaml: str       # the YAML terms, for the comment
    members: str    # the runtime keys it holds, for the comment
    expr: str       # its C++ expression


def _functionality_comment(u: KeyUniverse, f: Functionality) -> str:
    notes: List[str] = []
    if f.per_backend:
        notes.append("per-backend: " + ", ".join(u.per_backend_key_name(f, b) for b in u.backends))
    if f.autograd:
        notes.append(f"autograd: {f.autograd}")
    if f.fallback:
        notes.append(f"falls through by default ({f.fallback})")
    if f.autocast:
        notes.append(f"autocast for {f.autocast}")
    if f.internal:
        notes.append("internal")
    return "// " + "; ".join(notes) if notes else ""


def set_expression(u: KeyUniverse, value: KeySetValue) -> str:
    """A C++ expression for ``value``: its backend bits, then its functionality bits."""
    parts: List[str] = []
    if value.backends == frozenset(b.name for b in u.backends):
        parts.append("DispatchKeySet::allBackends()")
    else:
        parts += [f"DispatchKeySet(BackendComponent::{b.name}Bit)" for b in u.backends if b.name in value.backends]
    keys = [f"DispatchKey::{f.name}" for f in u.functionalities if f.name in value.functionalities]
    if keys:
        parts.append("DispatchKeySet{" + ", ".join(keys) + "}")
    return " |\n    ".join(parts) if parts else "DispatchKeySet()"


def _members(u: KeyUniverse, value: KeySetValue) -> str:
    keys = u.runtime_keys_of(value)
    return ", ".join(keys) if keys else "(no runtime key)"


def emit(universe: KeyUniverse, files, inputs: Sequence[str]) -> None:
    u = universe
    ctx = _BannerContext(tuple(inputs))
    functionalities = [EnumEntry(f.name, "", _functionality_comment(u, f)) for f in u.functionalities]
    per_backend = [EnumEntry(k.name, " = EndOfFunctionalityKeys" if i == 0 else "", "")
                   for i, k in enumerate(u.per_backend_keys())]
    aliases = [EnumEntry(a.name, " = EndOfRuntimeBackendKeys" if i == 0 else "", "")
               for i, a in enumerate(u.aliases)]
    block = {f.name: i for i, f in enumerate(u.per_backend)}
    files.write("dk/generated/keys/DispatchKeys.h", render(
        ctx, "DispatchKeys.h.j2", u=u, devices=[b for b in u.backends if b.device], functionalities=functionalities,
        per_backend=per_backend, aliases=aliases,
        blocks=[block.get(f.name, -1) for f in u.functionalities],
        autograd_of=[f.autograd or "Undefined" for f in u.functionalities],
        key_names=["Undefined"] + [f.name for f in u.functionalities] + [k.name for k in u.per_backend_keys()] +
                  [a.name for a in u.aliases],
        fallthroughs=[f for f in u.functionalities if f.fallback]))
    keysets = [KeySetConstant(s.name, ", ".join(str(t) for t in s.terms), _members(u, s.value),
                              set_expression(u, s.value)) for s in u.keysets]
    alias_sets = [KeySetConstant(a.name, ", ".join(str(t) for t in a.terms), _members(u, a.value),
                                 set_expression(u, a.value)) for a in u.aliases]
    files.write("dk/generated/keys/DispatchKeySets.h", render(
        ctx, "DispatchKeySets.h.j2", keysets=keysets, aliases=alias_sets))
