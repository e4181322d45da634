"""The calling conventions: pure functions from a schema to C++ text, one module each.

``dispatcher`` (the unboxed signature every kernel and ``dk::ops::X::call`` share),
``cpp`` (the public ``dk::op()`` / ``tensor.op()`` API: the dispatcher signature plus
default arguments), ``native`` (the ``dk::native::`` kernel declarations) and
``boxed`` (the stack layout of a boxed call). They read only ``codegen.model``.

Keep this file free of code.
"""
