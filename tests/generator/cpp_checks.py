"""Helpers for the tests that compile generated C++: the compiler, a stand-in tensor.h that
includes the generated method declarations, and a translation unit that calls every
public function and method (to prove overloads and defaults resolve)."""

import os
import shutil
import subprocess

from codegen.api import cpp
from codegen.dest import tensor_operators

from . import support

RUNTIME_INCLUDE = os.path.join(support.REPO_ROOT, "runtime", "include")
CXX = shutil.which("g++")
CXXFLAGS = ["-std=c++20", "-Wall", "-Wextra", "-Werror", "-O0"]

# One argument expression per C++ value type: what a user would write.
ARGUMENT_EXPRESSIONS = {
    "Tensor": "t",
    "std::optional<Tensor>": "t",
    "ArrayRef<Tensor>": "{t, t}",
    "ArrayRef<std::optional<Tensor>>": "{std::optional<Tensor>(t), std::nullopt}",
    "int64_t": "1",
    "std::optional<int64_t>": "1",
    "double": "0.5",
    "std::optional<double>": "0.5",
    "bool": "true",
    "std::array<bool, 3>": "{true, false, true}",
    "std::optional<bool>": "false",
    "Scalar": "2",
    "std::optional<Scalar>": "2",
    "IntArrayRef": "{2, 3}",
    "std::optional<IntArrayRef>": "IntArrayRef{0}",
    "ArrayRef<double>": "{1.5}",
    "ArrayRef<Scalar>": "{Scalar(1)}",
    "std::string_view": '"none"',
    "std::optional<std::string_view>": '"none"',
    "ScalarType": "kFloat",
    "std::optional<ScalarType>": "kFloat",
    "Layout": "Layout::Strided",
    "std::optional<Layout>": "Layout::Strided",
    "MemoryFormat": "MemoryFormat::Contiguous",
    "std::optional<MemoryFormat>": "MemoryFormat::Contiguous",
    "Device": "Device(kCPU)",
    "std::optional<Device>": "Device(kCPU)",
    "Generator": "gen",
    "std::optional<Generator>": "gen",
    "IValue": "IValue()",
}


def stand_in_tensor_h(out_dir, header_dir="dk/generated"):
    """Write OUT_DIR/dk/tensor/tensor.h: runtime's tensor.h with the generated method declarations
    wired in; put OUT_DIR first on the include path."""
    with open(os.path.join(RUNTIME_INCLUDE, "dk", "tensor", "tensor.h"), encoding="utf-8") as f:
        text = f.read()
    if '#include "dk/generated/TensorMethodDecls.inc"' in text:
        # The runtime's tensor.h wires the generated headers in itself: point it at header_dir.
        text = text.replace('"dk/generated/', f'"{header_dir}/')
        os.makedirs(os.path.join(out_dir, "dk", "tensor"), exist_ok=True)
        with open(os.path.join(out_dir, "dk", "tensor", "tensor.h"), "w", encoding="utf-8") as f:
            f.write(text)
        return
    anchor = "  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }\n"
    if anchor not in text or '#include "dk/util/intrusive_ptr.h"\n' not in text:
        raise RuntimeError("runtime/include/dk/tensor/tensor.h changed: update tests/generator/cpp_checks.py")
    text = text.replace('#include "dk/util/intrusive_ptr.h"\n',
                        f'#include "dk/util/intrusive_ptr.h"\n#include "{header_dir}/TensorMethodTypes.h"\n')
    text = text.replace(anchor, anchor + f'\n#include "{header_dir}/TensorMethodDecls.inc"\n\n')
    os.makedirs(os.path.join(out_dir, "dk", "tensor"), exist_ok=True)
    with open(os.path.join(out_dir, "dk", "tensor", "tensor.h"), "w", encoding="utf-8") as f:
        f.write(text)


def _call(sig, arity):
    args = ["dk::TensorOptions()" if b.options else "{0, 1}" if b.braced else ARGUMENT_EXPRESSIONS[b.binding.type.value]
            for b in sig.bindings[:arity]]
    if sig.is_method:
        return f"t.{sig.name}({', '.join(args)})"
    namespace = "dk" if sig.nf.namespace == "dk" else f"dk::{sig.nf.namespace}"  # Note [Operator namespaces]
    return f"{namespace}::{sig.name}({', '.join(args)})"


