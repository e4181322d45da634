"""PyTorch's function schema language, as frozen dataclasses with an exact parser.

``FunctionSchema.parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")``
gives the operator name, the positional, keyword-only and out arguments, and the
returns; ``str()`` gives the text back, character for character. The grammar is
the one of PyTorch's native_functions.yaml, written in its canonical spelling
(one space after each comma, " -> " before the returns); anything else is
rejected with the column where parsing stopped:

    schema    := opname "(" [args] ")" " -> " returns
    opname    := IDENT ["." OVERLOAD]
    args      := arg_or_star {", " arg_or_star}         ("*" at most once; then keyword-only)
    arg       := type " " IDENT ["=" default]
    type      := BASE ["(" alias ")"] {"?" | "[" [N] "]"}  (alias on Tensor only)
    alias     := SET ["!"] [" -> " (SET | "*")]           SET := NAME {"|" NAME}
    returns   := "()" | ret | "(" ret ", " ret {", " ret} ")"
    ret       := type [" " IDENT]

Out arguments are the keyword-only arguments written to (``Tensor(a!) out``);
they must come after all other keyword-only arguments.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

from codegen.errors import GenError
from codegen.limits import MAX_LIST_SIZE, MAX_SCHEMA_LENGTH, MAX_TYPE_DEPTH, clip

# Every base type the schema language has (all those PyTorch 1.13.1's file uses, and
# complex). DimVector only appears in the 'precomputed' lists of structured kernels.
BASE_TYPE_NAMES = frozenset(
    {
        "Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType",
        "Layout", "Device", "MemoryFormat", "Generator", "Dimname", "Storage",
        "Stream", "QScheme", "complex", "DimVector",
    }
)

# Python's augmented-assignment dunders: __iand__ is the in-place form of __and__.
_AUGMENTED_DUNDERS = frozenset(
    {
        "iadd", "isub", "imul", "idiv", "itruediv", "ifloordiv", "imod", "ipow",
        "imatmul", "iand", "ior", "ixor", "ilshift", "irshift",
    }
)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OVERLOAD = re.compile(r"[A-Za-z0-9_]+")
_ALIAS_SET_NAME = re.compile(r"[a-z][a-z0-9_]*")
_LIST_SIZE = re.compile(r"[0-9]+")
_PLAIN_DEFAULT = re.compile(r"[A-Za-z0-9_.+\-]+")


# ---- default values (the runtime's Note [Default value types], dk/function_schema.cpp) ----

_SCALAR_TYPE_NAMES = frozenset(
    "Byte Char Short Int Long Half Float Double ComplexHalf ComplexFloat ComplexDouble Bool QInt8 QUInt8 "
    "QInt32 BFloat16 QUInt4x2 QUInt2x4 uint8 int8 int16 short int32 int int64 long float16 half float32 "
    "float float64 double complex32 complex64 cfloat complex128 cdouble complex bool bfloat16".split())
_ENUM_NAMES = {
    "ScalarType": _SCALAR_TYPE_NAMES,
    "Layout": frozenset("strided sparse_coo sparse_csr sparse_csc sparse_bsr sparse_bsc _mkldnn mkldnn".split()),
    "MemoryFormat": frozenset("contiguous_format channels_last channels_last_3d preserve_format".split()),
    "QScheme": frozenset("per_tensor_affine per_channel_affine per_tensor_symmetric per_channel_symmetric "
                         "per_channel_affine_float_qparams".split()),
}
# int stands for the enums too (reduction=Mean), as in PyTorch.
_INT_NAMES = frozenset({"Mean", "Sum"}).union(*_ENUM_NAMES.values())
_INT_TEXT = re.compile(r"-?[0-9]+")
_FLOAT_TEXT = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1

# The escapes a string default may use, and the character each stands for.
_STRING_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "0": "\0"}


def string_default_value(text: str) -> str:
    """The value of a quoted string default (``"mean"``, ``'a\\tb'``), read without Python's
    eval: escapes are ``\\\\ \\' \\" \\n \\t \\r \\0`` and ``\\xHH``. Raises ValueError
    saying what is wrong."""
    quote = text[:1]
    if quote not in ("'", '"') or len(text) < 2 or text[-1] != quote:
        raise ValueError("a string default must be quoted, as in \"mean\"")
    out, i, body = [], 0, text[1:-1]
    while i < len(body):
        c = body[i]
        if c == quote:
            raise ValueError(f"unescaped {quote} inside the string")
        if c != "\\":
            out.append(c)
            i += 1
            continue
        esc = body[i + 1:i + 2]
        if esc in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[esc])
            i += 2
        elif esc == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", body[i + 2:i + 4]):
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        else:
            raise ValueError(f"bad escape '\\{esc}' (use \\\\ \\' \\\" \\n \\t \\r \\0 or \\xHH)")
    return "".join(out)


def _number_mismatch(text: str) -> str:
    """Empty when a numeric default is representable in C++ (int64, finite double)."""
    if _INT_TEXT.fullmatch(text):
        digits = text.lstrip("-")
        if len(digits) > 1 and digits[0] == "0":
            return "an integer may not begin with 0 (C++ would read it as octal)"
        if len(digits) > 19 or not INT64_MIN <= int(text) <= INT64_MAX:
            return "integer out of the int64 range"
    elif _FLOAT_TEXT.fullmatch(text) and float(text) in (float("inf"), float("-inf")):
        return "number out of the range of double"
    return ""


def _list_items(inner: str) -> List[str]:
    """The comma-separated items of a list default's inside, quotes respected."""
    items, current, quote = [], "", None
    for i, c in enumerate(inner):
        if quote:
            current += c
            if c == quote and inner[i - 1] != "\\":
                quote = None
        elif c in "\"'":
            quote, current = c, current + c
        elif c == ",":
            items.append(current.strip())
            current = ""
        else:
            current += c
    items.append(current.strip())
    return items


