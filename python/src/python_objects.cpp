// python/src/python_objects.cpp: dtypes, devices, layouts, memory formats and the Tensor type
// as Python sees them (python_objects.h).
#include "python_objects.h"

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "dk/autograd/engine.h"
#include "dk/autograd/node.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/util/error.h"

namespace dk::python {

namespace {

PyTypeObject* g_tensor_type = nullptr;
PyTypeObject* g_dtype_type = nullptr;
PyTypeObject* g_layout_type = nullptr;
PyTypeObject* g_memory_format_type = nullptr;
PyTypeObject* g_device_type = nullptr;
std::array<py::object, kNumScalarTypes>* g_dtypes = nullptr;  // never freed: they live as long as Python
std::array<py::object, 2>* g_layouts = nullptr;
std::array<py::object, 3>* g_memory_formats = nullptr;
py::object* g_size_type = nullptr;  // dispatchkit.Size, a tuple subclass defined in Python

constexpr ScalarType kAllDtypes[] = {kByte, kChar, kShort, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16};

// PyTorch's names for a dtype: the first is its repr ("float32"), the others aliases.
std::vector<std::string> dtypeNames(ScalarType t) {
  switch (t) {
    case kByte: return {"uint8"};
    case kChar: return {"int8"};
    case kShort: return {"int16", "short"};
    case kInt: return {"int32", "int"};
    case kLong: return {"int64", "long"};
    case kHalf: return {"float16", "half"};
    case kFloat: return {"float32", "float"};
    case kDouble: return {"float64", "double"};
    case kBool: return {"bool"};
    case kBFloat16: return {"bfloat16"};
    default: return {"undefined"};
  }
}

py::object sizeTuple(IntArrayRef sizes) {
  py::tuple t(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) t[i] = py::int_(sizes[i]);
  return g_size_type ? (*g_size_type)(t) : py::object(t);
}

// ---------------------------------------------------------------- dk.tensor(data)

struct Flattened {
  std::vector<int64_t> sizes;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  bool any_float = false;
  bool all_bool = true;
};

void flatten(py::handle obj, size_t dim, Flattened& out) {
  if (isTensor(obj.ptr())) {
    const Tensor& t = unwrapTensor(obj.ptr());
    DK_CHECK(t.numel() == 1, "tensor(): only one-element tensors can be elements of a list, got one of ",
             t.numel(), " elements");
    flatten(toPython(t).attr("item")(), dim, out);
    return;
  }
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
    auto n = static_cast<int64_t>(PySequence_Fast_GET_SIZE(obj.ptr()));
    if (out.sizes.size() <= dim) {
      DK_CHECK((out.floats.empty() && out.ints.empty()) || dim == 0, "tensor(): ragged nested list: a list at dim ",
               dim, " where numbers were found before");
      out.sizes.push_back(n);
    } else if (out.sizes[dim] != n) {
      detail::throwRaggedList(static_cast<int64_t>(dim), out.sizes[dim], n);
    }
    for (int64_t i = 0; i < n; ++i) flatten(PySequence_Fast_GET_ITEM(obj.ptr(), i), dim + 1, out);
    return;
  }
  DK_CHECK(dim == out.sizes.size(), "tensor(): ragged nested list: a number at dim ", dim, " where lists were found");
  PyObject* o = obj.ptr();
  if (PyBool_Check(o)) {
    out.ints.push_back(o == Py_True ? 1 : 0);
    out.floats.push_back(o == Py_True ? 1.0 : 0.0);
    return;
  }
  out.all_bool = false;
  if (PyLong_Check(o) || (PyIndex_Check(o) && !PyFloat_Check(o))) {
    int64_t v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    out.ints.push_back(v);
    out.floats.push_back(static_cast<double>(v));
    return;
  }
  double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw py::type_error(std::string("tensor(): could not infer dtype of ") + Py_TYPE(o)->tp_name);
  }
  out.any_float = true;
  out.floats.push_back(d);
  out.ints.push_back(0);
}

