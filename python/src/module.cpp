// python/src/module.cpp: the extension module dispatchkit._C: the generated operators
// (Note [Python bindings]), the types, grad modes and autograd.
#include <Python.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "arg_parser.h"
#include "dk/autograd/engine.h"
#include "dk/core/grad_mode.h"
#include "python_functions.h"
#include "python_objects.h"

namespace dk::python {

namespace {

// Every overload of one Python name, in the order they are tried.
struct PythonFunction {
  std::string name;
  bool method = false;
  std::vector<Signature> signatures;
  PyMethodDef def{};  // what PyCFunction_New points at: lives as long as this object (never freed)
};

// Multiple returns come back as a named tuple, as PyTorch's torch.return_types.max(values, indices).
py::object returnTuple(const FunctionSchema& schema, const py::tuple& values) {
  static std::map<std::string, py::object>* types = new std::map<std::string, py::object>();
  const std::string& name = schema.operator_name().name;
  std::string short_name = name.substr(name.find("::") == std::string::npos ? 0 : name.find("::") + 2);
  auto it = types->find(short_name);
  if (it == types->end()) {
    py::list fields;
    size_t i = 0;
    for (const Argument& r : schema.returns()) {
      fields.append(r.name.empty() ? "_" + std::to_string(i) : r.name);
      ++i;
    }
    py::object namedtuple = py::module_::import("collections").attr("namedtuple");
    py::object type = namedtuple(short_name, fields, py::arg("module") = "dispatchkit.return_types");
    py::module_::import("dispatchkit.return_types").attr(short_name.c_str()) = type;
    it = types->emplace(short_name, type).first;
  }
  return it->second(*values);
}

// The result of an operator: a returned alias of an argument (add_, out=) is that argument's
// Python object itself, as in PyTorch (x.add_(1) is x).
PyObject* wrapResults(const OperatorHandle& op, PyObject* args, PyObject* kwargs, const Stack& out) {
  const FunctionSchema& schema = op.schema();
  auto returnOf = [&](size_t r) -> py::object {
    if (auto written = writtenArgumentOfReturn(schema, r)) {
      const Argument& a = schema.arguments()[*written];
      PyObject* obj = nullptr;
      if (a.is_out() && kwargs) {
        obj = PyDict_GetItemString(kwargs, "out");
        size_t first_out = schema.arguments().size();
        for (size_t i = 0; i < schema.arguments().size(); ++i) {
          if (schema.arguments()[i].is_out()) {
            first_out = std::min(first_out, i);
          }
        }
        if (obj && (PyTuple_Check(obj) || PyList_Check(obj))) obj = PySequence_Fast_GET_ITEM(obj, *written - first_out);
      } else if (!a.kwarg_only && *written < static_cast<size_t>(PyTuple_GET_SIZE(args))) {
        obj = PyTuple_GET_ITEM(args, *written);
      }
      if (obj && isTensor(obj) && unwrapTensor(obj).is_same(out[r].toTensor())) {
        return py::reinterpret_borrow<py::object>(obj);
      }
    }
    return ivalueToPython(out[r]);
  };
  if (schema.returns().empty()) Py_RETURN_NONE;
  if (schema.returns().size() == 1) return returnOf(0).release().ptr();
  py::tuple values(out.size());
  for (size_t i = 0; i < out.size(); ++i) values[i] = returnOf(i);
  return returnTuple(schema, values).release().ptr();
}

PyObject* callFunction(PyObject* capsule, PyObject* args, PyObject* kwargs) {
  return translateErrors([&]() -> PyObject* {
    auto* fn = static_cast<PythonFunction*>(PyCapsule_GetPointer(capsule, nullptr));
    Stack stack;
    Signature::Parsed parsed;
    for (const Signature& sig : fn->signatures) {
      if (!sig.parse(args, kwargs, stack, parsed, nullptr)) continue;
      {
        py::gil_scoped_release nogil;
        parsed.op->callBoxed(stack);
      }
      if (parsed.requires_grad) stack[0].toTensor().requires_grad_(true);
      return wrapResults(*parsed.op, args, kwargs, stack);
    }
    // No signature fits: PyTorch's TypeError.
    std::string message;
    if (fn->signatures.size() == 1) {
      fn->signatures[0].parse(args, kwargs, stack, parsed, &message);
    } else {
      message = fn->name + "() received an invalid combination of arguments - got " +
                describeCall(args, kwargs, fn->method) + ", but expected one of:\n";
      for (const Signature& sig : fn->signatures) message += " * " + sig.str() + "\n";
    }
    throw py::type_error(message);
  });
}

std::vector<std::unique_ptr<PythonFunction>>* g_functions = nullptr;

// dispatchkit._C.<name>, dispatchkit._C._nn.<name>, and Tensor.<name> from the generated table.
void bindOperators(py::module_& m, py::module_& nn, py::object tensor_class) {
  g_functions = new std::vector<std::unique_ptr<PythonFunction>>();
  Dispatcher& d = Dispatcher::singleton();
  auto handle = [&](const char* op, const char* overload) {
    auto h = d.findSchema(OperatorName{op, overload});
    DK_CHECK(h.has_value(), "Python bindings: operator ", op, overload[0] ? "." : "", overload,
             " is in the generated table but not registered");
    return *h;
  };
  // Rows of one name are consecutive (the generator sorts them); function and method get
  // separate PythonFunction objects (a method sees self as its first argument).
  size_t i = 0;
  while (i < kNumPythonOverloads) {
    size_t j = i;
    while (j < kNumPythonOverloads && std::string_view(kPythonOverloads[j].python_name) == kPythonOverloads[i].python_name &&
           std::string_view(kPythonOverloads[j].module) == kPythonOverloads[i].module) {
      ++j;
    }
    for (bool method : {false, true}) {
      auto fn = std::make_unique<PythonFunction>();
      fn->name = kPythonOverloads[i].python_name;
      fn->method = method;
      for (size_t k = i; k < j; ++k) {
        const PythonOverloadRow& row = kPythonOverloads[k];
        if (!(row.variants & (method ? kMethod : kFunction))) continue;
        std::optional<OperatorHandle> out_op;
        if (row.out_overload) out_op = handle(row.op, row.out_overload);
        fn->signatures.emplace_back(fn->name, handle(row.op, row.overload), out_op, method);
      }
      if (fn->signatures.empty()) continue;
      fn->def.ml_name = fn->name.c_str();
      fn->def.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&callFunction));
      fn->def.ml_flags = METH_VARARGS | METH_KEYWORDS;
      fn->def.ml_doc = nullptr;
      py::capsule self(fn.get());
      py::object function = py::reinterpret_steal<py::object>(PyCFunction_New(&fn->def, self.ptr()));
      if (!function) throw py::error_already_set();
      if (method) {
        py::object bound = py::reinterpret_steal<py::object>(PyInstanceMethod_New(function.ptr()));
        py::setattr(tensor_class, fn->name.c_str(), bound);
      } else {
        py::module_& target = kPythonOverloads[i].module[0] ? nn : m;
        target.attr(fn->name.c_str()) = function;
      }
      g_functions->push_back(std::move(fn));
    }
    i = j;
  }
}

