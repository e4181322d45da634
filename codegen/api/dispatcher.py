"""The dispatcher calling convention: the unboxed C++ signature of an operator.

It is what ``dk::ops::X::call`` takes, what ``TypedOperatorHandle<Sig>`` is typed
with, and what every kernel's unboxed entry receives after its ``DispatchKeySet``
(runtime Note [Kernel calling conventions]). In dispatchkit the public API
(``codegen.api.cpp``) and the kernels (``codegen.api.native``) use the same types.

Types, argument by argument:

    Tensor, Tensor(a), Tensor(a!)   const Tensor&
    Tensor?                         const std::optional<Tensor>&
    Tensor[], Tensor?[]             ArrayRef<Tensor>, ArrayRef<std::optional<Tensor>>
    int, SymInt                     int64_t           (and T? -> std::optional<T>)
    int[], SymInt[], int[N]         IntArrayRef       (int[]? -> std::optional<IntArrayRef>)
    float, float[]                  double, ArrayRef<double>
    bool, str                       bool, std::string_view
    Scalar, Scalar?, Scalar[]       const Scalar&, const std::optional<Scalar>&, ArrayRef<Scalar>
    ScalarType, Layout, Device,     the dk enum or struct of that name
    MemoryFormat, Generator
    anything else                   IValue  (schema type Any: Dimname, Storage, Stream,
                                             QScheme, complex, bool[N], str[], and an
                                             optional or list of an unsupported type)

Returns: () -> void; one return -> its value type (Tensor, Tensor(a!) -> Tensor;
Tensor[] -> std::vector<Tensor>; int[] -> std::vector<int64_t>; Scalar -> Scalar;
unsupported -> IValue); several -> std::tuple of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from codegen.cpp_names import CPP_KEYWORDS
from codegen.errors import GenError
from codegen.model import (
    Argument,
    BaseType,
    FunctionSchema,
    ListType,
    NativeFunction,
    OperatorName,
    OptionalType,
    Type,
)

# The dispatcher supports at most this many arguments (one bit each in the bitmap).
MAX_ARGUMENTS = 64

# The local names generated bodies use next to the arguments (Note [Argument names]).
GENERATED_LOCALS = frozenset(
    {"op", "e", "k", "ks", "arg_ks", "trace", "device_check", "device_guard"}
)
# Note [Argument names]
# An argument keeps its schema name in C++ unless that name is a C++ keyword or one of
# the locals above; then it gets a trailing underscore (topk's `int k` is `k_`).
RESERVED_NAMES = CPP_KEYWORDS | GENERATED_LOCALS


@dataclass(frozen=True)
class CType:
    """A C++ type as the dispatcher convention writes it.

    ``text`` is the parameter (or return) spelling, ``value`` the decayed type that
    ``dk::BoxingTraits`` is specialised for, and ``dispatch`` how the argument feeds
    the call's key set: "tensor", "optional_tensor", "tensor_list",
    "optional_tensor_list", or None for arguments dispatch does not read.
    """

    text: str
    value: str
    dispatch: Optional[str] = None

    @property
    def is_ivalue(self) -> bool:
        return self.value == "IValue"


def _same(text: str) -> CType:
    return CType(text, text)


IVALUE = _same("IValue")
TENSOR = CType("const Tensor&", "Tensor", "tensor")
OPTIONAL_TENSOR = CType("const std::optional<Tensor>&", "std::optional<Tensor>", "optional_tensor")
TENSOR_LIST = CType("ArrayRef<Tensor>", "ArrayRef<Tensor>", "tensor_list")
OPTIONAL_TENSOR_LIST = CType(
    "ArrayRef<std::optional<Tensor>>", "ArrayRef<std::optional<Tensor>>", "optional_tensor_list"
)

# Base types passed by value, and their C++ names.
_BY_VALUE = {
    "int": "int64_t",
    "SymInt": "int64_t",
    "float": "double",
    "bool": "bool",
    "str": "std::string_view",
    "ScalarType": "ScalarType",
    "Layout": "Layout",
    "Device": "Device",
    "MemoryFormat": "MemoryFormat",
    "Generator": "Generator",
}
# List element types with a usable ArrayRef (ArrayRef<bool> cannot view a std::vector<bool>,
# and a list of strings would view temporaries, so neither is here).
_LIST_OF = {"int": "IntArrayRef", "SymInt": "IntArrayRef", "float": "ArrayRef<double>", "Scalar": "ArrayRef<Scalar>"}


def _base_name(t: Type) -> Optional[str]:
    return t.name if isinstance(t, BaseType) else None


def _list_type(t: ListType) -> CType:
    elem = t.elem
    if elem == BaseType("Tensor"):
        return TENSOR_LIST
    if elem == OptionalType(BaseType("Tensor")):
        return OPTIONAL_TENSOR_LIST
    name = _base_name(elem)
    if name in _LIST_OF:
        return _same(_LIST_OF[name])
    return IVALUE


def argument_type(t: Type) -> CType:
    """The C++ parameter type of schema type ``t`` (alias annotations do not matter)."""
    if isinstance(t, BaseType):
        if t.name == "Tensor":
            return TENSOR
        if t.name == "Scalar":
            return CType("const Scalar&", "Scalar")
        if t.name in _BY_VALUE:
            return _same(_BY_VALUE[t.name])
        return IVALUE
    if isinstance(t, OptionalType):
        elem = t.elem
        if elem == BaseType("Tensor"):
            return OPTIONAL_TENSOR
        if elem == BaseType("Scalar"):
            return CType("const std::optional<Scalar>&", "std::optional<Scalar>")
        name = _base_name(elem)
        if name in _BY_VALUE:
            return _same(f"std::optional<{_BY_VALUE[name]}>")
        if isinstance(elem, ListType):
            inner = _list_type(elem)
            if inner.dispatch is None and not inner.is_ivalue:
                return _same(f"std::optional<{inner.value}>")
        return IVALUE  # never std::optional<IValue>: an IValue already holds None
    if isinstance(t, ListType):
        return _list_type(t)
    raise TypeError(f"not a schema type: {t!r}")


_RETURN_BASE = {
    "Tensor": "Tensor",
    "Scalar": "Scalar",
    "int": "int64_t",
    "SymInt": "int64_t",
    "float": "double",
    "bool": "bool",
    "ScalarType": "ScalarType",
    "Layout": "Layout",
    "Device": "Device",
    "MemoryFormat": "MemoryFormat",
}
_RETURN_LIST = {"Tensor": "std::vector<Tensor>", "int": "std::vector<int64_t>",
                "SymInt": "std::vector<int64_t>", "float": "std::vector<double>"}


def single_return_type(t: Type) -> str:
    """The C++ value type of one return of schema type ``t``."""
    name = _base_name(t)
    if name in _RETURN_BASE:
        return _RETURN_BASE[name]
    if isinstance(t, ListType) and _base_name(t.elem) in _RETURN_LIST:
        return _RETURN_LIST[_base_name(t.elem)]
    return "IValue"


def return_types(func: FunctionSchema) -> Tuple[str, ...]:
    return tuple(single_return_type(r.type) for r in func.returns)


def returns_type(func: FunctionSchema) -> str:
    """``void``, the one return's type, or ``std::tuple<...>`` of all of them."""
    types = return_types(func)
    if not types:
        return "void"
    if len(types) == 1:
        return types[0]
    return f"std::tuple<{', '.join(types)}>"


