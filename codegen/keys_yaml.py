"""``dispatch_keys.yaml``: the dispatch key universe, read and checked (Note [Key layout] in
dk/core/dispatch_key.h; docs/semantics.md section 1).

``load_key_universe(path)`` returns a ``KeyUniverse``: the backend components (one bit each,
lowest first), the functionality keys in rising priority (one bit each, above the backends),
the alias keys, and the named key sets, each already evaluated to the functionalities and
backends it holds. Every problem is a ``GenError`` with one ``FILE:LINE: message`` per
problem: unknown or misspelt fields, duplicate names, a reference to an unknown key, a key set
defined through itself, more bits than a 64-bit set holds, more slots than a byte numbers, and
the keys and sets the runtime itself names but the file lacks.

The C++ of the universe is emitted by codegen/dest/dispatch_keys.py; the generator's own table
of keys (codegen/dispatch_key.py) is built from the same object.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from codegen.cpp_names import is_cpp_name
from codegen.errors import GenError, Location
from codegen.limits import clip
from codegen.yaml_loader import LocatedDict, LocatedList, load_yaml, yaml_type_name

DEFAULT_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schemas",
                            "dispatch_keys.yaml")
# Another key file for the whole generator run (gen.py --keys sets it; the build passes Meson's
# dispatch_keys option): read once, when codegen/dispatch_key.py is first imported.
ENV_VAR = "DK_DISPATCH_KEYS"


def active_path() -> str:
    """The key file this generator run uses: $DK_DISPATCH_KEYS, else the project's."""
    return os.environ.get(ENV_VAR) or DEFAULT_PATH

KEY_SET_BITS = 64        # DispatchKeySet's representation
MAX_SLOTS = 256          # slot numbers are bytes (Note [Slot index table])
MAX_BACKENDS = 32        # columns of the slot index table (a power of two at least as large)

# What the runtime's own code names (dispatcher defaults, TLS, autograd, autocast, device types):
# a key file must declare these, whatever else it adds.
REQUIRED_BACKENDS = ("CPU", "CUDA", "PrivateUse1", "Meta")
REQUIRED_FUNCTIONALITIES = (
    "Dense", "BackendSelect", "Python", "Functionalize", "ADInplaceOrView", "AutogradOther",
    "AutogradFunctionality", "AutocastCPU", "AutocastCUDA", "ThreadRegistration",
)
REQUIRED_ALIASES = (
    "Autograd", "CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional",
)
REQUIRED_KEYSETS = (
    "autograd_dispatch_keyset", "after_autograd_keyset", "after_ADInplaceOrView_keyset", "default_included_set",
    "default_excluded_set", "autocast_dispatch_keyset", "backend_dispatch_keyset", "autogradother_backends",
    "full_keyset",
)
# Runtime keys the runtime names (so Dense's keys are named after the backends: prefix "").
REQUIRED_RUNTIME_KEYS = ("CPU", "CUDA", "PrivateUse1", "Meta")
# The last functionality: every thread's first call passes it (Note [Kernel reclamation]).
HIGHEST_FUNCTIONALITY = "ThreadRegistration"

_SECTIONS = ("backends", "functionalities", "aliases", "keysets")
_BACKEND_FIELDS = ("name", "device", "cuda")
_FUNCTIONALITY_FIELDS = ("name", "per_backend", "prefix", "backend", "cuda", "autograd", "fallback", "autocast",
                         "internal")
_ALIAS_FIELDS = ("name", "covers")
ALL_BACKENDS = "all_backends"
ALL_FUNCTIONALITIES = "all_functionalities"
UP_TO = "up_to"
EXCEPT = "except"                    # functionalities taken out of the set
EXCEPT_BACKENDS = "except_backends"  # backend bits taken out of the set


@dataclass(frozen=True)
class Backend:
    """A backend component: one bit of the set's low part."""

    name: str                 # "CPU" (its bit: CPUBit)
    index: int                # its bit, 0 = lowest
    device: Optional[str]     # the device type's name, "cpu"
    cuda: bool
    loc: Location


@dataclass(frozen=True)
class Functionality:
    """A functionality key: one bit above the backends, priority rising with the index."""

    name: str
    index: int                # 1-based: the key's enum value and its bit above the backends
    per_backend: bool
    prefix: str               # per-backend: the runtime keys' names are prefix + backend name
    backend: bool             # its runtime keys are backend keys
    cuda: bool                # a single backend key of CUDA tensors (SparseCsrCUDA): wrappers guard the device
    autograd: Optional[str]   # a backend functionality's autograd functionality
    fallback: Optional[str]   # the default fallthrough fallback's name
    autocast: Optional[str]   # the device type of an autocast key
    internal: bool
    loc: Location


