// python/src/arg_parser.cpp: see arg_parser.h and Note [Python bindings].
#include "arg_parser.h"

#include <cstdlib>
#include <string_view>

#include "dk/util/error.h"
#include "python_objects.h"

namespace dk::python {

namespace {

bool isInt(PyObject* obj) {  // an int, or an object with __index__ (NumPy's ints); not bool, not a Tensor
  if (PyBool_Check(obj) || isTensor(obj)) return false;
  return PyLong_Check(obj) || PyIndex_Check(obj);
}
bool isFloat(PyObject* obj) {
  if (PyBool_Check(obj) || isTensor(obj)) return false;
  return PyFloat_Check(obj) || PyLong_Check(obj) || PyIndex_Check(obj) ||
         (Py_TYPE(obj)->tp_as_number && Py_TYPE(obj)->tp_as_number->nb_float);
}
bool isBool(PyObject* obj) {
  if (PyBool_Check(obj)) return true;
  return std::string_view(Py_TYPE(obj)->tp_name) == "numpy.bool_";
}

int64_t intOf(PyObject* obj) {
  int64_t v = PyLong_AsLongLong(obj);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}
double floatOf(PyObject* obj) {
  double v = PyFloat_AsDouble(obj);
  if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

// A Python number as a Scalar: bool, int or float (PyTorch's Number).
bool scalarOf(PyObject* obj, IValue& out) {
  if (isBool(obj)) {
    out = IValue(PyObject_IsTrue(obj) == 1);
  } else if (isInt(obj)) {
    out = IValue(intOf(obj));
  } else if (isFloat(obj)) {
    out = IValue(floatOf(obj));
  } else {
    return false;
  }
  return true;
}

// Parses a default as the schema wrote it ("1", "None", "[0,1]", "'none'", "contiguous_format").
std::optional<IValue> parseDefault(const Type& type, const std::string& text) {
  if (text == "None") return IValue();
  const Type& t = type.kind() == TypeKind::Optional ? type.element() : type;
  auto number = [&](std::string_view s) -> std::optional<IValue> {
    std::string str(s);
    char* end = nullptr;
    if (str.find_first_of(".eE") == std::string::npos || t.kind() == TypeKind::Int) {
      long long v = std::strtoll(str.c_str(), &end, 10);
      if (end && *end == '\0' && !str.empty()) return IValue(static_cast<int64_t>(v));
    }
    double d = std::strtod(str.c_str(), &end);
    if (end && *end == '\0' && !str.empty()) return IValue(d);
    return std::nullopt;
  };
  switch (t.kind()) {
    case TypeKind::Bool:
      if (text == "True") return IValue(true);
      if (text == "False") return IValue(false);
      return std::nullopt;
    case TypeKind::Int:
    case TypeKind::SymInt:
      if (text == "Mean") return IValue(int64_t{Reduction::Mean});
      if (text == "Sum") return IValue(int64_t{Reduction::Sum});
      return number(text);
    case TypeKind::Float: {
      auto v = number(text);
      if (v && v->isInt()) return IValue(static_cast<double>(v->toInt()));
      return v;
    }
    case TypeKind::Scalar:
      if (text == "True" || text == "False") return IValue(text == "True");
      return number(text);
    case TypeKind::Str:
      if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front()) {
        return IValue(text.substr(1, text.size() - 2));
      }
      return std::nullopt;
    case TypeKind::MemoryFormat:
      if (text == "contiguous_format") return IValue(MemoryFormat::Contiguous);
      if (text == "preserve_format") return IValue(MemoryFormat::Preserve);
      if (text == "channels_last") return IValue(MemoryFormat::ChannelsLast);
      return std::nullopt;
    case TypeKind::Layout:
      if (text == "strided") return IValue(Layout::Strided);
      return std::nullopt;
    case TypeKind::ScalarType: {
      static const std::pair<const char*, ScalarType> names[] = {
          {"float", kFloat}, {"double", kDouble}, {"long", kLong}, {"int", kInt}, {"bool", kBool}, {"half", kHalf}};
      for (const auto& [name, st] : names) {
        if (text == name) return IValue(st);
      }
      return std::nullopt;
    }
    case TypeKind::List: {
      const Type& elem = t.element();
      std::vector<IValue> items;
      if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
        std::string inner = text.substr(1, text.size() - 2);
        size_t start = 0;
        while (start < inner.size()) {
          size_t comma = inner.find(',', start);
          if (comma == std::string::npos) comma = inner.size();
          std::string item = inner.substr(start, comma - start);
          while (!item.empty() && item.front() == ' ') item.erase(0, 1);
          auto v = parseDefault(elem, item);
          if (!v) return std::nullopt;
          items.push_back(std::move(*v));
          start = comma + 1;
        }
      } else {  // one value for every element of a fixed-size list: int[2] padding=0
        auto v = parseDefault(elem, text);
        if (!v) return std::nullopt;
        items.assign(static_cast<size_t>(t.fixedSize().value_or(1)), *v);
      }
      return IValue(make_intrusive<ListImpl>(elem, std::move(items)));
    }
    default:
      return std::nullopt;
  }
}

bool isIntList(const Type& t) {
  const Type& u = t.kind() == TypeKind::Optional ? t.element() : t;
  return u.kind() == TypeKind::List &&
         (u.element().kind() == TypeKind::Int || u.element().kind() == TypeKind::SymInt);
}

std::string typeNameOf(PyObject* obj) {
  if (isTensor(obj)) return "Tensor";
  if (obj == Py_None) return "NoneType";
  std::string name = Py_TYPE(obj)->tp_name;
  if (name == "Tensor") {  // another library's tensor (torch.Tensor): say whose
    PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj)), "__module__");
    if (module && PyUnicode_Check(module)) name = std::string(PyUnicode_AsUTF8(module)) + "." + name;
    Py_XDECREF(module);
    PyErr_Clear();
  }
  return name;
}

}  // namespace

