"""What the generated C++ requires of the model, checked before anything is generated.

``native_yaml`` checks each entry against the schema language and the YAML format; the
rules here are those of the C++ the writers (codegen/dest/) produce: at most 64 arguments,
distinct ``dk::ops`` struct names, and a public API that C++ can spell (function and method
names that are not keywords or hand-written members, defaults with a C++ spelling).
``gen.py`` runs them right after loading, for ``--check`` as for ``--out``, so a run that
would fail while writing fails before any file is touched, with every error located.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

from codegen.api import cpp, dispatcher
from codegen.errors import GenError
from codegen.model import NativeFunction


def dispatcher_errors(native_functions: Sequence[NativeFunction]) -> List[GenError]:
    """Operators the dispatcher convention cannot express, and struct names that collide."""
    errors: List[GenError] = []
    structs: Dict[str, NativeFunction] = {}
    for nf in sorted(native_functions, key=lambda nf: (nf.func.name.name, nf.func.name.overload_name)):
        try:
            dispatcher.check_operator(nf)
        except GenError as e:
            errors.append(e)
        struct = dispatcher.struct_name(nf.func.name)
        if struct in structs:
            errors.append(GenError.at(nf.loc, f"C++ struct name '{struct}' is also that of "
                                              f"'{structs[struct].func.name}'", str(nf.func)))
        structs[struct] = nf
    return errors


def public_api_errors(native_functions: Sequence[NativeFunction]) -> List[GenError]:
    """Entries whose ``dk::op()`` function or ``tensor.op()`` method C++ cannot declare."""
    errors: List[GenError] = []
    for nf in native_functions:
        if nf.manual_cpp_binding:
            continue
        for is_method, wanted in ((False, nf.has_function_variant), (True, nf.has_method_variant)):
            if not wanted:
                continue
            try:
                cpp.public_signature(nf, is_method)
            except GenError as e:
                errors.append(e)
                break  # one error per entry: the second would repeat the first
    return errors


def check_model(native_functions: Sequence[NativeFunction], public_api: bool = True) -> None:
    """Raise one GenError with every problem, in line order (``public_api``: also check the
    public functions and methods, which only the full output has)."""
    errors = dispatcher_errors(native_functions)
    if public_api:
        errors.extend(public_api_errors(native_functions))
    if errors:
        errors.sort(key=lambda e: e.loc.line if e.loc else 0)
        raise GenError.combine(errors)
