"""The native kernel convention: the ``dk::native::<kernel>(args...)`` functions that a
``dispatch:`` entry names and that generated backend wrappers call.

A kernel takes exactly the dispatcher signature (``codegen.api.dispatcher``): same
parameter types, names and return type, no ``DispatchKeySet``, no defaults. A kernel
named without a namespace (``add_cpu``) lives in ``dk::native``; one written
``ns::name`` lives in ``ns`` as written. One C++ declaration serves every operator that
names the same kernel with the same signature.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.api.dispatcher import DispatcherSignature
from codegen.model import BackendMetadata

DEFAULT_NAMESPACE = "dk::native"


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

    def declaration(self) -> str:
        return self.signature.decl(self.name) + ";"


def kernel(metadata: BackendMetadata, signature: DispatcherSignature) -> NativeKernel:
    return NativeKernel(metadata.namespace or DEFAULT_NAMESPACE, metadata.kernel, signature)
