"""dispatchkit's code generator: schemas/*.yaml in, C++ out.

Layers, each importing only the ones before it: ``model`` (what an operator is:
``errors``, ``limits``, ``cpp_names``, ``yaml_loader``, ``dispatch_key``, ``schema``,
``model``, ``native_yaml``) -> ``api`` -> ``dest`` -> ``templates``; ``gen`` wires
them and ``writer`` puts the results on disk.

Keep this file free of code: tests may load the package in a way that skips it.
"""
