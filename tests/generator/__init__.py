"""Tests of the code generator (codegen/), for unittest discovery and for pytest:

    /usr/bin/python3 -m unittest discover -s tests/generator -t .
    /usr/bin/python3 -m pytest tests/generator -q

unittest imports this folder as ``tests.generator``, pytest as the top-level package
``generator``; neither name is the generator's own (``codegen``), so its modules import as
``codegen.model`` and friends either way.
"""