@dataclass(frozen=True)
class KeySetValue:
    """A key set as bits: the functionalities (by name) and backends (by name) it holds."""

    functionalities: FrozenSet[str]
    backends: FrozenSet[str]

    def __or__(self, other: "KeySetValue") -> "KeySetValue":
        return KeySetValue(self.functionalities | other.functionalities, self.backends | other.backends)

    def __sub__(self, other: "KeySetValue") -> "KeySetValue":
        return KeySetValue(self.functionalities - other.functionalities, self.backends - other.backends)


EMPTY = KeySetValue(frozenset(), frozenset())


@dataclass(frozen=True)
class Term:
    """One term of a key-set expression: ``kind`` is "key" (a key or a set), "all_backends",
    "all_functionalities", "up_to", "except" or "except_backends"; ``names`` the key, set,
    functionalities or backends it names (empty for the "all" terms). The "except" terms take
    their names out of the union of the others, whatever their place in the list."""

    kind: str
    names: Tuple[str, ...]
    loc: Location

    @property
    def name(self) -> str:
        return self.names[0]

    def __str__(self) -> str:
        if self.kind == "key":
            return self.name
        if self.kind in (UP_TO, EXCEPT, EXCEPT_BACKENDS):
            shown = self.name if self.kind == UP_TO else "[" + ", ".join(self.names) + "]"
            return f"{self.kind}: {shown}"
        return self.kind


@dataclass(frozen=True)
class NamedKeySet:
    name: str
    terms: Tuple[Term, ...]
    value: KeySetValue
    loc: Location


@dataclass(frozen=True)
class Alias:
    name: str
    terms: Tuple[Term, ...]
    value: KeySetValue        # the runtime keys it covers
    loc: Location


@dataclass(frozen=True)
class RuntimeKey:
    """A key with a table slot: a functionality that is not per-backend, or one backend's
    key of a per-backend functionality."""

    name: str
    functionality: Functionality
    backend: Optional[Backend]


@dataclass(frozen=True)
class KeyUniverse:
    path: str
    backends: Tuple[Backend, ...]
    functionalities: Tuple[Functionality, ...]
    aliases: Tuple[Alias, ...]
    keysets: Tuple[NamedKeySet, ...]

    @property
    def per_backend(self) -> Tuple[Functionality, ...]:
        """The per-backend functionalities, in priority order: the blocks of per-backend keys."""
        return tuple(f for f in self.functionalities if f.per_backend)

    def functionality(self, name: str) -> Functionality:
        return next(f for f in self.functionalities if f.name == name)

    def backend(self, name: str) -> Backend:
        return next(b for b in self.backends if b.name == name)

    def keyset(self, name: str) -> NamedKeySet:
        return next(s for s in self.keysets if s.name == name)

    def per_backend_key_name(self, f: Functionality, b: Backend) -> str:
        return f.prefix + b.name

    def runtime_keys(self) -> Tuple[RuntimeKey, ...]:
        """Every runtime key in rising priority, a per-backend functionality's keys at its place."""
        keys: List[RuntimeKey] = []
        for f in self.functionalities:
            if f.per_backend:
                keys.extend(RuntimeKey(self.per_backend_key_name(f, b), f, b) for b in self.backends)
            else:
                keys.append(RuntimeKey(f.name, f, None))
        return tuple(keys)

    def per_backend_keys(self) -> Tuple[RuntimeKey, ...]:
        """The per-backend runtime keys, block by block (the enum's order: the same as priority)."""
        return tuple(k for k in self.runtime_keys() if k.backend is not None)

    @property
    def slot_count(self) -> int:
        return _slot_count(len(self.backends), self.functionalities)

    def runtime_keys_of(self, value: KeySetValue) -> Tuple[str, ...]:
        """The runtime keys a set holds, in rising priority (a per-backend key needs both bits)."""
        return tuple(k.name for k in self.runtime_keys()
                     if k.functionality.name in value.functionalities
                     and (k.backend is None or k.backend.name in value.backends))


# ---------------------------------------------------------------- reading


