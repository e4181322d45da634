"""The calling conventions: pure functions from the model to C++ spellings, one module each.

``dispatcher`` (the unboxed signature every kernel and ``dk::ops::X::call`` share, its types as
``CType``s), ``cpp`` (the public ``dk::op()`` / ``tensor.op()`` API: the dispatcher signature
plus default arguments), ``native`` (the ``dk::native::`` kernel declarations) and ``autograd``
(how a backward node spells what it saves). They read only the model (``codegen.model``,
``codegen.schema``, ``codegen.derivatives``) and ``codegen.cpp_names``; the model never reads
them.

Keep this file free of code.
"""