std::string pythonTypeName(const Type& t) {
  const Type& u = t.kind() == TypeKind::Optional ? t.element() : t;
  if (u.kind() == TypeKind::List) {
    const Type& e = u.element().kind() == TypeKind::Optional ? u.element().element() : u.element();
    switch (e.kind()) {
      case TypeKind::Tensor: return "tuple of Tensors";
      case TypeKind::Int:
      case TypeKind::SymInt: return "tuple of ints";
      case TypeKind::Float: return "tuple of floats";
      case TypeKind::Bool: return "tuple of bools";
      default: return "tuple of " + std::string(typeKindName(e.kind()));
    }
  }
  switch (u.kind()) {
    case TypeKind::Tensor: return "Tensor";
    case TypeKind::Int:
    case TypeKind::SymInt: return "int";
    case TypeKind::Float: return "float";
    case TypeKind::Bool: return "bool";
    case TypeKind::Str: return "str";
    case TypeKind::Scalar: return "Number";
    case TypeKind::ScalarType: return "dtype";
    case TypeKind::Layout: return "layout";
    case TypeKind::Device: return "device";
    case TypeKind::MemoryFormat: return "memory_format";
    case TypeKind::Generator: return "Generator";
    default: return std::string(typeKindName(u.kind()));
  }
}

Signature::Signature(std::string python_name, OperatorHandle op, std::optional<OperatorHandle> out_op, bool method,
                     bool as_schema)
    : name_(std::move(python_name)), op_(op), out_op_(out_op), method_(method) {
  const FunctionSchema& schema = op.schema();
  bool has_dtype = false, has_layout = false, has_device = false, has_pin = false;
  for (const Argument& a : schema.arguments()) {
    if (a.is_out() && !as_schema) {
      ++num_outs_;
      continue;
    }
    Param p;
    p.name = (a.name == "self" && !method && !as_schema) ? "input" : a.name;
    p.type = a.type;
    p.kwarg_only = a.kwarg_only;
    if (a.default_value) {
      p.default_value = parseDefault(a.type, *a.default_value);
      DK_CHECK(p.default_value.has_value(), "Python bindings: ", schema.operator_name(), ": cannot read the default '",
               *a.default_value, "' of argument '", a.name, "' (", a.type.str(), ")");
    }
    if (!p.kwarg_only) num_positional_ = params_.size() + 1;
    has_dtype |= a.name == "dtype";
    has_layout |= a.name == "layout";
    has_device |= a.name == "device";
    has_pin |= a.name == "pin_memory";
    params_.push_back(std::move(p));
  }
  if (num_outs_ > 0) {
    outs_required_ = true;  // a lone out= overload
  } else if (out_op_) {
    for (const Argument& a : out_op_->schema().arguments()) num_outs_ += a.is_out() ? 1 : 0;
  }
  if (has_dtype && has_layout && has_device && has_pin && !as_schema) {
    Param p;
    p.name = "requires_grad";
    p.type = Type::base(TypeKind::Bool);
    p.kwarg_only = true;
    p.default_value = IValue(false);
    requires_grad_index_ = static_cast<int>(params_.size());
    params_.push_back(std::move(p));
  }
  size_t first = method ? 1 : 0;
  varargs_int_list_ = num_positional_ == first + 1 && isIntList(params_[first].type);
}

