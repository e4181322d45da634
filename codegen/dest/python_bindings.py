"""``PythonFunctions.cpp``: the table behind the Python module's operators (python/,
Note [Python bindings] in python/src/python_functions.h).

One row per operator overload a Python user can call: its Python name, whether it is
``dispatchkit.<name>`` and/or ``Tensor.<name>`` (the YAML's ``variants``), the Python module
(``python_module: nn`` puts it in ``dispatchkit._C._nn``), and the out= overload merged into it
as the ``out`` keyword (as PyTorch's Python API does: ``dk.add(a, b, out=c)`` calls
``add.out``). Rows of one name are in the order the argument parser tries them: an overload
taking a Tensor where another takes a number comes first, so that a tensor argument never
matches a Scalar parameter of an earlier overload.

The parsing itself is schema-driven at run time: the module reads each operator's schema from
the dispatcher, so this table is all an operator needs to be callable from Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from codegen.dest.common import GenContext, Operator, render
from codegen.schema import Argument, FunctionSchema, Type


@dataclass(frozen=True)
class PythonRow:
    python_name: str          # "add", "add_"
    module: str               # "" (dispatchkit) or "nn"
    op: Operator              # the operator called without out=
    out: Optional[Operator]   # the operator called with out=, or None
    function: bool            # dispatchkit.<name>
    method: bool              # Tensor.<name>
    signature: str            # the Python signature, for the comment: "add(Tensor input, ...)"

    @property
    def variants(self) -> str:
        flags = [f for f, on in (("kFunction", self.function), ("kMethod", self.method)) if on]
        return " | ".join(flags)


_PY_TYPES = {
    "Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float", "bool": "bool", "str": "str",
    "Scalar": "Number", "ScalarType": "dtype", "Layout": "layout", "Device": "device",
    "MemoryFormat": "memory_format", "Generator": "Generator",
}


def python_type(t: Type) -> str:
    """The name the Python signature uses for ``t`` (the runtime's error messages use the same):
    ``Tensor``, ``Number``, ``tuple of ints``, ``tuple of Tensors``, ``dtype``."""
    text = str(t)
    optional = text.endswith("?")
    base = text[:-1] if optional else text
    if base.endswith("]"):
        elem = base[: base.index("[")]
        elem = elem[:-1] if elem.endswith("?") else elem
        name = {"Tensor": "tuple of Tensors", "int": "tuple of ints", "SymInt": "tuple of ints",
                "float": "tuple of floats", "bool": "tuple of bools"}.get(elem, f"tuple of {elem}")
    else:
        name = _PY_TYPES.get(base, base)
    return name


def _param(arg: Argument, method: bool) -> str:
    name = "input" if arg.name == "self" and not method else arg.name
    text = f"{python_type(arg.type)} {name}"
    if arg.default is not None:
        text += "=" + arg.default
    return text


def is_factory(schema: FunctionSchema) -> bool:
    """Takes dtype, layout, device and pin_memory: Python adds ``requires_grad`` (PyTorch's
    factories do the same; the runtime applies it to the result)."""
    names = {a.name for a in schema.kwarg_only + schema.positional}
    return {"dtype", "layout", "device", "pin_memory"} <= names


def python_signature(name: str, schema: FunctionSchema, out_schema: Optional[FunctionSchema], method: bool) -> str:
    """``add(Tensor input, Tensor other, *, Number alpha=1, Tensor out=None)``; a method's
    first parameter is ``self``."""
    params = [_param(a, method) for a in schema.positional]
    kw = [_param(a, method) for a in schema.kwarg_only]
    if is_factory(schema):
        kw.append("bool requires_grad=False")
    outs = (out_schema or schema).out
    if outs:
        out_type = "Tensor" if len(outs) == 1 else "tuple of Tensors"
        kw.append(f"{out_type} out=None")
    if kw:
        params += ["*"] + kw
    return f"{name}({', '.join(params)})"


def _order_key(op: Operator) -> Tuple[int, ...]:
    """Positional parameters, 0 where a Tensor is taken, 1 elsewhere: tuples compare so that the
    overload taking Tensors is tried before the one taking numbers at the same place."""
    return tuple(0 if a.type.is_tensor_like() else 1 for a in op.nf.func.positional)


def rows(ctx: GenContext) -> List[PythonRow]:
    ops = [op for op in ctx.operators if op.namespace == ctx.namespace]
    plain: Dict[FunctionSchema, Operator] = {}  # the functional overloads, by what out= variants share
    for op in ops:
        if op.nf.func.kind == "functional":
            plain.setdefault(op.nf.func.signature(), op)
    merged: Dict[str, Operator] = {}  # functional overload -> its out= overload
    lone_outs: List[Operator] = []
    for op in ops:
        if not op.nf.func.is_out_fn:
            continue
        functional = plain.get(op.nf.func.signature())
        if functional is not None and functional.qualified not in merged:
            merged[functional.qualified] = op
        else:
            lone_outs.append(op)
    out: List[PythonRow] = []
    callable_ops = [op for op in ops if not op.nf.func.is_out_fn] + lone_outs
    for op in callable_ops:
        nf = op.nf
        name = nf.func.name.name
        out_op = merged.get(op.qualified)
        out.append(PythonRow(
            python_name=name, module=nf.python_module or "", op=op, out=out_op,
            function=nf.has_function_variant, method=nf.has_method_variant and nf.func.self_argument is not None,
            signature=python_signature(name, nf.func, out_op.nf.func if out_op else None,
                                       method=not nf.has_function_variant)))
    out = [r for r in out if r.function or r.method]
    out.sort(key=lambda r: (r.module, r.python_name, _order_key(r.op), r.op.overload))
    return out


def emit(ctx: GenContext, files) -> None:
    files.write("PythonFunctions.cpp", render(ctx, "PythonFunctions.cpp.j2", rows=rows(ctx)))
