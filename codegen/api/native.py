"""The native kernel convention: the ``dk::native::<kernel>(args...)`` functions that a
``dispatch:`` entry names and that generated backend wrappers call.

A kernel takes exactly the dispatcher signature (``codegen.api.dispatcher``): same
parameter types, names and return type, no ``DispatchKeySet``, no defaults. A kernel
named without a namespace (``add_cpu``) lives in ``dk::native``; one written
``dk::ns::name`` lives in ``dk::ns``, one written ``::ns::name`` in ``ns``, where its
declaration names dk's types fully qualified (``const ::dk::Tensor&``). One C++ declaration
serves every operator that names the same kernel with the same signature.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.api.dispatcher import CType, DispatcherSignature
from codegen.model import BackendMetadata

DEFAULT_NAMESPACE = "dk::native"


def qualify_dk_type(ctype: CType) -> str:
    """``const Tensor&`` -> ``const ::dk::Tensor&``: a C++ type as code outside dk names it."""
    return ctype.spelled(lambda name: "::dk::" + name)


@dataclass(frozen=True)
class NativeKernel:
    """One kernel declaration: where it lives, its name, and its signature."""

    namespace: str
    name: str
    signature: DispatcherSignature

    @property
    def qualified(self) -> str:
        """How generated code inside ``namespace dk`` names it: ``native::add_cpu``."""
        if self.namespace == DEFAULT_NAMESPACE:
            return f"native::{self.name}"
        return f"::{self.namespace}::{self.name}"

    @property
    def key(self):
        """What makes two declarations the same one."""
        return (self.namespace, self.name, self.signature.canonical)

    @property
    def inside_dk(self) -> bool:
        return self.namespace == "dk" or self.namespace.startswith("dk::")

    def declaration(self) -> str:
        if self.inside_dk:
            return self.signature.decl(self.name) + ";"
        params = ", ".join(f"{qualify_dk_type(b.type)} {b.name}" for b in self.signature.bindings)
        return f"{qualify_dk_type(self.signature.return_type)} {self.name}({params});"


def kernel(metadata: BackendMetadata, signature: DispatcherSignature) -> NativeKernel:
    return NativeKernel(metadata.namespace or DEFAULT_NAMESPACE, metadata.kernel, signature)
