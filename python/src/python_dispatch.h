// python/src/python_dispatch.h: operator objects, libraries with Python kernels, Python modes
// (Note [Python kernels and modes] in python_dispatch.cpp).
#pragma once

#include "dk/dispatch/dispatcher.h"
#include "python_objects.h"

namespace dk::python {

// dispatchkit.ops.<ns>.<op>.<overload> for `op`: one object per operator.
py::object opOverloadObject(const OperatorHandle& op);

void bindDispatch(py::module_& m);

}  // namespace dk::python
