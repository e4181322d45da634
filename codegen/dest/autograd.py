"""The autograd layer (Note [Generated autograd] in dk/autograd/functions.h):

- ``dk/generated/AutogradFunctions.h`` / ``AutogradFunctions.cpp``: one backward node class
  per derivatives.yaml entry (``MulBackward0``): what it saves, and ``apply`` running the
  formulas for the inputs that need a gradient;
- ``RegisterAutograd.cpp``: the kernels at the Autograd alias key. A differentiable operator
  decides whether to record (grad mode on and a differentiable input requiring grad), makes
  the node and saves what the formulas need, redispatches with ``ks & after_autograd_keyset``
  (below ADInplaceOrView for functional operators, only below autograd for in-place and view
  operators, whose ADInplaceOrView kernels must run) and attaches the node to the outputs.
  An operator with tensor outputs and no entry records a NotImplementedNode; an out= operator
  refuses inputs that require grad;
- ``RegisterADInplaceOrView.cpp``: in-place and out= operators bump the version counter of
  what they wrote; view operators make their outputs views of their input for autograd.
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from codegen.api import autograd as api
from codegen.api.dispatcher import argument_name
from codegen.derivatives import AutogradKernel, DerivativeInfo, SavedValue, is_view_operator
from codegen.dest.common import GenContext, Operator, forward_all, header_group, render
from codegen.model import ListType


def _cname(name: str) -> str:
    return argument_name(name)


@dataclass(frozen=True)
class Member:
    """One data member of a backward node, as its definition declares it."""

    type: str            # "SavedVariable", "int64_t"
    name: str            # "self_", "dim_"
    initializer: str     # "{}" or "" (codegen/api/autograd.py decides)


@dataclass(frozen=True)
class NodeClass:
    info: DerivativeInfo
    members: Tuple[Member, ...]
    releases: Tuple[str, ...]                # member names to reset_data()
    apply_lines: Tuple[str, ...]

    @property
    def name(self) -> str:
        return self.info.node

    @property
    def operator(self) -> str:
        return str(self.info.name)


def _range_lines(info: DerivativeInfo, count_of) -> List[str]:
    lines = ["IndexRangeGenerator gen;"]
    for a in info.differentiable_inputs:
        lines.append(f"const IndexRange {_cname(a.name)}_ix = gen.range({count_of(a)});")
    return lines


def node_class(info: DerivativeInfo) -> NodeClass:
    saved = [api.saved_member(s) for s in info.saved]
    members = [Member(m.type, m.name, m.initializer) for m in saved]
    releases: List[str] = [m.name for m in saved if m.releases]
    for a in info.list_inputs:
        members.append(Member(api.LIST_SIZE_TYPE, api.list_size_member(a.name),
                              api.member_initializer(api.LIST_SIZE_TYPE)))

    body: List[str] = _range_lines(
        info, lambda a: api.list_size_member(a.name) if isinstance(a.type, ListType) else "1")
    body.append("variable_list grad_inputs(gen.size());")
    if info.uses_grad:
        body.append("const Tensor& grad = grads[0];")
    for m in saved:
        if m.local is not None:
            body.append(f"{m.local_type} {m.local} = {m.unpack};")
    for f in info.formulas:
        ranges = ", ".join(f"{_cname(n)}_ix" for n in f.inputs)
        body.append(f"if (should_compute_output({{{ranges}}})) {{")
        if f.uses_grad_input_mask:
            mask = ", ".join(f"should_compute_output({_cname(n)}_ix)" for n in f.inputs)
            body.append(f"  const std::array<bool, {len(f.inputs)}> grad_input_mask{{{mask}}};")
        if len(f.inputs) == 1:
            body.append(f"  copy_range(grad_inputs, {_cname(f.inputs[0])}_ix, {f.cpp});")
        else:
            body.append(f"  const auto grad_result = {f.cpp};")
            for i, n in enumerate(f.inputs):
                body.append(f"  if (should_compute_output({_cname(n)}_ix)) "
                            f"copy_range(grad_inputs, {_cname(n)}_ix, std::get<{i}>(grad_result));")
        body.append("}")
    body.append("return grad_inputs;")
    return NodeClass(info, tuple(members), tuple(releases), tuple(body))


# ---------------------------------------------------------------- kernels


@dataclass(frozen=True)
class Kernel:
    op: Operator
    plan: AutogradKernel
    lines: Tuple[str, ...]

    @property
    def function(self) -> str:
        return f"{self.op.struct}_Autograd"

    @property
    def label(self) -> str:
        if self.plan.kind == "derivative":
            return self.plan.info.node
        return {"out": "out=: refuses grad", "not_implemented": "no derivative"}[self.plan.kind]


def _tensor_args(op: Operator, names: Optional[Sequence[str]] = None) -> List[str]:
    """C++ names of the tensor arguments (restricted to ``names``), in argument order."""
    return [b.name for b in op.dispatch_bindings if names is None or b.argument.name in names]


def _returns_tuple(op: Operator) -> bool:
    return len(op.nf.func.returns) > 1


def _result_expr(op: Operator, index: int) -> str:
    return f"std::get<{index}>(result)" if _returns_tuple(op) else "result"


def _redispatch_lines(op: Operator, plan: AutogradKernel) -> List[str]:
    guard = ("AutoDispatchBelowAutograd" if plan.is_inplace or plan.is_view or op.nf.func.is_out_fn
             else "AutoDispatchBelowADInplaceOrView")
    call = f"ops::{op.struct}::redispatch(ks & after_autograd_keyset, {forward_all(op.sig.bindings)})"
    lines = []
    if plan.is_inplace or op.nf.func.is_out_fn:
        lines += ["{", f"  {guard} guard;", f"  {call};", "}"]
    else:
        lines += [f"{op.sig.returns} result;", "{", f"  {guard} guard;", f"  result = {call};", "}"]
    return lines


def _returned(op: Operator) -> str:
    if op.nf.func.is_out_fn:
        outs = [_cname(a.name) for a in op.nf.func.out]
        return outs[0] if len(outs) == 1 else f"{op.sig.returns}({', '.join(outs)})"
    if op.nf.func.is_inplace:
        return "self"
    return "result"


def _save_line(s: SavedValue, condition: Optional[str]) -> str:
    line = f"grad_fn->{s.member} = {api.saved_member(s).save(_cname(s.source))};"
    return f"if ({condition}) {line}" if condition else line


def _conditions(info: DerivativeInfo) -> Optional[Dict[str, int]]:
    """Static output index of each differentiable input, or None when a list input makes
    them dynamic (then everything is saved)."""
    if info.list_inputs:
        return None
    return {a.name: i for i, a in enumerate(info.differentiable_inputs)}


def _condition(s: SavedValue, indices: Optional[Dict[str, int]], info: DerivativeInfo) -> Optional[str]:
    if indices is None or set(s.users) >= {a.name for a in info.differentiable_inputs}:
        return None
    checks = [f"grad_fn->should_compute_output({indices[u]})" for u in sorted(s.users, key=lambda u: indices[u])]
    return " || ".join(checks)


def _history_lines(op: Operator, plan: AutogradKernel, differentiable: Sequence[bool]) -> List[str]:
    """Attach grad_fn: rebase self's history (in-place), or make it the history of each
    differentiable output."""
    if plan.is_inplace:
        return ["  rebase_history(self, grad_fn);"]
    return [f"  set_history({_result_expr(op, i)}, grad_fn);" for i, d in enumerate(differentiable) if d]


def derivative_kernel(op: Operator, plan: AutogradKernel) -> List[str]:
    info = plan.info
    inputs = _tensor_args(op, [a.name for a in info.differentiable_inputs])
    requires = f"compute_requires_grad({', '.join(inputs)})"
    lines: List[str] = []
    lines.append(f"const bool requires_grad = {requires};")
    if plan.is_inplace:
        lines.append("check_inplace(self, requires_grad);")
    lines.append(f"std::shared_ptr<{info.node}> grad_fn;")
    lines.append("if (requires_grad) {")
    lines.append(f"  grad_fn = std::make_shared<{info.node}>();")
    lines.append(f"  grad_fn->set_next_edges(collect_next_edges({', '.join(inputs)}));")
    for a in info.list_inputs:
        lines.append(f"  grad_fn->{api.list_size_member(a.name)} = {_cname(a.name)}.size();")
    indices = _conditions(info)
    mutated = {a.name for a in op.nf.func.arguments if a.is_write}
    clones = []
    for s in info.saved_inputs:
        condition = _condition(s, indices, info)
        if s.kind == "tensor" and s.source in mutated:
            clones.append((s, condition))  # the value before the call: copied below
            continue
        lines.append("  " + _save_line(s, condition))
    for s, condition in clones:
        copy = f"grad_fn->{s.member} = {api.clone_store().format(_cname(s.source))};"
        lines.append(f"  {copy}" if not condition else f"  if ({condition}) {copy}")
    lines.append("}")
    lines += _redispatch_lines(op, plan)
    lines.append("if (grad_fn) {")
    lines += _history_lines(op, plan, info.output_differentiability)
    for s in info.saved_outputs:
        value = "self" if plan.is_inplace else _result_expr(op, s.result_index)
        lines.append(f"  grad_fn->{s.member} = {api.saved_member(s).save(value)};")
    lines.append("}")
    lines.append(f"return {_returned(op)};")
    return lines


def not_implemented_kernel(op: Operator, plan: AutogradKernel) -> List[str]:
    inputs = _tensor_args(op)
    lines = [f"const bool requires_grad = compute_requires_grad({', '.join(inputs)});"]
    if plan.is_inplace:
        lines.append("check_inplace(self, requires_grad);")
    lines += [
        "std::shared_ptr<NotImplementedNode> grad_fn;",
        "if (requires_grad) {",
        f"  grad_fn = std::make_shared<NotImplementedNode>(\"{op.nf.func.name}\");",
        f"  grad_fn->set_next_edges(collect_next_edges({', '.join(inputs)}));",
        "}",
    ]
    lines += _redispatch_lines(op, plan)
    lines.append("if (grad_fn) {")
    lines += _history_lines(op, plan, tuple(r.type.is_tensor_like() for r in op.nf.func.returns))
    lines.append("}")
    lines.append(f"return {_returned(op)};")
    return lines


def out_kernel(op: Operator, plan: AutogradKernel) -> List[str]:
    inputs = _tensor_args(op)
    lines = [f"autograd::detail::check_out_not_requiring_grad(\"{op.nf.func.name}\", "
             f"compute_requires_grad({', '.join(inputs)}));"]
    lines += _redispatch_lines(op, plan)
    lines.append(f"return {_returned(op)};")
    return lines


def autograd_kernel(op: Operator, plan: AutogradKernel) -> Kernel:
    make = {"derivative": derivative_kernel, "not_implemented": not_implemented_kernel, "out": out_kernel}
    return Kernel(op, plan, tuple(make[plan.kind](op, plan)))


# ---------------------------------------------------------------- ADInplaceOrView


@dataclass(frozen=True)
class InplaceOrViewKernel:
    op: Operator
    lines: Tuple[str, ...]
    what: str   # "in-place", "out=", "view"

    @property
    def function(self) -> str:
        return f"{self.op.struct}_ADInplaceOrView"


def inplace_or_view_kernel(op: Operator) -> Optional[InplaceOrViewKernel]:
    func = op.nf.func
    if op.nf.manual_kernel_registration or op.nf.has_composite_implicit_autograd_kernel:
        return None
    call = f"ops::{op.struct}::redispatch(ks & after_ADInplaceOrView_keyset, {forward_all(op.sig.bindings)})"
    if func.is_mutable:
        written = [_cname(a.name) for a in func.arguments if a.is_write]
        lines = [f"check_version_bump_allowed({w});" for w in written]
        lines += ["{", "  AutoDispatchBelowADInplaceOrView guard;", f"  {call};", "}"]
        lines += [f"increment_version({w});" for w in written]
        lines.append(f"return {_returned(op)};")
        return InplaceOrViewKernel(op, tuple(lines), "out=" if func.is_out_fn else "in-place")
    if is_view_operator(op.nf):
        self_arg = next(a for a in func.arguments if a.alias is not None)
        multi = isinstance(func.returns[0].type, ListType)
        lines = [f"{op.sig.returns} result;", "{", "  AutoDispatchBelowADInplaceOrView guard;",
                 f"  result = {call};", "}",
                 f"as_view({_cname(self_arg.name)}, result{', /*multi_output=*/true' if multi else ''});",
                 "return result;"]
        return InplaceOrViewKernel(op, tuple(lines), "view")
    return None


# ---------------------------------------------------------------- emit


def _formula_includes(ctx: GenContext, nodes: Sequence[NodeClass]) -> List[str]:
    """The function headers of the operators the backward formulas call, so that
    AutogradFunctions.cpp depends on those operators only."""
    functions = {op.nf.func.name.name: header_group(op.nf) for op in ctx.operators if op.nf.has_function_variant}
    called = set()
    for node in nodes:
        for line in node.apply_lines:
            called.update(re.findall(r"(?<![.\w>:])(?:dk::)?(\w+)\s*\(", line))
    return sorted(ctx.op_header(functions[name], "") for name in called if name in functions)



def emit(ctx: GenContext, files, plan: Sequence[AutogradKernel]) -> None:
    by_nf = {id(p.nf): p for p in plan}
    infos: Dict[str, DerivativeInfo] = {}
    for p in plan:
        if p.info is not None:
            infos.setdefault(p.info.node, p.info)
    nodes = [node_class(infos[name]) for name in sorted(infos)]
    kernels = [autograd_kernel(op, by_nf[id(op.nf)]) for op in ctx.operators if id(op.nf) in by_nf]
    adinplace = [k for k in (inplace_or_view_kernel(op) for op in ctx.operators) if k is not None]
    files.write(ctx.header("AutogradFunctions.h"), render(ctx, "AutogradFunctions.h.j2", nodes=nodes))
    files.write("AutogradFunctions.cpp", render(ctx, "AutogradFunctions.cpp.j2", nodes=nodes,
                                                 includes=_formula_includes(ctx, nodes)))
    files.write("RegisterAutograd.cpp", render(ctx, "RegisterAutograd.cpp.j2", kernels=kernels,
                                               includes=ctx.includes_for((k.op for k in kernels), adapters=False)))
    files.write("RegisterADInplaceOrView.cpp",
                render(ctx, "RegisterADInplaceOrView.cpp.j2", kernels=adinplace,
                       includes=ctx.includes_for((k.op for k in adinplace), adapters=False)))

