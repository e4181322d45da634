"""Compile checks of generated C++ (g++ -fsyntax-only with the project's warning flags):
every file of the fixture's output on its own (so each includes what it uses), the output
for schemas/ and a call of every public function and method, and one shard of the
PyTorch-scale output; then, when a current runtime library is at hand, the fixture's
output linked and run end to end (tests/generator/cpp/fixture_e2e.cpp).

Skipped, with the reason, when g++ is missing. One compiler process at a time; about
40 seconds on one core.
"""

import glob
import os
import subprocess
import sys
import unittest

from codegen.dest.common import GenContext
from codegen.native_yaml import load_tags, parse_native_functions

from . import cpp_checks, support
from .test_generated import FIXTURE, FIXTURE_DIR, SCHEMAS, SCHEMAS_TAGS



def _generate(yaml_path, out_dir, *extra):
    result = subprocess.run([sys.executable, support.GEN_PY, *extra, "--out", out_dir, yaml_path],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(result.stderr)


def _runtime_library():
    """The directory of a libdispatchkit.so newer than every runtime source, or (None, why)."""
    libdir = os.environ.get("DK_CODEGEN_LIBDIR", os.path.join(support.REPO_ROOT, "build", "release"))
    lib = os.path.join(libdir, "libdispatchkit.so")
    if not os.path.isfile(lib):
        return None, f"{lib} not found (build the runtime, or set DK_CODEGEN_LIBDIR)"
    sources = glob.glob(os.path.join(support.REPO_ROOT, "runtime", "src", "**", "*.cpp"), recursive=True) + glob.glob(
        os.path.join(cpp_checks.RUNTIME_INCLUDE, "dk", "**", "*.h"), recursive=True)
    newest = max(os.stat(s).st_mtime for s in sources)
    if os.stat(lib).st_mtime < newest:
        return None, f"{lib} is older than runtime/ (rebuild it to run the link test)"
    return libdir, None


@unittest.skipIf(cpp_checks.CXX is None, "g++ not found: generated C++ is not compiled")
class CompileTest(support.TempDirTestCase):
    def setUp(self):
        super().setUp()
        self.inc = os.path.join(self.dir, "inc")
        cpp_checks.stand_in_tensor_h(self.inc)

    def assertCompiles(self, sources, out_dir, with_methods=True):
        """``with_methods``: compile against the stand-in tensor.h that includes the generated
        methods (the PyTorch-scale output has none)."""
        dirs = [self.inc] if with_methods else []
        # kernels/: the structured wrappers (meta/structured_wrappers.h) generated registrations include;
        # python/src/: the row type PythonFunctions.cpp fills (python_functions.h).
        status, diagnostics = cpp_checks.compile_syntax(
            sources, dirs + [cpp_checks.RUNTIME_INCLUDE, os.path.join(support.REPO_ROOT, "kernels"),
                             os.path.join(support.REPO_ROOT, "python", "src"), out_dir])
        self.assertEqual(status, 0, diagnostics[:6000])

    def test_fixture_output_file_by_file(self):
        out = os.path.join(self.dir, "fixture")
        _generate(FIXTURE, out)
        calls = os.path.join(self.dir, "fixture_calls.cpp")
        nfs = parse_native_functions(FIXTURE, known_tags=load_tags(os.path.join(FIXTURE_DIR, "tags.yaml")))
        with open(calls, "w", encoding="utf-8") as f:
            f.write(cpp_checks.call_check_source(nfs))
        sources = sorted(glob.glob(os.path.join(out, "*.cpp")))
        self.assertEqual(len(sources), 15)
        self.assertCompiles(sources + [calls], out)

    def test_kernels_outside_dk_native_and_int64_limits(self):
        """A kernel in another namespace (::ns::name), one in dk:: and int64's extreme defaults
        compile as generated, and the declarations are the ones a kernel file defines."""
        yaml_path = os.path.join(self.dir, "native_functions.yaml")
        with open(yaml_path, "w", encoding="utf-8") as f:
            f.write("- func: ext_op(Tensor self, int n=-9223372036854775808, int m=9223372036854775807) -> Tensor\n"
                    "  variants: function, method\n"
                    "  dispatch:\n"
                    "    CPU: ::ext::ext_op_cpu\n"
                    "    Meta: dk::ext::ext_op_meta\n")
        out = os.path.join(self.dir, "ext")
        _generate(yaml_path, out)
        kernels = os.path.join(self.dir, "ext_kernels.cpp")
        with open(kernels, "w", encoding="utf-8") as f:
            f.write('#include <cstdint>\n#include <limits>\n#include "dk/generated/ops/ext_op.h"\n'
                    '#include "dk/generated/ops/ext_op_native.h"\n'
                    "namespace ext {\n"
                    "::dk::Tensor ext_op_cpu(const ::dk::Tensor& self, int64_t, int64_t) { return self; }\n"
                    "}  // namespace ext\n"
                    "namespace dk::ext {\n"
                    "Tensor ext_op_meta(const Tensor& self, int64_t, int64_t) { return self; }\n"
                    "}  // namespace dk::ext\n"
                    "static_assert(std::numeric_limits<int64_t>::min() == (-9223372036854775807 - 1));\n"
                    "dk::Tensor use(const dk::Tensor& t) { return dk::ext_op(t); }\n")
        self.assertCompiles(sorted(glob.glob(os.path.join(out, "*.cpp"))) + [kernels], out)

    def test_structured_family(self):
        """A structured family's generated wrappers compile against the meta and impl classes a
        kernel file defines with DK_META_FUNC and DK_IMPL_FUNC."""
        yaml_path = os.path.join(self.dir, "native_functions.yaml")
        with open(yaml_path, "w", encoding="utf-8") as f:
            f.write("- func: twice(Tensor self, *, Scalar k=2) -> Tensor\n  structured_delegate: twice.out\n"
                    "  variants: function, method\n"
                    "- func: twice_(Tensor(a!) self, *, Scalar k=2) -> Tensor(a!)\n  structured_delegate: twice.out\n"
                    "  variants: method\n"
                    "- func: twice.out(Tensor self, *, Scalar k=2, Tensor(a!) out) -> Tensor(a!)\n"
                    "  structured: True\n  dispatch:\n    CPU: twice_out_cpu\n")
        out = os.path.join(self.dir, "twice")
        _generate(yaml_path, out)
        kernels = os.path.join(self.dir, "twice_kernels.cpp")
        with open(kernels, "w", encoding="utf-8") as f:
            f.write('#include "dk/generated/ops/twice.h"\n#include "dk/generated/ops/twice_native.h"\n'
                    "namespace dk {\n"
                    "DK_META_FUNC(twice)(const Tensor& self, const Scalar&) {\n"
                    "  set_output_raw_strided(0, self.sizes(), {}, self.dtype(), self.device());\n}\n"
                    "DK_IMPL_FUNC(twice_out_cpu)(const Tensor&, const Scalar&, const Tensor&) {}\n"
                    "}  // namespace dk\n"
                    "dk::Tensor use(const dk::Tensor& t) { return dk::twice(t); }\n")
        self.assertCompiles([os.path.join(out, "RegisterCPU.cpp"), os.path.join(out, "RegisterMeta.cpp"), kernels],
                            out)

    def test_formulas_reading_arguments_with_reserved_names(self):
        """An argument the dispatcher convention renames (``k`` is ``k_``, ``op`` is ``op_``:
        Note [Argument names]) keeps its schema name in the formulas, which apply() unpacks."""
        schema = "kw_op(Tensor self, Tensor op, int k, Tensor? e=None) -> Tensor"
        yaml_path = os.path.join(self.dir, "native_functions.yaml")
        with open(yaml_path, "w", encoding="utf-8") as f:
            f.write(f"- func: {schema}\n  dispatch:\n    CPU: kw_op_cpu\n")
        with open(os.path.join(self.dir, "derivatives.yaml"), "w", encoding="utf-8") as f:
            f.write(f"- name: {schema}\n  self: maybe_multiply(grad, k)\n"
                    "  op: sum_to(maybe_multiply(grad, e.has_value() + k), op.sizes())\n"
                    "  e: non_differentiable\n")
        out = os.path.join(self.dir, "kw")
        _generate(yaml_path, out)
        self.assertCompiles([os.path.join(out, "AutogradFunctions.cpp"), os.path.join(out, "RegisterAutograd.cpp")],
                            out)

    def test_schemas_output_and_every_public_call(self):
        out = os.path.join(self.dir, "schemas")
        _generate(SCHEMAS, out)
        nfs = parse_native_functions(SCHEMAS, known_tags=load_tags(SCHEMAS_TAGS))
        unity = os.path.join(self.dir, "schemas_unity.cpp")
        sources = [os.path.basename(p) for p in glob.glob(os.path.join(out, "*.cpp"))]
        with open(unity, "w", encoding="utf-8") as f:
            f.write(cpp_checks.unity_source(out, sources))
            f.write(cpp_checks.call_check_source(nfs))
        self.assertCompiles([unity], out)

    @unittest.skipUnless(support.HAVE_PYTORCH_FILE, support.NO_PYTORCH_FILE)
    def test_one_pytorch_scale_shard(self):
        out = os.path.join(self.dir, "aten")
        result = subprocess.run(
            [sys.executable, support.GEN_PY, "--pytorch-compat", "--tags", support.PYTORCH_TAGS,
             "--scale-out", out, support.PYTORCH_NATIVE_FUNCTIONS],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        unity = os.path.join(self.dir, "aten_unity.cpp")
        with open(unity, "w", encoding="utf-8") as f:
            f.write(cpp_checks.unity_source(out, ["BoxingAdapters_0.cpp", "RegisterSchema_0.cpp"]))
            f.write('#include "dk/generated/aten/Operators.h"\n')  # every struct's inline calls
        # dk/tensor/tensor.h includes the generated method declarations of the project's own operators.
        own = os.path.join(self.dir, "schemas_for_tensor_h")
        _generate(SCHEMAS, own)
        status, diagnostics = cpp_checks.compile_syntax([unity], [cpp_checks.RUNTIME_INCLUDE, own, out])
        self.assertEqual(status, 0, diagnostics[:6000])

    @unittest.skipUnless(os.environ.get("DK_CODEGEN_FULL_PYTORCH"),
                         "set DK_CODEGEN_FULL_PYTORCH=1 to register and check all of PyTorch's operators (~30 s)")
    @unittest.skipUnless(support.HAVE_PYTORCH_FILE, support.NO_PYTORCH_FILE)
    def test_every_pytorch_signature_against_the_runtime(self):
        libdir, why = _runtime_library()
        if libdir is None:
            self.skipTest(why)
        out = os.path.join(self.dir, "aten")
        result = subprocess.run(
            [sys.executable, support.GEN_PY, "--pytorch-compat", "--tags", support.PYTORCH_TAGS,
             "--scale-out", out, support.PYTORCH_NATIVE_FUNCTIONS],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        nfs = parse_native_functions(support.PYTORCH_NATIVE_FUNCTIONS, known_tags=load_tags(support.PYTORCH_TAGS),
                                     foreign_keys="ignore")
        unity = os.path.join(self.dir, "aten_check.cpp")
        with open(unity, "w", encoding="utf-8") as f:
            f.write(cpp_checks.unity_source(out, [os.path.basename(p) for p in
                                                  glob.glob(os.path.join(out, "RegisterSchema_*.cpp"))]))
            f.write(cpp_checks.signature_check_source(GenContext.build(nfs, "aten", ())))
        exe = os.path.join(self.dir, "aten_check")
        # The build folder holds the project's generated headers that dk/tensor/tensor.h includes.
        cmd = [cpp_checks.CXX, *cpp_checks.CXXFLAGS, f"-I{cpp_checks.RUNTIME_INCLUDE}",
               f"-I{os.path.join(libdir, 'runtime', 'include')}", f"-I{out}", unity,
               f"-L{libdir}", "-ldispatchkit", "-pthread", "-o", exe]
        build = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        self.assertEqual(build.returncode, 0, build.stderr[:6000])
        run = subprocess.run([exe], capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, LD_LIBRARY_PATH=libdir))
        self.assertEqual((run.returncode, run.stdout),
                         (0, "2493 operators: 0 signature, 0 bitmap, 0 round-trip mismatches\n"), run.stderr)


if __name__ == "__main__":
    unittest.main()
