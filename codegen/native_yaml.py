"""Reading native_functions.yaml and tags.yaml into the model, strictly.

``parse_native_functions(path, known_tags=..., foreign_keys=...)`` returns one
``NativeFunction`` per ``- func:`` entry, or raises one ``GenError`` holding every
problem of the file, one per line, in line order, each reading
``FILE:LINE: SCHEMA: what is wrong``. LINE is that of the offending key where
there is one, else that of the entry's ``- func:``.

``foreign_keys="ignore"`` (gen.py ``--pytorch-compat``) is for PyTorch's own file:
dispatch keys the runtime does not have (MPS, SparseCsrCPU, ...) are kept in
``NativeFunction.foreign_dispatch`` and never generated. With the default
``"error"`` they are errors, as they must be for the project's ``schemas/``.
"""

from __future__ import annotations

import difflib
import functools
import re
from types import MappingProxyType
from typing import AbstractSet, Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Tuple

from codegen import structured
from codegen.cpp_names import is_cpp_name
from codegen.dispatch_key import COMPOSITE_KEYS, DispatchKey
from codegen.errors import GenError, Location
from codegen.model import (
    AUTOCAST_DEVICES,
    AUTOCAST_POLICIES,
    BATCHING_FAMILIES,
    DEVICE_CHECKS,
    VARIANTS,
    AliasInfo,
    Argument,
    BackendMetadata,
    BaseType,
    FunctionSchema,
    ListType,
    NativeFunction,
    OperatorName,
    OptionalType,
    Precompute,
    Return,
    Type,
)
from codegen.limits import MAX_ENTRY_ERRORS, MAX_OVERLOADS, clip
from codegen.schema import overload_name_mismatch
from codegen.yaml_loader import LocatedDict, LocatedList, load_yaml, one_line, yaml_type_name

FOREIGN_KEY_MODES = ("error", "ignore")
# Unknown keys reported one by one per entry; the rest of an entry's are counted in one error.
MAX_UNKNOWN_KEYS = 5

# Every key an entry may have: those of PyTorch 1.13.1's file, manual_kernel_registration,
# and our 'autocast' and 'batching' extensions.
ENTRY_KEYS = (
    "func", "variants", "dispatch", "tags", "device_check", "device_guard",
    "manual_cpp_binding", "manual_kernel_registration", "autogen", "structured",
    "structured_delegate", "structured_inherits", "python_module", "category_override",
    "precomputed", "cpp_no_default_args", "use_const_ref_for_mutable_tensors",
    "ufunc_inner_loop", "autocast", "batching",
)
_BOOL_KEYS = (
    "device_guard", "manual_cpp_binding", "manual_kernel_registration", "structured",
    "use_const_ref_for_mutable_tensors",
)
_TAG_ENTRY_KEYS = ("tag", "desc")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DISPATCH_KEY_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")

# Namespaces of dk itself that generated code fills: a kernel may not be declared there.
_RESERVED_KERNEL_NAMESPACES = ("dk", "dk::ops", "dk::detail", "dk::boxing")
# "c10d::" in "- func: c10d::all_reduce_(...)": an operator namespace other than dk.
_NAMESPACED_FUNC = re.compile(r"([a-z_][a-z0-9_]*)::")
# dk is the default (no prefix); the others name C++ namespaces of generated code, or PyTorch's.
_RESERVED_OPERATOR_NAMESPACES = ("dk", "ops", "detail", "boxing", "native", "meta", "aten", "std", "_")


def kernel_name_mismatch(text: str) -> str:
    """Empty when ``text`` names a kernel generated code can declare and call, else why not.

    Allowed: ``name`` (in ``dk::native``), ``dk::ns::name`` (relative to dk), and
    ``::ns::name`` (fully qualified, outside dk). A name in another namespace written without
    the leading ``::`` is refused: inside ``namespace dk`` it would mean something else. No
    kernel may live in ``std``.
    """
    bare = text[2:] if text.startswith("::") else text
    if not is_cpp_name(bare):
        return f"kernel name '{clip(text)}' is not a C++ identifier"
    parts = bare.split("::")
    namespace = "::".join(parts[:-1])
    if len(parts) > 1 and parts[0] == "std":
        return f"kernel name '{clip(text)}': a kernel cannot live in namespace std"
    if text.startswith("::") and len(parts) == 1:
        return f"kernel name '{clip(text)}': a kernel cannot live in the global namespace"
    if namespace in _RESERVED_KERNEL_NAMESPACES:
        return f"kernel name '{clip(text)}': namespace {namespace} is generated code's; use dk::native or your own"
    if len(parts) > 1 and parts[0] != "dk" and not text.startswith("::"):
        return (f"kernel name '{clip(text)}' names a namespace outside dk: write it fully qualified, "
                f"'::{clip(text)}', or relative to dk, 'dk::...'")
    return ""


