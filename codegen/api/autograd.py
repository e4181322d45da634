"""The autograd convention: how a backward node spells in C++ what it saves.

``codegen.derivatives`` (the model) says what a node saves: a ``SavedValue`` of some kind, taken
from an argument or a result, maybe one of its properties, with the schema type. This module says
how C++ writes it (``saved_member``): the member's type and initialiser, the expression the
forward call stores in it (``SavedMember.save``), and the local ``apply()`` unpacks it into for the
formulas. The forward call names arguments as the dispatcher convention does
(``dispatcher.argument_name``: topk's ``k`` is ``k_``); apply() is not such a function, so its
locals take the names the formulas use (``k``), unpacked from the members (``k_``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from codegen.derivatives import ARGS_SIZES, SavedValue
from codegen.model import BaseType, ListType, OptionalType, Type

SAVED_VARIABLE = "SavedVariable"
SAVED_VARIABLE_LIST = "std::vector<SavedVariable>"

# A saved property: (member type, how the forward call takes it from the tensor; {} = the tensor).
PROPERTY_TYPES = {
    "sizes": ("std::vector<int64_t>", "{}.sizes()"),
    "strides": ("std::vector<int64_t>", "{}.strides()"),
    "scalar_type": ("ScalarType", "{}.scalar_type()"),
    "dim": ("int64_t", "{}.dim()"),
    "device": ("Device", "{}.device()"),
    ARGS_SIZES: ("std::vector<std::vector<int64_t>>", "autograd::detail::args_sizes({})"),
}
# The owning C++ types of saved non-tensor arguments, by schema base type (the model's
# SAVEABLE_BASE_TYPES) and list element type (SAVEABLE_LIST_ELEMENTS).
VALUE_TYPES = {
    "int": "int64_t", "SymInt": "int64_t", "float": "double", "bool": "bool", "Scalar": "Scalar",
    "str": "std::string", "ScalarType": "ScalarType", "Layout": "Layout", "Device": "Device",
    "MemoryFormat": "MemoryFormat",
}
LIST_TYPES = {"int": "std::vector<int64_t>", "SymInt": "std::vector<int64_t>", "float": "std::vector<double>"}
# Members C++ would leave uninitialised: value-initialised ({}) in the node's definition.
_ARITHMETIC = frozenset({"size_t", "int64_t", "bool", "double"})


def member_initializer(cpp_type: str) -> str:
    """``{}`` for an arithmetic member (which C++ leaves uninitialised), else nothing."""
    return "{}" if cpp_type in _ARITHMETIC else ""


def value_type(t: Type) -> Tuple[str, str]:
    """(owning C++ type, how the forward call copies the argument; {} = its C++ name) of a
    saved non-tensor argument of schema type ``t`` (one ``derivatives.unsaveable_part`` accepts)."""
    if isinstance(t, OptionalType):
        inner, _ = value_type(t.elem)
        if isinstance(t.elem, ListType) or t.elem == BaseType("str"):
            return f"std::optional<{inner}>", "autograd::detail::owned({})"
        return f"std::optional<{inner}>", "{}"
    if isinstance(t, ListType):
        return LIST_TYPES[t.elem.name], "{}.vec()"
    return VALUE_TYPES[t.name], "std::string({})" if t.name == "str" else "{}"


@dataclass(frozen=True)
class SavedMember:
    """One saved value as C++ writes it."""

    name: str               # the member: "self_", "self_sizes_"
    type: str               # its type: "SavedVariable", "std::vector<int64_t>"
    initializer: str        # after the member's name in the node: "{}" or ""
    store: str              # what the forward call stores in it; {} = the source's expression
    local: Optional[str]    # the local apply() unpacks it into ("self"); None: formulas read the member
    local_type: str         # that local's declared type: "const Tensor", "const auto&"
    unpack: str             # the local's initialiser: "self_.unpack()"
    releases: bool          # release_variables() releases it (a SavedVariable or a list of them)

    def save(self, source: str) -> str:
        """The value stored from ``source`` (a parameter, ``result``, ``std::get<1>(result)``)."""
        return self.store.format(source)


def saved_member(s: SavedValue) -> SavedMember:
    kind, member = s.kind, s.member
    if kind == "tensor":
        return SavedMember(member, SAVED_VARIABLE, "", "SavedVariable({}, false)", s.source,
                           "const Tensor", f"{member}.unpack()", True)
    if kind == "optional_tensor":
        return SavedMember(member, SAVED_VARIABLE, "", "SavedVariable({}.value_or(Tensor()), false)",
                           s.source, "const std::optional<Tensor>",
                           f"detail::unpack_optional({member})", True)
    if kind == "tensor_list":
        return SavedMember(member, SAVED_VARIABLE_LIST, "", "autograd::detail::save_list({})",
                           s.source, "const std::vector<Tensor>", f"detail::unpack_list({member})",
                           True)
    if kind == "output":
        return SavedMember(member, SAVED_VARIABLE, "", "SavedVariable({}, true)", s.source, "const Tensor",
                           f"{member}.unpack(shared_from_this())", True)
    if kind == "property":
        cpp_type, store = PROPERTY_TYPES[s.property]
        return SavedMember(member, cpp_type, member_initializer(cpp_type), store, None, "", "", False)
    if kind == "value":
        cpp_type, store = value_type(s.type)
        return SavedMember(member, cpp_type, member_initializer(cpp_type), store, s.source,
                           "const auto&", member, False)
    raise ValueError(f"internal error: no C++ spelling for a saved value of kind '{kind}'")


def clone_store() -> str:
    """What the forward call stores for a tensor it is about to write (its value before the
    call); {} = the tensor."""
    return "SavedVariable(autograd::detail::clone_for_backward({}), false)"


def list_size_member(argument: str) -> str:
    """The member holding the length of a differentiable Tensor[] argument."""
    return f"{argument}_size_"


LIST_SIZE_TYPE = "size_t"
