"""Structured operator families (model layer): an out= operator marked ``structured: True``
and the functional and in-place operators that name it in ``structured_delegate:``.

``resolve(native_functions)`` checks each family and gives every member the kernels the
family has: the out= operator's backend kernels (``CPU: add_out_cpu``) at the same keys, and a
``Meta`` kernel made from the meta function alone, all marked ``structured`` in their
``BackendMetadata``. Emitters then find a family with ``families()`` (Note [Structured kernels]
in runtime/include/dk/tensor/structured.h says what is generated).

Rules (errors name the entry's line):
  - the kernels at ``STRUCTURED_KEYS`` (CPU and CUDA, as in PyTorch) are the family's; a
    structured out= operator's kernels at other keys (``SparseCPU``) are ordinary kernels of
    that operator alone. It has no ``Meta`` kernel (it is generated) and no composite kernel;
  - it has exactly one functional delegate, at most one in-place delegate, and nothing else
    delegates to it;
  - a delegate is a form of the same operator (``gelu``, ``gelu_`` for ``gelu.out``), takes the
    out= operator's arguments less its outputs (names, types, defaults; the in-place one with
    ``Tensor(a!) self``), returns what it returns (less alias annotations and names), and has no
    kernel of its own at the family's keys (Meta included).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Dict, List, Optional, Sequence, Tuple

from codegen.dispatch_key import COMPOSITE_KEYS, DispatchKey
from codegen.errors import GenError
from codegen.model import BackendMetadata, NativeFunction, OperatorName

# The keys whose kernels are a family's impl classes (PyTorch's structured backends, less MPS).
STRUCTURED_KEYS = (DispatchKey.CPU, DispatchKey.CUDA)
# Where meta classes live (their Meta kernels name them there).
META_NAMESPACE = "dk::meta"


@dataclass(frozen=True, eq=False)
class StructuredFamily:
    """One structured family after ``resolve``."""

    out: NativeFunction
    functional: NativeFunction
    inplace: Optional[NativeFunction]

    @property
    def members(self) -> Tuple[NativeFunction, ...]:
        return tuple(nf for nf in (self.functional, self.inplace, self.out) if nf is not None)

    @property
    def meta_class(self) -> str:
        """``structured_add_Tensor``: named after the functional operator, as PyTorch does."""
        return f"structured_{self.functional.func.name.unambiguous_name}"

    @property
    def base_class(self) -> str:
        return self.out.structured_inherits or "MetaBase"

    @staticmethod
    def impl_class(kernel: BackendMetadata) -> str:
        """``structured_add_out_cpu``: the class of the backend kernel ``add_out_cpu``."""
        return f"structured_{kernel.kernel}"


def _arguments(nf: NativeFunction) -> str:
    """The arguments less outputs and alias annotations, as the schema writes them (``*`` included:
    a keyword-only argument is one in Python's bindings too)."""
    sig = nf.func.signature()
    return ", ".join([str(a) for a in sig.positional] + (["*"] if sig.kwarg_only else [])
                     + [str(a) for a in sig.kwarg_only])


def _returns_text(nf: NativeFunction) -> str:
    """The returns less alias annotations and names: what every member of a family returns."""
    return ", ".join(str(r) for r in nf.func.signature().returns)


def _error(nf: NativeFunction, detail: str) -> GenError:
    return GenError.at(nf.loc, detail, str(nf.func))


def _family_errors(out: NativeFunction, delegates: Sequence[NativeFunction]) -> List[GenError]:
    errors: List[GenError] = []
    if DispatchKey.Meta in out.dispatch:
        errors.append(_error(out, f"structured operator '{out.name}' gets its Meta kernel from its meta function; "
                                  "remove 'Meta' from its dispatch"))
    if any(k in out.dispatch for k in COMPOSITE_KEYS):
        errors.append(_error(out, f"structured operator '{out.name}' has backend kernels only, not composite ones"))
    functionals = [nf for nf in delegates if nf.func.kind == "functional"]
    inplaces = [nf for nf in delegates if nf.func.kind == "inplace"]
    for nf in delegates:
        if nf.func.kind not in ("functional", "inplace"):
            errors.append(_error(nf, f"only a functional or an in-place operator may delegate to '{out.name}'"))
    if not functionals:
        errors.append(_error(out, f"structured operator '{out.name}' has no functional form: give one entry "
                                  f"'structured_delegate: {out.name}'"))
    for extra in functionals[1:] + inplaces[1:]:
        errors.append(_error(extra, f"'{out.name}' already has a {extra.func.kind} delegate"))
    wanted = _arguments(out)
    for nf in delegates:
        if nf.func.name.base_name != out.func.name.name:
            errors.append(_error(nf, f"'{out.name}' is an out= form of another operator: a structured delegate is "
                                     f"a form of the same one, '{out.func.name.name}' or '{out.func.name.name}_'"))
        if _arguments(nf) != wanted:
            errors.append(_error(nf, f"a structured delegate takes the arguments of '{out.name}' less its outputs "
                                     f"({wanted}), not ({_arguments(nf)})"))
        # The generated wrapper returns the family's outputs (op.take_output(i)): as many as the
        # out= form writes, of its types. Another count would index past them at run time.
        if _returns_text(nf) != _returns_text(out):
            errors.append(_error(nf, f"a structured delegate returns what '{out.name}' returns "
                                     f"({_returns_text(out)}), not ({_returns_text(nf)})"))
        clash = sorted(k.name for k in nf.dispatch
                       if (k in out.dispatch and k in STRUCTURED_KEYS) or k == DispatchKey.Meta)
        if clash:
            errors.append(_error(nf, f"kernels at {', '.join(clash)} come from structured_delegate '{out.name}'; "
                                     "remove them"))
    return errors


def resolve(native_functions: Sequence[NativeFunction]) -> Tuple[NativeFunction, ...]:
    """The entries with every structured family's kernels filled in (module docstring); raises
    one GenError listing every broken family."""
    delegates: Dict[OperatorName, List[NativeFunction]] = {}
    for nf in native_functions:
        if nf.structured_delegate is not None:
            delegates.setdefault(nf.structured_delegate, []).append(nf)
    errors: List[GenError] = []
    replaced: Dict[int, NativeFunction] = {}
    for out in native_functions:
        if not out.structured:
            continue
        members = delegates.get(out.name, [])
        family_errors = _family_errors(out, members)
        if family_errors:
            errors.extend(family_errors)
            continue
        family = _family(out, members)
        kernels = {k: replace(m, structured=True) for k, m in out.dispatch.items() if k in STRUCTURED_KEYS}
        if kernels:
            kernels[DispatchKey.Meta] = BackendMetadata(family.meta_class, META_NAMESPACE, structured=True)
        for nf in [out] + members:
            table = {k: m for k, m in nf.dispatch.items() if k not in kernels}
            table.update(kernels)
            replaced[id(nf)] = replace(nf, dispatch=MappingProxyType(dict(sorted(table.items()))))
    if errors:
        raise GenError.combine(sorted(errors, key=lambda e: e.loc.line if e.loc else 0))
    return tuple(replaced.get(id(nf), nf) for nf in native_functions)


def _family(out: NativeFunction, delegates: Sequence[NativeFunction]) -> StructuredFamily:
    functional = next(nf for nf in delegates if nf.func.kind == "functional")
    inplace = next((nf for nf in delegates if nf.func.kind == "inplace"), None)
    return StructuredFamily(out, functional, inplace)


def families(native_functions: Sequence[NativeFunction]) -> Dict[OperatorName, StructuredFamily]:
    """Each resolved family by the name of every member (functional, in-place and out=)."""
    delegates: Dict[OperatorName, List[NativeFunction]] = {}
    for nf in native_functions:
        if nf.structured_delegate is not None:
            delegates.setdefault(nf.structured_delegate, []).append(nf)
    out: Dict[OperatorName, StructuredFamily] = {}
    for out_nf in native_functions:
        if out_nf.structured:
            family = _family(out_nf, delegates[out_nf.name])  # resolve() made sure there is a functional
            for nf in family.members:
                out[nf.name] = family
    return out