# ---- written arguments: in-place and out= forms (Note [Written arguments]) ----
#
# Note [Written arguments]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# The generator tells an operator's kind from its alias annotations alone (FunctionSchema.kind):
# out= when a keyword-only argument is written (`Tensor(a!) out`), in-place when the name ends in
# `_`. A form that forgets a `!` is still a valid schema, of another kind: `add.out(..., *, Tensor
# out) -> Tensor` is a functional operator with an input named out, and the dispatcher, autograd
# and functionalization would all treat it so. These are torchgen's rules (FunctionSchema.
# __post_init__ in torchgen/model.py), checked here with the line:
#   - in-place: `self` is written and comes first, and is what the operator returns
#     (`-> Tensor(a!)`; nothing when self is a list); no out arguments;
#   - out=: the out arguments are returned, in order, with their annotations (nothing when one
#     is not a plain Tensor); an argument named like an output (`out`, `out0`) or an overload
#     named like an out= form (`out`, `*_out`) is written;
#   - any other operator returns either only written tensors, each its written `self`, or none.

# PyTorch's names of outputs: `out`, or `out0`, `out1`, ... for several.
_OUT_ARGUMENT_NAME = re.compile(r"out[0-9]*")


def _annotated(type_: Type, alias: Optional[AliasInfo]) -> str:
    return type_.render(f"({alias})" if alias is not None else "")


def _same_tensor(r: Return, a: Argument) -> bool:
    """``r`` returns the argument ``a``: same type, same alias annotation."""
    return (r.type, r.alias) == (a.type, a.alias)


def _returns_text(returns: Tuple[Return, ...]) -> str:
    """Returns as a schema writes them: ``()``, ``Tensor(a!)``, ``(Tensor(a!) values, Tensor(b!) indices)``."""
    if len(returns) == 1:
        return str(returns[0])
    return "(" + ", ".join(str(r) for r in returns) + ")"


def _is_out_overload(name: OperatorName) -> bool:
    """Named like an out= form: the overload ``out``, or one ending in ``_out`` (``Tensor_out``)."""
    return name.overload_name == "out" or name.overload_name.endswith("_out")


def _unwritten_output_problems(func: FunctionSchema) -> List[str]:
    """An out= form whose outputs lack their ``!``."""
    problems = [f"keyword-only argument '{a.name}' is named as an output but is not written: "
                f"write '{a.type.render('(a!)')} {a.name}'"
                for a in func.kwarg_only if _OUT_ARGUMENT_NAME.fullmatch(a.name) and a.type.is_tensor_like()]
    if not problems and not func.out and _is_out_overload(func.name):
        problems.append(f"overload '{func.name.overload_name}' is named as an out= form but has no out "
                        "argument: an out argument is keyword-only and written, as in '*, Tensor(a!) out'")
    return problems


def _inplace_problems(func: FunctionSchema) -> List[str]:
    first = func.positional[0] if func.positional else None
    if first is None or first.name != "self" or not first.is_write:
        return ["an in-place operator takes a written 'self' first, as in 'Tensor(a!) self'"]
    if func.out:
        return [f"an in-place operator writes its 'self', not out arguments ('{func.out[0]}'): an out= form "
                f"is named without the trailing '_', as in '{func.name.base_name}.out'"]
    if first.type == BaseType("Tensor"):
        expected = Return(first.type, None, first.alias)
        if len(func.returns) != 1 or not _same_tensor(func.returns[0], first):
            return [f"an in-place operator returns its 'self': '-> {expected}', not '-> {_returns_text(func.returns)}'"]
    elif func.returns:
        # Nothing to chain a call on: torchgen's in-place forms of list operators return nothing.
        return [f"an in-place operator whose 'self' is a {_annotated(first.type, first.alias)} returns nothing: "
                f"'-> ()', not '-> {_returns_text(func.returns)}'"]
    return []


def _out_problems(func: FunctionSchema) -> List[str]:
    not_plain = [a for a in func.out if a.type != BaseType("Tensor")]
    if not_plain:
        a = not_plain[0]
        if func.returns:
            return [f"an out= operator whose out argument '{a.name}' is a {_annotated(a.type, a.alias)} returns "
                    f"nothing: '-> ()', not '-> {_returns_text(func.returns)}'"]
        return []
    expected = tuple(Return(a.type, a.name if len(func.out) > 1 else None, a.alias) for a in func.out)
    how = f"an out= operator returns its out arguments, in order: '-> {_returns_text(expected)}'"
    for i, a in enumerate(func.out):
        if i >= len(func.returns) or not _same_tensor(func.returns[i], a):
            where = f" as return {i + 1}" if len(func.out) > 1 else ""
            return [f"out argument '{a.name}' ({_annotated(a.type, a.alias)}) is not returned{where}; {how}"]
    if len(func.returns) > len(func.out):
        return [f"return '{func.returns[len(func.out)]}' is not an out argument; {how}"]
    return []


