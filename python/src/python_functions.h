// python/src/python_functions.h: the generated table of Python-callable operators.
//
// Note [Python bindings]
// Every operator of schemas/native_functions.yaml is callable from Python as
// dispatchkit.<name> and, where the YAML says `variants: method`, as Tensor.<name>, with no
// hand-written code per operator. The generator writes one row per overload a Python user can
// call (generated/PythonFunctions.cpp, codegen/dest/python_bindings.py): the Python name, the
// operator and overload, the out= overload merged into it as the `out` keyword, and where it
// appears. The rows of one name are in the order the parser tries them: an overload taking a
// Tensor where another takes a number comes first.
//
// At import the module looks each row's operator up in the dispatcher and builds a Signature
// from its schema (arg_parser.h): the Python parameters, their defaults parsed once, and which
// of them are keyword-only. A call tries the signatures of its name in order; the first that
// accepts the arguments gives the boxed stack, and the operator is called through the
// dispatcher with the GIL released. When none accepts them, the TypeError lists every
// signature, as PyTorch's Python argument parser does.
#pragma once

#include <cstddef>

namespace dk::python {

enum PythonVariant : unsigned { kFunction = 1, kMethod = 2 };

struct PythonOverloadRow {
  const char* python_name;   // "add", "add_"
  const char* module;        // "" for dispatchkit, "nn" for dispatchkit._C._nn
  const char* op;            // "dk::add"
  const char* overload;      // "Tensor", "" for none
  const char* out_overload;  // the overload called when `out=` is given, or nullptr
  unsigned variants;         // kFunction | kMethod
};

extern const PythonOverloadRow kPythonOverloads[];
extern const size_t kNumPythonOverloads;

}  // namespace dk::python