def argument_name(name: str) -> str:
    """The C++ spelling of an argument name (Note [Argument names])."""
    return name + "_" if name in RESERVED_NAMES else name


def dispatch_bitmap(func: FunctionSchema) -> int:
    """Note [Dispatch-argument bitmap]: bit ``nargs-1-i`` is set when argument i is a
    dispatch argument, so bit 0 is the top of the boxed stack. Equals the runtime's
    ``OperatorEntry::computeDispatchArgumentBitmap``. Dispatch arguments are those
    ``Type.is_tensor_like`` says (the model's one definition)."""
    args = func.arguments
    bitmap = 0
    for i, arg in enumerate(args):
        if arg.type.is_tensor_like():
            bitmap |= 1 << (len(args) - 1 - i)
    return bitmap


def bitmap_literal(func: FunctionSchema) -> str:
    """``0b0110``: one digit per argument, argument 0 first (``0b0`` without arguments)."""
    n = len(func.arguments)
    return "0b" + (format(dispatch_bitmap(func), f"0{n}b") if n else "0")


@dataclass(frozen=True)
class Binding:
    """One C++ parameter: its name, type, and the schema argument it stands for."""

    name: str
    type: CType
    argument: Argument

    def decl(self) -> str:
        return f"{self.type.text} {self.name}"


# Note [Signature ids]
# Each distinct C++ signature gets boxing adapters named after it: the id spells the types
# (``sig_Tensor__Tensor_Scalar`` for ``Tensor(const Tensor&, const Scalar&)``), so it depends on
# the signature alone and adding an operator never renames another operator's adapters.
# Const references are the default and leave no mark; a mutable reference adds ``Mut``,
# std::optional ``Opt``, ArrayRef ``List``, std::vector ``Vec``, a tuple ``TupN``.
_ID_WORDS = {"int64_t": "Int", "double": "Double", "bool": "Bool", "std::string_view": "Str",
             "IntArrayRef": "IntList", "void": "Void"}