bool pythonToIValue(const Type& t, PyObject* obj, IValue& out) {
  if (obj == Py_None) {
    if (t.kind() != TypeKind::Optional) return false;
    out = IValue();
    return true;
  }
  const Type& u = t.kind() == TypeKind::Optional ? t.element() : t;
  switch (u.kind()) {
    case TypeKind::Tensor:
      if (!isTensor(obj)) return false;
      out = IValue(unwrapTensor(obj));
      return true;
    case TypeKind::Int:
    case TypeKind::SymInt:
      if (!isInt(obj)) return false;
      out = IValue(intOf(obj));
      return true;
    case TypeKind::Float:
      if (!isFloat(obj)) return false;
      out = IValue(floatOf(obj));
      return true;
    case TypeKind::Bool:
      if (!isBool(obj)) return false;
      out = IValue(PyObject_IsTrue(obj) == 1);
      return true;
    case TypeKind::Scalar:
      return scalarOf(obj, out);
    case TypeKind::Str: {
      if (!PyUnicode_Check(obj)) return false;
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(obj, &n);
      if (!s) throw py::error_already_set();
      out = IValue(std::string(s, static_cast<size_t>(n)));
      return true;
    }
    case TypeKind::ScalarType:
      if (!isDtype(obj)) return false;
      out = IValue(py::handle(obj).cast<PyDtype&>().type);
      return true;
    case TypeKind::Layout:
      if (!isLayout(obj)) return false;
      out = IValue(py::handle(obj).cast<PyLayout&>().layout);
      return true;
    case TypeKind::MemoryFormat:
      if (!isMemoryFormat(obj)) return false;
      out = IValue(py::handle(obj).cast<PyMemoryFormat&>().format);
      return true;
    case TypeKind::Device:
      if (!(isDevice(obj) || PyUnicode_Check(obj) || isInt(obj))) return false;
      out = IValue(deviceFrom(obj));
      return true;
    case TypeKind::List: {
      const Type& elem = u.element();
      std::vector<IValue> items;
      if (PyTuple_Check(obj) || PyList_Check(obj)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
        PyObject** raw = PySequence_Fast_ITEMS(obj);
        // Any length, as PyTorch's parser: the kernel checks it (int[2] padding=(1, 2, 3) is its error).
        items.resize(static_cast<size_t>(n));
        for (Py_ssize_t i = 0; i < n; ++i) {
          if (!pythonToIValue(elem, raw[i], items[static_cast<size_t>(i)])) return false;
        }
      } else if (isIntList(u) && u.fixedSize() && isInt(obj)) {  // int[2] padding=1 given as 1
        items.assign(static_cast<size_t>(*u.fixedSize()), IValue(intOf(obj)));
      } else {
        return false;
      }
      out = IValue(make_intrusive<ListImpl>(elem, std::move(items)));
      return true;
    }
    default:
      return false;  // Generator and the rest: only None, handled above
  }
}