def default_mismatch(type_: "Type", text: str) -> str:
    """Empty when ``text`` is a valid default of ``type_``, else why not."""
    if isinstance(type_, OptionalType):
        return "" if text == "None" else default_mismatch(type_.elem, text)
    if isinstance(type_, ListType):
        if text.startswith("["):
            inner = text[1:-1].strip()
            for item in _list_items(inner) if inner else []:
                why = default_mismatch(type_.elem, item)
                if why:
                    return f"list element: {why}"
            return ""
        if type_.size is not None:
            return default_mismatch(type_.elem, text)
        return "a list default must be a list literal such as [] or [0, 1]"
    name = type_.innermost.name
    if name in ("Tensor", "Generator", "Storage", "Stream"):
        return "" if text == "None" else f"a {name} default can only be None"
    if text == "None":
        return f"None is only a default of an optional type (write {type_}?)"
    why = _number_mismatch(text)
    if why:
        return why
    if name in ("str", "Device", "Dimname") and text[:1] in ("'", '"'):
        try:
            string_default_value(text)
        except ValueError as e:
            return str(e)
    is_int = bool(_INT_TEXT.fullmatch(text))
    is_float = bool(_FLOAT_TEXT.fullmatch(text)) or text.lstrip("-") in ("inf", "nan")
    ok = {
        "bool": text in ("True", "False"),
        "int": is_int or text in _INT_NAMES,
        "SymInt": is_int or text in _INT_NAMES,
        "float": is_float,
        "complex": is_float,
        "Scalar": is_float or text in ("True", "False"),
        "str": text[:1] in ("'", '"'),
        "Device": text[:1] in ("'", '"'),
        "Dimname": text[:1] in ("'", '"'),
    }.get(name)
    if ok is None:
        ok = is_int or text in _ENUM_NAMES.get(name, ())
    return "" if ok else f"not a value of type {type_}"


def overload_name_mismatch(overload: str) -> str:
    """Empty when ``overload`` may name an overload, else why not. As PyTorch: ``default``
    is what PyTorch calls the overload without a name, and names beginning with ``__`` are
    reserved."""
    if overload == "default":
        return "the overload name 'default' is reserved (it means the overload without a name)"
    if overload.startswith("__"):
        return f"overload name '{clip(overload, 80)}' is reserved: overload names may not begin with '__'"
    return ""


