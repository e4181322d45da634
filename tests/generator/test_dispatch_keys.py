"""The key file (schemas/dispatch_keys.yaml, codegen/keys_yaml.py) and what is generated from it."""

import os
import re
import unittest

from codegen import dispatch_key
from codegen.dest import dispatch_keys as dest_keys
from codegen.errors import GenError
from codegen.keys_yaml import DEFAULT_PATH, ENV_VAR as KEYS_ENV_VAR, load_key_universe
from codegen.writer import FileManager
from tests.generator import support

with open(DEFAULT_PATH, encoding="utf-8") as f:
    PROJECT_KEYS = f.read()


class KeyFileTestCase(support.TempDirTestCase):
    def load(self, text):
        return load_key_universe(self.write("keys.yaml", text))

    def errors(self, text):
        path = self.write("keys.yaml", text)
        with self.assertRaises(GenError) as caught:
            load_key_universe(path)
        return [m.replace(path, "K") for m in caught.exception.messages]

    def edited(self, old, new, count=1):
        """The project's key file with ``old`` replaced by ``new``."""
        self.assertIn(old, PROJECT_KEYS)
        return PROJECT_KEYS.replace(old, new, count)

    def line_of(self, text, needle):
        return text[:text.index(needle)].count("\n") + 1


class ProjectKeysTest(KeyFileTestCase):
    def test_the_layout_the_runtime_has_always_had(self):
        u = load_key_universe()
        self.assertEqual([b.name for b in u.backends], ["CPU", "CUDA", "PrivateUse1", "PrivateUse2", "Meta"])
        self.assertEqual([f.name for f in u.per_backend], ["Dense", "Quantized", "Sparse", "AutogradFunctionality"])
        self.assertEqual(u.slot_count, 36)  # 33 before the function transforms' keys of issue 19
        self.assertEqual(u.functionalities[-1].name, "ThreadRegistration")
        self.assertEqual(u.runtime_keys_of(u.keyset("autograd_dispatch_keyset").value),
                         ("AutogradOther", "AutogradCPU", "AutogradCUDA", "AutogradPrivateUse1", "AutogradPrivateUse2",
                          "AutogradMeta"))
        cea = next(a for a in u.aliases if a.name == "CompositeExplicitAutograd")
        self.assertEqual(cea.value, u.keyset("backend_dispatch_keyset").value)
        after = u.runtime_keys_of(u.keyset("after_autograd_keyset").value)
        self.assertEqual(after[-1], "ADInplaceOrView")
        self.assertNotIn("AutogradCPU", after)

    def test_the_generators_key_table_comes_from_the_file(self):
        K = dispatch_key.DispatchKey
        self.assertEqual((K.AutogradCUDA.functionality, K.AutogradCUDA.backend), ("AutogradFunctionality", "CUDA"))
        self.assertTrue(K.QuantizedCUDA.is_backend and K.QuantizedCUDA.is_cuda)
        self.assertFalse(K.AutogradCUDA.is_backend)
        self.assertTrue(K.CompositeImplicitAutograd.is_alias)
        self.assertIsNone(K.parse("ThreadRegistration"))  # internal: no kernel is registered there from YAML
        self.assertLess(K.Meta, K.BackendSelect)
        self.assertLess(K.TESTING_ONLY_GenericMode, K.Autograd)
        self.assertEqual(dispatch_key.AUTOCAST_KEYS, ((K.AutocastCPU, "CPU"), (K.AutocastCUDA, "CUDA")))

    def test_generated_headers(self):
        files = FileManager()
        with files:
            dest_keys.emit(load_key_universe(), files, ("schemas/dispatch_keys.yaml",))
        keys = files.contents("dk/generated/keys/DispatchKeys.h")
        self.assertIn("  CPU = EndOfFunctionalityKeys,\n", keys)
        self.assertIn("  Autograd = EndOfRuntimeBackendKeys,\n", keys)
        self.assertIn('{DispatchKey::AutogradFunctionality, "autograd_fallback (default)"}', keys)
        sets = files.contents("dk/generated/keys/DispatchKeySets.h")
        self.assertRegex(sets, r"inline constexpr DispatchKeySet default_included_set =\n"
                               r"    DispatchKeySet\{DispatchKey::BackendSelect, DispatchKey::ADInplaceOrView\};")
        self.assertIn("case DispatchKey::CompositeExplicitAutogradNonFunctional:", sets)


