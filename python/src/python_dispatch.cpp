// python/src/python_dispatch.cpp: the dispatcher from Python: operator objects
// (dispatchkit.ops.<ns>.<op>.<overload>), libraries with Python kernels and fallbacks, and
// Python dispatch modes (Note [Python kernels and modes]).
//
// Note [Python kernels and modes]
// A Python kernel is a boxed kernel whose functor holds the Python function. Called from any
// thread, it takes the GIL, turns the stack's arguments into Python values by the schema
// (keyword-only ones as keywords), calls the function, and puts its result back as the schema's
// returns. Every Python call of an operator releases the GIL around the dispatcher, so a Python
// kernel called from several C++ threads takes turns instead of deadlocking. An exception from
// the function travels through the dispatcher as itself (pybind11's error_already_set) and
// arrives in Python with the same type, with a note naming the operator and key it ran for.
//
// A Python mode is a C++ DispatchMode (dk/dispatch/dispatch_mode.h) whose handler calls
// `__dk_dispatch__(func, types, args, kwargs)` of the Python object, with func the operator's
// object (dispatchkit.ops.dk.add.Tensor). So Python and C++ modes share one stack and nest in
// any order, and the C++ rules hold: the mode is off its stack while its handler runs, and
// func(*args, **kwargs) inside reaches the next mode or the kernels.
#include "python_dispatch.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dk/dispatch/dispatch_mode.h"
#include "dk/dispatch/library.h"
#include "dk/dispatch/privateuse1_backend.h"
#include "dk/layers/modes.h"
#include "dk/util/error.h"
#include "python_call.h"
#include "python_objects.h"

namespace dk::python {

namespace {

// ---------------------------------------------------------------- operator objects

// One overload: dispatchkit.ops.dk.add.Tensor.
struct PyOpOverload {
  OperatorHandle op;
  std::string name;        // "dk::add.Tensor"
  std::string short_name;  // "add"
  std::vector<Signature> signatures;  // one, with the schema's names
};

// Every overload of a name: dispatchkit.ops.dk.add, called like the generated functions.
struct PyOpPacket {
  std::string name;  // "dk::add"
  std::string short_name;
  std::vector<std::string> overloads;  // "Tensor", "Scalar", "default" (for "")
  std::vector<Signature> signatures;   // in the order they are tried
};

std::string shortName(const std::string& qualified) {
  auto colons = qualified.find("::");
  return colons == std::string::npos ? qualified : qualified.substr(colons + 2);
}

// The order the generated table uses: a Tensor parameter is tried before a number at the same place.
std::vector<int> orderKey(const FunctionSchema& schema) {
  std::vector<int> key;
  for (const Argument& a : schema.arguments()) {
    if (!a.kwarg_only) key.push_back(a.type.isTensorLike() ? 0 : 1);
  }
  return key;
}

// One Python object per operator, so `func is dispatchkit.ops.dk.add.Tensor` holds in a mode.
std::map<std::string, py::object>& overloadObjects() {
  static auto* objects = new std::map<std::string, py::object>();
  return *objects;
}

}  // namespace

py::object opOverloadObject(const OperatorHandle& op) {
  std::string name = op.operator_name().toString();
  auto& objects = overloadObjects();
  auto it = objects.find(name);
  if (it != objects.end() && py::cast<PyOpOverload&>(it->second).op == op) return it->second;
  auto overload = std::make_unique<PyOpOverload>(PyOpOverload{op, name, shortName(op.operator_name().name), {}});
  overload->signatures.emplace_back(overload->short_name, op, std::nullopt, false, /*as_schema=*/true);
  py::object obj = py::cast(std::move(overload));
  objects[name] = obj;
  return obj;
}

namespace {

OperatorHandle findOperator(const std::string& qualified, const std::string& overload) {
  auto op = Dispatcher::singleton().findSchema(OperatorName{qualified, overload == "default" ? "" : overload});
  if (!op) {
    throw py::attribute_error("no operator " + qualified + (overload.empty() || overload == "default" ? "" : "." + overload) +
                              " with a schema in the dispatcher");
  }
  return *op;
}

std::vector<std::string> overloadNames(const std::string& qualified) {
  std::vector<std::string> out;
  for (const OperatorName& n : Dispatcher::singleton().getAllOpNames()) {
    if (n.name == qualified && Dispatcher::singleton().findSchema(n)) out.push_back(n.overload_name.empty() ? "default" : n.overload_name);
  }
  return out;
}

py::object opPacket(const std::string& qualified) {
  auto names = overloadNames(qualified);
  if (names.empty()) throw py::attribute_error("no operator named " + qualified);
  auto packet = std::make_unique<PyOpPacket>();
  packet->name = qualified;
  packet->short_name = shortName(qualified);
  std::vector<OperatorHandle> ops;
  for (const std::string& n : names) ops.push_back(findOperator(qualified, n));
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return orderKey(ops[a].schema()) < orderKey(ops[b].schema()); });
  for (size_t i : order) {
    packet->overloads.push_back(names[i]);
    packet->signatures.emplace_back(packet->short_name, ops[i], std::nullopt, false, /*as_schema=*/true);
  }
  return py::cast(std::move(packet));
}