@dataclass(frozen=True)
class OperatorName:
    """``name.overload``; the overload name is empty for the default overload."""

    name: str
    overload_name: str = ""

    @classmethod
    def parse(cls, text: str) -> "OperatorName":
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z0-9_]+))?", text)
        if match is None:
            raise GenError(f"malformed operator name '{clip(text)}'")
        return cls(match.group(1), match.group(2) or "")

    def __str__(self) -> str:
        return f"{self.name}.{self.overload_name}" if self.overload_name else self.name

    @property
    def is_dunder(self) -> bool:
        """Named like a Python operator method: ``__and__``, ``__iand__``."""
        return len(self.name) > 4 and self.name.startswith("__") and self.name.endswith("__")

    @property
    def is_inplace(self) -> bool:
        """``add_``, and the augmented-assignment dunders such as ``__iand__``."""
        if self.is_dunder:
            return self.name[2:-2] in _AUGMENTED_DUNDERS
        return self.name.endswith("_")

    @property
    def base_name(self) -> str:
        """The name without its in-place marker: ``add_`` -> ``add``, ``__iand__`` -> ``__and__``."""
        if not self.is_inplace:
            return self.name
        if self.is_dunder:
            return f"__{self.name[3:-2]}__"
        return self.name[:-1]

    @property
    def unambiguous_name(self) -> str:
        """A C++-identifier spelling unique per operator: ``add_Tensor``, ``relu``."""
        return f"{self.name}_{self.overload_name}" if self.overload_name else self.name