Tensor tensorFromData(py::handle data, std::optional<ScalarType> dtype, std::optional<Device> device,
                      bool requires_grad) {
  Flattened flat;
  flatten(data, 0, flat);
  TensorOptions options;
  if (dtype) options = options.dtype(*dtype);
  Tensor t;
  if (flat.any_float) {
    t = detail::tensorFromFloats(flat.floats, flat.sizes, options);
  } else {
    bool all_bool = flat.all_bool && !flat.ints.empty();
    t = detail::tensorFromIntegers(flat.ints, flat.sizes, all_bool ? kBool : kLong, options);
  }
  if (device && device->type != DeviceType::CPU) {
    t = py::reinterpret_steal<py::object>(wrapTensor(t)).attr("to")(py::arg("device") = py::str(device->str()))
            .cast<Tensor>();
  }
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// ---------------------------------------------------------------- NumPy, zero-copy

std::string bufferFormat(ScalarType t) {
  switch (t) {
    case kByte: return "B";
    case kChar: return "b";
    case kShort: return "h";
    case kInt: return "i";
    case kLong: return "q";
    case kHalf: return "e";
    case kFloat: return "f";
    case kDouble: return "d";
    case kBool: return "?";
    default: throw py::type_error("can't convert a tensor of dtype " + std::string(dtypeName(t)) + " to a buffer");
  }
}

ScalarType dtypeOfFormat(const std::string& format, size_t itemsize) {
  std::string f = format;
  if (!f.empty() && (f[0] == '<' || f[0] == '=' || f[0] == '@' || f[0] == '!' || f[0] == '>')) f = f.substr(1);
  if (f == "?") return kBool;
  if (f == "e") return kHalf;
  if (f == "f") return kFloat;
  if (f == "d") return kDouble;
  if (f == "B") return kByte;
  if (f == "b") return kChar;
  if (f == "h") return kShort;
  if (f == "i" || ((f == "l") && itemsize == 4)) return kInt;
  if (f == "q" || f == "l") return kLong;
  throw py::type_error("can't convert a buffer of format '" + format +
                       "': the supported types are float64, float32, float16, int64, int32, int16, int8, uint8, and bool");
}

Tensor fromBuffer(py::buffer buffer) {
  py::buffer_info info = buffer.request(/*writable=*/false);
  ScalarType dtype = dtypeOfFormat(info.format, static_cast<size_t>(info.itemsize));
  std::vector<int64_t> sizes(info.shape.begin(), info.shape.end());
  std::vector<int64_t> strides;
  for (auto s : info.strides) {
    if (s % info.itemsize != 0) {
      throw py::value_error("from_numpy: strides that are not a multiple of the element size are not supported");
    }
    strides.push_back(s / info.itemsize);
  }
  // The tensor keeps the array alive; the last tensor to go releases it, taking the GIL.
  PyObject* owner = buffer.ptr();
  Py_INCREF(owner);
  auto release = [owner](void*) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    Py_DECREF(owner);
  };
  return from_blob(info.ptr, sizes, strides, release, TensorOptions(dtype));
}

// The buffer protocol (numpy.asarray(t), memoryview(t)): zero-copy, writable, the tensor's
// strides in bytes. Written against CPython directly (not pybind11's def_buffer) so that a
// refused tensor raises a Python error instead of escaping as a C++ exception.
struct BufferShape {
  std::vector<Py_ssize_t> shape, strides;
  std::string format;
};

