// python/src/python_call.h: a Python call of an operator: the first signature that accepts the
// arguments fills the stack, the operator runs boxed with the GIL released, and its results come
// back as Python objects (Note [Python bindings] in python_functions.h).
#pragma once

#include <Python.h>

#include <string>
#include <vector>

#include "arg_parser.h"

namespace dk::python {

// A new reference, or throws (py::type_error listing the signatures when none fits; the
// operator's own errors as they are). `method`: args[0] is self.
PyObject* callSignatures(const std::string& name, const std::vector<Signature>& signatures, bool method,
                         PyObject* args, PyObject* kwargs);

// The results an operator left on `stack` as Python sees them: None, one value, or a named
// tuple (dispatchkit.return_types.<name>) for several.
PyObject* wrapResults(const OperatorHandle& op, const Stack& stack);

}  // namespace dk::python