// ---------------------------------------------------------------- stack <-> Python

struct PythonArguments {
  py::tuple args;
  py::dict kwargs;
};

// The last schema.arguments().size() entries of `stack` as Python arguments.
PythonArguments argumentsOf(const FunctionSchema& schema, const Stack& stack) {
  const auto& arguments = schema.arguments();
  size_t base = stack.size() - arguments.size();
  size_t positional = 0;
  for (const Argument& a : arguments) positional += a.kwarg_only ? 0 : 1;
  PythonArguments out{py::tuple(positional), py::dict()};
  size_t p = 0;
  for (size_t i = 0; i < arguments.size(); ++i) {
    py::object value = ivalueToPython(stack[base + i]);
    if (arguments[i].kwarg_only) out.kwargs[arguments[i].name.c_str()] = value;
    else out.args[p++] = value;
  }
  return out;
}

// Replaces the arguments on `stack` with `result` as the schema's returns.
void setReturns(const OperatorHandle& op, const py::handle& result, Stack& stack, const char* who) {
  const FunctionSchema& schema = op.schema();
  const auto& returns = schema.returns();
  stack.resize(stack.size() - schema.arguments().size());
  auto fail = [&](const std::string& what) {
    throw py::type_error(std::string(who) + " for " + op.operator_name().toString() + " returned " +
                         std::string(py::str(py::type::handle_of(result).attr("__name__"))) + ", expected " + what);
  };
  if (returns.empty()) {
    if (!result.is_none()) fail("None");
    return;
  }
  if (returns.size() == 1) {
    IValue v;
    if (!pythonToIValue(returns[0].type, result.ptr(), v)) fail(pythonTypeName(returns[0].type));
    stack.push_back(std::move(v));
    return;
  }
  if (!py::isinstance<py::tuple>(result) || py::len(result) != returns.size()) {
    fail("a tuple of " + std::to_string(returns.size()) + " values");
  }
  py::tuple values = py::reinterpret_borrow<py::tuple>(result);
  for (size_t i = 0; i < returns.size(); ++i) {
    IValue v;
    if (!pythonToIValue(returns[i].type, values[i].ptr(), v)) fail(pythonTypeName(returns[i].type) + " at " + std::to_string(i));
    stack.push_back(std::move(v));
  }
}

// Adds "while dispatchkit ran ..." to a Python exception leaving a kernel or a mode
// (BaseException.add_note, Python 3.11).
void addNote(py::error_already_set& e, const std::string& note) {
  py::object value = e.value();
  if (value && py::hasattr(value, "add_note")) value.attr("add_note")(note);
}

