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

Each is a view model of per-operator facts (``NodeClass``, ``Kernel``, ``InplaceOrViewKernel``),
built here from the model's ``AutogradKernel`` plan and ``codegen/api/autograd.py``'s spellings;
the templates lay them out (the redispatch block both Register files share is
``templates/autograd_macros.j2``).
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from codegen.api import autograd as api
from codegen.api.dispatcher import argument_name
from codegen.derivatives import AutogradKernel, DerivativeInfo, SavedValue, is_view_operator
from codegen.dest.common import GenContext, Operator, forward_all, header_group, render
from codegen.model import ListType


def _cname(name: str) -> str:
    return argument_name(name)


def _range(name: str) -> str:
    """The IndexRange of a differentiable input in apply(): ``self_ix``."""
    return f"{_cname(name)}_ix"


# ---------------------------------------------------------------- backward nodes


@dataclass(frozen=True)
class Member:
    """One data member of a backward node, as its definition declares it."""

    type: str            # "SavedVariable", "int64_t"
    name: str            # "self_", "dim_"
    initializer: str     # "{}" or "" (codegen/api/autograd.py decides)


@dataclass(frozen=True)
class InputRange:
    """The gradient slots of one differentiable input: ``const IndexRange <name> = gen.range(<size>)``."""

    name: str            # "self_ix"
    size: str            # "1", or a list input's size member "tensors_size_"


@dataclass(frozen=True)
class Local:
    """A local of apply() the formulas read: ``<type> <name> = <value>;``."""

    type: str            # "const Tensor"
    name: str            # "self"
    value: str           # "self_.unpack()"


@dataclass(frozen=True)
class Gradient:
    """One formula of apply(): computed when one of its inputs needs a gradient."""

    ranges: Tuple[str, ...]      # its inputs' ranges, in the order it returns their gradients
    expr: str                    # the formula (``Formula.cpp``)
    uses_grad_input_mask: bool   # declares grad_input_mask from the ranges

    @property
    def returns_tuple(self) -> bool:
        """Several inputs: the formula returns a tuple, one element per range."""
        return len(self.ranges) > 1


@dataclass(frozen=True)
class NodeClass:
    info: DerivativeInfo
    members: Tuple[Member, ...]
    releases: Tuple[str, ...]                # member names to reset_data()
    ranges: Tuple[InputRange, ...]
    uses_grad: bool                          # declares grad (grads[0])
    locals: Tuple[Local, ...]
    gradients: Tuple[Gradient, ...]

    @property
    def name(self) -> str:
        return self.info.node

    @property
    def operator(self) -> str:
        return str(self.info.name)


def node_class(info: DerivativeInfo) -> NodeClass:
    saved = [api.saved_member(s) for s in info.saved]
    members = [Member(m.type, m.name, m.initializer) for m in saved]
    for a in info.list_inputs:
        members.append(Member(api.LIST_SIZE_TYPE, api.list_size_member(a.name),
                              api.member_initializer(api.LIST_SIZE_TYPE)))
    ranges = tuple(InputRange(_range(a.name), api.list_size_member(a.name) if isinstance(a.type, ListType) else "1")
                   for a in info.differentiable_inputs)
    locals_ = tuple(Local(m.local_type, m.local, m.unpack) for m in saved if m.local is not None)
    gradients = tuple(Gradient(tuple(_range(n) for n in f.inputs), f.cpp, f.uses_grad_input_mask)
                      for f in info.formulas)
    return NodeClass(info, tuple(members), tuple(m.name for m in saved if m.releases), ranges, info.uses_grad,
                     locals_, gradients)


# ---------------------------------------------------------------- kernels


@dataclass(frozen=True)
class Redispatch:
    """The call below a layer, under a guard that excludes it (and what is above it)."""

    guard: str                  # "AutoDispatchBelowAutograd"
    call: str                   # "ops::mul_Tensor::redispatch(ks & after_autograd_keyset, self, other)"
    result_type: Optional[str]  # the C++ type of ``result`` the call's value is kept in; None: not kept


@dataclass(frozen=True)
class Save:
    """``[if (<condition>) ]grad_fn-><member> = <value>;``"""

    member: str
    value: str
    condition: Optional[str]


