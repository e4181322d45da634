"""Tests of the code generator (codegen/), for pytest and for unittest discovery.

    /usr/bin/python3 -m pytest tests/codegen -q
    /usr/bin/python3 -m unittest discover -s tests/codegen -t .

unittest imports this folder as ``tests.codegen``. pytest's default ("prepend")
import mode names a package after its topmost folder holding ``__init__.py``;
tests/ has none, so it imports this folder as the top-level package ``codegen``,
the generator's own name. When that happens, the generator's folder is added to
this package's path, so that ``codegen.model`` and friends still resolve to the
generator (no test module shares a name with a generator module), and the
generator's ``__init__`` is run here.
"""

import os

if __name__ == "codegen":
    _GENERATOR = os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "codegen"
    )
    __path__.append(_GENERATOR)  # noqa: F821 (set by the import system)
    with open(os.path.join(_GENERATOR, "__init__.py"), encoding="utf-8") as _f:
        exec(compile(_f.read(), _f.name, "exec"))