// ---------------------------------------------------------------- Python kernels

struct PythonKernel final : OperatorKernel {
  PythonRef fn;
  std::string where;  // "CPU", "fallback at PrivateUse1"
  bool fallback = false;
};

void callPythonKernel(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  auto* kernel = static_cast<PythonKernel*>(functor);
  py::gil_scoped_acquire gil;
  PythonArguments in = argumentsOf(op.schema(), *stack);
  py::object result;
  try {
    result = kernel->fallback ? kernel->fn.obj(opOverloadObject(op), in.args, in.kwargs)
                              : kernel->fn.obj(*in.args, **in.kwargs);
  } catch (py::error_already_set& e) {
    addNote(e, "while dispatchkit ran the Python " + std::string(kernel->fallback ? "fallback" : "kernel") + " of " +
                   op.operator_name().toString() + " at " + kernel->where);
    throw;
  }
  setReturns(op, result, *stack, kernel->fallback ? "a Python fallback" : "a Python kernel");
}

CppFunction pythonKernel(py::function fn, std::string where, bool fallback) {
  auto state = std::make_shared<PythonKernel>();
  state->fn.obj = std::move(fn);
  state->where = std::move(where);
  state->fallback = fallback;
  OperatorKernel* raw = state.get();
  std::string debug = "Python " + std::string(fallback ? "fallback" : "kernel") + " at " + state->where;
  return CppFunction::makeFromKernelFunction(KernelFunction::makeFromParts(nullptr, raw, &callPythonKernel, std::move(state)),
                                             std::nullopt, nullptr)
      .debug(std::move(debug));
}

DispatchKey keyFrom(const std::string& name, DispatchKey otherwise) {
  if (name.empty()) return otherwise;
  auto key = parseDispatchKey(name);
  if (!key) throw py::value_error("unknown dispatch key '" + name + "'");
  return *key;
}

struct PyLibrary {
  std::unique_ptr<Library> lib;
  Library& get() {
    if (!lib) throw py::value_error("this Library was destroyed");
    return *lib;
  }
};

// ---------------------------------------------------------------- Python modes

class PythonMode final : public DispatchMode {
 public:
  explicit PythonMode(py::object mode) { mode_.obj = std::move(mode); }
  void dispatch(const OperatorHandle& op, DispatchKeySet, Stack* stack) override {
    py::gil_scoped_acquire gil;
    PythonArguments in = argumentsOf(op.schema(), *stack);
    py::tuple types = py::tuple(0);
    for (const IValue& v : *stack) {
      if (v.isTensor() || (v.isList() && !v.toListElements().empty() && v.toListElements()[0].isTensor())) {
        types = py::make_tuple(py::type::of<Tensor>());
        break;
      }
    }
    py::object result;
    try {
      result = mode_.obj.attr("__dk_dispatch__")(opOverloadObject(op), types, in.args, in.kwargs);
    } catch (py::error_already_set& e) {
      addNote(e, "while dispatchkit ran " + std::string(py::str(py::type::handle_of(mode_.obj).attr("__name__"))) +
                     ".__dk_dispatch__ for " + op.operator_name().toString());
      throw;
    }
    setReturns(op, result, *stack, "__dk_dispatch__");
  }

 private:
  PythonRef mode_;
};

struct PyModeGuard {
  std::unique_ptr<DispatchModeGuard> guard;
};

// ---------------------------------------------------------------- testing helpers