class _Reader:
    def __init__(self, path: str):
        self.path = path
        self.errors: List[GenError] = []

    def error(self, loc: Location, message: str) -> None:
        self.errors.append(GenError.at(loc, message))

    def fields(self, entry: Any, loc: Location, what: str, allowed: Sequence[str]) -> Optional[LocatedDict]:
        if not isinstance(entry, dict):
            self.error(loc, f"{what} must be a mapping with a 'name', got {yaml_type_name(entry)}")
            return None
        for key in entry:
            if key not in allowed:
                near = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else ""
                self.error(entry.key_loc(key), f"{what}: unknown field '{clip(key)}'{hint}")
        name = entry.get("name")
        if not isinstance(name, str) or not is_cpp_name(name):
            shown = f"'{clip(name)}'" if isinstance(name, str) else yaml_type_name(name)
            self.error(entry.key_loc("name"), f"{what}: 'name' must be a C++ identifier, got {shown}")
            return None
        return entry

    def flag(self, entry: LocatedDict, key: str, what: str) -> bool:
        value = entry.get(key, False)
        if not isinstance(value, bool):
            self.error(entry.key_loc(key), f"{what}: '{key}' must be true or false, got {yaml_type_name(value)}")
            return False
        return value

    def text(self, entry: LocatedDict, key: str, what: str, identifier: bool = True) -> Optional[str]:
        if key not in entry:
            return None
        value = entry[key]
        if not isinstance(value, str) or (identifier and value and not is_cpp_name(value)):
            shown = f"'{clip(value)}'" if isinstance(value, str) else yaml_type_name(value)
            self.error(entry.key_loc(key), f"{what}: '{key}' must be {'a C++ identifier' if identifier else 'a string'}, "
                                           f"got {shown}")
            return None
        return value

    def section(self, doc: LocatedDict, key: str, kind: type) -> Any:
        if key not in doc:
            self.error(doc.loc, f"the key file has no '{key}' section")
            return None
        value = doc[key]
        if not isinstance(value, kind):
            expected = "list" if kind is list else "mapping"
            self.error(doc.key_loc(key), f"'{key}' must be a {expected}, got {yaml_type_name(value)}")
            return None
        return value

    def terms(self, value: Any, loc: Location, what: str) -> Tuple[Term, ...]:
        if not isinstance(value, list):
            self.error(loc, f"{what} must be a list of keys and key sets, got {yaml_type_name(value)}")
            return ()
        terms: List[Term] = []
        for i, item in enumerate(value):
            item_loc = value.item_loc(i) if isinstance(value, LocatedList) else loc
            key = next(iter(item)) if isinstance(item, dict) and len(item) == 1 else None
            named = item[key] if key is not None else None
            if isinstance(item, str) and item in (ALL_BACKENDS, ALL_FUNCTIONALITIES):
                terms.append(Term(item, (), item_loc))
            elif isinstance(item, str) and is_cpp_name(item):
                terms.append(Term("key", (item,), item_loc))
            elif key == UP_TO and isinstance(named, str):
                terms.append(Term(UP_TO, (named,), item_loc))
            elif key in (EXCEPT, EXCEPT_BACKENDS) and isinstance(named, list) and named and \
                    all(isinstance(v, str) for v in named):
                terms.append(Term(key, tuple(named), item_loc))
            else:
                shown = f"'{clip(item)}'" if isinstance(item, str) else yaml_type_name(item)
                self.error(item_loc, f"{what}: a term must be a key, a key set, {ALL_BACKENDS}, {ALL_FUNCTIONALITIES}, "
                                     f"'up_to: KEY', 'except: [KEYS]' or 'except_backends: [BACKENDS]', got {shown}")
        return tuple(terms)


