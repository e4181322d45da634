"""The dispatch keys the generator knows: the runtime's keys and alias keys, by name.

Mirrors ``dk::DispatchKey`` (runtime/include/dk, docs/semantics.md section 1). Names
are spelled exactly as in C++, so ``key.name`` is what generated code writes.
A YAML ``dispatch:`` map may name runtime keys and alias keys; ``Undefined`` is
not a key one registers kernels at, so it is not listed here.

The key table also says what each key is for, so no later layer reads a key's name:
``key.backend`` and ``key.functionality`` for the per-backend keys, ``key.is_backend``
(``BACKEND_KEYS``: generated wrappers there check devices), ``key.is_cuda`` (``CUDA_KEYS``:
they also guard the CUDA device) and ``AUTOCAST_KEYS`` (each device type's autocast key).
"""

from __future__ import annotations

import enum
from typing import Dict, Optional, Tuple


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

    @property
    def functionality(self) -> Optional[str]:
        """A per-backend runtime key's functionality ("Dense", "Quantized", "Sparse",
        "AutogradFunctionality"); None for every other key."""
        entry = _PER_BACKEND.get(self)
        return entry[0] if entry else None

    @property
    def backend(self) -> Optional[str]:
        """A per-backend runtime key's backend component ("CPU", "CUDA", "PrivateUse1",
        "PrivateUse2", "Meta"); None for every other key (dk::toBackendComponent)."""
        entry = _PER_BACKEND.get(self)
        return entry[1] if entry else None

    @property
    def is_backend(self) -> bool:
        """A backend key: a kernel here sees tensors of one backend (CPU, QuantizedCUDA,
        SparseMeta, ...; not the Autograd keys, which are per-backend too)."""
        return self in BACKEND_KEYS

    @property
    def is_cuda(self) -> bool:
        """A backend key of the CUDA backend: CUDA, QuantizedCUDA, SparseCUDA."""
        return self in CUDA_KEYS

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

# The per-backend runtime keys, as the runtime composes them (dk/core/dispatch_key.h): one
# per-backend functionality for one backend component.
_K = DispatchKey
_PER_BACKEND: Dict[DispatchKey, Tuple[str, str]] = {
    _K.CPU: ("Dense", "CPU"),
    _K.CUDA: ("Dense", "CUDA"),
    _K.PrivateUse1: ("Dense", "PrivateUse1"),
    _K.PrivateUse2: ("Dense", "PrivateUse2"),
    _K.Meta: ("Dense", "Meta"),
    _K.QuantizedCPU: ("Quantized", "CPU"),
    _K.QuantizedCUDA: ("Quantized", "CUDA"),
    _K.QuantizedPrivateUse1: ("Quantized", "PrivateUse1"),
    _K.QuantizedPrivateUse2: ("Quantized", "PrivateUse2"),
    _K.QuantizedMeta: ("Quantized", "Meta"),
    _K.SparseCPU: ("Sparse", "CPU"),
    _K.SparseCUDA: ("Sparse", "CUDA"),
    _K.SparsePrivateUse1: ("Sparse", "PrivateUse1"),
    _K.SparsePrivateUse2: ("Sparse", "PrivateUse2"),
    _K.SparseMeta: ("Sparse", "Meta"),
    _K.AutogradCPU: ("AutogradFunctionality", "CPU"),
    _K.AutogradCUDA: ("AutogradFunctionality", "CUDA"),
    _K.AutogradPrivateUse1: ("AutogradFunctionality", "PrivateUse1"),
    _K.AutogradPrivateUse2: ("AutogradFunctionality", "PrivateUse2"),
    _K.AutogradMeta: ("AutogradFunctionality", "Meta"),
}
del _K

# Backend keys (Dense, Quantized and Sparse for each backend): generated wrappers there check
# that tensor arguments share a device (Note [Generated device check]).
BACKEND_KEYS = frozenset(k for k, (f, _) in _PER_BACKEND.items() if f != "AutogradFunctionality")
# The backend keys of CUDA: generated wrappers there hold a CUDA device guard.
CUDA_KEYS = frozenset(k for k in BACKEND_KEYS if _PER_BACKEND[k][1] == "CUDA")

# The autocast key of each device type, in key order (Note [Autocast] in dk/layers/autocast.h;
# the runtime's autocastKeyFor).
AUTOCAST_KEYS: Tuple[Tuple[DispatchKey, str], ...] = (
    (DispatchKey.AutocastCPU, "CPU"),
    (DispatchKey.AutocastCUDA, "CUDA"),
)
