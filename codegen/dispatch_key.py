"""The dispatch keys the generator knows: the runtime's keys and alias keys, by name.

Mirrors ``dk::DispatchKey`` (runtime/include/dk, docs/semantics.md section 1). Names
are spelled exactly as in C++, so ``key.name`` is what generated code writes.
A YAML ``dispatch:`` map may name runtime keys and alias keys; ``Undefined`` is
not a key one registers kernels at, so it is not listed here.
"""

from __future__ import annotations

import enum
from typing import Optional


class DispatchKey(enum.Enum):
    """A key a kernel can be registered at. Values give a stable sort order."""

    # Runtime keys: one table slot each. Per-backend functionalities, backend by backend.
    CPU = 1
    CUDA = 2
    PrivateUse1 = 3
    PrivateUse2 = 4
    Meta = 5
    QuantizedCPU = 6
    QuantizedCUDA = 7
    QuantizedPrivateUse1 = 8
    QuantizedPrivateUse2 = 9
    QuantizedMeta = 10
    SparseCPU = 11
    SparseCUDA = 12
    SparsePrivateUse1 = 13
    SparsePrivateUse2 = 14
    SparseMeta = 15
    BackendSelect = 16
    Python = 17
    Functionalize = 18
    ADInplaceOrView = 19
    AutogradOther = 20
    AutogradCPU = 21
    AutogradCUDA = 22
    AutogradPrivateUse1 = 23
    AutogradPrivateUse2 = 24
    AutogradMeta = 25
    Tracer = 26
    AutocastCPU = 27
    AutocastCUDA = 28
    FuncTorchBatched = 29
    TESTING_ONLY_GenericWrapper = 30
    TESTING_ONLY_GenericMode = 31
    # Alias keys: no slot of their own; they expand to runtime keys at registration.
    Autograd = 100
    CompositeImplicitAutograd = 101
    CompositeExplicitAutograd = 102
    CompositeExplicitAutogradNonFunctional = 103

    def __str__(self) -> str:
        return self.name

    def __lt__(self, other: "DispatchKey") -> bool:
        if not isinstance(other, DispatchKey):
            return NotImplemented
        return self.value < other.value

    @property
    def is_alias(self) -> bool:
        return self in ALIAS_KEYS

    @property
    def is_runtime(self) -> bool:
        return not self.is_alias

    @classmethod
    def parse(cls, name: str) -> Optional["DispatchKey"]:
        """The key spelled ``name``, or None when the generator knows no such key."""
        return cls.__members__.get(name)


ALIAS_KEYS = frozenset(
    {
        DispatchKey.Autograd,
        DispatchKey.CompositeImplicitAutograd,
        DispatchKey.CompositeExplicitAutograd,
        DispatchKey.CompositeExplicitAutogradNonFunctional,
    }
)

# At most one of these may appear in an operator's dispatch map: each subsumes the next.
COMPOSITE_KEYS = (
    DispatchKey.CompositeImplicitAutograd,
    DispatchKey.CompositeExplicitAutograd,
    DispatchKey.CompositeExplicitAutogradNonFunctional,
)
