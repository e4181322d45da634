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
    bool[N]                         std::array<bool, N>  (by value: PyTorch's output masks)
    Scalar, Scalar?, Scalar[]       const Scalar&, const std::optional<Scalar>&, ArrayRef<Scalar>
    ScalarType, Layout, Device,     the dk enum or struct of that name
    MemoryFormat, Generator
    anything else                   IValue  (schema type Any: Dimname, Storage, Stream,
                                             QScheme, complex, bool[], str[], and an
                                             optional or list of an unsupported type)

Returns: () -> void; one return -> its value type (Tensor, Tensor(a!) -> Tensor;
Tensor[] -> std::vector<Tensor>; int[] -> std::vector<int64_t>; Scalar -> Scalar;
unsupported -> IValue); several -> std::tuple of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

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
    """A C++ type as the dispatcher convention writes it, kept in parts: emitters ask what a
    type is (``is_tensor``, ``is_optional``, ``elem``, ``is_tuple``, ``elements``, ``by_value``)
    and never read its spelling.

    ``name`` is a plain type (``Tensor``, ``int64_t``, ``Device``, ``void``) or a template
    (``std::optional``, ``ArrayRef``, ``std::vector``, ``std::tuple``, ``std::array``) applied to
    ``args``, which are value types; ``extent`` is a ``std::array``'s size. ``const_ref``: a parameter takes it as ``const T&`` (else by value).
    ``dispatch`` says how the argument feeds the call's key set: "tensor", "optional_tensor",
    "tensor_list", "optional_tensor_list", or None for arguments dispatch does not read.

    ``text`` is the parameter (or return) spelling, ``value`` the decayed type that
    ``dk::BoxingTraits`` is specialised for.
    """

    name: str
    args: Tuple["CType", ...] = ()
    const_ref: bool = False
    dispatch: Optional[str] = None
    extent: Optional[int] = None

    @property
    def value(self) -> str:
        """``std::optional<Tensor>``; dk's ``IntArrayRef`` for ``ArrayRef<int64_t>``."""
        if self.is_list and self.elem == INT64:
            return "IntArrayRef"
        if not self.args:
            return self.name
        if self.is_array:
            return f"{self.name}<{self.elem.value}, {self.extent}>"
        return f"{self.name}<{', '.join(a.value for a in self.args)}>"

    @property
    def text(self) -> str:
        """``const std::optional<Tensor>&``: the type as a parameter (or return) is declared."""
        return f"const {self.value}&" if self.const_ref else self.value

    def spelled(self, qualify) -> str:
        """``text`` with each of dk's own type names passed through ``qualify``
        (``lambda n: "::dk::" + n`` for code outside namespace dk)."""
        value = self._spelled_value(qualify)
        return f"const {value}&" if self.const_ref else value

    def _spelled_value(self, qualify) -> str:
        if self.is_list and self.elem == INT64:
            return qualify("IntArrayRef")
        name = self.name if self.name in _NOT_DK else qualify(self.name)
        if not self.args:
            return name
        if self.is_array:
            return f"{name}<{self.elem._spelled_value(qualify)}, {self.extent}>"
        return f"{name}<{', '.join(a._spelled_value(qualify) for a in self.args)}>"

    @property
    def by_value(self) -> bool:
        return not self.const_ref

    @property
    def is_optional(self) -> bool:
        return self.name == "std::optional"

    @property
    def is_list(self) -> bool:
        """An ``ArrayRef<T>``: a list parameter, viewed, not owned."""
        return self.name == "ArrayRef"

    @property
    def is_vector(self) -> bool:
        """A ``std::vector<T>``: a list return, owned."""
        return self.name == "std::vector"

    @property
    def is_tuple(self) -> bool:
        return self.name == "std::tuple"

    @property
    def is_array(self) -> bool:
        """A ``std::array<T, N>``: a fixed-size list held by value (``bool[3]``)."""
        return self.name == "std::array"

    @property
    def elem(self) -> "CType":
        """What an optional, list or vector holds."""
        if len(self.args) != 1 or self.is_tuple:
            raise TypeError(f"{self.text} has no element type")
        return self.args[0]

    @property
    def elements(self) -> Tuple["CType", ...]:
        """A tuple's element types."""
        if not self.is_tuple:
            raise TypeError(f"{self.text} is not a tuple")
        return self.args

    def strip_optional(self) -> "CType":
        """What an optional holds (as a value type); any other type itself."""
        return self.elem if self.is_optional else self

    @property
    def is_tensor(self) -> bool:
        """``Tensor`` itself (``const Tensor&`` as a parameter); not an optional or list of one."""
        return self.name == "Tensor"

    @property
    def is_ivalue(self) -> bool:
        return self.name == "IValue"

    @property
    def is_device(self) -> bool:
        return self.name == "Device"

    @property
    def is_void(self) -> bool:
        return self.name == "void"

    @property
    def holds_reference_count(self) -> bool:
        """An IValue, a Generator or an optional Generator: copying it costs an atomic."""
        return self.strip_optional().name in ("IValue", "Generator")


# The type names of C++ and std (the rest are dk's, qualified in code outside namespace dk).
_NOT_DK = frozenset({"void", "bool", "double", "int64_t", "std::optional", "std::vector", "std::tuple",
                     "std::string_view", "std::array"})


def _value(name: str) -> CType:
    return CType(name)


def _optional(elem: CType, const_ref: bool = False, dispatch: Optional[str] = None) -> CType:
    return CType("std::optional", (elem,), const_ref, dispatch)


def _array_ref(elem: CType, dispatch: Optional[str] = None) -> CType:
    return CType("ArrayRef", (elem,), False, dispatch)


INT64 = _value("int64_t")
VOID = _value("void")
IVALUE = _value("IValue")
TENSOR = CType("Tensor", (), True, "tensor")
OPTIONAL_TENSOR = _optional(_value("Tensor"), True, "optional_tensor")
TENSOR_LIST = _array_ref(_value("Tensor"), "tensor_list")
OPTIONAL_TENSOR_LIST = _array_ref(_optional(_value("Tensor")), "optional_tensor_list")
SCALAR = CType("Scalar", (), True)
OPTIONAL_SCALAR = _optional(_value("Scalar"), True)
INT_LIST = _array_ref(INT64)  # IntArrayRef

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
_LIST_OF = {"int": "int64_t", "SymInt": "int64_t", "float": "double", "Scalar": "Scalar"}


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
        return _array_ref(_value(_LIST_OF[name]))
    if name == "bool" and t.size is not None:
        return CType("std::array", (_value("bool"),), extent=t.size)
    return IVALUE


def argument_type(t: Type) -> CType:
    """The C++ parameter type of schema type ``t`` (alias annotations do not matter)."""
    if isinstance(t, BaseType):
        if t.name == "Tensor":
            return TENSOR
        if t.name == "Scalar":
            return SCALAR
        if t.name in _BY_VALUE:
            return _value(_BY_VALUE[t.name])
        return IVALUE
    if isinstance(t, OptionalType):
        elem = t.elem
        if elem == BaseType("Tensor"):
            return OPTIONAL_TENSOR
        if elem == BaseType("Scalar"):
            return OPTIONAL_SCALAR
        name = _base_name(elem)
        if name in _BY_VALUE:
            return _optional(_value(_BY_VALUE[name]))
        if isinstance(elem, ListType):
            inner = _list_type(elem)
            if inner.dispatch is None and not inner.is_ivalue:
                return _optional(inner)
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
_RETURN_LIST = {"Tensor": "Tensor", "int": "int64_t", "SymInt": "int64_t", "float": "double"}


def single_return_ctype(t: Type) -> CType:
    """The C++ value type of one return of schema type ``t``."""
    name = _base_name(t)
    if name in _RETURN_BASE:
        return _value(_RETURN_BASE[name])
    if isinstance(t, ListType) and _base_name(t.elem) in _RETURN_LIST:
        return CType("std::vector", (_value(_RETURN_LIST[_base_name(t.elem)]),))
    return IVALUE


def return_ctype(func: FunctionSchema) -> CType:
    """``void``, the one return's type, or ``std::tuple<...>`` of all of them."""
    types = tuple(single_return_ctype(r.type) for r in func.returns)
    if not types:
        return VOID
    if len(types) == 1:
        return types[0]
    return CType("std::tuple", types)


def single_return_type(t: Type) -> str:
    """The spelling of ``single_return_ctype``."""
    return single_return_ctype(t).text


def return_types(func: FunctionSchema) -> Tuple[str, ...]:
    return tuple(single_return_type(r.type) for r in func.returns)


def returns_type(func: FunctionSchema) -> str:
    """The spelling of ``return_ctype``: ``void``, ``Tensor``, ``std::tuple<Tensor, Tensor>``."""
    return return_ctype(func).text


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
# Const references leave no mark; std::optional adds ``Opt``, ArrayRef ``List`` (IntArrayRef is
# ``IntList``), std::vector ``Vec``, std::array ``ArrayN``, a tuple ``TupN``. The id is read off the type's parts
# (CType), never parsed back from its spelling.
_ID_WORDS = {"int64_t": "Int", "double": "Double", "bool": "Bool", "std::string_view": "Str", "void": "Void"}


def _type_id(t: CType) -> str:
    if t.args:
        ids = [_type_id(a) for a in t.args]
        if t.is_optional:
            return "Opt" + ids[0]
        if t.is_list:
            return ids[0] + "List"
        if t.is_vector:
            return ids[0] + "Vec"
        if t.is_tuple:
            return f"Tup{len(ids)}" + "".join(ids)
        if t.is_array:
            return f"{ids[0]}Array{t.extent}"
        raise GenError(f"internal error: no signature id for the C++ type '{t.text}'")
    if t.name in _ID_WORDS:
        return _ID_WORDS[t.name]
    word = t.name.split("::")[-1]
    if not word.isidentifier() or "_" in word:
        raise GenError(f"internal error: no signature id for the C++ type '{t.text}'")
    return word


def signature_id(returns: CType, parameter_types: Sequence[CType]) -> str:
    """The adapters' name for a C++ signature (Note [Signature ids])."""
    return f"sig_{_type_id(returns)}__" + ("_".join(_type_id(t) for t in parameter_types) or "Void")


@dataclass(frozen=True)
class DispatcherSignature:
    """An operator's unboxed signature: ``R(A0, A1, ...)`` with named parameters."""

    func: FunctionSchema
    return_type: CType
    bindings: Tuple[Binding, ...]

    @property
    def returns(self) -> str:
        """The return type's spelling: ``Tensor``, ``std::tuple<Tensor, Tensor>``, ``void``."""
        return self.return_type.text

    @property
    def canonical(self) -> str:
        """The C++ function type, e.g. ``Tensor(const Tensor&, const Scalar&)``: what
        distinct boxing adapters are keyed by."""
        return f"{self.returns}({', '.join(b.type.text for b in self.bindings)})"

    @property
    def id(self) -> str:
        """``sig_Tensor__Tensor_Scalar``: the name of this signature's adapters (Note [Signature ids])."""
        return signature_id(self.return_type, [b.type for b in self.bindings])

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
    return DispatcherSignature(func, return_ctype(func), bindings)


def forward(ctype: CType, name: str) -> str:
    """How a call passes parameter ``name`` on: moved when it is a by-value type that
    holds a reference count (each generated path uses a parameter once)."""
    if ctype.by_value and ctype.holds_reference_count:
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