class Type:
    """A schema type: ``BaseType``, ``OptionalType`` or ``ListType``."""

    def render(self, alias_text: str = "") -> str:
        """The type's text, with ``alias_text`` (e.g. ``"(a!)"``) after its base type."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.render()

    @property
    def innermost(self) -> "BaseType":
        """The base type under all optional and list wrappers."""
        raise NotImplementedError

    def is_tensor_like(self) -> bool:
        """Tensor, Tensor?, Tensor[N] or Tensor?[N] (N fixed or not): a dispatch argument,
        one whose key set decides dispatch.

        The generator's one definition of a dispatch argument (the dispatch-argument bitmap,
        ``FunctionSchema.dispatch_arguments``, the autograd plan all use it), and the
        runtime's: ``dk::Type::isTensorLike`` (runtime/src/dispatch/function_schema.cpp).
        Other wrappings of Tensor (``Tensor[]?``, ``Tensor?[]?``, ``Tensor[][]``) are not
        tensor-like: the runtime boxes them as plain values and dispatch never reads them.
        """
        tensor = BaseType("Tensor")
        if self == tensor or self == OptionalType(tensor):
            return True
        return isinstance(self, ListType) and self.elem in (tensor, OptionalType(tensor))

    def is_list_like(self) -> bool:
        return False

    def strip_optional(self) -> "Type":
        return self


@dataclass(frozen=True)
class BaseType(Type):
    name: str

    def render(self, alias_text: str = "") -> str:
        return self.name + alias_text

    @property
    def innermost(self) -> "BaseType":
        return self


@dataclass(frozen=True)
class OptionalType(Type):
    elem: Type

    def render(self, alias_text: str = "") -> str:
        return self.elem.render(alias_text) + "?"

    @property
    def innermost(self) -> BaseType:
        return self.elem.innermost

    def is_list_like(self) -> bool:
        return self.elem.is_list_like()

    def strip_optional(self) -> Type:
        return self.elem


@dataclass(frozen=True)
class ListType(Type):
    """``T[]``, or ``T[N]`` with a fixed size (``int[2]``)."""

    elem: Type
    size: Optional[int] = None

    def render(self, alias_text: str = "") -> str:
        size = "" if self.size is None else str(self.size)
        return f"{self.elem.render(alias_text)}[{size}]"

    @property
    def innermost(self) -> BaseType:
        return self.elem.innermost

    def is_list_like(self) -> bool:
        return True


@dataclass(frozen=True)
class AliasInfo:
    """An alias annotation: ``a`` (aliases set a), ``a!`` (and writes it), ``a -> *``."""

    before: Tuple[str, ...]
    is_write: bool = False
    after: Tuple[str, ...] = ()

    def __str__(self) -> str:
        text = "|".join(self.before) + ("!" if self.is_write else "")
        if self.after:
            text += " -> " + "|".join(self.after)
        return text


def _render_type(type_: Type, alias: Optional[AliasInfo]) -> str:
    return type_.render(f"({alias})" if alias is not None else "")


@dataclass(frozen=True)
class Argument:
    """``Tensor(a!) self``, ``int dim=0``: a name, a type, an optional alias and default.

    ``default`` is the default's text as written (``1``, ``None``, ``"mean"``, ``[0,1]``).
    """

    name: str
    type: Type
    default: Optional[str] = None
    alias: Optional[AliasInfo] = None

    @classmethod
    def parse(cls, text: str) -> "Argument":
        """Parse one argument on its own, such as ``int kH`` (used by ``precomputed``)."""
        parser = _SchemaParser(text, "argument")
        arg = parser.argument()
        if parser.pos != len(text):
            raise parser.fail(f"expected the end of the argument, found {parser.found()}")
        return arg

    @property
    def is_write(self) -> bool:
        return self.alias is not None and self.alias.is_write

    def __str__(self) -> str:
        text = f"{_render_type(self.type, self.alias)} {self.name}"
        return text if self.default is None else f"{text}={self.default}"


@dataclass(frozen=True)
class Return:
    """One return: a type, an optional alias, and a name when written in a tuple."""

    type: Type
    name: Optional[str] = None
    alias: Optional[AliasInfo] = None

    @property
    def is_write(self) -> bool:
        return self.alias is not None and self.alias.is_write

    def __str__(self) -> str:
        text = _render_type(self.type, self.alias)
        return text if self.name is None else f"{text} {self.name}"


_FACTORY_OPTION_TYPES = frozenset({"ScalarType", "Layout", "Device"})


@dataclass(frozen=True)
class FunctionSchema:
    """An operator's schema. Arguments come in three groups, in schema order:
    positional, keyword-only (after ``*``), and out (keyword-only and written to)."""

    name: OperatorName
    positional: Tuple[Argument, ...]
    kwarg_only: Tuple[Argument, ...]
    out: Tuple[Argument, ...]
    returns: Tuple[Return, ...]

    @classmethod
    def parse(cls, text: str) -> "FunctionSchema":
        """Parse ``text``; a ``GenError`` names the column where it went wrong.

        Schemas are immutable, so a text given again (a repeated entry, the same schema in
        derivatives.yaml) is parsed once."""
        return _parse_schema_cached(text)

    def __str__(self) -> str:
        args = [str(a) for a in self.positional]
        if self.kwarg_only or self.out:
            args.append("*")
            args.extend(str(a) for a in self.kwarg_only + self.out)
        if len(self.returns) == 1:
            returns = str(self.returns[0])
        else:
            returns = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{self.name}({', '.join(args)}) -> {returns}"

    # --- argument views -------------------------------------------------------

    @property
    def arguments(self) -> Tuple[Argument, ...]:
        """Every argument in schema (and boxed stack) order."""
        return self.positional + self.kwarg_only + self.out

    def argument(self, name: str) -> Optional[Argument]:
        for arg in self.arguments:
            if arg.name == name:
                return arg
        return None

    @property
    def self_argument(self) -> Optional[Argument]:
        """The positional argument named ``self``, if there is one."""
        for arg in self.positional:
            if arg.name == "self":
                return arg
        return None

    @property
    def dispatch_arguments(self) -> Tuple[Argument, ...]:
        """The arguments whose key sets decide dispatch: the tensor-like ones
        (``Type.is_tensor_like``), out= included."""
        return tuple(a for a in self.arguments if a.type.is_tensor_like())

    @property
    def mutable_arguments(self) -> Tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.is_write)

    # --- classification -------------------------------------------------------

    @property
    def is_out_fn(self) -> bool:
        return bool(self.out)

    @property
    def is_inplace(self) -> bool:
        return self.name.is_inplace

    @property
    def is_mutable(self) -> bool:
        """Writes to any argument (in-place, out=, or another mutable argument)."""
        return any(a.is_write for a in self.arguments)

    @property
    def is_functional(self) -> bool:
        return not self.is_mutable

    @property
    def kind(self) -> str:
        """'out', 'inplace', 'mutable' (writes other arguments) or 'functional'."""
        if self.is_out_fn:
            return "out"
        if self.is_inplace:
            return "inplace"
        if self.is_mutable:
            return "mutable"
        return "functional"

    @property
    def is_factory(self) -> bool:
        """No tensor arguments, but a dtype/layout/device argument: a BackendSelect candidate."""
        if self.dispatch_arguments:
            return False
        return any(
            a.type.strip_optional() == BaseType(n)
            for a in self.arguments
            for n in _FACTORY_OPTION_TYPES
        )

    @property
    def has_symint(self) -> bool:
        return any(a.type.innermost.name == "SymInt" for a in self.arguments)

    @property
    def default_kernel_name(self) -> str:
        """The kernel name an entry without ``dispatch:`` gets: ``relu``, ``add_``, ``add_out``."""
        return self.name.name + ("_out" if self.is_out_fn else "")

    def signature(self) -> "FunctionSchema":
        """What the functional, in-place and out= variants of one operator share.

        The base name without overload, no out arguments, no alias annotations, no
        return names: ``add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)`` and
        ``add.out(...)`` both give ``add(Tensor self, Tensor other) -> Tensor``.
        """

        def plain(args: Tuple[Argument, ...]) -> Tuple[Argument, ...]:
            return tuple(replace(a, alias=None) for a in args)

        return FunctionSchema(
            name=OperatorName(self.name.base_name),
            positional=plain(self.positional),
            kwarg_only=plain(self.kwarg_only),
            out=(),
            returns=tuple(Return(r.type) for r in self.returns),
        )


@functools.lru_cache(maxsize=8192)
def _parse_schema_cached(text: str) -> FunctionSchema:
    return _SchemaParser(text).schema()


class _SchemaParser:
    """Recursive descent over one schema string; ``pos`` is a 0-based index."""

    def __init__(self, text: str, what: str = "schema"):
        self.text = text
        self.what = what  # what the text is, for error messages
        self.pos = 0
        if len(text) > MAX_SCHEMA_LENGTH:
            raise GenError(f"{what} is longer than the limit of {MAX_SCHEMA_LENGTH} characters")

    # --- helpers --------------------------------------------------------------

    def fail(self, what: str, pos: Optional[int] = None) -> GenError:
        at = self.pos if pos is None else pos
        return GenError(f"malformed {self.what} at column {at + 1}: {what}")

    def found(self) -> str:
        if self.pos >= len(self.text):
            return f"the end of the {self.what}"
        return repr(self.text[self.pos])

    def peek(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def accept(self, token: str) -> bool:
        if self.text.startswith(token, self.pos):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str, what: Optional[str] = None) -> None:
        if not self.accept(token):
            raise self.fail(f"expected {what or repr(token)}, found {self.found()}")

    def match(self, pattern: "re.Pattern[str]", what: str) -> str:
        m = pattern.match(self.text, self.pos)
        if m is None:
            raise self.fail(f"expected {what}, found {self.found()}")
        self.pos = m.end()
        return m.group(0)

    # --- grammar --------------------------------------------------------------

    def schema(self) -> FunctionSchema:
        name = OperatorName(self.match(_IDENT, "an operator name"))
        if self.accept("."):
            overload_pos = self.pos
            name = OperatorName(name.name, self.match(_OVERLOAD, "an overload name"))
            why = overload_name_mismatch(name.overload_name)
            if why:
                raise self.fail(why, overload_pos)
        self.expect("(")
        positional, kwarg_only, out = self.arguments()
        self.expect(")", "', ' or ')'")
        self.expect(" -> ")
        returns = self.returns()
        if self.pos != len(self.text):
            raise self.fail(f"expected the end of the schema, found {self.found()}")
        return FunctionSchema(name, positional, kwarg_only, out, returns)

    def arguments(self):
        positional: List[Argument] = []
        keyword: List[Tuple[Argument, int]] = []
        columns = {}
        star_pos: Optional[int] = None
        if self.peek(")"):
            return (), (), ()
        while True:
            if self.peek("*"):
                if star_pos is not None:
                    raise self.fail("'*' given twice")
                star_pos = self.pos
                self.pos += 1
                if not self.peek(", "):
                    raise self.fail("'*' must be followed by keyword-only arguments")
            else:
                start = self.pos
                arg = self.argument()
                if arg.name in columns:
                    raise self.fail(f"duplicate argument name '{arg.name}'", start)
                columns[arg.name] = start
                if star_pos is None:
                    positional.append(arg)
                else:
                    keyword.append((arg, start))
            if not self.accept(", "):
                break
        # Out arguments: the written keyword-only ones, which must come last.
        kwarg_only = [a for a, _ in keyword if not a.is_write]
        out = [a for a, _ in keyword if a.is_write]
        for (arg, start), (nxt, _) in zip(keyword, keyword[1:]):
            if arg.is_write and not nxt.is_write:
                raise self.fail(
                    f"out argument '{arg.name}' must come after every other keyword-only argument",
                    start,
                )
        return tuple(positional), tuple(kwarg_only), tuple(out)

    def argument(self) -> Argument:
        type_, alias = self.type_and_alias()
        self.expect(" ", "' ' and an argument name")
        name = self.match(_IDENT, "an argument name")
        default = None
        if self.accept("="):
            start = self.pos
            default = self.default()
            why = default_mismatch(type_, default)
            if why:
                raise self.fail(f"default value {default} of argument '{name}' ({type_}): {why}", start)
        return Argument(name, type_, default, alias)

    def type_and_alias(self) -> Tuple[Type, Optional[AliasInfo]]:
        start = self.pos
        base = self.match(_IDENT, "a type")
        if base not in BASE_TYPE_NAMES:
            raise GenError(f"unknown type '{base}' at column {start + 1}")
        type_: Type = BaseType(base)
        alias = None
        if self.peek("("):
            if base != "Tensor":
                raise self.fail(f"alias annotations are allowed on Tensor only, not on '{base}'")
            alias = self.alias_info()
        depth = 0
        while True:
            if self.peek("?") or self.peek("["):
                depth += 1
                if depth > MAX_TYPE_DEPTH:
                    raise self.fail(f"type nested deeper than the limit of {MAX_TYPE_DEPTH} '?' and '[]'")
            if self.peek("?"):
                if isinstance(type_, OptionalType):
                    raise self.fail("type is already optional")
                self.pos += 1
                type_ = OptionalType(type_)
            elif self.accept("["):
                size = None
                if not self.peek("]"):
                    size_pos = self.pos
                    digits = self.match(_LIST_SIZE, "a list size or ']'")
                    size = int(digits) if len(digits) <= 6 else MAX_LIST_SIZE + 1
                    if size == 0:
                        raise self.fail("a list size must be positive", size_pos)
                    if size > MAX_LIST_SIZE:
                        raise self.fail(f"list size {clip(digits, 40)} is larger than the limit of "
                                        f"{MAX_LIST_SIZE}", size_pos)
                self.expect("]")
                type_ = ListType(type_, size)
            else:
                return type_, alias

    def alias_set(self) -> Tuple[str, ...]:
        names = [self.match(_ALIAS_SET_NAME, "an alias set name such as 'a'")]
        while self.accept("|"):
            names.append(self.match(_ALIAS_SET_NAME, "an alias set name such as 'a'"))
        return tuple(names)

    def alias_info(self) -> AliasInfo:
        self.expect("(")
        before = self.alias_set()
        is_write = self.accept("!")
        after: Tuple[str, ...] = ()
        if self.accept(" -> "):
            after = ("*",) if self.accept("*") else self.alias_set()
        self.expect(")")
        return AliasInfo(before, is_write, after)

    def default(self) -> str:
        start = self.pos
        text = self.text
        if self.pos < len(text) and text[self.pos] in "\"'":
            quote = text[self.pos]
            i = self.pos + 1
            while i < len(text) and text[i] != quote:
                i += 2 if text[i] == "\\" else 1
            if i >= len(text):
                raise self.fail("unterminated string default", start)
            self.pos = i + 1
        elif self.accept("["):
            end = text.find("]", self.pos)
            if end < 0:
                raise self.fail("unterminated list default", start)
            self.pos = end + 1
        else:
            self.match(_PLAIN_DEFAULT, "a default value")
        return text[start:self.pos]

    def return_(self) -> Return:
        type_, alias = self.type_and_alias()
        name = self.match(_IDENT, "a return name") if self.accept(" ") else None
        return Return(type_, name, alias)

    def returns(self) -> Tuple[Return, ...]:
        open_pos = self.pos
        if not self.accept("("):
            return (self.return_(),)
        if self.accept(")"):
            return ()
        returns: List[Return] = []
        names = set()
        while True:
            ret = self.return_()
            if ret.name is not None:
                if ret.name in names:
                    raise self.fail(f"duplicate return name '{ret.name}'", self.pos - len(ret.name))
                names.add(ret.name)
            returns.append(ret)
            if not self.accept(", "):
                break
        self.expect(")", "', ' or ')'")
        if len(returns) == 1:
            raise self.fail("a single return is written without parentheses", open_pos)
        return tuple(returns)
