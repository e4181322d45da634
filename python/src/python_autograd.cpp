// python/src/python_autograd.cpp: dispatchkit.autograd.Function's node: a backward written in
// Python, run by the autograd engine (dispatchkit/autograd.py has the rest).
#include <memory>
#include <string>
#include <vector>

#include "dk/autograd/history.h"
#include "dk/autograd/node.h"
#include "dk/core/grad_mode.h"
#include "python_objects.h"

namespace dk::python {

namespace {

// The node of one Function.apply: its inputs are the differentiable outputs of forward, its
// outputs the gradients of the tensor arguments. apply() takes the GIL and calls the Python
// closure made by Function.apply, which calls the class's backward.
class PythonFunctionNode final : public autograd::Node {
 public:
  PythonFunctionNode(py::function backward, std::string name) : name_(std::move(name)) {
    backward_.obj = std::move(backward);
  }

  autograd::variable_list apply(autograd::variable_list grads) override {
    py::gil_scoped_acquire gil;
    py::tuple args(grads.size());
    for (size_t i = 0; i < grads.size(); ++i) args[i] = toPython(grads[i]);
    py::object result = backward_.obj(*args);
    py::tuple values = py::reinterpret_borrow<py::tuple>(result);
    autograd::variable_list out(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      PyObject* v = values[i].ptr();
      if (v == Py_None) continue;
      if (!isTensor(v)) {
        throw py::type_error("function " + name_ + " returned a gradient of type " + Py_TYPE(v)->tp_name +
                             " for argument " + std::to_string(i) + "; expected a Tensor or None");
      }
      out[i] = unwrapTensor(v);
    }
    return out;
  }

  std::string name() const override { return name_; }
  void release_variables() override {}

 private:
  PythonRef backward_;
  std::string name_;
};

}  // namespace

void bindAutogradFunction(py::module_& m) {
  m.def("_function_record", [](py::function backward, const std::string& name, const std::vector<Tensor>& inputs,
                               const std::vector<Tensor>& outputs) {
    if (!GradMode::is_enabled()) return;
    bool any = false;
    for (const Tensor& t : inputs) any = any || t.requires_grad();
    if (!any || outputs.empty()) return;
    auto node = std::make_shared<PythonFunctionNode>(std::move(backward), name);
    autograd::edge_list edges;
    for (const Tensor& t : inputs) edges.push_back(autograd::gradient_edge(t));
    node->set_next_edges(std::move(edges));
    autograd::set_history(outputs, node);
  });
}

}  // namespace dk::python
