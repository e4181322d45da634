"""``RegisterSchema*.cpp``: every operator's schema as constant data, and its registration.

The generator has parsed each schema already, so it emits the parsed form (the
``dk::schema_data`` structs of runtime/include/dk/dispatch/schema_data.h: Note [Pre-built
schemas]) rather than text for the runtime to parse again at startup. Each operator's entry
carries the operator struct's dispatch-argument bitmap, which the runtime checks once against
the schema's and then uses (Note [Dispatch-argument bitmap]). Entries are sorted by name, and
each is preceded by its schema's text as a comment, for review.

With one shard it is one ``DK_LIBRARY(ns, m)`` block; with several, the first shard
holds ``DK_LIBRARY`` and the others ``DK_LIBRARY_FRAGMENT`` (a namespace has one
``DK_LIBRARY`` per process). Each operator's shard is chosen by a stable hash of its name, so
adding an operator moves no other one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple, Union

from codegen.api.cpp import cpp_string_literal
from codegen.dest.common import GenContext, Operator, render, shard_by_hash, shard_name
from codegen.errors import GenError
from codegen.limits import MAX_LIST_SIZE, MAX_TYPE_DEPTH
from codegen.schema import AliasInfo, Argument, BaseType, ListType, OptionalType, Return, Type

DEFAULT_SHARDS = 1

# Schema spelling -> dk::TypeKind enumerator (runtime/include/dk/dispatch/function_schema.h).
TYPE_KINDS = {
    "Tensor": "Tensor", "int": "Int", "SymInt": "SymInt", "float": "Float", "bool": "Bool",
    "str": "Str", "Scalar": "Scalar", "ScalarType": "ScalarType", "Layout": "Layout",
    "Device": "Device", "MemoryFormat": "MemoryFormat", "Generator": "Generator",
    "Dimname": "Dimname", "Storage": "Storage", "Stream": "Stream", "QScheme": "QScheme",
    "complex": "Complex",
}

# The runtime's wrapper codes (dk::schema_data): kOptional, kList, listOf(N) for T[N].
assert MAX_TYPE_DEPTH <= 4 and MAX_LIST_SIZE <= 253, "wrapper codes are one byte, at most 4 of them"


_SPELLING = {"-": "neg", "*": "star", "[": "list_", "]": "", ".": "_", ",": "_", "|": "_or_", " ": "_"}


def _spell(text: str) -> str:
    """An identifier-friendly spelling of a pool string: ``-100`` -> ``neg100``, ``[0,1]`` ->
    ``list_0_1``, ``"mean"`` -> ``str_mean``, ``*`` -> ``star``."""
    if text[:1] in "\"'":
        text = "str_" + text[1:-1]
    spelled = "".join(_SPELLING.get(c, c) for c in text)
    return re.sub(r"[^0-9A-Za-z_]", "_", spelled)


class StringPool:
    """The strings of one source file's schemas (names, default values, alias sets), each once.

    They are emitted as the ``char`` array members of one struct (``Strings``), one after
    another, and tables name them by an enumerator per string (``s_self``, ``s_None``) whose
    value the compiler computes (``offsetof``), so tables hold no pointers to relocate at load
    time (Note [Pre-built schemas]), and adding an operator only adds lines. The empty string
    comes first, at offset 0."""

    def __init__(self) -> None:
        self._names: Dict[str, str] = {"": "s_empty"}
        self._taken = {"s_empty"}
        self.entries: List[Tuple[str, str]] = [("s_empty", "")]  # (name, text), in first use order

    def ref(self, text: str) -> str:
        """The name of ``text``, added on first use."""
        name = self._names.get(text)
        if name is None:
            base = "s_" + _spell(text)
            name, n = base, 2
            while name in self._taken:
                name, n = f"{base}_{n}", n + 1
            self._names[text] = name
            self._taken.add(name)
            self.entries.append((name, text))
        return name

    @staticmethod
    def member(name: str, text: str) -> str:
        """``char s_self[5] = "self";``: one string, as a member of ``Strings``."""
        return f"char {name}[{len(text.encode('utf-8')) + 1}] = {cpp_string_literal(text)};"


def type_data(type_: Type, where: str) -> str:
    """``{Tensor, {kOptional, kList}}`` for ``Tensor?[]``: the base kind, then the wrappers
    innermost first."""
    wrappers: List[str] = []
    while not isinstance(type_, BaseType):
        if isinstance(type_, OptionalType):
            wrappers.append("kOptional")
        else:
            assert isinstance(type_, ListType)
            wrappers.append("kList" if type_.size is None else f"listOf({type_.size})")
        type_ = type_.elem
    kind = TYPE_KINDS.get(type_.name)
    if kind is None:
        raise GenError(f"{where}: type '{type_.name}' has no runtime type kind; it may appear only in "
                       "'precomputed' lists, not in a schema")
    wrappers.reverse()
    return f"{{{kind}, {{{', '.join(wrappers)}}}}}" if wrappers else f"{{{kind}}}"


def alias_data(alias: AliasInfo, pool: StringPool) -> str:
    fields = [f".before = {pool.ref('|'.join(alias.before))}"]
    if alias.after:
        fields.append(f".after = {pool.ref('|'.join(alias.after))}")
    if alias.is_write:
        fields.append(".is_write = true")
    return "{" + ", ".join(fields) + "}"


def argument_data(arg: Union[Argument, Return], kwarg_only: bool, pool: StringPool, where: str) -> str:
    """One ``dk::schema_data::ArgumentData`` initializer; fields at their defaults are left out."""
    fields = []
    name = arg.name
    if name:
        fields.append(f".name = {pool.ref(name)}")
    fields.append(f".type = {type_data(arg.type, where)}")
    default = getattr(arg, "default", None)
    if default is not None:
        fields.append(f".default_value = {pool.ref(default)}")
    if arg.alias is not None:
        fields.append(f".alias = {alias_data(arg.alias, pool)}")
    if kwarg_only:
        fields.append(".kwarg_only = true")
    return "{" + ", ".join(fields) + "}"


@dataclass(frozen=True)
class SchemaEntry:
    """What the template writes for one operator."""

    op: Operator
    name: str                    # the pool's enumerators of the name and overload name
    overload_name: str
    arguments: Tuple[str, ...]   # ArgumentData initializers
    returns: Tuple[str, ...]

    @property
    def arguments_name(self) -> str:
        return f"{self.op.struct}_arguments"

    @property
    def returns_name(self) -> str:
        return f"{self.op.struct}_returns"

    def schema_fields(self, cpp_namespace: str) -> List[str]:
        """The designated initializers of the ``dk::schema_data::SchemaData``, for one line each
        of name, argument lists and the operator struct's bitmap."""
        names = f".strings = &kStrings, .name = {self.name}"
        if self.op.overload:
            names += f", .overload_name = {self.overload_name}"
        lists = []
        if self.arguments:
            lists.append(f".arguments = {self.arguments_name}")
        if self.returns:
            lists.append(f".returns = {self.returns_name}")
        fields = [names]
        if lists:
            fields.append(", ".join(lists))
        fields.append(f".dispatch_bitmap = ::{cpp_namespace}::ops::{self.op.struct}::dispatch_bitmap")
        return fields


