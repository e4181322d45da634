"""The dispatch keys the generator knows: the runtime's keys and alias keys, by name.

Built from the key file, ``schemas/dispatch_keys.yaml`` or the one ``gen.py --keys`` names
(codegen/keys_yaml.py), which the runtime's ``dk::DispatchKey`` is generated from too
(docs/semantics.md section 1). Names are
spelled exactly as in C++, so ``key.name`` is what generated code writes. A YAML ``dispatch:``
map may name runtime keys and alias keys; ``Undefined`` and the runtime's internal keys are
not keys one registers kernels at, so they are not listed here.

The key table also says what each key is for, so no later layer reads a key's name:
``key.backend`` and ``key.functionality`` for the per-backend keys, ``key.is_backend``
(``BACKEND_KEYS``: generated wrappers there check devices), ``key.is_cuda`` (``CUDA_KEYS``:
they also guard the CUDA device) and ``AUTOCAST_KEYS`` (each device type's autocast key).
"""

from __future__ import annotations

import enum
from typing import Dict, Optional, Tuple

from codegen.errors import GenError, report_lines
from codegen.keys_yaml import KeyUniverse, active_path, load_key_universe

# The universe the generator runs with (gen.py --keys, else the project's file). A key file with
# errors ends the run here with its FILE:LINE messages: nothing can be generated without keys.
try:
    UNIVERSE: KeyUniverse = load_key_universe(active_path())
except GenError as _error:
    raise SystemExit("\n".join(report_lines(_error.messages))) from None
# Alias keys sort after every runtime key (PyTorch's universe has 105 of them): their values
# must not meet a runtime key's, or the Enum would make the alias another name for that key.
_ALIAS_BASE = max(100, len(UNIVERSE.runtime_keys()) + 1)


class _Key(enum.Enum):
    """A key a kernel can be registered at. Values give a stable sort order: runtime keys in
    rising priority (a per-backend functionality's keys at its place), then the alias keys."""

    def __str__(self) -> str:
        return self.name

    def __lt__(self, other: "DispatchKey") -> bool:
        if not isinstance(other, _Key):
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
        """A backend key of CUDA tensors: CUDA, QuantizedCUDA, SparseCUDA (and SparseCsrCUDA
        with PyTorch's keys)."""
        return self in CUDA_KEYS

    @classmethod
    def parse(cls, name: str) -> Optional["DispatchKey"]:
        """The key spelled ``name``, or None when the generator knows no such key."""
        return cls.__members__.get(name)


_RUNTIME = tuple(k for k in UNIVERSE.runtime_keys() if not k.functionality.internal)
DispatchKey = _Key("DispatchKey", [(k.name, i + 1) for i, k in enumerate(_RUNTIME)] +
                   [(a.name, _ALIAS_BASE + i) for i, a in enumerate(UNIVERSE.aliases)], module=__name__)

ALIAS_KEYS = frozenset(DispatchKey[a.name] for a in UNIVERSE.aliases)

# At most one of these may appear in an operator's dispatch map: each subsumes the next.
COMPOSITE_KEYS = (
    DispatchKey.CompositeImplicitAutograd,
    DispatchKey.CompositeExplicitAutograd,
    DispatchKey.CompositeExplicitAutogradNonFunctional,
)

# The per-backend runtime keys, as the runtime composes them (dk/core/dispatch_key.h): one
# per-backend functionality for one backend component.
_PER_BACKEND: Dict[DispatchKey, Tuple[str, str]] = {
    DispatchKey[k.name]: (k.functionality.name, k.backend.name) for k in _RUNTIME if k.backend is not None
}

# Backend keys (the runtime keys of backend functionalities: Dense, Quantized and Sparse for
# each backend): generated wrappers there check that tensor arguments share a device (Note
# [Generated device check]).
BACKEND_KEYS = frozenset(DispatchKey[k.name] for k in _RUNTIME if k.functionality.backend)
# The backend keys of CUDA tensors: those of the CUDA backend, and single backend keys the key
# file marks `cuda` (SparseCsrCUDA). Generated wrappers there hold a CUDA device guard.
CUDA_KEYS = frozenset(DispatchKey[k.name] for k in _RUNTIME if k.functionality.backend
                      and (k.backend.cuda if k.backend is not None else k.functionality.cuda))

# The autocast key of each device type, in key order (Note [Autocast] in dk/layers/autocast.h;
# the runtime's autocastKeyFor).
AUTOCAST_KEYS: Tuple[Tuple[DispatchKey, str], ...] = tuple(
    (DispatchKey[f.name], f.autocast) for f in UNIVERSE.functionalities if f.autocast is not None)