def _type_id(text: str) -> str:
    text = text.strip()
    if text.startswith("const ") and text.endswith("&"):
        return _type_id(text[len("const "):-1])
    if text.endswith("&"):
        return "Mut" + _type_id(text[:-1])
    if text in _ID_WORDS:
        return _ID_WORDS[text]
    if "<" in text and text.endswith(">"):
        outer, inner = text[:-1].split("<", 1)
        parts = _split_template_arguments(inner)
        ids = [_type_id(p) for p in parts]
        outer = outer.strip()
        if outer == "std::optional":
            return "Opt" + ids[0]
        if outer == "ArrayRef":
            return ids[0] + "List"
        if outer == "std::vector":
            return ids[0] + "Vec"
        if outer == "std::tuple":
            return f"Tup{len(ids)}" + "".join(ids)
        raise GenError(f"internal error: no signature id for the C++ type '{text}'")
    word = text.split("::")[-1]
    if not word.isidentifier() or "_" in word:
        raise GenError(f"internal error: no signature id for the C++ type '{text}'")
    return word


def _split_template_arguments(text: str) -> List[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def signature_id(returns: str, parameter_types: Sequence[str]) -> str:
    """The adapters' name for a C++ signature (Note [Signature ids])."""
    return f"sig_{_type_id(returns)}__" + ("_".join(_type_id(t) for t in parameter_types) or "Void")


@dataclass(frozen=True)
class DispatcherSignature:
    """An operator's unboxed signature: ``R(A0, A1, ...)`` with named parameters."""

    func: FunctionSchema
    returns: str
    bindings: Tuple[Binding, ...]

    @property
    def canonical(self) -> str:
        """The C++ function type, e.g. ``Tensor(const Tensor&, const Scalar&)``: what
        distinct boxing adapters are keyed by."""
        return f"{self.returns}({', '.join(b.type.text for b in self.bindings)})"

    @property
    def id(self) -> str:
        """``sig_Tensor__Tensor_Scalar``: the name of this signature's adapters (Note [Signature ids])."""
        return signature_id(self.returns, [b.type.text for b in self.bindings])

    def params(self) -> str:
        """``const Tensor& self, const Scalar& other``"""
        return ", ".join(b.decl() for b in self.bindings)

    def names(self) -> str:
        """``self, other``: the parameters forwarded in order."""
        return ", ".join(b.name for b in self.bindings)

    def decl(self, name: str, prefix: str = "") -> str:
        """``Tensor name(prefix, const Tensor& self, ...)``."""
        params = ", ".join(p for p in (prefix, self.params()) if p)
        return f"{self.returns} {name}({params})"


def signature(func: FunctionSchema) -> DispatcherSignature:
    bindings = tuple(Binding(argument_name(a.name), argument_type(a.type), a) for a in func.arguments)
    return DispatcherSignature(func, returns_type(func), bindings)


def forward(ctype: CType, name: str) -> str:
    """How a call passes parameter ``name`` on: moved when it is a by-value type that
    holds a reference count (each generated path uses a parameter once)."""
    if ctype.value in ("IValue", "Generator", "std::optional<Generator>") and not ctype.text.startswith("const "):
        return f"std::move({name})"
    return name


# Names a struct in dk::ops must not take: generated code names these namespaces and
# entities unqualified from inside it (PyTorch has an operator `std`).
_RESERVED_STRUCT_NAMES = CPP_KEYWORDS | frozenset(
    {"std", "dk", "detail", "ops", "boxing", "native", "aten", "OperatorInfo", "kAllOperators", "all_operators"}
)


def struct_name(name: OperatorName) -> str:
    """The ``dk::ops`` struct of an operator: ``add_Tensor``, ``relu``; a name generated
    code needs for something else gets a trailing underscore (``std`` -> ``std_``)."""
    text = name.unambiguous_name
    return text + "_" if text in _RESERVED_STRUCT_NAMES else text


def check_operator(nf: NativeFunction) -> None:
    """What the dispatcher convention cannot express, as a located error."""
    if len(nf.func.arguments) > MAX_ARGUMENTS:
        raise GenError.at(
            nf.loc,
            f"{len(nf.func.arguments)} arguments; the dispatcher supports at most {MAX_ARGUMENTS}",
            str(nf.func),
        )