bool Signature::parse(PyObject* args, PyObject* kwargs, Stack& stack, Parsed& parsed, std::string* why) const {
  const Py_ssize_t nargs = PyTuple_GET_SIZE(args);
  PyObject** argv = &PyTuple_GET_ITEM(args, 0);
  const size_t nparams = params_.size();
  stack.clear();
  stack.resize(nparams + (outs_required_ ? num_outs_ : 0));
  // Which parameters got a value: positional first.
  std::vector<PyObject*> given(nparams, nullptr);
  size_t first = method_ ? 1 : 0;
  bool varargs = varargs_int_list_ && static_cast<size_t>(nargs) > first && isInt(argv[first]);
  py::object varargs_tuple;
  if (varargs) {
    // x.view(2, 3): every positional argument after self is one element of the list.
    varargs_tuple = py::reinterpret_steal<py::object>(PyTuple_GetSlice(args, static_cast<Py_ssize_t>(first), nargs));
    if (method_) given[0] = argv[0];
    given[first] = varargs_tuple.ptr();
  } else {
    if (static_cast<size_t>(nargs) > num_positional_) {
      if (why) {
        *why = name_ + "() takes " + std::to_string(num_positional_ - first) + " positional argument" +
               (num_positional_ - first == 1 ? "" : "s") + " but " + std::to_string(nargs - static_cast<Py_ssize_t>(first)) +
               (nargs - static_cast<Py_ssize_t>(first) == 1 ? " was" : " were") + " given";
      }
      return false;
    }
    for (Py_ssize_t i = 0; i < nargs; ++i) given[static_cast<size_t>(i)] = argv[i];
  }
  PyObject* out_obj = nullptr;
  if (kwargs) {
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      Py_ssize_t len = 0;
      const char* k = PyUnicode_AsUTF8AndSize(key, &len);
      if (!k) throw py::error_already_set();
      std::string_view kw(k, static_cast<size_t>(len));
      if (kw == "out" && (out_op_ || outs_required_)) {
        out_obj = value == Py_None ? nullptr : value;
        continue;
      }
      size_t i = 0;
      while (i < nparams && params_[i].name != kw) ++i;
      if (i == nparams || (method_ && i == 0)) {
        if (why) *why = name_ + "() got an unexpected keyword argument '" + std::string(kw) + "'";
        return false;
      }
      if (given[i]) {
        if (why) *why = name_ + "() got multiple values for argument '" + std::string(kw) + "'";
        return false;
      }
      given[i] = value;
    }
  }
  for (size_t i = 0; i < nparams; ++i) {
    const Param& p = params_[i];
    if (!given[i]) {
      if (!p.default_value) {
        if (why) *why = name_ + "() missing 1 required positional argument: \"" + p.name + "\"";
        return false;
      }
      stack[i] = *p.default_value;
      continue;
    }
    if (!pythonToIValue(p.type, given[i], stack[i])) {
      if (why) {
        bool positional = !kwargs || !PyDict_GetItemString(kwargs, p.name.c_str());
        *why = name_ + "(): argument '" + p.name + "'" +
               (positional ? " (position " + std::to_string(i + 1 - first) + ")" : std::string()) + " must be " +
               pythonTypeName(p.type) + ", not " + typeNameOf(given[i]);
      }
      return false;
    }
  }
  parsed.requires_grad = false;
  if (requires_grad_index_ >= 0) {
    parsed.requires_grad = stack[static_cast<size_t>(requires_grad_index_)].toBool();
    stack.erase(stack.begin() + requires_grad_index_);
  }
  parsed.op = &op_;
  if (outs_required_ || out_obj) {
    if (!out_obj) {
      if (why) *why = name_ + "() missing 1 required keyword argument: \"out\"";
      return false;
    }
    if (!convertOut(out_obj, stack)) {
      if (why) {
        *why = name_ + "(): argument 'out' must be " + std::string(num_outs_ == 1 ? "Tensor" : "tuple of Tensors") +
               ", not " + typeNameOf(out_obj);
      }
      return false;
    }
    if (!outs_required_) parsed.op = &*out_op_;
  }
  return true;
}

bool Signature::convertOut(PyObject* obj, Stack& stack) const {
  // The out tensors are the last arguments of the out= schema.
  size_t base = outs_required_ ? stack.size() - num_outs_ : stack.size();
  stack.resize(base + num_outs_);
  if (num_outs_ == 1) {
    if (!isTensor(obj)) return false;
    stack[base] = IValue(unwrapTensor(obj));
    return true;
  }
  if (!(PyTuple_Check(obj) || PyList_Check(obj)) || PySequence_Fast_GET_SIZE(obj) != static_cast<Py_ssize_t>(num_outs_)) {
    return false;
  }
  for (size_t i = 0; i < num_outs_; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(obj, static_cast<Py_ssize_t>(i));
    if (!isTensor(item)) return false;
    stack[base + i] = IValue(unwrapTensor(item));
  }
  return true;
}

std::string Signature::str() const {
  std::string out = "(";
  bool star = false;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    if (method_ && i == 0) continue;
    if (out.size() > 1) out += ", ";
    if (p.kwarg_only && !star) {
      out += "*, ";
      star = true;
    }
    out += pythonTypeName(p.type) + " " + p.name;
  }
  if (out_op_ || outs_required_) {
    if (out.size() > 1) out += ", ";
    if (!star) out += "*, ";
    out += std::string(num_outs_ == 1 ? "Tensor" : "tuple of Tensors") + " out";
  }
  return out + ")";
}

std::string describeCall(PyObject* args, PyObject* kwargs, bool method) {
  std::string out = "(";
  for (Py_ssize_t i = method ? 1 : 0; i < PyTuple_GET_SIZE(args); ++i) {
    if (out.size() > 1) out += ", ";
    out += typeNameOf(PyTuple_GET_ITEM(args, i));
  }
  if (kwargs) {
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      if (out.size() > 1) out += ", ";
      out += std::string(PyUnicode_AsUTF8(key)) + "=" + typeNameOf(value);
    }
  }
  return out + ")";
}

}  // namespace dk::python