// Calls `op` boxed from `threads` C++ threads at once, `calls` times each, with the GIL released:
// the Python kernels' threading test.
py::list callFromThreads(PyOpOverload& overload, py::tuple args, int threads, int calls) {
  Stack prototype;
  Signature::Parsed parsed;
  std::string why;
  if (!overload.signatures[0].parse(args.ptr(), nullptr, prototype, parsed, &why)) throw py::type_error(why);
  std::vector<Stack> results(static_cast<size_t>(threads));
  std::vector<std::string> errors(static_cast<size_t>(threads));
  {
    py::gil_scoped_release nogil;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        try {
          for (int i = 0; i < calls; ++i) {
            Stack stack = prototype;
            overload.op.callBoxed(stack);
            results[static_cast<size_t>(t)] = std::move(stack);
          }
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(t)] = e.what();
        }
      });
    }
    for (auto& th : pool) th.join();
  }
  py::list out;
  for (int t = 0; t < threads; ++t) {
    if (!errors[static_cast<size_t>(t)].empty()) throw std::runtime_error(errors[static_cast<size_t>(t)]);
    out.append(py::reinterpret_steal<py::object>(wrapResults(overload.op, results[static_cast<size_t>(t)])));
  }
  return out;
}

py::object callAndWrap(const std::string& name, const std::vector<Signature>& sigs, py::args args, py::kwargs kwargs) {
  PyObject* result = callSignatures(name, sigs, false, args.ptr(), kwargs.ptr());
  if (!result) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

}  // namespace