class ExtendedKeysTest(KeyFileTestCase):
    """A backend and a functionality layer added by YAML alone."""

    def test_a_new_backend_and_layer(self):
        text = self.edited("  - name: PrivateUse2\n", "  - name: PrivateUse2\n  - name: XPU\n    device: xpu\n")
        text = text.replace("  - name: Tracer\n", "  - name: Tracer\n  - name: Logging\n    fallback: logging_fallthrough\n")
        u = self.load(text)
        self.assertEqual([b.name for b in u.backends][-2:], ["XPU", "Meta"])
        names = [k.name for k in u.runtime_keys()]
        for key in ("XPU", "QuantizedXPU", "AutogradXPU", "Logging"):
            self.assertIn(key, names)
        self.assertEqual(u.slot_count, 36 + 4 + 1)
        self.assertIn("AutogradXPU", u.runtime_keys_of(u.keyset("autograd_dispatch_keyset").value))
        self.assertNotIn("Logging", u.runtime_keys_of(u.keyset("after_autograd_keyset").value))


class PyTorchKeysTest(KeyFileTestCase):
    def test_pytorch_1_13_universe(self):
        u = load_key_universe(os.path.join(support.REPO_ROOT, "schemas", "pytorch_keys.yaml"))
        self.assertEqual(len(u.backends), 14)
        self.assertEqual([f.name for f in u.per_backend],
                         ["Dense", "Quantized", "Sparse", "NestedTensor", "AutogradFunctionality"])
        self.assertEqual(u.slot_count, 1 + (len(u.functionalities) - 5) + 5 * 14)
        self.assertLessEqual(len(u.backends) + len(u.functionalities), 64)
        nonfunctional = u.runtime_keys_of(next(a for a in u.aliases
                                              if a.name == "CompositeExplicitAutogradNonFunctional").value)
        self.assertIn("MkldnnCPU", nonfunctional)
        self.assertNotIn("SparseCPU", nonfunctional)
        self.assertNotIn("XLA", nonfunctional)
        self.assertIn("XLA", u.runtime_keys_of(u.keyset("backend_dispatch_keyset").value))
        nested = u.runtime_keys_of(next(a for a in u.aliases if a.name == "CompositeImplicitAutogradNestedTensor").value)
        self.assertEqual(set(nested), {f"NestedTensor{b.name}" for b in u.backends} | {"AutogradNestedTensor"})
        self.assertEqual([f.name for f in u.functionalities if f.cuda], ["SparseCsrCUDA"])

    def test_cuda_keys_with_pytorchs_universe(self):
        # The generator's table of keys, loaded with PyTorch's file (gen.py --keys does the same):
        # SparseCsrCUDA's and NestedTensorCUDA's wrappers guard the device like those of the CUDA
        # backend's other keys, as in PyTorch (torchgen's is_cuda_dispatch_key).
        import subprocess
        import sys
        env = dict(os.environ, **{KEYS_ENV_VAR: os.path.join(support.REPO_ROOT, "schemas", "pytorch_keys.yaml")})
        script = ("from codegen.dispatch_key import ALIAS_KEYS, CUDA_KEYS, DispatchKey\n"
                  "print(' '.join(sorted(k.name for k in CUDA_KEYS)))\n"
                  "print(' '.join(sorted(k.name for k in ALIAS_KEYS)))\n"
                  "print(len(DispatchKey.__members__), len(set(DispatchKey)))")
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                                cwd=support.REPO_ROOT, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        cuda, aliases, counts = result.stdout.splitlines()
        self.assertEqual(cuda.split(), ["CUDA", "NestedTensorCUDA", "QuantizedCUDA", "SparseCUDA", "SparseCsrCUDA"])
        # Every alias is a key of its own, not another name for a runtime key (105 of them).
        self.assertIn("CompositeImplicitAutograd", aliases.split())
        self.assertIn("CompositeImplicitAutogradNestedTensor", aliases.split())
        members, distinct = counts.split()
        self.assertEqual(members, distinct)


