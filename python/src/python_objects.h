// python/src/python_objects.h: dispatchkit's values as Python objects and back: tensors,
// dtypes, devices, layouts, memory formats, and the errors Python sees.
#pragma once

#include <Python.h>

#include <memory>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "dk/core/core_types.h"
#include "dk/dispatch/ivalue.h"
#include "dk/tensor/tensor.h"

namespace dk::python {

namespace py = pybind11;

// ---------------------------------------------------------------- tensors
// The Python Tensor type (dispatchkit.Tensor): a pybind11 class holding a dk::Tensor, one
// object per TensorImpl (Note [One Python object per tensor] in python_objects.cpp).
struct TensorDeleter {
  void operator()(Tensor* t) const;
};
using TensorHolder = std::unique_ptr<Tensor, TensorDeleter>;
bool isTensor(PyObject* obj);
// obj must be a Tensor (isTensor). The reference lives as long as obj.
Tensor& unwrapTensor(PyObject* obj);
// A new reference: a Python Tensor holding t, or None when t is undefined.
PyObject* wrapTensor(Tensor t);
py::object toPython(Tensor t);

// ---------------------------------------------------------------- dtypes, devices, ...
// One Python object per dtype (dispatchkit.float32 is dispatchkit.tensor(1.).dtype).
struct PyDtype {
  ScalarType type;
};
struct PyLayout {
  Layout layout;
};
struct PyMemoryFormat {
  MemoryFormat format;
};
py::object dtypeObject(ScalarType t);
py::object layoutObject(Layout l);
py::object memoryFormatObject(MemoryFormat m);
bool isDtype(PyObject* obj);
bool isLayout(PyObject* obj);
bool isMemoryFormat(PyObject* obj);
bool isDevice(PyObject* obj);
// "cpu", "cuda:1", a device object, or an int (a CUDA device index), as PyTorch accepts.
Device deviceFrom(PyObject* obj);

// An operator's result as Python sees it (None, bool, int, float, Tensor, tuple of tensors...).
py::object ivalueToPython(const IValue& v);

// Registers the types above in `m` (called once by the module).
void bindTypes(py::module_& m);
void bindTensor(py::module_& m);

// A py::object whose last reference may go on a thread without the GIL (a kernel freed by the
// dispatcher, an autograd node freed by the engine), or after Python ended (then it is leaked).
struct PythonRef {
  py::object obj;
  PythonRef() = default;
  PythonRef(const PythonRef&) = delete;
  PythonRef& operator=(const PythonRef&) = delete;
  ~PythonRef() {
    if (!obj) return;
    if (Py_IsInitialized() && !_Py_IsFinalizing()) {
      py::gil_scoped_acquire gil;
      obj = py::object();
    } else {
      obj.release();
    }
  }
};

// DLPack (dlpack.cpp): a "dltensor" capsule sharing t's memory; (device type, index); a
// tensor sharing the memory of an object with __dlpack__ or of a capsule.
py::object toDLPack(const Tensor& t);
py::tuple dlpackDevice(const Tensor& t);
py::object fromDLPack(py::object obj);

// dispatchkit.autograd.Function's node (python_autograd.cpp).
void bindAutogradFunction(py::module_& m);

// ---------------------------------------------------------------- errors
// Runs `body`, turning a C++ exception into the Python one (dk::NotImplementedError ->
// NotImplementedError, dk::Error -> RuntimeError, a Python error -> itself) and returning
// nullptr, as a CPython entry point must.
template <class F>
PyObject* translateErrors(F&& body) {
  try {
    return body();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (const dk::NotImplementedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

}  // namespace dk::python