@dataclass(frozen=True)
class Kernel:
    """The kernel of one operator at the Autograd key (``plan.kind``: "derivative",
    "not_implemented", "out")."""

    op: Operator
    plan: AutogradKernel
    inputs: Tuple[str, ...]        # the tensors whose requires_grad is asked (the node's next edges)
    check_inplace: bool            # an in-place operator: check self may be written
    node: Optional[str]            # the node class made when recording; None for out=
    node_args: str                 # its constructor's arguments
    list_sizes: Tuple[Tuple[str, str], ...]   # (member, argument): the lengths of list inputs
    saves: Tuple[Save, ...]        # before the call
    redispatch: Redispatch
    rebase: Optional[str]          # in-place: the tensor whose history is rebased on the node
    histories: Tuple[str, ...]     # else: the outputs whose history the node becomes
    saved_outputs: Tuple[Save, ...]   # after the call
    returned: str

    @property
    def kind(self) -> str:
        return self.plan.kind

    @property
    def refuses_grad(self) -> bool:
        """An out= kernel: refuses inputs that require grad and records nothing."""
        return self.plan.kind == "out"

    @property
    def function(self) -> str:
        return f"{self.op.struct}_Autograd"

    @property
    def label(self) -> str:
        if self.plan.kind == "derivative":
            return self.plan.info.node
        return {"out": "out=: refuses grad", "not_implemented": "no derivative"}[self.plan.kind]


def _tensor_args(op: Operator, names: Optional[Sequence[str]] = None) -> Tuple[str, ...]:
    """C++ names of the tensor arguments (restricted to ``names``), in argument order."""
    return tuple(b.name for b in op.dispatch_bindings if names is None or b.argument.name in names)


def _returns_tuple(op: Operator) -> bool:
    return len(op.nf.func.returns) > 1


def _result_expr(op: Operator, index: int) -> str:
    return f"std::get<{index}>(result)" if _returns_tuple(op) else "result"


def _redispatch(op: Operator, plan: AutogradKernel) -> Redispatch:
    guard = ("AutoDispatchBelowAutograd" if plan.is_inplace or plan.is_view or op.nf.func.is_out_fn
             else "AutoDispatchBelowADInplaceOrView")
    call = f"ops::{op.struct}::redispatch(ks & after_autograd_keyset, {forward_all(op.sig.bindings)})"
    keeps = not (plan.is_inplace or op.nf.func.is_out_fn)
    return Redispatch(guard, call, op.sig.returns if keeps else None)


def _returned(op: Operator) -> str:
    if op.nf.func.is_out_fn:
        outs = [_cname(a.name) for a in op.nf.func.out]
        return outs[0] if len(outs) == 1 else f"{op.sig.returns}({', '.join(outs)})"
    if op.nf.func.is_inplace:
        return "self"
    return "result"


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


def _histories(op: Operator, plan: AutogradKernel, differentiable: Sequence[bool]) -> Tuple[Optional[str], Tuple[str, ...]]:
    """Attach grad_fn: rebase self's history (in-place), or make it the history of each
    differentiable output."""
    if plan.is_inplace:
        return "self", ()
    return None, tuple(_result_expr(op, i) for i, d in enumerate(differentiable) if d)


def _saves(op: Operator, info: DerivativeInfo) -> Tuple[Save, ...]:
    """What the forward call saves before it runs: the inputs the formulas read (only for the
    gradients wanted, where that is known statically); a tensor the call writes is saved as a
    copy of its value before the call, after the others."""
    indices = _conditions(info)
    mutated = {a.name for a in op.nf.func.arguments if a.is_write}
    saves: List[Save] = []
    clones: List[Save] = []
    for s in info.saved_inputs:
        condition = _condition(s, indices, info)
        source = _cname(s.source)
        if s.kind == "tensor" and s.source in mutated:
            clones.append(Save(s.member, api.clone_store().format(source), condition))
        else:
            saves.append(Save(s.member, api.saved_member(s).save(source), condition))
    return tuple(saves + clones)


def derivative_kernel(op: Operator, plan: AutogradKernel) -> Kernel:
    info = plan.info
    inputs = _tensor_args(op, [a.name for a in info.differentiable_inputs])
    list_sizes = tuple((api.list_size_member(a.name), _cname(a.name)) for a in info.list_inputs)
    rebase, histories = _histories(op, plan, info.output_differentiability)
    outputs = tuple(Save(s.member, api.saved_member(s).save("self" if plan.is_inplace else
                                                            _result_expr(op, s.result_index)), None)
                    for s in info.saved_outputs)
    return Kernel(op, plan, inputs, plan.is_inplace, info.node, "", list_sizes, _saves(op, info),
                  _redispatch(op, plan), rebase, histories, outputs, _returned(op))


def not_implemented_kernel(op: Operator, plan: AutogradKernel) -> Kernel:
    rebase, histories = _histories(op, plan, tuple(r.type.is_tensor_like() for r in op.nf.func.returns))
    return Kernel(op, plan, _tensor_args(op), plan.is_inplace, "NotImplementedNode", f'"{op.nf.func.name}"', (), (),
                  _redispatch(op, plan), rebase, histories, (), _returned(op))


