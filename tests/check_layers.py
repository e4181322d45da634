#!/usr/bin/env python3
"""The runtime's layer rule, checked over the include graph (docs/design.md section 1).

runtime/ holds one folder per layer, lowest first:

    util      errors, ArrayRef, intrusive_ptr, Half
    core      dispatch keys and key sets, thread-local state, grad mode, scalar types, Scalar
    tensor    TensorImpl, storage, allocator, options, factories, printing, type promotion
    dispatch  schemas, IValue, boxing, kernels, operator entries, the dispatcher, Library
    autograd  graph recording and the engine
    layers    the built-in dispatch modes, the profiler, autocast
    func      function transforms on the dispatcher (vmap, batched tensors, grad, the layer stack,
              functionalization, graph capture)
    optim     the optimizers (SGD, Adam), written with dk operators
    distributed  stores, process groups and their backends (Gloo), the c10d collectives' kernels
    testing   checks for operator authors (gradcheck, opcheck): the dispatchkit-testing library

A file in one layer may include headers of its own layer and of lower ones only. The
generated headers (dk/generated/) belong to the layer of what they declare, listed below (the
Tensor method declarations to tensor; the per-operator ones of ops/, whose calls are inline
dispatcher calls, and boxing/ to dispatch). The
entry points dk/dk.h, dk/dispatch.h, dk/explain.h and dk/modes.h sit above every layer. Besides the rule:
every included dk/ header exists; nothing in the project includes the compatibility headers of
runtime/compat/ (they are for code written before the split); and each runtime .cpp starts by
including its own header, when it has one.

Usage: check_layers.py [ROOT]   (exit status 1 and one line per violation when it fails)
"""

import os
import re
import sys

LAYERS = ["util", "core", "tensor", "dispatch", "autograd", "layers", "func", "optim", "distributed", "testing"]
ENTRY_POINTS = {"dk/dk.h", "dk/dispatch.h", "dk/explain.h", "dk/modes.h"}
GENERATED_LAYER = {
    "Operators.h": "dispatch",
    "TensorMethodTypes.h": "tensor",
    "TensorMethodDecls.inc": "tensor",
    "Functions.h": "dispatch",
    "TensorOperators.h": "dispatch",
    "DeviceCheck.h": "tensor",
    "NativeFunctions.h": "dispatch",
    "BoxingAdapters.h": "dispatch",
    "AutogradFunctions.h": "autograd",
    "FunctionalInverses.h": "func",
    # templates of the per-operator and per-signature headers
    "OperatorStructs.h": "dispatch",
    "OperatorFunctions.h": "dispatch",
    "OperatorNatives.h": "dispatch",
    "BoxingSignature.h": "dispatch",
}
TOP = len(LAYERS)  # the rank of the entry points, and of code outside runtime/ (kernels, tests, tools)
# Runtime sources that define members of a header with another name.
SOURCES_WITHOUT_OWN_HEADER = {"tensor/tensor_print.cpp", "autograd/tensor_autograd.cpp",
                              "func/functional_inverses.cpp"}  # the last defines a generated header's names
# Files outside runtime/ that include compatibility paths on purpose.
COMPAT_USERS = {"tests/downstream/prog.cpp"}

INCLUDE = re.compile(r'^\s*#\s*include\s+[<"](dk/[^">]+)[">]')
SCANNED_DIRS = ["runtime", "kernels", "tests", "tools", "generated", "codegen/templates"]
SCANNED_EXTS = (".h", ".cpp", ".cu", ".cuh", ".inc", ".j2")


def generated_layer(name):
    """The layer of a generated header, named relative to dk/generated/ (ops/add_ops.h, ...)."""
    if name.startswith("aten/"):
        name = name[len("aten/"):]
    if name.startswith("ops/"):
        # <op>_ops.h (the ops:: structs, whose calls are inline dispatcher calls), <op>.h (the
        # functions) and <op>_native.h (the kernel declarations): dispatch.
        return "dispatch"
    if name.startswith("boxing/"):
        return "dispatch"
    if name.startswith("keys/"):
        # the key universe (schemas/dispatch_keys.yaml): the enums and key sets of core
        return "core"
    return GENERATED_LAYER.get(name)


