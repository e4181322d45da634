"""The generator's model: what an operator entry of native_functions.yaml is.

``NativeFunction`` is one validated ``- func:`` entry: its ``FunctionSchema``,
its kernels per ``DispatchKey``, and every other key the entry may carry. It is
built by ``codegen.native_yaml`` (which does the strict checking) and read by the
later layers (``api``, ``dest``); they never look at raw YAML.

This module also re-exports the schema language (``codegen.schema``) and the
dispatch keys (``codegen.dispatch_key``), so ``from codegen.model import ...``
reaches the whole model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional, Tuple

from codegen.dispatch_key import ALIAS_KEYS, COMPOSITE_KEYS, DispatchKey
from codegen.errors import GenError, Location
from codegen.schema import (
    BASE_TYPE_NAMES,
    AliasInfo,
    Argument,
    BaseType,
    FunctionSchema,
    ListType,
    OperatorName,
    OptionalType,
    Return,
    Type,
)

__all__ = [
    "ALIAS_KEYS", "AUTOCAST_POLICIES", "AliasInfo", "Argument", "BASE_TYPE_NAMES",
    "BackendMetadata", "BaseType", "COMPOSITE_KEYS", "DEVICE_CHECKS", "DispatchKey",
    "FunctionSchema", "GenError", "ListType", "Location", "NativeFunction",
    "OperatorName", "OptionalType", "Precompute", "Return", "Type", "VARIANTS",
]

VARIANTS = ("function", "method")  # dk::op(...) and tensor.op(...), in this order
DEVICE_CHECKS = ("NoCheck", "ExactSame")
# How the autocast layer treats an operator's floating-point tensor arguments:
# cast to the lower precision type, cast to float32, cast to their widest type, or leave them
# alone and ask for a float32 result through the operator's `ScalarType? dtype` argument.
AUTOCAST_POLICIES = ("lower_precision_fp", "fp32", "promote", "fp32_set_opt_dtype")
# The device types with an autocast key; an entry's `autocast:` is one policy for all of them,
# or a mapping from some of them to their policy (PyTorch's CPU and CUDA lists differ).
AUTOCAST_DEVICES = ("CPU", "CUDA")
# How vmap runs an operator once for a whole batch (`batching:`): the shared batching rule of a
# family of operators (dk/func/batching_rules.h). `pointwise` (Note [Pointwise batching rule]):
# an entry tagged `pointwise` is in it unless it is an out= form or says `batching: none`.
# `along_dims` (Note [Along-dims batching rule]): reductions, scans and sorts of one tensor along
# the dims its `dim` arguments name. Operators without a family run vmap's for-loop fallback.
BATCHING_FAMILIES = ("pointwise", "along_dims")


def _empty_map() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True)
class BackendMetadata:
    """The kernel an operator has at one dispatch key: ``foo`` (in ``dk::native``),
    ``dk::ns::foo``, or ``::ns::foo`` fully qualified (``native_yaml.kernel_name_mismatch``
    says which names are allowed). ``structured``: the kernel of a structured family
    (codegen/structured.py): ``kernel`` names its impl class (``structured_<kernel>``), or at
    Meta its meta class."""

    kernel: str
    namespace: Optional[str] = None  # "at::native" for "::at::native::foo", without the leading "::"
    structured: bool = False

    @classmethod
    def parse(cls, text: str) -> "BackendMetadata":
        namespace, sep, kernel = text[2:].rpartition("::") if text.startswith("::") else text.rpartition("::")
        return cls(kernel, namespace if sep else None)

    def __str__(self) -> str:
        if not self.namespace:
            return self.kernel
        if self.namespace == "dk" or self.namespace.startswith("dk::"):
            return f"{self.namespace}::{self.kernel}"
        return f"::{self.namespace}::{self.kernel}"


@dataclass(frozen=True)
class Precompute:
    """A structured kernel's ``precomputed`` list: arguments its meta function turns
    into others (``kernel_size -> int kH, int kW``), and extra ones it adds."""

    replace: Tuple[Tuple[str, Tuple[Argument, ...]], ...]
    add: Tuple[Argument, ...]


@dataclass(frozen=True, eq=False)
class NativeFunction:
    """One ``- func:`` entry, validated. Compared and hashed by identity.

    Mappings are read-only (``MappingProxyType``); ``loc`` is the ``- func:`` line.
    """

    func: FunctionSchema
    loc: Location
    variants: Tuple[str, ...] = ("function",)
    # Kernels at keys the generator knows, sorted by key.
    dispatch: Mapping[DispatchKey, BackendMetadata] = field(default_factory=_empty_map)
    # Kernels at keys only PyTorch has (pytorch-compat mode): recorded, never generated.
    foreign_dispatch: Mapping[str, BackendMetadata] = field(default_factory=_empty_map)
    # True when the entry had no dispatch map and got CompositeImplicitAutograd: <name>.
    dispatch_is_default: bool = False
    tags: Tuple[str, ...] = ()
    device_check: str = "ExactSame"
    device_guard: bool = True
    manual_cpp_binding: bool = False
    manual_kernel_registration: bool = False
    autogen: Tuple[OperatorName, ...] = ()
    structured: bool = False
    structured_delegate: Optional[OperatorName] = None
    structured_inherits: Optional[str] = None
    python_module: Optional[str] = None
    category_override: Optional[str] = None
    precomputed: Optional[Precompute] = None
    cpp_no_default_args: Tuple[str, ...] = ()
    use_const_ref_for_mutable_tensors: bool = False
    ufunc_inner_loop: Mapping[str, str] = field(default_factory=_empty_map)
    autocast: Mapping[str, str] = field(default_factory=_empty_map)  # device type -> policy
    batching: Optional[str] = None  # the vmap batching-rule family (BATCHING_FAMILIES)
    # The operator namespace: "dk", or another from "- func: c10d::..." (Note [Operator namespaces]).
    namespace: str = "dk"

    @property
    def name(self) -> OperatorName:
        return self.func.name

    @property
    def has_function_variant(self) -> bool:
        return "function" in self.variants

    @property
    def has_method_variant(self) -> bool:
        return "method" in self.variants

    @property
    def has_composite_implicit_autograd_kernel(self) -> bool:
        return DispatchKey.CompositeImplicitAutograd in self.dispatch

    @property
    def has_composite_explicit_autograd_kernel(self) -> bool:
        return DispatchKey.CompositeExplicitAutograd in self.dispatch

    @property
    def has_composite_explicit_autograd_non_functional_kernel(self) -> bool:
        return DispatchKey.CompositeExplicitAutogradNonFunctional in self.dispatch

    @property
    def has_composite_kernel(self) -> bool:
        return any(k in self.dispatch for k in COMPOSITE_KEYS)

    def kernel(self, key: DispatchKey) -> Optional[BackendMetadata]:
        return self.dispatch.get(key)

    def __repr__(self) -> str:
        return f"NativeFunction({self.func}, {self.loc})"