def out_kernel(op: Operator, plan: AutogradKernel) -> Kernel:
    return Kernel(op, plan, _tensor_args(op), False, None, "", (), (), _redispatch(op, plan), None, (), (),
                  _returned(op))


def autograd_kernel(op: Operator, plan: AutogradKernel) -> Kernel:
    make = {"derivative": derivative_kernel, "not_implemented": not_implemented_kernel, "out": out_kernel}
    return make[plan.kind](op, plan)


# ---------------------------------------------------------------- ADInplaceOrView


@dataclass(frozen=True)
class InplaceOrViewKernel:
    op: Operator
    what: str                      # "in-place", "out=", "view"
    written: Tuple[str, ...]       # the tensors whose version is bumped (in-place, out=)
    redispatch: Redispatch
    view_of: Optional[str]         # a view operator: the input its result views
    multi_output: bool             # ... and the result is a list of views
    returned: str

    @property
    def function(self) -> str:
        return f"{self.op.struct}_ADInplaceOrView"


def inplace_or_view_kernel(op: Operator,
                           untracked_views: FrozenSet[str] = frozenset()) -> Optional[InplaceOrViewKernel]:
    func = op.nf.func
    if op.nf.manual_kernel_registration or op.nf.has_composite_implicit_autograd_kernel:
        return None
    call = f"ops::{op.struct}::redispatch(ks & after_ADInplaceOrView_keyset, {forward_all(op.sig.bindings)})"
    guard = "AutoDispatchBelowADInplaceOrView"
    if func.is_mutable:
        written = tuple(_cname(a.name) for a in func.arguments if a.is_write)
        return InplaceOrViewKernel(op, "out=" if func.is_out_fn else "in-place", written,
                                   Redispatch(guard, call, None), None, False, _returned(op))
    if is_view_operator(op.nf) and str(func.name) not in untracked_views:
        self_arg = next(a for a in func.arguments if a.alias is not None)
        multi = isinstance(func.returns[0].type, ListType)
        return InplaceOrViewKernel(op, "view", (), Redispatch(guard, call, op.sig.returns), _cname(self_arg.name),
                                   multi, "result")
    return None


# ---------------------------------------------------------------- emit


def _formula_includes(ctx: GenContext, nodes: Sequence[NodeClass]) -> List[str]:
    """The function headers of the operators the backward formulas call, so that
    AutogradFunctions.cpp depends on those operators only."""
    functions = {op.nf.func.name.name: header_group(op.nf) for op in ctx.operators if op.nf.has_function_variant}
    called = set()
    for node in nodes:
        for g in node.gradients:
            called.update(re.findall(r"(?<![.\w>:])(?:dk::)?(\w+)\s*\(", g.expr))
    return sorted(ctx.op_header(functions[name], "") for name in called if name in functions)


def emit(ctx: GenContext, files, plan: Sequence[AutogradKernel],
         untracked_views: FrozenSet[str] = frozenset()) -> None:
    by_nf = {id(p.nf): p for p in plan}
    infos: Dict[str, DerivativeInfo] = {}
    for p in plan:
        if p.info is not None:
            infos.setdefault(p.info.node, p.info)
    nodes = [node_class(infos[name]) for name in sorted(infos)]
    kernels = [autograd_kernel(op, by_nf[id(op.nf)]) for op in ctx.operators if id(op.nf) in by_nf]
    adinplace = [k for k in (inplace_or_view_kernel(op, untracked_views) for op in ctx.operators) if k is not None]
    # Per entry with a differentiable output, in operator order: whether opcheck runs double backward.
    entries = sorted({(str(i.name), i.twice_differentiable) for i in infos.values() if i.has_differentiable_output})
    files.write(ctx.header("AutogradFunctions.h"), render(ctx, "AutogradFunctions.h.j2", nodes=nodes, entries=entries))
    files.write("AutogradFunctions.cpp", render(ctx, "AutogradFunctions.cpp.j2", nodes=nodes,
                                                 includes=_formula_includes(ctx, nodes)))
    files.write("RegisterAutograd.cpp", render(ctx, "RegisterAutograd.cpp.j2", kernels=kernels,
                                               includes=ctx.includes_for((k.op for k in kernels), adapters=False)))
    files.write("RegisterADInplaceOrView.cpp",
                render(ctx, "RegisterADInplaceOrView.cpp.j2", kernels=adinplace,
                       includes=ctx.includes_for((k.op for k in adinplace), adapters=False)))