int tensorGetBuffer(PyObject* obj, Py_buffer* view, int flags) {
  std::memset(view, 0, sizeof(Py_buffer));
  view->obj = nullptr;
  try {
    Tensor& t = unwrapTensor(obj);
    if (!t.is_cpu()) {
      PyErr_SetString(PyExc_TypeError, ("can't convert " + t.device().str() +
                                        " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.").c_str());
      return -1;
    }
    if (t.requires_grad()) {
      PyErr_SetString(PyExc_RuntimeError,
                      "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
      return -1;
    }
    auto* info = new BufferShape();
    info->format = bufferFormat(t.dtype());
    for (int64_t s : t.sizes()) info->shape.push_back(static_cast<Py_ssize_t>(s));
    for (int64_t s : t.strides()) info->strides.push_back(static_cast<Py_ssize_t>(s * static_cast<int64_t>(t.element_size())));
    view->buf = t.numel() ? t.data_ptr() : nullptr;
    view->itemsize = static_cast<Py_ssize_t>(t.element_size());
    view->len = static_cast<Py_ssize_t>(t.nbytes());
    view->readonly = 0;
    view->ndim = static_cast<int>(t.dim());
    view->format = (flags & PyBUF_FORMAT) ? info->format.data() : nullptr;
    view->shape = info->shape.data();
    view->strides = info->strides.data();
    view->internal = info;
    if (!(flags & PyBUF_STRIDES) && !t.is_contiguous()) {
      delete info;
      PyErr_SetString(PyExc_BufferError, "the tensor is not contiguous: ask for a strided buffer");
      return -1;
    }
    view->obj = obj;
    Py_INCREF(obj);
    return 0;
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return -1;
}

void tensorReleaseBuffer(PyObject*, Py_buffer* view) { delete static_cast<BufferShape*>(view->internal); }

// ---------------------------------------------------------------- tolist

py::object toList(const Tensor& t, int64_t dim, int64_t offset) {
  if (dim == t.dim()) {
    const char* base = static_cast<const char*>(t.data_ptr()) + offset * static_cast<int64_t>(t.element_size());
    switch (t.dtype()) {
      case kBool: return py::bool_(*reinterpret_cast<const bool*>(base));
      case kByte: return py::int_(*reinterpret_cast<const uint8_t*>(base));
      case kChar: return py::int_(*reinterpret_cast<const int8_t*>(base));
      case kShort: return py::int_(*reinterpret_cast<const int16_t*>(base));
      case kInt: return py::int_(*reinterpret_cast<const int32_t*>(base));
      case kLong: return py::int_(*reinterpret_cast<const int64_t*>(base));
      case kFloat: return py::float_(*reinterpret_cast<const float*>(base));
      case kDouble: return py::float_(*reinterpret_cast<const double*>(base));
      case kHalf: return py::float_(static_cast<float>(*reinterpret_cast<const Half*>(base)));
      case kBFloat16: return py::float_(static_cast<float>(*reinterpret_cast<const BFloat16*>(base)));
      default: throw py::type_error("tolist: unsupported dtype");
    }
  }
  py::list out(static_cast<size_t>(t.size(dim)));
  for (int64_t i = 0; i < t.size(dim); ++i) out[static_cast<size_t>(i)] = toList(t, dim + 1, offset + i * t.stride(dim));
  return out;
}

std::string tensorRepr(const Tensor& t) {
  std::vector<std::string> extra;
  if (t.defined() && t.requires_grad()) {
    auto fn = t.grad_fn();
    if (fn) extra.push_back("grad_fn=<" + fn->name() + ">");
    else extra.push_back("requires_grad=True");
  }
  return formatTensor(t, "dispatchkit.", extra);
}

}  // namespace

// ---------------------------------------------------------------- tensors

bool isTensor(PyObject* obj) { return g_tensor_type && PyObject_TypeCheck(obj, g_tensor_type); }

Tensor& unwrapTensor(PyObject* obj) {
  auto* inst = reinterpret_cast<py::detail::instance*>(obj);
  return *static_cast<Tensor*>(inst->get_value_and_holder().value_ptr());
}

// Note [One Python object per tensor]
// A TensorImpl remembers the Python object standing for it (TensorImpl::python_object), and
// wrapTensor returns that object whenever the tensor comes back to Python. So `x.add_(1) is x`,
// a mode's handler returns the very object its caller gets, and weak references (the leak
// detector's) follow tensors. Two states, switched with the GIL held:
// - Python owns: the object holds a reference on the tensor (the usual case). When the object
//   goes, TensorDeleter clears the slot.
// - C++ owns: the object's last Python reference went while C++ still holds the tensor (a mode
//   returned it into the dispatcher; autograd saved it). Instead of dying, the object is kept
//   (its attributes and weak references with it): the TensorImpl takes a reference on the object
//   and the object's own reference on the tensor becomes a borrowed one, so there is no cycle.
//   wrapTensor hands the object back to Python (and the reference with it). If the TensorImpl
//   dies first, its destructor calls releasePythonObject, which drops the object.
// A Python subclass of Tensor is not kept (CPython has begun tearing it down by then).
void TensorDeleter::operator()(Tensor* t) const {
  TensorImpl* impl = t->unsafeGetTensorImpl();
  if (auto* obj = static_cast<PyObject*>(impl->python_object())) {
    auto* inst = reinterpret_cast<py::detail::instance*>(obj);
    if (inst->get_value_and_holder().value_ptr() == t) impl->set_python_object(nullptr);
  }
  delete t;
}

namespace {

destructor g_pybind11_tensor_dealloc = nullptr;

Tensor* heldTensor(PyObject* obj) {
  auto* inst = reinterpret_cast<py::detail::instance*>(obj);
  auto vh = inst->get_value_and_holder(nullptr, false);
  return vh && vh.holder_constructed() ? static_cast<Tensor*>(vh.value_ptr()) : nullptr;
}

void tensorDealloc(PyObject* self) {
  if (Py_TYPE(self) == g_tensor_type) {
    Tensor* t = heldTensor(self);
    if (t && t->defined()) {
      TensorImpl* impl = t->unsafeGetTensorImpl();
      if (impl->python_object() == self && !impl->owns_python_object() && impl->use_count() > 1) {
        Py_INCREF(self);  // kept: the TensorImpl's reference from now on
        impl->set_owns_python_object(true);
        impl->decref();   // the object now borrows the tensor (may release it: releasePythonObject)
        return;
      }
    }
  }
  g_pybind11_tensor_dealloc(self);
}

// ~TensorImpl of a tensor owning its Python object (detail::python_object_release_hook).
void releasePythonObject(TensorImpl* impl) {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  auto* obj = static_cast<PyObject*>(impl->python_object());
  impl->set_python_object(nullptr);
  impl->set_owns_python_object(false);
  if (obj) {
    if (Tensor* t = heldTensor(obj)) t->release_impl();  // it borrowed: nothing to give back
    Py_DECREF(obj);
  }
  PyGILState_Release(gil);
}

}  // namespace

PyObject* wrapTensor(Tensor t) {
  if (!t.defined()) Py_RETURN_NONE;
  TensorImpl* impl = t.unsafeGetTensorImpl();
  if (auto* obj = static_cast<PyObject*>(impl->python_object())) {
    if (impl->owns_python_object()) {  // back from C++: the object holds the tensor again
      impl->incref();
      impl->set_owns_python_object(false);
      return obj;  // the TensorImpl's reference is the caller's now
    }
    Py_INCREF(obj);
    return obj;
  }
  PyObject* obj = py::cast(std::move(t), py::return_value_policy::move).release().ptr();
  impl->set_python_object(obj);
  return obj;
}

py::object toPython(Tensor t) { return py::reinterpret_steal<py::object>(wrapTensor(std::move(t))); }

// ---------------------------------------------------------------- other values

py::object dtypeObject(ScalarType t) { return (*g_dtypes)[static_cast<size_t>(t)]; }
py::object layoutObject(Layout l) { return (*g_layouts)[static_cast<size_t>(l)]; }
py::object memoryFormatObject(MemoryFormat m) { return (*g_memory_formats)[static_cast<size_t>(m)]; }
bool isDtype(PyObject* obj) { return Py_TYPE(obj) == g_dtype_type; }
bool isLayout(PyObject* obj) { return Py_TYPE(obj) == g_layout_type; }
bool isMemoryFormat(PyObject* obj) { return Py_TYPE(obj) == g_memory_format_type; }
bool isDevice(PyObject* obj) { return Py_TYPE(obj) == g_device_type; }

Device deviceFrom(PyObject* obj) {
  if (isDevice(obj)) return py::handle(obj).cast<Device>();
  if (PyUnicode_Check(obj)) return Device(std::string_view(PyUnicode_AsUTF8(obj)));
  if (PyLong_Check(obj) && !PyBool_Check(obj)) {
    long index = PyLong_AsLong(obj);
    DK_CHECK(index >= 0 && index < 128, "Device index must not be negative");
    return Device(DeviceType::CUDA, static_cast<int8_t>(index));
  }
  throw py::type_error(std::string("expected a device (str, int or dispatchkit.device), got ") + Py_TYPE(obj)->tp_name);
}

py::object ivalueToPython(const IValue& v) {
  if (v.isNone()) return py::none();
  if (v.isTensor()) return toPython(v.toTensor());
  if (v.isBool()) return py::bool_(v.toBool());
  if (v.isInt()) return py::int_(v.toInt());
  if (v.isDouble()) return py::float_(v.toDouble());
  if (v.isString()) return py::str(v.toStringRef());
  if (v.isScalarType()) return dtypeObject(v.toScalarType());
  if (v.isDevice()) return py::cast(v.toDevice());
  if (v.isLayout()) return layoutObject(v.toLayout());
  if (v.isMemoryFormat()) return memoryFormatObject(v.toMemoryFormat());
  if (v.isList() || v.isTuple()) {
    const auto& items = v.isList() ? v.toListElements() : v.toTupleElements();
    py::tuple out(items.size());
    for (size_t i = 0; i < items.size(); ++i) out[i] = ivalueToPython(items[i]);
    return out;
  }
  throw py::type_error("an operator returned a value Python cannot hold");
}

void bindTypes(py::module_& m) {
  auto dtype = py::class_<PyDtype>(m, "dtype")
      .def("__repr__", [](const PyDtype& d) { return "dispatchkit." + dtypeNames(d.type)[0]; })
      .def_property_readonly("is_floating_point", [](const PyDtype& d) { return isFloatingType(d.type); })
      .def_property_readonly("itemsize", [](const PyDtype& d) { return elementSize(d.type); })
      .def("__reduce__", [](const PyDtype& d) { return dtypeNames(d.type)[0]; });
  g_dtype_type = reinterpret_cast<PyTypeObject*>(dtype.ptr());
  g_dtypes = new std::array<py::object, kNumScalarTypes>();
  for (ScalarType t : kAllDtypes) {
    py::object obj = py::cast(PyDtype{t});
    (*g_dtypes)[static_cast<size_t>(t)] = obj;
    for (const std::string& name : dtypeNames(t)) m.attr(name.c_str()) = obj;
  }

  auto layout = py::class_<PyLayout>(m, "layout").def("__repr__", [](const PyLayout& l) {
    return std::string("dispatchkit.") + (l.layout == Layout::Strided ? "strided" : "sparse_coo");
  });
  g_layout_type = reinterpret_cast<PyTypeObject*>(layout.ptr());
  g_layouts = new std::array<py::object, 2>{py::cast(PyLayout{Layout::Strided}), py::cast(PyLayout{Layout::Sparse})};
  m.attr("strided") = (*g_layouts)[0];
  m.attr("sparse_coo") = (*g_layouts)[1];

  auto memory_format = py::class_<PyMemoryFormat>(m, "memory_format").def("__repr__", [](const PyMemoryFormat& f) {
    switch (f.format) {
      case MemoryFormat::Contiguous: return std::string("dispatchkit.contiguous_format");
      case MemoryFormat::Preserve: return std::string("dispatchkit.preserve_format");
      default: return std::string("dispatchkit.channels_last");
    }
  });
  g_memory_format_type = reinterpret_cast<PyTypeObject*>(memory_format.ptr());
  g_memory_formats = new std::array<py::object, 3>{py::cast(PyMemoryFormat{MemoryFormat::Contiguous}),
                                                   py::cast(PyMemoryFormat{MemoryFormat::Preserve}),
                                                   py::cast(PyMemoryFormat{MemoryFormat::ChannelsLast})};
  m.attr("contiguous_format") = (*g_memory_formats)[0];
  m.attr("preserve_format") = (*g_memory_formats)[1];
  m.attr("channels_last") = (*g_memory_formats)[2];

  auto device = py::class_<Device>(m, "device")
      .def(py::init([](const std::string& spec) { return Device(std::string_view(spec)); }), py::arg("type"))
      .def(py::init([](const std::string& type, int index) {
             Device d{std::string_view(type)};
             return Device(d.type, static_cast<int8_t>(index));
           }),
           py::arg("type"), py::arg("index"))
      .def_property_readonly("type", [](const Device& d) { return std::string(toString(d.type)); })
      .def_property_readonly("index", [](const Device& d) -> py::object {
        return d.index < 0 ? py::none() : py::object(py::int_(d.index));
      })
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) {
        std::string out = "device(type='" + std::string(toString(d.type)) + "'";
        if (d.index >= 0) out += ", index=" + std::to_string(d.index);
        return out + ")";
      })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.str())); });
  g_device_type = reinterpret_cast<PyTypeObject*>(device.ptr());
}

