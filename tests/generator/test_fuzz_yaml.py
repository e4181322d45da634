"""Property-based fuzzing of the generator's input handling (Debian's python3-hypothesis).

Malformed YAML documents, malformed entries and malformed schema strings must all end in a
``GenError`` whose every message reads ``FILE:LINE: ...`` (never another exception), and a
failed ``gen.py --out DIR`` must leave DIR untouched. The runs are bounded and derandomized
so that CI sees the same examples every time.
"""

import contextlib
import io
import os
import re
import shutil
import tempfile
import unittest

import yaml

from codegen import gen
from codegen.errors import GenError
from codegen.native_yaml import parse_native_functions

from . import support

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from hypothesis.configuration import set_hypothesis_home_dir
except ImportError:  # pragma: no cover - tools/lib/setup.sh installs python3-hypothesis
    raise unittest.SkipTest("python3-hypothesis is not installed")

# Hypothesis caches data (a Unicode table) under ./.hypothesis by default: keep the source
# tree clean.
set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "dk-hypothesis"))

FUZZ_SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,  # no .hypothesis/ folder in the source tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# ---- schema strings: token soup from the schema language, and mutations of real schemas ----

SCHEMA_TOKENS = [
    "add", "aten::", "foo", ".", "Tensor", "Tensor?", "Tensor[]", "int", "int[2]", "SymInt[]",
    "float", "bool", "str", "Scalar", "ScalarType?", "Generator?", "(a)", "(a!)", "(a -> *)",
    "(", ")", "->", ",", "*", "=", "!", "?", "[", "]", "...", "|", " ", "self", "other", "out",
    "1", "-1", "None", "True", "[0,1]", "'mean'", '"x', "\\", "#", ":", "\t", "é", "0x",
]

REAL_SCHEMAS = [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "split.Tensor(Tensor(a -> *) self, int split_size, int dim=0) -> Tensor(a)[]",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "relu(Tensor self) -> Tensor",
]

schema_soup = st.lists(st.sampled_from(SCHEMA_TOKENS), max_size=24).map("".join)


@st.composite
def mutated_schema(draw):
    """A real schema with a few characters deleted, replaced or inserted."""
    text = draw(st.sampled_from(REAL_SCHEMAS))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "replace", "insert"]))
        piece = draw(st.sampled_from(SCHEMA_TOKENS + list("()[],*?!=->.| ")))
        if op == "delete":
            text = text[:i] + text[i + 1:]
        elif op == "replace":
            text = text[:i] + piece + text[i + 1:]
        else:
            text = text[:i] + piece + text[i:]
    return text


schema_strings = st.one_of(schema_soup, mutated_schema(), st.text(max_size=40))

# ---- entries: plausible keys with values of any YAML type ----

ENTRY_KEYS = ["func", "variants", "dispatch", "tags", "device_check", "device_guard", "autogen",
              "structured", "structured_delegate", "python_module", "autocast", "precomputed",
              "cpp_no_default_args", "manual_kernel_registration", "bogus"]
DISPATCH_KEYS = ["CPU", "CUDA", "Meta", "CPU, CUDA", "CompositeImplicitAutograd",
                 "CompositeExplicitAutograd", "MPS", "CPUU", "", "Autograd"]

yaml_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True),
    st.sampled_from(["function", "method", "function, method", "pointwise", "add_cpu", "NoCheck",
                     "fp32", "promote", "", " ", "a b", "1x", "class"]),
    st.text(max_size=8),
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(DISPATCH_KEYS + ["x", "y"]), inner, max_size=3)),
    max_leaves=6,
)


@st.composite
def entry(draw):
    e = {}
    if draw(st.integers(0, 9)) > 0:  # usually a func: line, sometimes a broken one
        e["func"] = draw(st.one_of(schema_strings, st.sampled_from(REAL_SCHEMAS), yaml_values))
    for key in draw(st.lists(st.sampled_from(ENTRY_KEYS[1:]), max_size=3, unique=True)):
        if key == "dispatch" and draw(st.booleans()):
            e[key] = draw(st.dictionaries(st.sampled_from(DISPATCH_KEYS), yaml_scalars, max_size=3))
        else:
            e[key] = draw(yaml_values)
    return e


def dump(document):
    return yaml.safe_dump(document, default_flow_style=False, allow_unicode=True, sort_keys=False)


structured_documents = st.one_of(
    st.lists(entry(), min_size=1, max_size=4).map(dump),
    yaml_values.map(dump),  # a top level that is not a list of entries
)

# ---- raw text: YAML syntax soup, and valid documents with bytes broken ----

YAML_TOKENS = ["- func: ", "  dispatch:\n", "    CPU: add_cpu\n", "- ", ": ", "\n", "  ", "\t", "[", "]",
               "{", "}", ",", "'", '"', "&a ", "*a", "<<: *a\n", "!!python/object:os.system x", "!!binary ",
               "? ", "|\n", ">\n", "#", "---\n", "...\n", "%YAML 1.1\n", "\x00", "\ufeff", "é", "relu(Tensor self) -> Tensor",
               "variants: method\n", "true", "null", "1: x\n", "func: a\nfunc: b\n"]

yaml_soup = st.lists(st.sampled_from(YAML_TOKENS), max_size=30).map("".join)


@st.composite
def broken_document(draw):
    text = draw(structured_documents)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.sampled_from(YAML_TOKENS + ["\n", " ", ":", "-"])) + text[i + draw(st.integers(0, 2)):]
    return text


