"""The generator's layers (docs/design.md section 6), each with one job: the model knows
operators, ``codegen/api/`` knows C++ spellings, ``codegen/dest/`` builds per-operator view models,
templates only lay them out. Checked over the sources: which modules each layer imports, that
dest/ asks a CType (or a view model) instead of matching C++ spellings, and that templates
compare nothing with a string literal."""

import ast
import os
import re
import tempfile
import unittest

from . import support

CODEGEN = os.path.join(support.REPO_ROOT, "codegen")
TEMPLATES = os.path.join(CODEGEN, "templates")

# The model: reading and checking the YAML files into operators and derivatives.
MODEL = {"cpp_names", "dispatch_key", "errors", "limits", "yaml_loader", "schema", "model", "native_yaml",
         "derivatives"}
# What no model module may import (the later layers, and the rendering library).
ABOVE_MODEL = ("codegen.api", "codegen.dest", "codegen.validate", "codegen.gen", "codegen.writer", "jinja2")
ABOVE_API = ("codegen.dest", "codegen.validate", "codegen.gen", "codegen.writer", "jinja2")
# dest/ reads the model as GenContext and the plan give it, never the YAML.
YAML_READERS = ("codegen.yaml_loader", "codegen.native_yaml")

# A string literal that spells a C++ type: what dest/ must not compare anything with.
_CPP_SPELLING = re.compile(r"std::|[&<>]|^(const |Tensor|Scalar|Device|Generator|IValue|int64_t|double|bool|size_t|"
                           r"SavedVariable|ScalarType|Layout|MemoryFormat|ArrayRef|IntArrayRef)\b")


def _imports(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def _modules(folder):
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".py"))


def _forbidden(paths, prefixes):
    out = []
    for path in paths:
        for line, name in _imports(path):
            if any(name == p or name.startswith(p + ".") for p in prefixes):
                out.append(f"{os.path.relpath(path, support.REPO_ROOT)}:{line}: imports {name}")
    return out


def _strings(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for elt in node.elts:
            yield from _strings(elt)


class ImportLayersTest(unittest.TestCase):
    def test_the_model_imports_no_later_layer(self):
        paths = [os.path.join(CODEGEN, m + ".py") for m in sorted(MODEL)]
        self.assertEqual(_forbidden(paths, ABOVE_MODEL), [])

    def test_api_imports_neither_dest_nor_the_wiring(self):
        self.assertEqual(_forbidden(_modules(os.path.join(CODEGEN, "api")), ABOVE_API), [])

    def test_dest_never_reads_yaml(self):
        self.assertEqual(_forbidden(_modules(os.path.join(CODEGEN, "dest")), YAML_READERS), [])

    def test_the_checks_see_a_violation(self):
        """The checks themselves: a model module importing api/ is caught, and so are spellings."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "derivatives.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("import re\nfrom codegen.api.dispatcher import argument_name\n")
            self.assertEqual([p.split(": ", 1)[1] for p in _forbidden([path], ABOVE_MODEL)],
                             ["imports codegen.api.dispatcher", "imports codegen.api.dispatcher.argument_name"])
        self.assertTrue(_CPP_SPELLING.search("std::optional<Device>"))
        self.assertTrue(_CPP_SPELLING.search("Tensor"))
        self.assertFalse(_CPP_SPELLING.search("tensor_list"))


class DestAsksTest(unittest.TestCase):
    def test_dest_compares_no_cpp_spelling(self):
        problems = []
        for path in _modules(os.path.join(CODEGEN, "dest")):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            rel = os.path.relpath(path, support.REPO_ROOT)
            for node in ast.walk(tree):
                literals = []
                if isinstance(node, ast.Compare):
                    for side in [node.left] + node.comparators:
                        literals.extend(_strings(side))
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in ("startswith", "endswith")):
                    for arg in node.args:
                        literals.extend(_strings(arg))
                for text in literals:
                    if _CPP_SPELLING.search(text):
                        problems.append(f"{rel}:{node.lineno}: compares with the C++ spelling {text!r} "
                                        "(ask the CType or the view model)")
        self.assertEqual(problems, [])


class TemplatesLayOutTest(unittest.TestCase):
    _TAG = re.compile(r"\{%.*?%\}|\{\{.*?\}\}", re.S)
    _COMPARED = re.compile(r"""(==|!=|\bin)\s*[(\[]?\s*["']|["']\s*(==|!=)""")

    def test_templates_compare_nothing_with_a_string(self):
        problems = []
        for name in sorted(os.listdir(TEMPLATES)):
            if not name.endswith(".j2"):
                continue
            with open(os.path.join(TEMPLATES, name), encoding="utf-8") as f:
                text = f.read()
            for m in self._TAG.finditer(text):
                if self._COMPARED.search(m.group(0)):
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append(f"codegen/templates/{name}:{line}: {m.group(0)} decides on a string "
                                    "(give the view model a field)")
        self.assertEqual(problems, [])

    def test_the_template_check_sees_a_decision(self):
        self.assertTrue(self._COMPARED.search('{% if op.nf.autocast == "fp32" %}'))
        self.assertTrue(self._COMPARED.search('{{ "{}" if type in ("size_t", "bool") else "" }}'))
        self.assertFalse(self._COMPARED.search('{{ ", " if not loop.first else "" }}'))


if __name__ == "__main__":
    unittest.main()