void bindTensor(py::module_& m) {
  g_size_type = new py::object(py::module_::import("dispatchkit._size").attr("Size"));
  auto cls = py::class_<Tensor, TensorHolder>(m, "Tensor", py::dynamic_attr(), py::buffer_protocol());
  g_tensor_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  auto* heap_type = reinterpret_cast<PyHeapTypeObject*>(cls.ptr());
  g_pybind11_tensor_dealloc = g_tensor_type->tp_dealloc;
  g_tensor_type->tp_dealloc = &tensorDealloc;
  detail::python_object_release_hook.store(&releasePythonObject);
  heap_type->as_buffer.bf_getbuffer = &tensorGetBuffer;
  heap_type->as_buffer.bf_releasebuffer = &tensorReleaseBuffer;
  cls.def("__repr__", &tensorRepr)
      .def_property_readonly("shape", [](const Tensor& t) { return sizeTuple(t.sizes()); })
      .def("size", [](const Tensor& t, py::object dim) -> py::object {
        if (dim.is_none()) return sizeTuple(t.sizes());
        return py::int_(t.size(dim.cast<int64_t>()));
      }, py::arg("dim") = py::none())
      .def("stride", [](const Tensor& t, py::object dim) -> py::object {
        if (dim.is_none()) {
          py::tuple out(t.strides().size());
          for (size_t i = 0; i < t.strides().size(); ++i) out[i] = py::int_(t.strides()[i]);
          return out;
        }
        return py::int_(t.stride(dim.cast<int64_t>()));
      }, py::arg("dim") = py::none())
      .def("dim", &Tensor::dim)
      .def("ndimension", &Tensor::dim)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("nelement", &Tensor::numel)
      .def("element_size", &Tensor::element_size)
      .def("storage_offset", &Tensor::storage_offset)
      .def("is_contiguous", [](const Tensor& t) { return t.is_contiguous(); })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def_property_readonly("dtype", [](const Tensor& t) { return dtypeObject(t.dtype()); })
      .def_property_readonly("device", [](const Tensor& t) { return t.device(); })
      .def_property_readonly("layout", [](const Tensor&) { return layoutObject(Layout::Strided); })
      .def_property_readonly("is_cuda", &Tensor::is_cuda)
      .def_property_readonly("is_cpu", &Tensor::is_cpu)
      .def_property_readonly("is_meta", &Tensor::is_meta)
      .def_property_readonly("_version", &Tensor::_version)
      .def("is_floating_point", [](const Tensor& t) { return isFloatingType(t.dtype()); })
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](const Tensor& t, bool r) { t.requires_grad_(r); })
      .def("requires_grad_", [](py::object self, bool r) {
        unwrapTensor(self.ptr()).requires_grad_(r);
        return self;
      }, py::arg("requires_grad") = true)
      .def_property("grad", [](const Tensor& t) { return toPython(t.grad()); },
                    [](const Tensor& t, py::object g) {
                      t.mutable_grad() = g.is_none() ? Tensor() : unwrapTensor(g.ptr());
                    })
      .def_property_readonly("grad_fn", [](const Tensor& t) -> py::object {
        auto fn = t.grad_fn();
        if (!fn) return py::none();
        return py::cast(fn);
      })
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def("_is_view", &Tensor::is_view)
      .def_property_readonly("_base", [](const Tensor& t) { return t.is_view() ? toPython(t.base()) : py::none(); })
      .def("retain_grad", &Tensor::retain_grad)
      .def_property_readonly("retains_grad", &Tensor::retains_grad)
      .def("backward", [](const Tensor& t, py::object gradient, std::optional<bool> retain_graph, bool create_graph,
                          py::object inputs) {
        std::vector<Tensor> roots{t};
        std::vector<Tensor> grads{gradient.is_none() ? Tensor() : unwrapTensor(gradient.ptr())};
        py::gil_scoped_release nogil;
        if (inputs.is_none()) {
          autograd::backward(roots, grads, retain_graph, create_graph);
        } else {
          py::gil_scoped_acquire gil;
          std::vector<Tensor> in;
          if (isTensor(inputs.ptr())) in.push_back(unwrapTensor(inputs.ptr()));
          else for (py::handle h : inputs) in.push_back(unwrapTensor(h.ptr()));
          py::gil_scoped_release again;
          autograd::backward(roots, grads, retain_graph, create_graph, in);
        }
      }, py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(), py::arg("create_graph") = false,
         py::arg("inputs") = py::none())
      .def("register_hook", [](const Tensor& t, py::function hook) {
        unsigned handle = t.register_hook([hook](const Tensor& grad) -> Tensor {
          py::gil_scoped_acquire gil;
          py::object result = hook(toPython(grad));
          if (result.is_none()) return grad;
          if (!isTensor(result.ptr())) throw py::type_error("a tensor hook must return None or a Tensor");
          return unwrapTensor(result.ptr());
        });
        py::module_ hooks = py::module_::import("dispatchkit._hooks");
        return hooks.attr("RemovableHandle")(py::cast(t), handle);
      })
      .def("_remove_hook", [](const Tensor& t, unsigned handle) { t.remove_hook(handle); })
      .def("tolist", [](const Tensor& t) {
        DK_CHECK(t.is_cpu(), "tolist() needs a CPU tensor, got one on ", t.device().str());
        return toList(t, 0, 0);  // data_ptr() already points at the first element
      })
      .def("__len__", [](const Tensor& t) {
        if (t.dim() == 0) throw py::type_error("len() of a 0-d tensor");
        return t.size(0);
      });

  py::class_<autograd::Node, std::shared_ptr<autograd::Node>>(m, "Node")
      .def("name", &autograd::Node::name)
      .def("__repr__", [](const autograd::Node& n) { return "<" + n.name() + " object>"; });

  m.def("tensor", [](py::object data, std::optional<py::object> dtype, py::object device, bool requires_grad) {
        std::optional<ScalarType> st;
        if (dtype && !dtype->is_none()) {
          if (!isDtype(dtype->ptr())) throw py::type_error("tensor(): dtype must be a dispatchkit.dtype");
          st = dtype->cast<PyDtype&>().type;
        }
        std::optional<Device> dev;
        if (!device.is_none()) dev = deviceFrom(device.ptr());
        if (isTensor(data.ptr()) && unwrapTensor(data.ptr()).dim() > 0) {
          throw py::type_error("tensor(): pass a list or a number; to copy a tensor use t.clone().detach()");
        }
        if (PyObject_CheckBuffer(data.ptr()) && !isTensor(data.ptr())) {
          Tensor t = fromBuffer(py::reinterpret_borrow<py::buffer>(data));
          py::object copy = toPython(t).attr("clone")();
          if (st) copy = copy.attr("to")(dtypeObject(*st));
          if (requires_grad) unwrapTensor(copy.ptr()).requires_grad_(true);
          return copy;
        }
        return toPython(tensorFromData(data, st, dev, requires_grad));
      }, py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  m.def("from_numpy", [](py::buffer array) { return toPython(fromBuffer(array)); }, py::arg("ndarray"));
  m.def("is_tensor", [](py::handle obj) { return isTensor(obj.ptr()); });
  cls.def("__dlpack__", [](const Tensor& t, py::object /*stream*/) { return toDLPack(t); }, py::arg("stream") = py::none())
      .def("__dlpack_device__", &dlpackDevice);
  m.def("from_dlpack", &fromDLPack, py::arg("ext_tensor"));
}

}  // namespace dk::python
