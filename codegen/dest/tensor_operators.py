"""``TensorOperators.h``: C++ operators on tensors (``a + b``, ``a * 2``, ``-a``), each a call
of a generated public function. A row appears only when the operators it calls exist
with the function variant, so a small YAML gives a small (possibly empty) header.

``Scalar / Tensor`` is left out: it needs a reciprocal operator the project does not
define.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from codegen.dest.common import GenContext, header_group, render

_T_T = "const Tensor& a, const Tensor& b"
_T_S = "const Tensor& a, const Scalar& b"
_S_T = "const Scalar& a, const Tensor& b"


@dataclass(frozen=True)
class OperatorRow:
    symbol: str                 # "+"
    params: str                 # "const Tensor& a, const Scalar& b"
    needs: Tuple[str, ...]      # the operators called, "add.Scalar"
    body: str                   # "add(a, b)", calling functions of Functions.h

    @property
    def comment(self) -> str:
        return ", ".join(self.needs)


ROWS = (
    OperatorRow("+", _T_T, ("add.Tensor",), "add(a, b)"),
    OperatorRow("+", _T_S, ("add.Scalar",), "add(a, b)"),
    OperatorRow("+", _S_T, ("add.Scalar",), "add(b, a)"),
    OperatorRow("-", _T_T, ("sub.Tensor",), "sub(a, b)"),
    OperatorRow("-", _T_S, ("sub.Scalar",), "sub(a, b)"),
    OperatorRow("-", _S_T, ("neg", "add.Scalar"), "add(neg(b), a)"),
    OperatorRow("*", _T_T, ("mul.Tensor",), "mul(a, b)"),
    OperatorRow("*", _T_S, ("mul.Scalar",), "mul(a, b)"),
    OperatorRow("*", _S_T, ("mul.Scalar",), "mul(b, a)"),
    OperatorRow("/", _T_T, ("div.Tensor",), "div(a, b)"),
    OperatorRow("/", _T_S, ("div.Scalar",), "div(a, b)"),
    OperatorRow("-", "const Tensor& a", ("neg",), "neg(a)"),
)


def emit(ctx: GenContext, files) -> None:
    available = {str(op.nf.func.name) for op in ctx.operators
                 if op.nf.has_function_variant and not op.nf.manual_cpp_binding}
    rows = [row for row in ROWS if all(name in available for name in row.needs)]
    by_name = {str(op.nf.func.name): op for op in ctx.operators}
    groups = sorted({header_group(by_name[name].nf) for row in rows for name in row.needs})
    files.write(ctx.header("TensorOperators.h"), render(ctx, "TensorOperators.h.j2", rows=rows,
                                                        includes=[ctx.op_header(g, "") for g in groups]))
