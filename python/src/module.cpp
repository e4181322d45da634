// python/src/module.cpp: the extension module dispatchkit._C: the generated operators
// (Note [Python bindings]), the types, grad modes and autograd.
#include <Python.h>

#include <memory>
#include <string>
#include <vector>

#include "arg_parser.h"
#include "python_call.h"
#include "python_dispatch.h"
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

PyObject* callPythonFunction(PyObject* capsule, PyObject* args, PyObject* kwargs) {
  auto* fn = static_cast<PythonFunction*>(PyCapsule_GetPointer(capsule, nullptr));
  return translateErrors([&] { return callSignatures(fn->name, fn->signatures, fn->method, args, kwargs); });
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
      fn->def.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&callPythonFunction));
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
  bindDispatch(m);
  bindAutogradFunction(m);
}
