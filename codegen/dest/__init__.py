"""The emitters: one module per family of output files.

Each exposes ``emit(ctx, files)`` that renders its templates from a
``common.GenContext`` into a ``writer.FileManager``; ``codegen/gen.py`` calls them
in order. Keep this file free of code.
"""