void bindDispatch(py::module_& m) {
  py::class_<PyOpOverload>(m, "OpOverload")
      .def("__call__", [](PyOpOverload& self, py::args args, py::kwargs kwargs) {
        return callAndWrap(self.short_name, self.signatures, std::move(args), std::move(kwargs));
      })
      .def("name", [](const PyOpOverload& self) { return self.name; })
      .def_property_readonly("_schema", [](const PyOpOverload& self) { return self.op.schema().str(); })
      .def_property_readonly("overloadpacket", [](const PyOpOverload& self) { return opPacket(self.op.operator_name().name); })
      .def_property_readonly("_overloadname", [](const PyOpOverload& self) {
        const std::string& o = self.op.operator_name().overload_name;
        return o.empty() ? std::string("default") : o;
      })
      .def("dump_state", [](const PyOpOverload& self) { return self.op.dumpState(); })
      .def("dump_computed_table", [](const PyOpOverload& self) { return self.op.dumpComputedTable(); })
      .def("has_kernel_for_dispatch_key", [](const PyOpOverload& self, const std::string& key) {
        return self.op.hasKernelForDispatchKey(keyFrom(key, DispatchKey::CPU));
      })
      .def("__repr__", [](const PyOpOverload& self) {
        std::string n = self.name;
        auto colons = n.find("::");
        return n.substr(0, colons) + "." + n.substr(colons + 2) + (self.op.operator_name().overload_name.empty() ? ".default" : "");
      });
  py::class_<PyOpPacket>(m, "OpOverloadPacket")
      .def("__call__", [](PyOpPacket& self, py::args args, py::kwargs kwargs) {
        return callAndWrap(self.short_name, self.signatures, std::move(args), std::move(kwargs));
      })
      .def("overloads", [](const PyOpPacket& self) { return self.overloads; })
      .def("__getattr__", [](const PyOpPacket& self, const std::string& overload) {
        if (std::find(self.overloads.begin(), self.overloads.end(), overload) == self.overloads.end()) {
          throw py::attribute_error("operator " + self.name + " has no overload '" + overload + "'");
        }
        return opOverloadObject(findOperator(self.name, overload));
      })
      .def("__repr__", [](const PyOpPacket& self) {
        auto colons = self.name.find("::");
        return "<OpOverloadPacket " + self.name.substr(0, colons) + "." + self.name.substr(colons + 2) + ">";
      });
  m.def("_op_packet", &opPacket, py::arg("qualified_name"));
  m.def("_op_names", [] {
    std::vector<std::string> out;
    for (const OperatorName& n : Dispatcher::singleton().getAllOpNames()) out.push_back(n.toString());
    return out;
  });

  py::class_<PyLibrary>(m, "_Library")
      .def(py::init([](const std::string& kind, const std::string& ns, const std::string& key, const std::string& file,
                       uint32_t line) {
             Library::Kind k;
             if (kind == "DEF") k = Library::DEF;
             else if (kind == "IMPL") k = Library::IMPL;
             else if (kind == "FRAGMENT") k = Library::FRAGMENT;
             else throw py::value_error("Library kind must be 'DEF', 'IMPL' or 'FRAGMENT', got '" + kind + "'");
             std::optional<DispatchKey> dk_key;
             if (!key.empty()) dk_key = keyFrom(key, DispatchKey::CPU);
             static auto* files = new std::vector<std::unique_ptr<std::string>>();  // Library keeps the pointer
             files->push_back(std::make_unique<std::string>(file));
             return PyLibrary{std::make_unique<Library>(k, ns, dk_key, files->back()->c_str(), line)};
           }),
           py::arg("kind"), py::arg("ns"), py::arg("dispatch_key") = "", py::arg("file") = "", py::arg("line") = 0)
      .def("define", [](PyLibrary& self, const std::string& schema) { self.get().def(schema); }, py::arg("schema"))
      .def("impl", [](PyLibrary& self, const std::string& name, py::function fn, const std::string& key) {
        DispatchKey k = keyFrom(key, DispatchKey::CompositeImplicitAutograd);
        self.get().impl(name, k, pythonKernel(std::move(fn), std::string(toString(k)), false));
      }, py::arg("op_name"), py::arg("fn"), py::arg("dispatch_key") = "")
      .def("fallback", [](PyLibrary& self, py::function fn) {
        self.get().fallback(pythonKernel(std::move(fn), "the library's key", true));
      }, py::arg("fn"))
      .def("_destroy", [](PyLibrary& self) { self.lib.reset(); });

  py::class_<PyModeGuard>(m, "_DispatchModeGuard")
      .def(py::init([](py::object mode) {
        return PyModeGuard{std::make_unique<DispatchModeGuard>(std::make_shared<PythonMode>(std::move(mode)))};
      }))
      .def("exit", [](PyModeGuard& self) { self.guard.reset(); });

  // The C++ modes, usable as Python context managers (and nested with Python modes).
  py::module_ modes = m.def_submodule("modes", "dispatchkit's C++ dispatch modes");
  struct OpCounterMode {
    std::shared_ptr<OpCounter> counter = std::make_shared<OpCounter>();
    std::vector<std::unique_ptr<DispatchModeGuard>> guards;
  };
  py::class_<OpCounterMode>(modes, "OpCounter", "Counts the calls of every operator overload while active (C++ dk::OpCounter).")
      .def(py::init<>())
      .def("__enter__", [](py::object self) {
        auto& mode = self.cast<OpCounterMode&>();
        mode.guards.push_back(std::make_unique<DispatchModeGuard>(mode.counter));
        return self;
      })
      .def("__exit__", [](OpCounterMode& self, py::args) {
        self.guards.pop_back();
        return false;
      })
      .def("count", [](const OpCounterMode& self, const std::string& name) { return self.counter->count(name); })
      .def("counts", [](const OpCounterMode& self) { return self.counter->counts(); })
      .def("total", [](const OpCounterMode& self) { return self.counter->total(); })
      .def("reset", [](OpCounterMode& self) { self.counter->reset(); })
      .def("__str__", [](const OpCounterMode& self) { return self.counter->str(); });

  py::module_ testing = m.def_submodule("_testing", "helpers for dispatchkit's own tests");
  testing.def("call_from_threads", &callFromThreads, py::arg("op"), py::arg("args"), py::arg("threads"),
              py::arg("calls"));
  testing.def("privateuse1_from_cpu", [](const Tensor& t) { return toPython(privateuse1::fromCpu(t)); });
  testing.def("privateuse1_to_cpu", [](const Tensor& t) { return toPython(privateuse1::toCpu(t)); });
}

}  // namespace dk::python