documents = st.one_of(structured_documents, yaml_soup, broken_document(), st.text(max_size=60))


def schema_document(schema):
    """A one-entry file whose func: is ``schema``, quoted so that YAML keeps it verbatim."""
    return dump([{"func": schema, "dispatch": {"CPU": "fuzz_cpu"}}])


class FuzzYamlTest(support.TempDirTestCase):
    """Each property writes its example to one file in self.dir and parses it."""

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.dir, "native_functions.yaml")
        self.line_prefix = re.compile(re.escape(self.path) + r":([0-9]+): ")

    def write_text(self, text):
        with open(self.path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        # Lines as YAML counts them (a loose bound: a final line break counts once more).
        return len(re.findall("\r\n|[\r\n\x85\u2028\u2029]", text)) + 1

    def assertLocated(self, error, lines):
        """Every message of ``error`` names this file and a line inside it."""
        self.assertTrue(error.messages, "a GenError without messages")
        self.assertEqual(str(error), "\n".join(error.messages))
        for message in error.messages:
            self.assertEqual(message.splitlines(), [message], "an error message spans several lines")
            match = self.line_prefix.match(message)
            self.assertIsNotNone(match, f"message does not start with FILE:LINE: {message!r}")
            self.assertTrue(1 <= int(match.group(1)) <= lines, f"line outside the file: {message!r}")

    def parse(self, text):
        """Parse ``text``: a model, or a located GenError (anything else fails the test)."""
        lines = self.write_text(text)
        try:
            return parse_native_functions(self.path, known_tags=support.TAGS)
        except GenError as e:
            self.assertLocated(e, lines)
            return None

    @FUZZ_SETTINGS
    @given(documents)
    def test_malformed_documents_give_located_errors(self, text):
        self.parse(text)

    @FUZZ_SETTINGS
    @given(schema_strings)
    def test_malformed_schemas_give_located_errors(self, schema):
        model = self.parse(schema_document(schema))
        if model is not None:
            # What parsed must print back to a schema that parses to the same operator.
            (nf,) = model
            self.assertIsNotNone(self.parse(schema_document(str(nf.func))))

    @FUZZ_SETTINGS
    @given(st.one_of(documents, schema_strings.map(schema_document)))
    def test_failed_gen_writes_nothing(self, text):
        lines = self.write_text(text)
        out = os.path.join(self.dir, "out")
        os.makedirs(out, exist_ok=True)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            status = gen.main(["--out", out, "--tags", os.path.join(support.REPO_ROOT, "schemas", "tags.yaml"),
                               self.path])
        if status == 0:
            self.assertTrue(os.listdir(out))
            shutil.rmtree(out)  # the next example starts from an empty folder
            return
        self.assertEqual(status, 1)
        self.assertEqual(os.listdir(out), [], "a failed run wrote into the output folder")
        messages = stderr.getvalue().splitlines()
        self.assertTrue(messages, "a failed run printed no error")
        self.assertLocated(GenError("\n".join(messages), tuple(messages)), lines)

    def test_findings(self):
        """What the fuzz found, fixed in codegen/yaml_loader.py and native_yaml.py."""
        from codegen.yaml_loader import load_yaml_text

        def message(text):
            with self.assertRaises(GenError) as caught:
                load_yaml_text(text, "f.yaml")
            return str(caught.exception)

        # A control character: PyYAML's multi-line message, at line 1 whatever the position.
        self.assertEqual(message("a: 1\n\x1f"),
                         "f.yaml:2: invalid YAML: unacceptable character #x001f: control characters are not allowed")
        # An error at the end of an input without a final line break: libyaml says line 2.
        self.assertEqual(message("["), "f.yaml:1: invalid YAML: did not find expected node content")
        # A schema holding a line break printed raw, splitting its error over two lines.
        self.write_text('- func: "relu(Tensor\\nself) -> Tensor"\n')
        with self.assertRaises(GenError) as caught:
            parse_native_functions(self.path, known_tags=support.TAGS)
        self.assertEqual(caught.exception.messages, (
            f"{self.path}:1: relu(Tensor\\nself) -> Tensor: malformed schema at column 12: "
            "expected ' ' and an argument name, found '\\n'",))

    def test_return_alias_without_argument(self):
        """Found by the fuzz: a return aliasing no argument crashed an emitter (StopIteration)."""
        self.write_text(schema_document("addlu(Tensor self) -> Tensor(a)"))
        with self.assertRaises(GenError) as caught:
            parse_native_functions(self.path, known_tags=support.TAGS)
        self.assertEqual(caught.exception.messages, (
            f"{self.path}:1: addlu(Tensor self) -> Tensor(a): return alias set 'a' is not the alias set "
            "of any argument",))

    def test_known_bad_inputs(self):
        """Examples that pin the properties down (each is a located, one-line error)."""
        for text in ["- func: relu(Tensor self) -> Tensor\n  dispatch: {CPU: [a]}\n",
                     "- func: 'relu(Tensor self -> Tensor'\n",
                     "- &a func: relu(Tensor self) -> Tensor\n- *a\n",
                     "!!python/object:os.system x\n",
                     "\x00",
                     "? |\n  multi\n  line\n: 1\n? |\n  multi\n  line\n: 2\n",
                     "- func: relu(Tensor self) -> Tensor\n\tdispatch: x\n",
                     ""]:
            with self.subTest(text=text):
                self.assertIsNone(self.parse(text))

if __name__ == "__main__":
    unittest.main()
