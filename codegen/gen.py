"""The generator's command line: read the operator YAML, check it, write the C++.

    gen.py --check [--tags TAGS.yaml] [--keys KEYS.yaml] [--pytorch-compat] [--debug] native_functions.yaml
    gen.py --list-outputs native_functions.yaml      (for the build system)
    gen.py --out DIR native_functions.yaml
    gen.py --pytorch-compat --tags TAGS.yaml --scale-out DIR native_functions.yaml

``--out`` writes every output family (codegen/dest/) for the project's operators;
``--scale-out`` writes only the operator structs, schema registrations and boxing
adapters, sharded for thousands of operators (namespace ``aten`` with
``--pytorch-compat``, else ``dk``): the PyTorch-scale check.

Run from anywhere as ``python3 codegen/gen.py`` or ``python3 -m codegen.gen``.
Errors go to stderr, one per line (``FILE:LINE: SCHEMA: what is wrong``; at most
``limits.MAX_ERRORS`` of them, then ``... and N more errors``), and the exit status
is 1; never a traceback: a bug of the generator itself is reported as an internal
error in one line, and ``--debug`` shows its traceback. ``--check`` validates exactly
what ``--out`` does (with ``--pytorch-compat``: ``--scale-out``): the model's C++ rules
(codegen/validate.py), then a generation in memory that writes nothing. Everything is
generated in memory first and written all or nothing (codegen/writer.py), so a failed
run leaves the output folder as it was. Input is bounded (codegen/limits.py). Tags come
from ``--tags``, else from a ``tags.yaml`` beside the input file; with neither, no tag is
known. The dispatch keys come from ``--keys``, else ``schemas/dispatch_keys.yaml``. This
module only wires the layers.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional, Sequence, Tuple

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Shards per output family of --scale-out: keeps each .cpp of PyTorch's 2,493 operators moderate.
SCALE_SHARDS = 32

if __package__ in (None, ""):  # run as a script: import the package, not codegen/*.py
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path[0] = _REPO_ROOT
    else:
        sys.path.insert(0, _REPO_ROOT)

from codegen.keys_yaml import ENV_VAR as _KEYS_ENV_VAR  # noqa: E402


def _preparse_keys(argv: Sequence[str]) -> None:
    """``--keys FILE`` decides the generator's table of keys (codegen/dispatch_key.py), which is
    built when the rest of the generator is imported: so it is read first, into the environment."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--keys")
    known, _ = pre.parse_known_args(argv)
    if known.keys:
        os.environ[_KEYS_ENV_VAR] = os.path.abspath(known.keys)


if __name__ == "__main__":
    _preparse_keys(sys.argv[1:])

from codegen.derivatives import DerivativeInfo, autograd_plan, parse_derivatives, untracked_views  # noqa: E402
from codegen.dest import (  # noqa: E402
    autocast,
    autograd,
    backend_select,
    batching,
    boxing_adapters,
    dispatch_keys,
    functionalization,
    functions,
    manifest,
    python_bindings,
    operators,
    register_backend,
    register_schema,
    tensor_methods,
    tensor_operators,
)
from codegen.dest.common import GenContext, display_path  # noqa: E402
from codegen.dispatch_key import UNIVERSE  # noqa: E402
from codegen.errors import GenError, report_lines  # noqa: E402
from codegen.limits import clip  # noqa: E402
from codegen.model import NativeFunction  # noqa: E402
from codegen.native_yaml import load_tags, parse_native_functions  # noqa: E402
from codegen.validate import check_model  # noqa: E402
from codegen.writer import FileManager  # noqa: E402


