"""The boxed calling convention: an operator call as a ``dk::Stack`` of ``IValue``s.

Arguments are pushed in schema order (argument 0 deepest, the last argument on top);
a kernel pops all of them and pushes its returns in order (none for ``()``, one per
tuple element otherwise). The ``DispatchKeySet`` is never on the stack (runtime Note
[Kernel calling conventions]). This module gives, per C++ type of the dispatcher
convention, the explicit code that moves a value on and off the stack: direct
``IValue`` accessors for the simple kinds, ``dk::BoxingTraits<T>`` for the rest
(Note [Unboxing holders] in runtime/include/dk/dispatch/boxing.h).
"""

from __future__ import annotations

from typing import List, Tuple

from codegen.api.dispatcher import CType

# Value types an IValue holds directly, and the accessor that reads each.
_ACCESSORS = {
    "Tensor": "toTensor",
    "int64_t": "toInt",
    "double": "toDouble",
    "bool": "toBool",
    "ScalarType": "toScalarType",
    "Layout": "toLayout",
    "MemoryFormat": "toMemoryFormat",
    "Device": "toDevice",
}


def _traits(value: str) -> str:
    return f"BoxingTraits<{value}>"


def _holder_is_value(value: str) -> bool:
    """Unboxing gives the value itself, not storage the value views (string, list)."""
    return "ArrayRef" not in value and "string_view" not in value


def unbox_argument(ctype: CType, slot: str, var: str) -> Tuple[List[str], str]:
    """Statements that unbox the argument in ``slot`` (an ``IValue`` lvalue that stays on
    the stack until the kernel returns) into a local ``var``, and the expression that
    passes it to the kernel."""
    value = ctype.value
    if value == "Tensor":
        return [f"Tensor {var} = std::move({slot}).toTensor();"], var
    if value in _ACCESSORS:
        return [f"{value} {var} = {slot}.{_ACCESSORS[value]}();"], var
    if value == "std::string_view":
        return [f"std::string_view {var} = {slot}.toStringRef();"], var
    if value == "IValue":
        return [f"IValue {var} = std::move({slot});"], var
    if _holder_is_value(value):
        return [f"{value} {var} = {_traits(value)}::unbox(std::move({slot}));"], var
    return ([f"{_traits(value)}::Holder {var} = {_traits(value)}::unbox(std::move({slot}));"],
            f"{_traits(value)}::view({var})")


def push_argument(ctype: CType, stack: str, expr: str) -> str:
    """The statement that boxes argument ``expr`` onto ``stack`` (a ``Stack`` lvalue)."""
    value = ctype.value
    if value in _ACCESSORS or value == "std::string_view" or value == "IValue":
        return f"{stack}.emplace_back({expr});"
    return f"{stack}.push_back({_traits(value)}::box({expr}));"


def push_return(value: str, stack: str, expr: str) -> str:
    """The statement that pushes return value ``expr`` (a local the adapter owns) onto
    ``stack`` (a ``Stack*``)."""
    if value in _ACCESSORS or value == "IValue":
        return f"{stack}->emplace_back(std::move({expr}));" if value in ("Tensor", "IValue") \
            else f"{stack}->emplace_back({expr});"
    return f"{stack}->push_back({_traits(value)}::box({expr}));"


def pop_return(value: str, slot: str) -> str:
    """The expression that unboxes one return value from ``slot`` (an ``IValue`` lvalue)."""
    if value == "Tensor":
        return f"std::move({slot}).toTensor()"
    if value in _ACCESSORS:
        return f"{slot}.{_ACCESSORS[value]}()"
    if value == "IValue":
        return f"std::move({slot})"
    return f"{_traits(value)}::unbox(std::move({slot}))"