def header_layer(path):
    """The rank of an included header path such as dk/core/dispatch_key.h, or None if unknown."""
    if path in ENTRY_POINTS:
        return TOP
    parts = path.split("/")
    if len(parts) >= 3 and parts[1] == "generated":
        layer = generated_layer("/".join(parts[2:]))
        return LAYERS.index(layer) if layer else None
    if len(parts) >= 3 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return None


def file_layer(rel):
    """The rank of a project file (relative path), TOP when it is outside the layered runtime."""
    for prefix in ("runtime/include/dk/", "runtime/src/"):
        if rel.startswith(prefix):
            first = rel[len(prefix):].split("/")[0]
            if first in LAYERS:
                return LAYERS.index(first)
    m = re.match(r"(?:generated|tests/generator/golden)/dk/generated/(.+)$", rel)
    if m and generated_layer(m.group(1)):
        return LAYERS.index(generated_layer(m.group(1)))
    m = re.match(r"codegen/templates/([^/]+)\.j2$", rel)
    if m and m.group(1) in GENERATED_LAYER:
        return LAYERS.index(GENERATED_LAYER[m.group(1)])
    return TOP


def exists(root, path):
    if path.startswith("dk/generated/"):
        name = path[len("dk/generated/"):]
        return os.path.exists(os.path.join(root, "generated", path)) or generated_layer(name) is not None
    return os.path.exists(os.path.join(root, "runtime", "include", path))


def compat_paths(root):
    base = os.path.join(root, "runtime", "compat")
    out = set()
    for dirpath, _, files in os.walk(base):
        for f in files:
            out.add(os.path.relpath(os.path.join(dirpath, f), base).replace(os.sep, "/"))
    return out


def project_files(root):
    for d in SCANNED_DIRS:
        for dirpath, dirnames, files in os.walk(os.path.join(root, d)):
            dirnames[:] = sorted(x for x in dirnames if x != "compat")
            for f in sorted(files):
                if f.endswith(SCANNED_EXTS):
                    yield os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")


def check(root):
    """Returns the list of violations (strings naming file and line)."""
    problems = []
    compat = compat_paths(root)
    for rel in project_files(root):
        rank = file_layer(rel)
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        first_include = None
        for lineno, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            if first_include is None:
                first_include = inc
            if inc in compat and not exists(root, inc):
                if rel not in COMPAT_USERS:
                    problems.append(f"{rel}:{lineno}: includes {inc}, a compatibility path; include "
                                    f"{_compat_target(root, inc)} instead")
                continue
            if not exists(root, inc):
                problems.append(f"{rel}:{lineno}: includes {inc}, which does not exist")
                continue
            target = header_layer(inc)
            if target is None:
                problems.append(f"{rel}:{lineno}: includes {inc}, which is in no layer (add it to a layer folder)")
            elif target > rank:
                problems.append(f"{rel}:{lineno}: the {_name(rank)} layer includes {inc} from the higher "
                                f"{_name(target)} layer")
        if rel.startswith("runtime/src/") and rel.endswith(".cpp"):
            inner = rel[len("runtime/src/"):]
            own = "dk/" + inner[:-len(".cpp")] + ".h"
            if inner not in SOURCES_WITHOUT_OWN_HEADER:
                if not exists(root, own):
                    problems.append(f"{rel}: has no header {own} (each source defines what its header declares)")
                elif first_include != own:
                    problems.append(f"{rel}: its first include should be its own header {own}")
    return problems


def _name(rank):
    return "entry-point" if rank == TOP else LAYERS[rank]


def _compat_target(root, inc):
    with open(os.path.join(root, "runtime", "compat", inc), encoding="utf-8") as fh:
        for line in fh:
            m = INCLUDE.match(line)
            if m:
                return m.group(1)
    return "its new path"


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} violation(s) of the layer rule (docs/design.md section 1)")
        return 1
    print("check_layers: every include goes to the same layer or a lower one")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