def _parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="gen.py", description="dispatchkit code generator: operator YAML in, C++ out."
    )
    parser.add_argument("native_functions", metavar="FILE.yaml", help="the operator schemas")
    parser.add_argument("--keys", metavar="KEYS.yaml",
                        help="the dispatch key universe (default: schemas/dispatch_keys.yaml; read before "
                             "anything else, so give it on the command line of a run)")
    parser.add_argument("--check", action="store_true",
                        help="parse, round-trip and validate every entry; print a summary")
    parser.add_argument("--tags", metavar="TAGS.yaml",
                        help="the tags entries may use (default: tags.yaml beside FILE.yaml)")
    parser.add_argument("--derivatives", metavar="DERIVATIVES.yaml",
                        help="the derivative formulas (default: derivatives.yaml beside FILE.yaml)")
    parser.add_argument("--pytorch-compat", action="store_true",
                        help="accept (and never generate) dispatch keys only PyTorch has")
    parser.add_argument("--list-outputs", action="store_true",
                        help="print the name of every output file, one per line")
    parser.add_argument("--out", metavar="DIR", help="write the outputs under DIR")
    parser.add_argument("--scale-out", metavar="DIR",
                        help="write the PyTorch-scale subset (operator structs, schema registrations, "
                             "boxing adapters) under DIR")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an internal error instead of one line")
    parser.add_argument("--shards", metavar="N", type=int, default=SCALE_SHARDS,
                        help=f"with --scale-out: shards per family (default {SCALE_SHARDS})")
    args = parser.parse_args(argv)
    if not (args.check or args.list_outputs or args.out or args.scale_out):
        parser.error("nothing to do: give --check, --list-outputs, --out DIR or --scale-out DIR")
    if args.shards < 1:
        parser.error("--shards must be at least 1")
    return args


def _tags_path(args: argparse.Namespace) -> Optional[str]:
    if args.tags is not None:
        return args.tags
    beside = os.path.join(os.path.dirname(args.native_functions), "tags.yaml")
    return beside if os.path.isfile(beside) else None


def _derivatives_path(args: argparse.Namespace) -> Optional[str]:
    if args.derivatives is not None:
        return args.derivatives
    beside = os.path.join(os.path.dirname(args.native_functions), "derivatives.yaml")
    return beside if os.path.isfile(beside) else None


def load_derivatives(args: argparse.Namespace, native_functions: Sequence[NativeFunction]) -> List[DerivativeInfo]:
    """The checked derivative entries (none without a derivatives file; raises GenError)."""
    path = _derivatives_path(args)
    return parse_derivatives(path, native_functions) if path is not None else []


def load_model(args: argparse.Namespace) -> List[NativeFunction]:
    """The validated operators named on the command line (raises GenError)."""
    tags_path = _tags_path(args)
    known_tags = load_tags(tags_path) if tags_path is not None else frozenset()
    native_functions = list(parse_native_functions(
        args.native_functions,
        known_tags=known_tags,
        foreign_keys="ignore" if args.pytorch_compat else "error",
    ))
    # What the generated C++ needs: checked here, so --check refuses what --out would.
    check_model(native_functions, public_api=not args.pytorch_compat)
    return native_functions


def input_names(args: argparse.Namespace) -> Tuple[str, ...]:
    """The inputs as generated banners name them (never absolute paths)."""
    names = [display_path(args.native_functions, _REPO_ROOT)]
    for extra in (_tags_path(args), _derivatives_path(args)):
        if extra is not None:
            names.append(display_path(extra, _REPO_ROOT))
    return tuple(names)