def schema_entry(op: Operator, pool: StringPool) -> SchemaEntry:
    func = op.nf.func
    where = f"operator {op.qualified}"
    name, overload = pool.ref(func.name.name), pool.ref(func.name.overload_name)
    arguments = [argument_data(a, False, pool, where) for a in func.positional]
    arguments += [argument_data(a, True, pool, where) for a in func.kwarg_only + func.out]
    returns = [argument_data(r, False, pool, where) for r in func.returns]
    return SchemaEntry(op, name, overload, tuple(arguments), tuple(returns))


def emit(ctx: GenContext, files, shards: int = DEFAULT_SHARDS) -> None:
    for index, ops in enumerate(shard_by_hash(ctx.operators, lambda op: op.qualified, shards)):
        pool = StringPool()
        for op in ops:  # the names first: registration reads only them, from as few pages as can be
            pool.ref(op.nf.func.name.name)
            pool.ref(op.nf.func.name.overload_name)
        entries: Sequence[SchemaEntry] = [schema_entry(op, pool) for op in ops]
        # One table and one library block per operator namespace (Note [Operator namespaces]);
        # the context's own namespace always has its block, even when a shard has none of its operators.
        groups = [(ns, "kSchemas" if ns == ctx.namespace else f"kSchemas_{ns}",
                   [e for e in entries if e.op.namespace == ns]) for ns in ctx.operator_namespaces]
        groups = [g for g in groups if g[0] == ctx.namespace or g[2]]
        files.write(shard_name("RegisterSchema", index, shards, "cpp"),
                    render(ctx, "RegisterSchema.cpp.j2", entries=entries, groups=groups, pool=pool, shard=index,
                           shards=shards,
                           tables=f"tables_{ctx.namespace}" + (f"_{index}" if shards > 1 else ""),
                           includes=ctx.includes_for(ops, adapters=False)))