def call_check_source(native_functions, header_dir="dk/generated"):
    """A translation unit calling every public function and method twice: with only the
    arguments that have no default, and with all of them."""
    lines = [
        f'#include "{header_dir}/Functions.h"',
        f'#include "{header_dir}/TensorOperators.h"',
        "",
        "using namespace dk;",
        "",
        "void callEveryFunction(const Tensor& t, Generator gen) {",
        "  (void)gen;",
    ]
    sigs = [sig for group in (cpp.public_functions(native_functions), cpp.public_methods(native_functions))
            for sigs in group.values() for sig in sigs]
    for sig in sigs:
        lines.append(f"  // {sig.nf.func.name}{' (braced-list form)' if sig.braced_form else ''}")
        for arity in sorted({sig.min_arity, sig.max_arity}):
            lines.append(f"  (void){_call(sig, arity)};" if sig.returns != "void" else f"  {_call(sig, arity)};")
    lines += ["}", "", "void useOperators(const Tensor& a, const Tensor& b) {"]
    available = {str(nf.func.name) for nf in native_functions if nf.has_function_variant}
    operands = {
        "const Tensor& a, const Tensor& b": "a {} b",
        "const Tensor& a, const Scalar& b": "a {} 1",
        "const Scalar& a, const Tensor& b": "2.5 {} b",
        "const Tensor& a": "{}a",
    }
    for row in tensor_operators.ROWS:
        if all(name in available for name in row.needs):
            lines.append(f"  (void)({operands[row.params].format(row.symbol)});")
    lines += ["  (void)a;", "  (void)b;", "}", ""]
    return "\n".join(lines)


def compile_syntax(sources, include_dirs, timeout=300):
    """Run one g++ -fsyntax-only over ``sources``; return (status, diagnostics)."""
    cmd = [CXX, *CXXFLAGS, "-fsyntax-only"]
    for d in include_dirs:
        cmd.append(f"-I{d}")
    cmd += list(sources)
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return result.returncode, result.stderr


def unity_source(directory, sources):
    """A translation unit that includes every one of ``sources`` (paths under ``directory``)."""
    return "".join(f'#include "{os.path.join(directory, s)}"\n' for s in sorted(sources))


def signature_check_source(ctx):
    """A program that, with the schema registrations linked in, checks every operator of
    ``ctx`` (a GenContext): its C++ signature passes the runtime's typed<>() check against
    the registered schema, its bitmap equals the runtime's, and its schema_str round-trips
    through the runtime's parser. Prints a summary; exits non-zero on any mismatch."""
    ns = f"{ctx.cpp_namespace}::ops"
    lines = [
        "#include <cstdio>",
        f'#include "{ctx.header("Operators.h")}"',
        '#include "dk/dispatch/dispatcher.h"',
        "",
        "template <class Op>",
        "int checkSignature() {",
        "  try {",
        "    (void)dk::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name)"
        ".template typed<typename Op::signature>();",
        "    return 0;",
        "  } catch (const std::exception& e) {",
        '    std::printf("%s.%s: %s\\n", Op::name, Op::overload_name, e.what());',
        "    return 1;",
        "  }",
        "}",
        "",
        "int main() {",
        "  int signatures = 0;",
    ]
    lines += [f"  signatures += checkSignature<{ns}::{op.struct}>();" for op in ctx.operators]
    lines += [
        "  int bitmaps = 0, round_trips = 0;",
        f"  for (const auto& info : {ns}::all_operators()) {{",
        "    dk::FunctionSchema schema = dk::parseSchema(info.schema_str);",
        "    bitmaps += dk::OperatorEntry::computeDispatchArgumentBitmap(schema) != info.dispatch_bitmap;",
        "    round_trips += schema.str() != info.schema_str;",
        "  }",
        '  std::printf("%zu operators: %d signature, %d bitmap, %d round-trip mismatches\\n",',
        f"              {ns}::all_operators().size(), signatures, bitmaps, round_trips);",
        "  return signatures || bitmaps || round_trips;",
        "}",
        "",
    ]
    return "\n".join(lines)