def _written_return_problems(func: FunctionSchema) -> List[str]:
    """Functional and mutable operators: a written return is the written ``self``."""
    written = [r for r in func.returns if r.is_write]
    if not written:
        return []
    if len(written) != len(func.returns):
        return [f"returns are all written or none is, not '-> {_returns_text(func.returns)}': return a written "
                "argument alone, or do not return it"]
    self_arg = func.self_argument
    for r in written:
        if self_arg is None or self_arg.alias != r.alias:
            return [f"written return '{r}' is not the written 'self': a written output is a keyword-only out "
                    "argument, as in '*, Tensor(a!) out' (or is not returned)"]
    return []


def _unknown_alias_set_problems(func: FunctionSchema) -> List[str]:
    """A return that aliases an input must name that input's alias set: the emitters look the
    aliased argument up by it."""
    argument_sets = {name for a in func.arguments if a.alias is not None for name in a.alias.before}
    return [f"return alias set '{clip(name)}' is not the alias set of any argument"
            for r in func.returns for name in (r.alias.before if r.alias is not None else ())
            if name != "*" and name not in argument_sets]


def write_problems(func: FunctionSchema) -> List[str]:
    """What is wrong with the alias annotations of ``func``'s returns and written arguments
    (Note [Written arguments]): the problems of the first rule broken, as one forgotten ``!``
    breaks several (``out`` unwritten, so ``-> Tensor(a!)`` aliases nothing)."""
    problems = _unwritten_output_problems(func) or _unknown_alias_set_problems(func)
    if problems:
        return problems
    if func.is_inplace:
        return _inplace_problems(func)
    if func.is_out_fn:
        return _out_problems(func)
    return _written_return_problems(func)


def _split_list(text: str) -> List[str]:
    """``"function, method"`` -> ``["function", "method"]`` (empty items kept, to be reported)."""
    return [item.strip() for item in text.split(",")]


