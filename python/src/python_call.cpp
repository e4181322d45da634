// python/src/python_call.cpp: calling an operator from Python (python_call.h).
#include "python_call.h"

#include <algorithm>
#include <map>

#include "python_objects.h"

namespace dk::python {

namespace {

// Multiple returns come back as a named tuple, as PyTorch's torch.return_types.max(values, indices):
// one type per operator name (its overloads return the same names), dispatchkit.return_types.max
// for dk::max and .myns_max for myns::max.
py::object returnTuple(const FunctionSchema& schema, const py::tuple& values) {
  static std::map<std::string, py::object>* types = new std::map<std::string, py::object>();
  const std::string& name = schema.operator_name().name;  // "dk::max"
  auto it = types->find(name);
  if (it == types->end()) {
    size_t colons = name.find("::");
    std::string ns = colons == std::string::npos ? "dk" : name.substr(0, colons);
    std::string short_name = (ns == "dk" ? "" : ns + "_") + name.substr(colons == std::string::npos ? 0 : colons + 2);
    py::list fields;
    for (const Argument& r : schema.returns()) fields.append(r.name);
    py::object namedtuple = py::module_::import("collections").attr("namedtuple");
    py::object type = namedtuple(short_name, fields, py::arg("module") = "dispatchkit.return_types");
    py::module_::import("dispatchkit.return_types").attr(short_name.c_str()) = type;
    it = types->emplace(name, type).first;
  }
  return it->second(*values);
}

}  // namespace

PyObject* wrapResults(const OperatorHandle& op, const Stack& stack) {
  // A returned alias of an argument (add_, out=) is that argument's own object: one Python
  // object per tensor (Note [One Python object per tensor] in python_objects.cpp).
  const FunctionSchema& schema = op.schema();
  if (schema.returns().empty()) Py_RETURN_NONE;
  if (schema.returns().size() == 1) return ivalueToPython(stack[0]).release().ptr();
  py::tuple values(stack.size());
  for (size_t i = 0; i < stack.size(); ++i) values[i] = ivalueToPython(stack[i]);
  // Named returns give a named tuple; unnamed ones a plain tuple, as in PyTorch.
  bool named = std::all_of(schema.returns().begin(), schema.returns().end(),
                           [](const Argument& r) { return !r.name.empty(); });
  return named ? returnTuple(schema, values).release().ptr() : values.release().ptr();
}

PyObject* callSignatures(const std::string& name, const std::vector<Signature>& signatures, bool method,
                         PyObject* args, PyObject* kwargs) {
    Stack stack;
    Signature::Parsed parsed;
    for (const Signature& sig : signatures) {
      if (!sig.parse(args, kwargs, stack, parsed, nullptr)) continue;
      {
        py::gil_scoped_release nogil;
        parsed.op->callBoxed(stack);
      }
      if (parsed.requires_grad) stack[0].toTensor().requires_grad_(true);
      return wrapResults(*parsed.op, stack);
    }
    // No signature fits: PyTorch's TypeError.
    std::string message;
    if (signatures.size() == 1) {
      signatures[0].parse(args, kwargs, stack, parsed, &message);
    } else {
      message = name + "() received an invalid combination of arguments - got " + describeCall(args, kwargs, method) +
                ", but expected one of:\n";
      for (const Signature& sig : signatures) message += " * " + sig.str() + "\n";
    }
    throw py::type_error(message);
}


}  // namespace dk::python