def generate(
    native_functions: Sequence[NativeFunction],
    files: FileManager,
    inputs: Sequence[str] = ("native_functions.yaml",),
    derivatives: Sequence[DerivativeInfo] = (),
) -> None:
    """Run every emitter into ``files``: the whole output for namespace ``dk``."""
    ctx = GenContext.build(native_functions, "dk", inputs)
    # Note [Operator namespaces]: operators of other namespaces (c10d::...) get operator structs,
    # public functions, schemas, boxing and kernel registrations; dk's layers cover dk's operators.
    dk_ctx = ctx.of_namespace("dk")
    dispatch_keys.emit(UNIVERSE, files, (display_path(UNIVERSE.path, _REPO_ROOT),))
    autograd.emit(dk_ctx, files, autograd_plan(native_functions, derivatives),
                  untracked_views(native_functions, derivatives))
    operators.emit(ctx, files)
    functions.emit(ctx, files)
    tensor_methods.emit(dk_ctx, files)
    tensor_operators.emit(dk_ctx, files)
    register_schema.emit(ctx, files)
    boxing_adapters.emit(ctx, files)
    register_backend.emit(ctx, files)
    backend_select.emit(dk_ctx, files)
    autocast.emit(dk_ctx, files)
    batching.emit(dk_ctx, files)
    functionalization.emit(dk_ctx, files)
    python_bindings.emit(dk_ctx, files)
    manifest.emit(ctx, files)


def generate_scale(
    native_functions: Sequence[NativeFunction],
    files: FileManager,
    namespace: str,
    inputs: Sequence[str],
    shards: int = SCALE_SHARDS,
) -> None:
    """The PyTorch-scale subset: operator structs, schema registrations, boxing adapters."""
    ctx = GenContext.build(native_functions, namespace, inputs)
    operators.emit(ctx, files)
    register_schema.emit(ctx, files, shards=max(1, shards // 2))
    boxing_adapters.emit(ctx, files, shards=max(1, shards // 2))


def run(args: argparse.Namespace) -> int:
    """Do what ``args`` asks (raises GenError for bad input)."""
    if args.keys and os.path.abspath(args.keys) != os.path.abspath(UNIVERSE.path):
        raise GenError(f"{args.keys}: --keys must be read before the generator is imported (run gen.py as a "
                       f"program, or set {_KEYS_ENV_VAR}); this run has the keys of {UNIVERSE.path}")
    files = FileManager()
    native_functions = load_model(args)
    derivatives = load_derivatives(args, native_functions) if not args.pytorch_compat else []
    inputs = input_names(args)
    # --check generates in memory too: it refuses whatever --out (with --pytorch-compat:
    # --scale-out) would.
    if args.out or args.list_outputs or (args.check and not args.pytorch_compat):
        with files:
            generate(native_functions, files, inputs, derivatives)
    scale_files = FileManager()
    if args.scale_out or (args.check and args.pytorch_compat):
        with scale_files:
            generate_scale(native_functions, scale_files, "aten" if args.pytorch_compat else "dk",
                           inputs, args.shards)
    # Everything was generated without error: only now touch the disk.
    if args.out:
        files.commit(args.out)
    if args.scale_out:
        scale_files.commit(args.scale_out)
    if args.check:
        print(f"{len(native_functions)} operators OK" +
              (f", {len(derivatives)} derivative entries OK" if derivatives else ""))
    if args.list_outputs:
        for name in files.names():
            print(name)
    return 0


def _fail(lines: Sequence[str]) -> int:
    for line in lines:
        print(line, file=sys.stderr)
    return 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line; the one place every error becomes ``FILE:LINE: message`` lines."""
    args = _parse_args(argv)
    try:
        return run(args)
    except GenError as e:
        return _fail(report_lines(e.messages))
    except RecursionError:
        if args.debug:
            raise
        return _fail([f"{args.native_functions}: input nested too deeply for the generator"])
    except MemoryError:
        if args.debug:
            raise
        return _fail([f"{args.native_functions}: out of memory: the input is too large"])
    except OSError as e:
        if args.debug:
            raise
        return _fail([f"{e.filename or args.native_functions}: {e.strerror or e}"])
    except Exception as e:  # a bug of the generator's own: one line, never a traceback
        if args.debug:
            raise
        return _fail([f"{args.native_functions}: internal error of the generator "
                       f"({type(e).__name__}: {clip(' '.join(str(e).split()), 200)}); please file a bug "
                       "(rerun with --debug for the traceback)"])


if __name__ == "__main__":
    sys.exit(main())
