"""``RegisterFunctionalization.cpp`` and ``FunctionalInverses.h``: the kernels at Functionalize
(Note [Functionalization] in dk/func/functionalize.h).

- An operator that writes its arguments (in-place, out=) is run as its functional form (the
  operator of the same signature with nothing written: ``add_.Tensor`` and ``add.out`` ->
  ``add.Tensor``, ``max.dim_max`` -> ``max.dim``), and each written argument takes the matching
  result (the runtime's ``functionalizeMutation``).
- A view operator is run as its copying twin (tag ``view_copy``: ``select.int`` ->
  ``select_copy.int``, same arguments), and its result remembers how to be replayed from its base
  and how a changed value is written back: the view's inverse, declared in FunctionalInverses.h
  and written by hand in runtime/src/func/functional_inverses.cpp (``functionalizeView``).
- Other operators read their arguments only and go through the boxed fallback. Operators the
  generator finds no plan for are listed at the end of the file; the runtime refuses them with
  an error that names them.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from codegen.dest.common import GenContext, Operator, render
from codegen.model import NativeFunction
from codegen.schema import FunctionSchema

VIEW_COPY_TAG = "view_copy"


def is_view(nf: NativeFunction) -> bool:
    """Returns an alias of an input without writing it: ``Tensor(a)``, ``Tensor(a)[]``."""
    return any(r.alias is not None and not r.alias.is_write for r in nf.func.returns)


def _plain_arguments(func: FunctionSchema) -> Tuple:
    return func.signature().arguments


def inverse_name(nf: NativeFunction) -> str:
    """The C++ name of a view's inverse: ``select.int`` -> ``select_int_inverse``."""
    name = nf.func.name
    return f"{name.name}_{name.overload_name}_inverse" if name.overload_name else f"{name.name}_inverse"


def _functional_form(nf: NativeFunction, functionals: List[NativeFunction]) -> Optional[NativeFunction]:
    """The functional operator with nf's signature, preferring the one of nf's name less its
    underscore (``add_.Tensor`` -> ``add.Tensor``), then one of the same base name."""
    want = nf.func.signature()
    matches = [f for f in functionals if f.func.signature() == want]
    if not matches:
        return None
    base = nf.func.name.base_name
    same_name = [f for f in matches if f.func.name.name == base]
    if nf.func.is_inplace:
        exact = [f for f in same_name if f.func.name.overload_name == nf.func.name.overload_name]
        if exact:
            return exact[0]
    return (same_name or matches)[0]


def plan(ctx: GenContext):
    """(mutations, views, refused): (op, functional op) pairs, (op, view copy op, inverse)
    triples, and (op, why) for the operators with no functionalization."""
    nfs = [op.nf for op in ctx.operators]
    functionals = [nf for nf in nfs if nf.func.is_functional and not is_view(nf)]
    copies: Dict[str, NativeFunction] = {
        str(nf.func.name): nf for nf in nfs if VIEW_COPY_TAG in nf.tags}
    mutations: List[Tuple[str, str]] = []
    views: List[Tuple[str, str, str, str]] = []
    refused: List[Tuple[str, str]] = []
    for nf in nfs:
        name = str(nf.func.name)
        if nf.has_composite_implicit_autograd_kernel or not nf.func.dispatch_arguments:
            continue  # decomposes at Functionalize (CompositeImplicitAutograd covers it), or a factory
        if nf.func.is_mutable:
            if is_view(nf):
                refused.append((name, "writes an argument and returns a view of one"))
                continue
            functional = _functional_form(nf, functionals)
            if functional is None:
                refused.append((name, "writes an argument and has no functional form of the same signature"))
                continue
            mutations.append((name, f"{ctx.namespace}::{functional.func.name}"))
        elif is_view(nf):
            twin_name = nf.func.name.name + "_copy" + ("." + nf.func.name.overload_name if nf.func.name.overload_name else "")
            twin = copies.get(twin_name)
            if twin is None:
                refused.append((name, f"a view with no {twin_name} (tag view_copy) to replay it"))
                continue
            if _plain_arguments(twin.func) != _plain_arguments(nf.func):
                refused.append((name, f"a view whose {twin_name} takes other arguments"))
                continue
            views.append((name, f"{ctx.namespace}::{twin_name}", inverse_name(nf), str(nf.func)))
    return mutations, views, refused


def emit(ctx: GenContext, files) -> None:
    mutations, views, refused = plan(ctx)
    files.write("RegisterFunctionalization.cpp", render(
        ctx, "RegisterFunctionalization.cpp.j2", mutations=mutations, views=views, refused=refused))
    files.write(ctx.header("FunctionalInverses.h"), render(ctx, "FunctionalInverses.h.j2", views=views))