class FixtureKeysTest(KeyFileTestCase):
    def test_the_fixture_is_the_project_file_plus_xpu_and_logging(self):
        project = load_key_universe()
        fixture = load_key_universe(os.path.join(support.REPO_ROOT, "tests", "keys", "xpu_keys.yaml"))
        backends = [b.name for b in project.backends]
        backends.insert(backends.index("Meta"), "XPU")
        self.assertEqual([b.name for b in fixture.backends], backends)
        layers = [f.name for f in project.functionalities]
        layers.insert(layers.index("Tracer") + 1, "Logging")
        self.assertEqual([f.name for f in fixture.functionalities], layers)
        self.assertEqual([(a.name, [str(t) for t in a.terms]) for a in fixture.aliases],
                         [(a.name, [str(t) for t in a.terms]) for a in project.aliases])
        self.assertEqual([s.name for s in fixture.keysets], [s.name for s in project.keysets])
        self.assertEqual(fixture.functionality("Logging").fallback, "logging_fallthrough")


class KeyFileErrorsTest(KeyFileTestCase):
    def test_duplicate_names(self):
        text = self.edited("  - name: Tracer\n", "  - name: Tracer\n  - name: Python\n")
        line = self.line_of(text, "  - name: Tracer\n") + 1
        first = self.line_of(text, "  - name: Python\n")
        self.assertEqual(self.errors(text),
                         [f"K:{line}: functionality 'Python': duplicate key name (first declared at line {first})"])

    def test_a_per_backend_key_colliding_with_a_functionality(self):
        text = self.edited("  - name: Tracer\n", "  - name: Tracer\n  - name: QuantizedCPU\n")
        (message,) = self.errors(text)
        self.assertIn("duplicate key name", message)
        self.assertIn("the CPU key of functionality 'QuantizedCPU'", message)

    def test_alias_over_an_unknown_key(self):
        text = self.edited("covers: [autograd_dispatch_keyset]", "covers: [autograd_dispatch_keyst]")
        line = self.line_of(text, "autograd_dispatch_keyst")
        self.assertEqual(self.errors(text),
                         [f"K:{line}: alias 'Autograd': unknown key or key set 'autograd_dispatch_keyst' "
                          "(did you mean 'autograd_dispatch_keyset'?)"])

    def test_a_key_set_defined_through_itself(self):
        text = self.edited("  default_excluded_set: [AutocastCPU, AutocastCUDA]",
                           "  default_excluded_set: [AutocastCPU, autocast_dispatch_keyset]")
        text = text.replace("  autocast_dispatch_keyset: [AutocastCPU, AutocastCUDA]",
                            "  autocast_dispatch_keyset: [default_excluded_set]")
        messages = self.errors(text)
        self.assertEqual(len(messages), 1, messages)
        self.assertRegex(messages[0], r"^K:\d+: key set '\w+' is defined through itself: "
                                      r"(default_excluded_set -> autocast_dispatch_keyset -> default_excluded_set|"
                                      r"autocast_dispatch_keyset -> default_excluded_set -> autocast_dispatch_keyset)$")

    def test_more_bits_than_a_key_set_holds(self):
        extra = "".join(f"  - name: Layer{i}\n" for i in range(50))
        text = self.edited("  - name: Tracer\n", "  - name: Tracer\n" + extra)
        self.assertIn("K:1: 5 backends and 69 functionalities need 74 bits; a key set holds 64", self.errors(text))

    def test_more_slots_than_a_byte_numbers(self):
        extra = "".join(f"  - name: PerBackend{i}\n    per_backend: true\n    prefix: P{i}\n" for i in range(50))
        text = self.edited("  - name: Tracer\n", "  - name: Tracer\n" + extra)
        self.assertIn("K:1: the keys need 286 table slots; slot numbers are bytes (at most 256)", self.errors(text))

    def test_what_the_runtime_names_must_be_declared(self):
        text = self.edited("  - name: Python\n", "")
        text = text.replace("  full_keyset: [all_functionalities]\n", "")
        self.assertEqual(self.errors(text), [
            "K:1: the runtime needs the functionality 'Python', which the key file does not declare",
            "K:1: the runtime needs the key set 'full_keyset', which the key file does not declare",
        ])

    def test_thread_registration_stays_highest(self):
        text = self.edited("  - name: ThreadRegistration\n    internal: true\n", "")
        text = text.replace("  - name: Tracer\n", "  - name: Tracer\n  - name: ThreadRegistration\n    internal: true\n")
        line = self.line_of(text, "  - name: ThreadRegistration\n")
        self.assertEqual(self.errors(text), [f"K:{line}: 'ThreadRegistration' must be the highest functionality "
                                             "(every thread's first call passes it)"])

    def test_except_terms(self):
        text = self.edited("  full_keyset: [all_functionalities]\n",
                           "  full_keyset: [all_functionalities]\n"
                           "  no_sparse: [backend_dispatch_keyset, except: [Sparse], except_backends: [Meta]]\n"
                           "  bad: [Dense, except: [Nothing], except_backends: [Mars]]\n")
        messages = self.errors(text)
        self.assertEqual(len(messages), 2, messages)
        self.assertIn("key set 'bad': 'except' names 'Nothing', which is not a functionality", messages[0])
        self.assertIn("key set 'bad': 'except_backends' names 'Mars', which is not a backend", messages[1])
        u = self.load(text.replace("  bad: [Dense, except: [Nothing], except_backends: [Mars]]\n", ""))
        keys = u.runtime_keys_of(u.keyset("no_sparse").value)
        self.assertIn("QuantizedCPU", keys)
        self.assertNotIn("SparseCPU", keys)
        self.assertNotIn("Meta", keys)

    def test_field_errors(self):
        messages = self.errors("""
            backends:
              - name: CPU
                devise: cpu
              - name: 1x
            functionalities:
              - name: Dense
                per_backend: yes please
              - name: Sparse
                prefix: Sparse
              - name: Odd
                per_backend: true
              - name: Layer
                cuda: true
            aliases: []
            keysets:
              s: [{up_to: Nothing}]
            """)
        self.assertIn("K:3: backend: unknown field 'devise' (did you mean 'device'?)", messages)
        self.assertIn("K:4: backend: 'name' must be a C++ identifier, got '1x'", messages)
        self.assertIn("K:7: functionality 'Dense': 'per_backend' must be true or false, got str", messages)
        self.assertIn("K:9: functionality 'Sparse': 'prefix' is only for a per-backend functionality", messages)
        self.assertIn("K:10: functionality 'Odd': a per-backend functionality needs a 'prefix' for its keys' names "
                      "(\"\" names them after the backends)", messages)
        self.assertIn("K:13: functionality 'Layer': 'cuda' is for a backend functionality with a single key (a "
                      "per-backend one's CUDA key is its backend's)", messages)
        self.assertIn("K:16: key set 's': 'up_to: Nothing' names no functionality", messages)

    def test_not_a_mapping(self):
        self.assertEqual(self.errors("- a\n"),
                         ["K:1: a key file is a mapping of backends, functionalities, aliases, keysets, got list"])


class GeneratedKeysFreshTest(unittest.TestCase):
    def test_checked_in_headers_match_the_file(self):
        files = FileManager()
        with files:
            dest_keys.emit(load_key_universe(), files, ("schemas/dispatch_keys.yaml",))
        for name in files.names():
            with open(os.path.join(support.REPO_ROOT, "generated", name), encoding="utf-8") as f:
                self.assertEqual(f.read(), files.contents(name), name)
        self.assertTrue(re.search(r"kDispatchKeyNames", files.contents("dk/generated/keys/DispatchKeys.h")))


if __name__ == "__main__":
    unittest.main()
