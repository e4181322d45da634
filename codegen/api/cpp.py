"""The public C++ API convention: ``dk::op(args...)`` free functions and ``tensor.op(args...)`` methods.

The parameter types, names and returns are the dispatcher signature's
(``codegen.api.dispatcher``); this convention adds C++ default arguments translated
from the schema's defaults, and turns ``self`` into ``*this`` for methods.

Defaults exist only where C++ allows them: once a parameter has no default (or is
listed in the entry's ``cpp_no_default_args``), no parameter before it gets one.
Overloads of one name are C++ overloads; where a call that relies on defaults could
match two of them, the overload with more parameters (or, on a tie, the later one in
the YAML) loses the defaults that allow that call (Note [Ambiguous defaults]).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from codegen.api import dispatcher
from codegen.api.dispatcher import Binding, CType, DispatcherSignature
from codegen.cpp_names import is_cpp_keyword
from codegen.errors import GenError
from codegen.model import Argument, ListType, NativeFunction
from codegen.schema import INT64_MIN, string_default_value

# Members of dk::Tensor written by hand (runtime/include/dk/tensor/tensor.h; README.md "Tensors and operators"):
# a generated method of the same name would clash, unless the entry says
# manual_cpp_binding: True.
HAND_WRITTEN_TENSOR_MEMBERS = frozenset(
    {
        "defined", "key_set", "dtype", "scalar_type", "device", "is_cpu", "is_cuda", "is_meta",
        "options", "sizes", "strides", "size", "stride", "dim", "numel", "storage_offset",
        "is_contiguous", "element_size", "nbytes", "storage", "has_storage", "data_ptr", "_version",
        "is_view", "base", "is_inference", "unsafeGetTensorImpl", "getIntrusivePtr", "use_count",
        "is_same", "reclaim", "release_impl", "retain", "release",
        # autograd (runtime/src/autograd/tensor_autograd.cpp):
        "requires_grad", "requires_grad_", "grad", "mutable_grad", "backward", "grad_fn", "is_leaf",
        "output_nr", "retain_grad", "retains_grad", "register_hook", "remove_hook",
    }
)
# Hand-written members a generated method may overload: (what they return, the parameter types
# they take). A generated overload that returns the same and takes other parameters (PyTorch's
# size.Dimname: int64_t size(Dimname)) coexists with them.
HAND_WRITTEN_OVERLOADS = {"size": ("int64_t", frozenset({("int64_t",)})),
                          "stride": ("int64_t", frozenset({("int64_t",)}))}

_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?")
_SCALAR_TYPES = {
    "uint8": "Byte", "int8": "Char", "int16": "Short", "short": "Short", "int": "Int", "long": "Long", "half": "Half",
    "float": "Float", "double": "Double", "bool": "Bool", "bfloat16": "BFloat16",
}
_MEMORY_FORMATS = {
    "contiguous_format": "MemoryFormat::Contiguous",
    "preserve_format": "MemoryFormat::Preserve",
    "channels_last": "MemoryFormat::ChannelsLast",
}
# Named integer defaults (at::Reduction in PyTorch).
_NAMED_INTS = {"Mean": "::dk::Reduction::Mean", "Sum": "::dk::Reduction::Sum"}
_NUMBER_TYPES = frozenset({"int64_t", "double", "bool", "Scalar"})
# The element types of the number lists (IntArrayRef, ArrayRef<double>, ArrayRef<Scalar>).
_NUMBER_LIST_ELEMENTS = frozenset({"int64_t", "double", "Scalar"})


def cpp_string_literal(text: str) -> str:
    """``text`` as a C++ string literal (quotes, backslashes and control bytes escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _number(text: str, value: str) -> Optional[str]:
    if text in ("True", "False"):
        return text.lower() if value in ("bool", "Scalar") else None
    if _INT.fullmatch(text):
        # -9223372036854775808 is not a C++ literal (the minus applies to a value too large).
        return "(-9223372036854775807 - 1)" if int(text) == INT64_MIN else text
    if _FLOAT.fullmatch(text) and value in ("double", "Scalar"):
        return text
    return None


def default_expr(arg: Argument, ctype: CType) -> Optional[str]:
    """The C++ default of ``arg`` (None when it has none, or when its type is IValue and
    the default is not None). Raises ValueError for a default with no known spelling."""
    text = arg.default
    if text is None:
        return None
    if ctype.is_ivalue:
        return "std::nullopt" if text == "None" else None
    inner = ctype.strip_optional()
    value = inner.value
    if text == "None":
        if ctype.is_optional:
            return "std::nullopt"
        raise ValueError(f"default None for the non-optional type {ctype.text}")
    if value in _NUMBER_TYPES:
        if value == "int64_t" and text in _NAMED_INTS:
            return _NAMED_INTS[text]
        expr = _number(text, value)
        if expr is not None:
            return expr
    elif value == "std::string_view":
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            return cpp_string_literal(string_default_value(text))
    elif value == "ScalarType":
        if text in _SCALAR_TYPES:
            return f"ScalarType::{_SCALAR_TYPES[text]}"
    elif value == "MemoryFormat":
        if text in _MEMORY_FORMATS:
            return _MEMORY_FORMATS[text]
    elif value == "Layout":
        if text == "strided":
            return "Layout::Strided"
    elif inner.is_array:
        # bool[3] output_mask=[True, True, True]: one literal per element, as many as the size.
        items = [item.strip() for item in text.strip("[]").split(",") if item.strip()]
        if text.startswith("[") and len(items) == inner.extent and all(i in ("True", "False") for i in items):
            return "{" + ", ".join(i.lower() for i in items) + "}"
    elif inner.is_list and inner.elem.value in _NUMBER_LIST_ELEMENTS:
        elem = inner.elem.value
        if text.startswith("[") and text.endswith("]"):
            items = [item.strip() for item in text[1:-1].split(",") if item.strip()]
            exprs = [_number(item, elem) for item in items]
            if all(e is not None for e in exprs):
                return "{" + ", ".join(exprs) + "}"
        else:
            # A sized list may have a scalar default: int[2] stride=1 is [1, 1].
            size = arg.type.strip_optional().size if isinstance(arg.type.strip_optional(), ListType) else None
            expr = _number(text, elem)
            if size is not None and expr is not None:
                return "{" + ", ".join([expr] * size) + "}"
    raise ValueError(f"no C++ spelling for the default '{text}' of argument '{arg.name}' ({ctype.text})")


@dataclass(frozen=True)
class PublicBinding:
    binding: Binding
    default: Optional[str]
    # Note [Braced int lists]: the parameter is std::initializer_list<int64_t> in the
    # braced-list form of a function with an int[]? argument.
    braced: bool = False
    # Note [TensorOptions forms]: this parameter stands for the dtype/layout/device/pin_memory
    # arguments (binding is the first of them).
    options: bool = False

    @property
    def type_text(self) -> str:
        if self.options:
            return "const O&"
        return "std::initializer_list<int64_t>" if self.braced else self.binding.type.text

    @property
    def name(self) -> str:
        return "options" if self.options else self.binding.name

    def decl(self, with_default: bool = True) -> str:
        text = f"{self.type_text} {self.name}"
        return f"{text} = {self.default}" if with_default and self.default is not None else text

    def call_expr(self) -> str:
        if self.braced:
            return f"IntArrayRef({self.binding.name})"
        return dispatcher.forward(self.binding.type, self.binding.name)


@dataclass(frozen=True)
class PublicSignature:
    """One free function or method of the public API."""

    nf: NativeFunction
    name: str
    is_method: bool
    dispatcher: DispatcherSignature
    bindings: Tuple[PublicBinding, ...]  # a method's: every argument but self
    # Note [Ambiguous defaults]: the overloads whose calls these defaults would collide
    # with, when some were dropped for that reason.
    ambiguous_with: Tuple[str, ...] = ()
    braced_form: bool = False  # Note [Braced int lists]
    spelling: str = ""  # Note [Out spellings]: "outputs first" (_out) or "outputs last" (_outf)
    options_form: bool = False  # Note [TensorOptions forms]

    @property
    def returns(self) -> str:
        return self.dispatcher.returns

    @property
    def max_arity(self) -> int:
        return len(self.bindings)

    @property
    def min_arity(self) -> int:
        return sum(1 for b in self.bindings if b.default is None)

    def params(self, with_defaults: bool = True) -> str:
        return ", ".join(b.decl(with_defaults) for b in self.bindings)

    def call_args(self) -> str:
        """The dispatcher arguments in order, ``*this`` for a method's self."""
        public = {b.binding.argument.name: b for b in self.bindings if not b.options}
        names = []
        for b in self.dispatcher.bindings:
            if self.is_method and b.argument.name == "self":
                names.append("*this")
            elif self.options_form and b.argument.name in OPTIONS_ACCESSORS:
                names.append(f"options.{OPTIONS_ACCESSORS[b.argument.name]}()")
            else:
                names.append(public[b.argument.name].call_expr())
        return ", ".join(names)

    def without_defaults_through(self, index: int, other: str) -> "PublicSignature":
        bindings = tuple(replace(b, default=None) if i <= index else b for i, b in enumerate(self.bindings))
        return replace(self, bindings=bindings, ambiguous_with=tuple(sorted(set(self.ambiguous_with) | {other})))


def _located(nf: NativeFunction, detail: str) -> GenError:
    return GenError.at(nf.loc, detail, str(nf.func))


def public_signature(nf: NativeFunction, is_method: bool) -> PublicSignature:
    """The plain function (or method) of ``nf``; a located GenError when C++ cannot declare it."""
    sig = dispatcher.signature(nf.func)
    name = nf.func.name.name
    if is_cpp_keyword(name):
        raise _located(nf, f"'{name}' is a C++ keyword and cannot name a function or method")
    if is_method and name in HAND_WRITTEN_TENSOR_MEMBERS and name not in HAND_WRITTEN_OVERLOADS:
        raise _located(nf, f"method '{name}' clashes with the hand-written dk::Tensor::{name}; "
                           "drop 'method' from variants or set manual_cpp_binding: True")
    bindings = [b for b in sig.bindings if not (is_method and b.argument.name == "self")]
    defaults: List[Optional[str]] = []
    for b in bindings:
        try:
            defaults.append(default_expr(b.argument, b.type))
        except ValueError as e:
            raise _located(nf, str(e)) from None
    public = _trailing_defaults(nf, tuple(PublicBinding(b, d) for b, d in zip(bindings, defaults)))
    if is_method and name in HAND_WRITTEN_OVERLOADS:
        returns, taken = HAND_WRITTEN_OVERLOADS[name]
        required = sum(1 for b in public if b.default is None)
        types = tuple(b.type_text for b in public)
        if sig.returns != returns or any(types[:n] in taken for n in range(required, len(types) + 1)):
            raise _located(nf, f"method '{name}' clashes with the hand-written dk::Tensor::{name}; "
                               "drop 'method' from variants or set manual_cpp_binding: True")
    return PublicSignature(nf, name, is_method, sig, public)


def _trailing_defaults(nf: NativeFunction, bindings: Tuple[PublicBinding, ...]) -> Tuple[PublicBinding, ...]:
    """C++: no default before a parameter without one (or one cpp_no_default_args names)."""
    out = list(bindings)
    trailing = True
    for i in range(len(out) - 1, -1, -1):
        if out[i].default is None or out[i].binding.argument.name in nf.cpp_no_default_args:
            trailing = False
        if not trailing:
            out[i] = replace(out[i], default=None)
    return tuple(out)


# Note [Braced int lists]
# An int[]? argument is std::optional<IntArrayRef>, which a braced list such as {0, 1}
# cannot initialize. A function or method with such an argument therefore gets a second
# overload, its braced-list form, taking std::initializer_list<int64_t> there (no default),
# so that dk::sum(x, {0, 1}) works. A braced list binds to an initializer_list by a
# standard conversion, better than any user-defined one, so the two forms never compete.
def _is_optional_int_list(ctype: CType) -> bool:
    return ctype.is_optional and ctype.elem == dispatcher.INT_LIST


def _braced_form(sig: PublicSignature) -> Optional[PublicSignature]:
    if not any(_is_optional_int_list(b.binding.type) for b in sig.bindings):
        return None
    bindings = tuple(replace(b, braced=True, default=None) if _is_optional_int_list(b.binding.type)
                     else b for b in sig.bindings)
    return replace(sig, bindings=_trailing_defaults(sig.nf, bindings), braced_form=True)


# Note [Ambiguous defaults]
# Two overloads collide on a call of k arguments when both accept k arguments, at least
# one of them only thanks to defaults, and at every one of the k positions some argument
# expression converts to both parameter types. The kinds below say what converts to
# what (conservatively: an int literal converts to int64_t, double, bool, Scalar and,
# through ArrayRef's one-element constructor, IntArrayRef; a Tensor to ArrayRef<Tensor>).
_ALL_KINDS = frozenset({"tensor", "list", "braced_list", "number", "string", "dtype", "layout",
                        "memory_format", "device", "generator"})


def _accepts(binding: PublicBinding) -> FrozenSet[str]:
    if binding.braced:
        return frozenset({"braced_list"})  # Note [Braced int lists]: nothing else competes
    ctype = binding.binding.type
    inner = ctype.strip_optional()
    if ctype.is_ivalue:
        return _ALL_KINDS
    if inner.is_tensor:
        return frozenset({"tensor"})
    if inner.is_list and inner.elem.strip_optional().is_tensor:
        return frozenset({"tensor", "list"})
    if inner.value in _NUMBER_TYPES:
        return frozenset({"number"})
    if inner.is_list and inner.elem.value in _NUMBER_LIST_ELEMENTS:
        return frozenset({"number", "list"})
    kinds = {"std::string_view": "string", "ScalarType": "dtype", "Layout": "layout",
             "MemoryFormat": "memory_format", "Device": "device", "Generator": "generator"}
    return frozenset({kinds.get(inner.value, "other:" + inner.value)})


def _ambiguous_arity(a: PublicSignature, b: PublicSignature) -> Optional[int]:
    """The smallest call arity on which ``a`` and ``b`` collide because of defaults."""
    for k in range(max(a.min_arity, b.min_arity), min(a.max_arity, b.max_arity) + 1):
        if k == a.max_arity and k == b.max_arity:
            continue  # no defaults involved: plain overloading, not ours to fix
        if all(_accepts(a.bindings[i]) & _accepts(b.bindings[i]) for i in range(k)):
            return k
    return None


def resolve_ambiguous_defaults(group: Sequence[PublicSignature]) -> List[PublicSignature]:
    """Drop defaults until no two overloads of ``group`` (YAML order) collide."""
    sigs = list(group)
    changed = True
    while changed:
        changed = False
        for i in range(len(sigs)):
            for j in range(i + 1, len(sigs)):
                k = _ambiguous_arity(sigs[i], sigs[j])
                if k is None:
                    continue
                victim, other = (i, j) if sigs[i].max_arity > sigs[j].max_arity else (j, i)
                sigs[victim] = sigs[victim].without_defaults_through(k, str(sigs[other].nf.func.name))
                changed = True
    return sigs


def _grouped(sigs: List[PublicSignature]) -> Dict[NativeFunction, Tuple[PublicSignature, ...]]:
    """Each entry's signatures (its plain form, then its braced-list form if any), with
    defaults resolved within each group of one C++ name."""
    with_braced: List[PublicSignature] = []
    for sig in sigs:
        with_braced.append(sig)
        braced = _braced_form(sig)
        if braced is not None:
            with_braced.append(braced)
    groups: Dict[str, List[PublicSignature]] = {}
    for sig in with_braced:
        groups.setdefault(sig.name, []).append(sig)
    out: Dict[NativeFunction, Tuple[PublicSignature, ...]] = {}
    for group in groups.values():
        for sig in resolve_ambiguous_defaults(group):
            out[sig.nf] = out.get(sig.nf, ()) + (sig,)
    return out


# Note [Out spellings]
# An out= entry (add.out) gets, besides its plain function dk::add(self, other, alpha, out),
# the two spellings PyTorch's C++ API gives it: dk::add_out(out, self, other, alpha=1), the
# outputs first and the other arguments after them with their defaults, and
# dk::add_outf(self, other, alpha, out), the schema's order without defaults. An entry with
# two outputs (max.dim_max) takes both first, in schema order.
def out_first_signature(sig: PublicSignature) -> PublicSignature:
    out_names = {a.name for a in sig.nf.func.out}
    outs = tuple(replace(b, default=None) for b in sig.bindings if b.binding.argument.name in out_names)
    # The schema's defaults again: the plain form dropped those before its trailing outputs.
    rest = tuple(replace(b, default=default_expr(b.binding.argument, b.binding.type)) for b in sig.bindings
                 if b.binding.argument.name not in out_names)
    return replace(sig, name=sig.name + "_out", bindings=_trailing_defaults(sig.nf, outs + rest),
                   spelling="outputs first")


def out_last_signature(sig: PublicSignature) -> PublicSignature:
    return replace(sig, name=sig.name + "_outf", bindings=tuple(replace(b, default=None) for b in sig.bindings),
                   spelling="outputs last")


# Note [TensorOptions forms]
# An entry whose arguments include PyTorch's factory quartet, ``ScalarType? dtype, Layout?
# layout, Device? device, bool? pin_memory`` in that order (zeros, full, arange, rand,
# zeros_like, _to_copy, ...), gets one more free function, as torchgen gives it: the quartet
# replaced by one TensorOptions parameter, dk::zeros({2, 3}, dk::TensorOptions().dtype(dk::kDouble)),
# which also honours options.requires_grad() (the result is then a leaf that requires grad, as
# torch::zeros makes it). It is a template constrained to TensorOptions, so a call that passes a
# dtype (dk::zeros({2}, dk::kFloat)) still picks the plain overload; being a template, it takes
# no part in the default resolution above. The arguments before the quartet keep no defaults,
# those after it keep theirs.
OPTIONS_ACCESSORS = {"dtype": "dtype_opt", "layout": "layout_opt", "device": "device_opt",
                     "pin_memory": "pinned_memory_opt"}
_OPTIONS_TYPES = ("ScalarType?", "Layout?", "Device?", "bool?")


def options_signature(sig: PublicSignature) -> Optional[PublicSignature]:
    names = [b.binding.argument.name for b in sig.bindings]
    quartet = list(OPTIONS_ACCESSORS)
    for i in range(len(names) - 3):
        if names[i:i + 4] != quartet:
            continue
        if tuple(str(b.binding.argument.type) for b in sig.bindings[i:i + 4]) != _OPTIONS_TYPES:
            return None
        before = tuple(replace(b, default=None) for b in sig.bindings[:i])
        options = replace(sig.bindings[i], default=None, options=True)
        after = sig.bindings[i + 4:]
        return replace(sig, bindings=before + (options,) + after, options_form=True, ambiguous_with=())
    return None


def public_functions(nfs: Sequence[NativeFunction]) -> Dict[NativeFunction, Tuple[PublicSignature, ...]]:
    """The ``dk::op()`` free functions of every entry with the function variant: its plain
    form, and its braced-list form when it has an int[]? argument; an out= entry also its
    ``_out`` and ``_outf`` spellings (Note [Out spellings]); a factory its TensorOptions form
    (Note [TensorOptions forms])."""
    sigs: List[PublicSignature] = []
    for nf in nfs:
        if not nf.has_function_variant or nf.manual_cpp_binding:
            continue
        sig = public_signature(nf, False)
        sigs.append(sig)
        if nf.func.kind == "out":
            sigs.append(out_first_signature(sig))
            sigs.append(out_last_signature(sig))
    out = _grouped(sigs)
    for nf in list(out):
        plain = next((s for s in out[nf] if not s.braced_form and not s.spelling), None)
        form = options_signature(public_signature(nf, False)) if plain is not None else None
        if form is not None:
            out[nf] = out[nf] + (form,)
    return out


def public_methods(nfs: Sequence[NativeFunction]) -> Dict[NativeFunction, Tuple[PublicSignature, ...]]:
    """The ``tensor.op()`` methods of every entry with the method variant (as above)."""
    return _grouped([public_signature(nf, True) for nf in nfs
                     if nf.has_method_variant and not nf.manual_cpp_binding])