// Enter/exit pairs for the Python context managers (dispatchkit.no_grad, ...).
void bindGradModes(py::module_& m) {
  m.def("is_grad_enabled", &GradMode::is_enabled);
  m.def("_set_grad_enabled", &GradMode::set_enabled);
  m.def("is_inference_mode_enabled", &InferenceMode::is_enabled);
  // InferenceMode is a RAII guard in C++; Python holds one per `with` block.
  py::class_<InferenceMode>(m, "_InferenceModeGuard")
      .def(py::init<bool>());
  m.def("_autograd_grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                             const std::vector<std::optional<Tensor>>& grad_outputs, std::optional<bool> retain_graph,
                             bool create_graph, bool allow_unused) {
    std::vector<Tensor> go;
    for (const auto& g : grad_outputs) go.push_back(g ? *g : Tensor());
    std::vector<Tensor> result;
    {
      py::gil_scoped_release nogil;
      result = autograd::grad(outputs, inputs, go, retain_graph, create_graph, allow_unused);
    }
    py::tuple out(result.size());
    for (size_t i = 0; i < result.size(); ++i) out[i] = toPython(result[i]);
    return out;
  });
}

}  // namespace

}  // namespace dk::python

PYBIND11_MODULE(_C, m) {
  namespace py = pybind11;
  using namespace dk::python;
  m.doc() = "dispatchkit's extension module: the operators of schemas/native_functions.yaml, tensors, autograd";
  bindTypes(m);
  bindTensor(m);
  py::module_ nn = m.def_submodule("_nn", "operators with python_module: nn");
  bindOperators(m, nn, m.attr("Tensor"));
  bindGradModes(m);
}