@functools.lru_cache(maxsize=4096)
def _did_you_mean(key: str) -> str:
    """`` (did you mean 'func'?)`` for a near miss of an entry key, else empty (cached: a
    merged-in mapping repeats its keys in every entry)."""
    close = difflib.get_close_matches(key, ENTRY_KEYS, n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""


class _EntryParser:
    """Validates one ``- func:`` entry, collecting every error it finds."""

    def __init__(self, raw: LocatedDict, known_tags: Optional[AbstractSet[str]], foreign_keys: str):
        self.raw = raw
        self.known_tags = known_tags
        self.foreign_keys = foreign_keys
        self.schema_text: Optional[str] = None
        self.namespace = "dk"  # from a "ns::" prefix of func
        self.errors: List[GenError] = []
        self.skipped = 0  # errors beyond MAX_ENTRY_ERRORS, the first of them at skipped_loc
        self.skipped_loc: Optional[Location] = None

    def error(self, detail: str, key: Optional[str] = None, loc: Optional[Location] = None) -> None:
        """Record an error (at ``loc``, else at ``key``, else at the entry), at most
        MAX_ENTRY_ERRORS per entry (``all_errors`` counts the rest)."""
        if loc is None:
            loc = self.raw.key_loc(key) if key is not None else self.raw.loc
        if len(self.errors) >= MAX_ENTRY_ERRORS:
            self.skipped += 1
            self.skipped_loc = self.skipped_loc or loc
            return
        self.errors.append(GenError.at(loc, detail, self.schema_text))

    def all_errors(self) -> List[GenError]:
        """The entry's errors, and one more counting those beyond MAX_ENTRY_ERRORS."""
        if not self.skipped:
            return self.errors
        more = GenError.at(self.skipped_loc, f"{self.skipped} more errors in this entry", self.schema_text)
        return self.errors + [more]

    def get(self, key: str, kind: type, expected: str) -> Any:
        """The value of ``key`` if present and of type ``kind``; None (and an error) otherwise."""
        if key not in self.raw:
            return None
        value = self.raw[key]
        if not isinstance(value, kind):
            self.error(f"'{key}' must be {expected}, got {yaml_type_name(value)}", key)
            return None
        return value

    def choice(self, key: str, choices: Tuple[str, ...], expected: str) -> Optional[str]:
        """The value of ``key`` if present and one of ``choices``; None (and an error) otherwise."""
        value = self.get(key, str, expected)
        if value is not None and value not in choices:
            self.error(f"'{clip(key)}' must be {expected}, got '{clip(value)}'", key)
            return None
        return value

    def get_list(self, key: str, text: Any) -> List[str]:
        items = _split_list(text)
        if "" in items:
            self.error(f"'{clip(key)}' has an empty item: '{clip(text)}'", key)
            return [i for i in items if i]
        return items

    def string_list(self, key: str) -> Optional[List[str]]:
        """A YAML list of strings (``cpp_no_default_args``, ``precomputed``)."""
        value = self.get(key, list, "a list of strings")
        if value is None:
            return None
        for item in value:
            if not isinstance(item, str):
                self.error(f"'{key}' must be a list of strings, got a {yaml_type_name(item)} item", key)
                return None
        return value

    # --- the entry --------------------------------------------------------------

    def parse(self) -> Tuple[Optional[FunctionSchema], Optional[NativeFunction]]:
        """The schema (if it parsed) and the NativeFunction (if the entry is valid)."""
        func = self.parse_func()
        self.check_unknown_keys()
        if func is None:
            return None, None
        fields: Dict[str, Any] = {}
        fields["variants"] = self.parse_variants(func)
        fields["tags"] = self.parse_tags()
        fields["device_check"] = self.choice("device_check", DEVICE_CHECKS, "NoCheck or ExactSame")
        for key in _BOOL_KEYS:
            fields[key] = self.get(key, bool, "True or False")
        fields["autogen"] = self.parse_autogen()
        delegate = self.get("structured_delegate", str, "an operator name")
        if delegate is not None:
            fields["structured_delegate"] = self.operator_name("structured_delegate", delegate)
        fields["structured_inherits"] = self.name_value(
            "structured_inherits", "a C++ class name", is_cpp_name
        )
        for key in ("python_module", "category_override"):
            fields[key] = self.name_value(key, "an identifier", _IDENTIFIER.fullmatch)
        fields["precomputed"] = self.parse_precomputed(func)
        fields["cpp_no_default_args"] = self.parse_cpp_no_default_args(func)
        fields["ufunc_inner_loop"] = self.parse_ufunc_inner_loop()
        fields["autocast"] = self.parse_autocast()
        fields["batching"] = self.parse_batching(func, fields.get("tags") or ())
        self.parse_dispatch(func, fields)
        if self.namespace != "dk":
            fields["namespace"] = self.namespace
        self.check_structure(func, fields)
        if self.errors:
            return func, None
        given = {key: value for key, value in fields.items() if value is not None}  # None: default
        return func, NativeFunction(func=func, loc=self.raw.loc, **given)

    def parse_func(self) -> Optional[FunctionSchema]:
        if "func" not in self.raw:
            self.error("entry has no 'func' key")
            return None
        text = self.raw["func"]
        if not isinstance(text, str):
            self.error(f"'func' must be a schema string, got {yaml_type_name(text)}", "func")
            return None
        self.schema_text = text
        # torchgen's spelling of an operator namespace: "- func: c10d::all_reduce_(...)".
        match = _NAMESPACED_FUNC.match(text)
        if match is not None:
            self.namespace = match.group(1)
            if self.namespace in _RESERVED_OPERATOR_NAMESPACES:
                self.error(f"operator namespace '{self.namespace}' is reserved (the default is dk; write no prefix)",
                           "func")
                return None
            text = text[match.end():]
        try:
            func = FunctionSchema.parse(text)
        except GenError as e:
            self.error(str(e), "func")
            return None
        printed = str(func)
        if printed != text:
            self.error(f"schema does not round-trip: printed back as '{clip(printed)}'", "func")
            return None
        return func

    def check_unknown_keys(self) -> None:
        """One error per unknown key, for the first MAX_UNKNOWN_KEYS of them; then one for the rest."""
        unknown = [key for key in self.raw if key not in ENTRY_KEYS]
        for key in unknown[:MAX_UNKNOWN_KEYS]:
            self.error(f"unknown key '{clip(key)}'{_did_you_mean(key)}", key)
        if len(unknown) > MAX_UNKNOWN_KEYS:
            self.error(f"{len(unknown) - MAX_UNKNOWN_KEYS} more unknown keys", unknown[MAX_UNKNOWN_KEYS])

    def parse_variants(self, func: FunctionSchema) -> Tuple[str, ...]:
        text = self.get("variants", str, "a string such as 'function, method'")
        if text is None:
            return ("function",)
        items = self.get_list("variants", text)
        seen = set()
        for item in items:
            if item not in VARIANTS:
                self.error(f"unknown variant '{clip(item)}' (expected function or method)", "variants")
            elif item in seen:
                self.error(f"variant '{clip(item)}' given twice", "variants")
            seen.add(item)
        if "method" in items:
            self_arg = func.self_argument
            if self_arg is None or self_arg.type != BaseType("Tensor"):
                self.error("variant 'method' needs a positional Tensor argument named 'self'", "variants")
        return tuple(v for v in VARIANTS if v in items)

    def parse_tags(self) -> Tuple[str, ...]:
        value = self.raw.get("tags")
        if value is None and "tags" not in self.raw:
            return ()
        if isinstance(value, str):
            items = self.get_list("tags", value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            items = list(value)
        else:
            self.error(f"'tags' must be a string or a list of strings, got {yaml_type_name(value)}", "tags")
            return ()
        seen = set()
        for tag in items:
            if tag in seen:
                self.error(f"tag '{clip(tag)}' given twice", "tags")
            elif self.known_tags is not None and tag not in self.known_tags:
                self.error(f"unknown tag '{clip(tag)}'", "tags")
            seen.add(tag)
        return tuple(dict.fromkeys(items))

    def operator_name(self, key: str, text: str) -> Optional[OperatorName]:
        try:
            name = OperatorName.parse(text)
        except GenError:
            self.error(f"'{key}' names '{clip(text)}', which is not an operator name", key)
            return None
        why = overload_name_mismatch(name.overload_name)
        if why:
            self.error(f"'{key}' names '{clip(text)}': {why}", key)
            return None
        return name

    def parse_autogen(self) -> Tuple[OperatorName, ...]:
        text = self.get("autogen", str, "a string such as 'foo.out, bar.out'")
        if text is None:
            return ()
        names = [self.operator_name("autogen", item) for item in self.get_list("autogen", text)]
        return tuple(n for n in names if n is not None)

    def name_value(self, key: str, what: str, is_valid: Callable[[str], Any]) -> Optional[str]:
        value = self.get(key, str, what)
        if value is not None and not is_valid(value):
            self.error(f"'{clip(key)}' must be {what}, got '{clip(value)}'", key)
            return None
        return value

    def parse_precomputed(self, func: FunctionSchema) -> Optional[Precompute]:
        items = self.string_list("precomputed")
        if items is None:
            return None
        replace: List[Tuple[str, Tuple[Argument, ...]]] = []
        add: List[Argument] = []
        arg_names = {a.name for a in func.arguments}
        for item in items:
            target, arrow, new_args = item.rpartition(" -> ")
            if arrow and target.strip() not in arg_names:
                self.error(
                    f"'precomputed' replaces '{clip(target.strip())}', which is not an argument", "precomputed"
                )
                continue
            try:
                args = tuple(Argument.parse(text) for text in new_args.split(", "))
            except GenError as e:
                self.error(f"'precomputed' item '{clip(item)}': {e}", "precomputed")
                continue
            if arrow:
                replace.append((target.strip(), args))
            else:
                add.extend(args)
        return Precompute(tuple(replace), tuple(add))

    def parse_cpp_no_default_args(self, func: FunctionSchema) -> Tuple[str, ...]:
        names = self.string_list("cpp_no_default_args") or []
        arg_names = {a.name for a in func.arguments}
        for name in names:
            if name not in arg_names:
                self.error(
                    f"'cpp_no_default_args' names '{clip(name)}', which is not an argument",
                    "cpp_no_default_args",
                )
        return tuple(names)

    def parse_ufunc_inner_loop(self):
        loops = self.get("ufunc_inner_loop", dict, "a mapping of ufunc keys to loop descriptions")
        if loops is None:
            return MappingProxyType({})
        for key, text in loops.items():
            if not isinstance(text, str):
                self.error(
                    f"'ufunc_inner_loop' value for '{clip(key)}' must be a string, got {yaml_type_name(text)}",
                    loc=loops.key_loc(key),
                )
        return MappingProxyType(dict(loops))

    def parse_batching(self, func: FunctionSchema, tags: Tuple[str, ...]) -> Optional[str]:
        """``batching: <family>`` or ``batching: none``; a `pointwise` tag implies the pointwise
        family for the functional and in-place forms."""
        if "batching" in self.raw:
            family = self.choice("batching", BATCHING_FAMILIES + ("none",),
                                 "one of " + ", ".join(BATCHING_FAMILIES + ("none",)))
            return None if family == "none" else family
        return "pointwise" if "pointwise" in tags and not func.is_out_fn else None

    def parse_autocast(self) -> Optional[Mapping[str, str]]:
        """``autocast: fp32`` (every device type) or ``autocast: {CUDA: fp32_set_opt_dtype}``."""
        if "autocast" not in self.raw:
            return None
        value = self.raw["autocast"]
        policies = "one of " + ", ".join(AUTOCAST_POLICIES)
        if isinstance(value, str):
            policy = self.choice("autocast", AUTOCAST_POLICIES, policies)
            return None if policy is None else MappingProxyType({device: policy for device in AUTOCAST_DEVICES})
        if not isinstance(value, dict):
            self.error(f"'autocast' must be a policy or a mapping of device types to policies, got "
                       f"{yaml_type_name(value)}", "autocast")
            return None
        table: Dict[str, str] = {}
        for device, policy in value.items():
            if device not in AUTOCAST_DEVICES:
                self.error(f"'autocast' names the device type '{clip(str(device))}'; expected one of "
                           + ", ".join(AUTOCAST_DEVICES), loc=value.key_loc(device))
            elif not isinstance(policy, str) or policy not in AUTOCAST_POLICIES:
                shown = f"'{clip(policy)}'" if isinstance(policy, str) else yaml_type_name(policy)
                self.error(f"'autocast' policy for {device} must be {policies}, got {shown}", loc=value.key_loc(device))
            else:
                table[device] = policy
        return MappingProxyType(table) if table else None

    def parse_dispatch(self, func: FunctionSchema, fields: Dict[str, Any]) -> None:
        """Fill ``dispatch``, ``foreign_dispatch`` and ``dispatch_is_default``."""
        if "dispatch" not in self.raw:
            if not fields.get("structured") and "structured_delegate" not in self.raw:
                kernel = BackendMetadata(func.default_kernel_name)
                fields["dispatch"] = MappingProxyType({DispatchKey.CompositeImplicitAutograd: kernel})
                fields["dispatch_is_default"] = True
            return
        table = self.get("dispatch", dict, "a mapping of dispatch keys to kernel names")
        if table is None:
            return
        if fields.get("manual_kernel_registration"):
            self.error("'dispatch' has no effect with 'manual_kernel_registration: True'", "dispatch")
        known: Dict[DispatchKey, BackendMetadata] = {}
        foreign: Dict[str, BackendMetadata] = {}
        first_line: Dict[str, int] = {}
        for keys_text, kernel in table.items():
            loc = table.key_loc(keys_text)
            if not isinstance(kernel, str):
                self.error(
                    f"kernel for '{clip(keys_text)}' must be a string, got {yaml_type_name(kernel)}", loc=loc
                )
                continue
            why = kernel_name_mismatch(kernel)
            if why:
                self.error(why, loc=loc)
                continue
            for name in _split_list(keys_text):
                if not name:
                    self.error(f"empty dispatch key in '{clip(keys_text)}'", loc=loc)
                    continue
                if _DISPATCH_KEY_NAME.fullmatch(name) is None:
                    self.error(f"malformed dispatch key '{clip(name)}'", loc=loc)
                    continue
                key = DispatchKey.parse(name)
                if key is None and self.foreign_keys == "error":
                    self.error(f"unknown dispatch key '{clip(name)}'", loc=loc)
                    continue
                if name in first_line:
                    first = first_line[name]
                    self.error(f"dispatch key '{clip(name)}' given twice (first at line {first})", loc=loc)
                    continue
                first_line[name] = loc.line
                if key is None:
                    foreign[name] = BackendMetadata.parse(kernel)
                else:
                    known[key] = BackendMetadata.parse(kernel)
        composites = [k.name for k in COMPOSITE_KEYS if k in known]
        if len(composites) > 1:
            self.error(
                f"more than one composite key ({', '.join(composites)}); give one, each subsumes the next",
                "dispatch",
            )
        fields["dispatch"] = MappingProxyType(dict(sorted(known.items())))
        fields["foreign_dispatch"] = MappingProxyType(dict(sorted(foreign.items())))

    def check_structure(self, func: FunctionSchema, fields: Dict[str, Any]) -> None:
        """Rules between keys, and between keys and the schema."""
        if self.namespace != "dk":
            # Note [Operator namespaces]: an operator of another namespace has kernels and a public
            # function (dk::<namespace>::<name>); dk's layers (autograd formulas, vmap rules,
            # functionalization, autocast) are for dk's operators.
            if fields.get("variants") not in (None, ("function",)):
                self.error(f"an operator of namespace {self.namespace} has the function variant only", "variants")
            for key in ("structured", "structured_delegate", "autocast", "batching", "autogen"):
                if fields.get(key):
                    self.error(f"'{key}' is for operators of namespace dk, not {self.namespace}", key)
            allowed = (DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta, DispatchKey.CompositeExplicitAutograd,
                       DispatchKey.CompositeImplicitAutograd)
            for key in fields.get("dispatch") or {}:
                if key not in allowed:
                    self.error(f"an operator of namespace {self.namespace} has kernels at CPU, CUDA, Meta and the "
                               f"composite keys only, not {key.name}", "dispatch")
        if fields.get("structured"):
            if not func.is_out_fn:
                self.error("'structured: True' is only for out= functions", "structured")
            if "structured_delegate" in self.raw:
                self.error(
                    "'structured' and 'structured_delegate' cannot both be given", "structured_delegate"
                )
        if fields.get("structured_inherits") is not None and not fields.get("structured"):
            self.error("'structured_inherits' needs 'structured: True'", "structured_inherits")
        if fields.get("precomputed") is not None and not fields.get("structured"):
            self.error("'precomputed' needs 'structured: True'", "precomputed")
        self.check_writes(func)
        if fields.get("batching") == "pointwise":
            # The rule lines up tensor arguments and wraps tensor results (Note [Pointwise batching
            # rule]): no lists, no out= or view forms, every return a tensor.
            if (not func.dispatch_arguments or func.is_out_fn or (func.is_mutable and not func.is_inplace)
                    or any(a.type.is_tensor_like() and a.type.strip_optional() != BaseType("Tensor")
                           for a in func.arguments)
                    or any(r.type != BaseType("Tensor") for r in func.returns)
                    or any(r.alias is not None for r in func.returns if not func.is_inplace)):
                self.error("the pointwise batching rule is for an operator with tensor arguments (no tensor lists) "
                           "that returns tensors, functional or in-place: not out= or a view; set 'batching: none' "
                           "to leave it to vmap's for-loop fallback", "batching" if "batching" in self.raw else "tags")
        if fields.get("batching") and DispatchKey.FuncTorchBatched in (fields.get("dispatch") or {}):
            self.error("an entry has either a 'batching:' family or its own FuncTorchBatched rule in 'dispatch:', "
                       "not both", "batching")
        if "view_copy" in (fields.get("tags") or ()) and (
                fields.get("batching") or DispatchKey.FuncTorchBatched in (fields.get("dispatch") or {})):
            self.error("a view copy (tag view_copy) is batched by running its view (Note [View copy batching "
                       "rule]): give it no 'batching:' family and no FuncTorchBatched rule", "tags")
        if fields.get("batching") == "along_dims":
            # The rule moves the batch dim of the one tensor argument first and shifts the dims the
            # `dim` arguments name past it (Note [Along-dims batching rule]).
            tensors = [a for a in func.arguments if a.type.is_tensor_like()]
            dims = [a for a in func.arguments if a.name.startswith("dim")
                    and a.type.strip_optional() in (BaseType("int"), ListType(BaseType("int")), ListType(BaseType("int"), 1))]
            if (func.is_mutable or len(tensors) != 1 or tensors[0].type != BaseType("Tensor") or not dims
                    or any(r.type != BaseType("Tensor") or r.alias is not None for r in func.returns)):
                self.error("the along_dims batching rule is for a functional operator of one Tensor argument with "
                           "an int or int[] argument named dim that returns tensors; set 'batching: none' to leave "
                           "it to vmap's for-loop fallback", "batching")
        if "fp32_set_opt_dtype" in (fields.get("autocast") or {}).values():
            first = func.positional[0] if func.positional else None
            dtype = func.argument("dtype")
            if (first is None or first.type != BaseType("Tensor") or dtype is None
                    or dtype.type != OptionalType(BaseType("ScalarType")) or not func.is_functional):
                self.error("autocast policy 'fp32_set_opt_dtype' is for a functional operator that takes a Tensor "
                           "first and a 'ScalarType? dtype' argument", "autocast")

    def check_writes(self, func: FunctionSchema) -> None:
        """The alias annotations of returns and written arguments (``write_problems``)."""
        for problem in write_problems(func):
            self.error(problem, "func")


def _check_entries(
    parsed: List[Tuple[LocatedDict, Optional[FunctionSchema], Optional[NativeFunction]]],
) -> List[GenError]:
    """Rules across entries: unique operators; structured_delegate and autogen names."""
    errors: List[GenError] = []

    def report(raw: LocatedDict, key: Optional[str], detail: str) -> None:
        loc = raw.key_loc(key) if key is not None else raw.loc
        errors.append(GenError.at(loc, detail, raw["func"]))

    defined: Dict[OperatorName, Location] = {}
    valid: Dict[OperatorName, NativeFunction] = {}
    overloads: Dict[str, int] = {}
    for raw, func, nf in parsed:
        if func is None:
            continue
        if func.name in defined:
            report(raw, None, f"duplicate operator '{func.name}' (first defined at line {defined[func.name].line})")
            continue
        defined[func.name] = raw.loc
        overloads[func.name.name] = overloads.get(func.name.name, 0) + 1
        if overloads[func.name.name] == MAX_OVERLOADS + 1:
            report(raw, None, f"more than the limit of {MAX_OVERLOADS} overloads of '{func.name.name}'")
        if nf is not None:
            valid[func.name] = nf

    generated: Dict[OperatorName, Location] = {}
    for raw, _, nf in parsed:
        if nf is None:
            continue
        delegate = nf.structured_delegate
        if delegate is not None and delegate not in defined:
            report(raw, "structured_delegate", f"structured_delegate '{delegate}' is not a defined operator")
        elif delegate is not None and delegate in valid and not valid[delegate].structured:
            report(raw, "structured_delegate", f"structured_delegate '{delegate}' is not structured")
        for name in nf.autogen:
            if name in defined:
                report(raw, "autogen", f"autogen operator '{name}' is also defined at line {defined[name].line}")
            elif name in generated:
                report(raw, "autogen", f"autogen operator '{name}' is also generated at line {generated[name].line}")
            else:
                generated[name] = raw.key_loc("autogen")
    return errors


def _raise_sorted(errors: List[GenError]) -> None:
    """Raise all ``errors`` as one, in line order (stable: an entry's stay in check order).

    Messages quote the input (schemas, keys, values), which may hold line breaks: they are
    escaped, so that each error stays one ``FILE:LINE: ...`` line.
    """
    if errors:
        located = sorted(errors, key=lambda e: e.loc.line if e.loc else 0)
        raise GenError.combine(GenError(one_line(m), loc=e.loc) for e in located for m in e.messages)


def parse_native_functions(
    path: str,
    *,
    known_tags: Optional[AbstractSet[str]] = None,
    foreign_keys: str = "error",
) -> Tuple[NativeFunction, ...]:
    """Every entry of the native_functions.yaml at ``path``, validated, in file order.

    ``known_tags``: the tags entries may use (None: tags are not checked).
    ``foreign_keys``: "error" or "ignore" (see the module docstring).
    """
    if foreign_keys not in FOREIGN_KEY_MODES:
        raise ValueError(f"foreign_keys must be one of {FOREIGN_KEY_MODES}, got {foreign_keys!r}")
    data = load_yaml(path)
    if not isinstance(data, LocatedList):
        raise GenError.at(
            Location(path, 1), f"expected a list of operator entries, got {yaml_type_name(data)}"
        )
    errors: List[GenError] = []
    parsed = []
    for index, raw in enumerate(data):
        if not isinstance(raw, LocatedDict):
            errors.append(GenError.at(
                data.item_loc(index), f"entry must be a mapping with a 'func' key, got {yaml_type_name(raw)}"
            ))
            continue
        entry = _EntryParser(raw, known_tags, foreign_keys)
        func, nf = entry.parse()
        errors.extend(entry.all_errors())
        parsed.append((raw, func, nf))
    errors.extend(_check_entries(parsed))
    _raise_sorted(errors)
    return structured.resolve([nf for _, _, nf in parsed])


def load_tags(path: str) -> FrozenSet[str]:
    """The tag names a tags.yaml defines (entries ``- tag: name`` with a ``desc:``)."""
    data = load_yaml(path)
    if not isinstance(data, LocatedList):
        raise GenError.at(Location(path, 1), f"expected a list of tag entries, got {yaml_type_name(data)}")
    errors: List[GenError] = []
    first: Dict[str, int] = {}
    for index, raw in enumerate(data):
        if not isinstance(raw, LocatedDict):
            errors.append(GenError.at(
                data.item_loc(index), f"tag entry must be a mapping, got {yaml_type_name(raw)}"
            ))
            continue
        for key in raw:
            if key not in _TAG_ENTRY_KEYS:
                errors.append(GenError.at(raw.key_loc(key), f"unknown key '{clip(key)}' in tag entry"))
        name = raw.get("tag")
        if not isinstance(name, str) or _IDENTIFIER.fullmatch(name) is None:
            errors.append(GenError.at(
                raw.key_loc("tag"), "tag entry needs 'tag: NAME' with NAME an identifier"
            ))
            continue
        if not isinstance(raw.get("desc"), str):
            errors.append(GenError.at(raw.key_loc("desc"), f"tag '{clip(name)}' needs 'desc: TEXT'"))
        if name in first:
            errors.append(GenError.at(
                raw.key_loc("tag"), f"tag '{clip(name)}' defined twice (first at line {first[name]})"
            ))
            continue
        first[name] = raw.key_loc("tag").line
    _raise_sorted(errors)
    return frozenset(first)