def load_key_universe(path: str = DEFAULT_PATH) -> KeyUniverse:
    """The checked key universe of ``path`` (raises GenError listing every problem)."""
    doc = load_yaml(path)
    r = _Reader(path)
    if not isinstance(doc, dict):
        raise GenError.at(Location(path, 1), f"a key file is a mapping of {', '.join(_SECTIONS)}, "
                                             f"got {yaml_type_name(doc)}")
    for key in doc:
        if key not in _SECTIONS:
            r.error(doc.key_loc(key), f"unknown section '{clip(key)}' (the sections are {', '.join(_SECTIONS)})")
    raw_backends = r.section(doc, "backends", list) or []
    raw_functionalities = r.section(doc, "functionalities", list) or []
    raw_aliases = r.section(doc, "aliases", list) or []
    raw_keysets = r.section(doc, "keysets", dict) or {}

    names: Dict[str, Location] = {}   # every key name (functionality, runtime, alias) -> where declared

    def declare(name: str, loc: Location, what: str) -> None:
        if name in names:
            r.error(loc, f"{what} '{name}': duplicate key name (first declared at line {names[name].line})")
        else:
            names[name] = loc

    backends: List[Backend] = []
    backend_names: Dict[str, Location] = {}
    for i, raw in enumerate(raw_backends):
        entry = r.fields(raw, raw_backends.item_loc(i), "backend", _BACKEND_FIELDS)
        if entry is None:
            continue
        name = entry["name"]
        if name in backend_names:
            r.error(entry.loc, f"backend '{name}': declared twice (first at line {backend_names[name].line})")
            continue
        backend_names[name] = entry.loc
        device = r.text(entry, "device", f"backend '{name}'")
        backends.append(Backend(name, len(backends), device, r.flag(entry, "cuda", f"backend '{name}'"), entry.loc))

    functionalities: List[Functionality] = []
    for i, raw in enumerate(raw_functionalities):
        entry = r.fields(raw, raw_functionalities.item_loc(i), "functionality", _FUNCTIONALITY_FIELDS)
        if entry is None:
            continue
        name = entry["name"]
        what = f"functionality '{name}'"
        per_backend = r.flag(entry, "per_backend", what)
        prefix = r.text(entry, "prefix", what)
        if per_backend and prefix is None:
            r.error(entry.loc, f"{what}: a per-backend functionality needs a 'prefix' for its keys' names "
                               "(\"\" names them after the backends)")
        if not per_backend and prefix is not None:
            r.error(entry.key_loc("prefix"), f"{what}: 'prefix' is only for a per-backend functionality")
        backend = r.flag(entry, "backend", what)
        cuda = r.flag(entry, "cuda", what)
        if cuda and (per_backend or not backend):
            r.error(entry.key_loc("cuda"), f"{what}: 'cuda' is for a backend functionality with a single key "
                                           "(a per-backend one's CUDA key is its backend's)")
        declare(name, entry.loc, "functionality")
        functionalities.append(Functionality(
            name=name, index=len(functionalities) + 1, per_backend=per_backend, prefix=prefix or "",
            backend=backend, cuda=cuda, autograd=r.text(entry, "autograd", what),
            fallback=r.text(entry, "fallback", what), autocast=r.text(entry, "autocast", what),
            internal=r.flag(entry, "internal", what), loc=entry.loc))
    by_name = {f.name: f for f in functionalities}
    for f in functionalities:
        if f.per_backend:
            for b in backends:
                declare(f.prefix + b.name, f.loc, f"the {b.name} key of functionality")
        if f.autograd is not None:
            target = by_name.get(f.autograd)
            if target is None:
                r.error(f.loc, f"functionality '{f.name}': its autograd key '{f.autograd}' is not a functionality")
        if f.autocast is not None and f.autocast not in {b.name for b in backends if b.device}:
            r.error(f.loc, f"functionality '{f.name}': 'autocast' names '{f.autocast}', which is not a backend "
                           "with a device type")

    # Named key sets and aliases: terms resolve to keys, the "all" terms, or other sets.
    raw_sets: Dict[str, Tuple[Tuple[Term, ...], Location]] = {}
    for name in raw_keysets:
        loc = raw_keysets.key_loc(name)
        if not is_cpp_name(name):
            r.error(loc, f"key set name '{clip(name)}' is not a C++ identifier")
            continue
        if name in names:
            r.error(loc, f"key set '{name}': the name of a key (line {names[name].line})")
            continue
        raw_sets[name] = (r.terms(raw_keysets[name], loc, f"key set '{name}'"), loc)
    raw_alias: List[Tuple[str, Tuple[Term, ...], Location]] = []
    for i, raw in enumerate(raw_aliases):
        entry = r.fields(raw, raw_aliases.item_loc(i), "alias", _ALIAS_FIELDS)
        if entry is None:
            continue
        name = entry["name"]
        declare(name, entry.loc, "alias")
        if "covers" not in entry:
            r.error(entry.loc, f"alias '{name}' has no 'covers' list")
            continue
        raw_alias.append((name, r.terms(entry["covers"], entry.key_loc("covers"), f"alias '{name}'"), entry.loc))

    runtime_values: Dict[str, KeySetValue] = {}
    for f in functionalities:
        runtime_values[f.name] = KeySetValue(frozenset({f.name}), frozenset())
        if f.per_backend:
            for b in backends:
                runtime_values[f.prefix + b.name] = KeySetValue(frozenset({f.name}), frozenset({b.name}))
    all_backends = KeySetValue(frozenset(), frozenset(b.name for b in backends))
    values: Dict[str, KeySetValue] = {}

    def evaluate(name: str, chain: Tuple[str, ...]) -> KeySetValue:
        if name in values:
            return values[name]
        terms, loc = raw_sets[name]
        value = expression_value(terms, chain + (name,), f"key set '{name}'")
        values[name] = value
        return value

    def expression_value(terms: Tuple[Term, ...], chain: Tuple[str, ...], what: str) -> KeySetValue:
        value = _union(term_value(t, chain, what) for t in terms if t.kind not in (EXCEPT, EXCEPT_BACKENDS))
        for t in terms:
            if t.kind == EXCEPT:
                for name in t.names:
                    if name not in by_name:
                        r.error(t.loc, f"{what}: 'except' names '{clip(name)}', which is not a functionality")
                value = value - KeySetValue(frozenset(t.names), frozenset())
            elif t.kind == EXCEPT_BACKENDS:
                for name in t.names:
                    if name not in backend_names:
                        r.error(t.loc, f"{what}: 'except_backends' names '{clip(name)}', which is not a backend")
                value = value - KeySetValue(frozenset(), frozenset(t.names))
        return value

    def term_value(t: Term, chain: Tuple[str, ...], what: str) -> KeySetValue:
        if t.kind == ALL_BACKENDS:
            return all_backends
        if t.kind == ALL_FUNCTIONALITIES:
            return KeySetValue(frozenset(by_name), all_backends.backends)
        if t.kind == UP_TO:
            f = by_name.get(t.name)
            if f is None:
                r.error(t.loc, f"{what}: 'up_to: {clip(t.name)}' names no functionality")
                return EMPTY
            return KeySetValue(frozenset(g.name for g in functionalities if g.index <= f.index), all_backends.backends)
        if t.name in runtime_values:
            return runtime_values[t.name]
        if t.name in raw_sets:
            if t.name in chain:
                cycle = " -> ".join(chain[chain.index(t.name):] + (t.name,))
                r.error(t.loc, f"{what} is defined through itself: {cycle}")
                return EMPTY
            return evaluate(t.name, chain)
        if t.name in names:  # an alias
            r.error(t.loc, f"{what}: '{t.name}' is an alias key; a key set holds runtime keys")
            return EMPTY
        near = difflib.get_close_matches(t.name, list(runtime_values) + list(raw_sets), n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        r.error(t.loc, f"{what}: unknown key or key set '{clip(t.name)}'{hint}")
        return EMPTY

    keysets = tuple(NamedKeySet(name, terms, evaluate(name, ()), loc) for name, (terms, loc) in raw_sets.items())
    aliases = tuple(Alias(name, terms, expression_value(terms, (), f"alias '{name}'"), loc)
                    for name, terms, loc in raw_alias)

    # The layout's limits, and what the runtime names.
    end = Location(path, 1)
    bits = len(backends) + len(functionalities)
    if bits > KEY_SET_BITS:
        r.error(end, f"{len(backends)} backends and {len(functionalities)} functionalities need {bits} bits; "
                     f"a key set holds {KEY_SET_BITS}")
    if len(backends) > MAX_BACKENDS:
        r.error(end, f"{len(backends)} backends; the slot index table has {MAX_BACKENDS} columns")
    slots = _slot_count(len(backends), functionalities)
    if slots > MAX_SLOTS:
        r.error(end, f"the keys need {slots} table slots; slot numbers are bytes (at most {MAX_SLOTS})")
    alias_names = {a for a, _, _ in raw_alias}
    for what, required, declared in (("backend", REQUIRED_BACKENDS, backend_names),
                                     ("runtime key", REQUIRED_RUNTIME_KEYS, runtime_values),
                                     ("functionality", REQUIRED_FUNCTIONALITIES, by_name),
                                     ("alias key", REQUIRED_ALIASES, alias_names),
                                     ("key set", REQUIRED_KEYSETS, raw_sets)):
        for name in required:
            if name not in declared:
                r.error(end, f"the runtime needs the {what} '{name}', which the key file does not declare")
    if functionalities and HIGHEST_FUNCTIONALITY in by_name and functionalities[-1].name != HIGHEST_FUNCTIONALITY:
        r.error(by_name[HIGHEST_FUNCTIONALITY].loc,
                f"'{HIGHEST_FUNCTIONALITY}' must be the highest functionality (every thread's first call passes it)")
    if r.errors:
        raise GenError.combine(sorted(r.errors, key=lambda e: e.loc.line if e.loc else 0))
    return KeyUniverse(path, tuple(backends), tuple(functionalities), aliases, keysets)


def _slot_count(backends: int, functionalities: Sequence[Functionality]) -> int:
    """Undefined's slot, one per functionality, and one per backend for a per-backend one."""
    return 1 + sum(backends if f.per_backend else 1 for f in functionalities)


def _union(values) -> KeySetValue:
    out = EMPTY
    for v in values:
        out = out | v
    return out
