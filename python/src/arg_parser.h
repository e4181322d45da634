// python/src/arg_parser.h: Python arguments -> an operator's boxed stack, by its schema
// (Note [Python bindings] in python_functions.h).
#pragma once

#include <Python.h>

#include <optional>
#include <string>
#include <vector>

#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/function_schema.h"
#include "dk/dispatch/ivalue.h"

namespace dk::python {

// One Python parameter: a schema argument, with its default parsed once.
struct Param {
  std::string name;                    // as Python spells it: a function's `self` is `input`
  Type type;
  bool kwarg_only = false;
  std::optional<IValue> default_value;  // none: required
};

// One overload as Python calls it: its parameters (the out= arguments become the keyword
// `out`), the operator, and the out= operator when there is one.
class Signature {
 public:
  // `out_op`'s schema must be `op`'s with out arguments added. A default the parser cannot
  // read is a dk::Error naming the operator. `as_schema`: the parameters keep the schema's
  // names and nothing is added (dispatchkit.ops.<ns>.<op>.<overload>, like torch.ops): `self`
  // stays `self`, a factory takes no `requires_grad`, out arguments keep their names.
  Signature(std::string python_name, OperatorHandle op, std::optional<OperatorHandle> out_op, bool method,
            bool as_schema = false);

  struct Parsed {
    const OperatorHandle* op = nullptr;  // the operator to call: op(), or the out= one
    bool requires_grad = false;          // a factory's `requires_grad=True`
  };
  // Fills `stack` with the operator's arguments, or returns false when the arguments do not
  // fit this signature (then `why`, when given, says how, in PyTorch's words). `args` holds
  // self first for a method.
  bool parse(PyObject* args, PyObject* kwargs, Stack& stack, Parsed& parsed, std::string* why) const;

  // "(Tensor input, Tensor other, *, Number alpha=1, Tensor out=None)"
  std::string str() const;
  const std::string& name() const { return name_; }

 private:
  bool convertOut(PyObject* obj, Stack& stack) const;

  std::string name_;
  OperatorHandle op_;
  std::optional<OperatorHandle> out_op_;
  std::vector<Param> params_;   // the schema's non-out arguments, in order
  size_t num_positional_ = 0;   // params_[0, n) may be given by position
  size_t num_outs_ = 0;         // out arguments of out_op_ (or of op_, for a lone out= overload)
  bool outs_required_ = false;  // a lone out= overload: `out` must be given
  bool varargs_int_list_ = false;  // x.view(2, 3) for x.view((2, 3)): PyTorch's rule
  int requires_grad_index_ = -1;   // factories: the Python-only `requires_grad` keyword
  bool method_ = false;
};

// A call's argument types as the TypeError shows them: "(Tensor, str, alpha=int)" (a method's
// self left out).
std::string describeCall(PyObject* args, PyObject* kwargs, bool method);

// A Python value as a schema type asks (None for an optional, a tuple or list for a list, a
// number for a Scalar...); false when it does not fit.
bool pythonToIValue(const Type& t, PyObject* obj, IValue& out);

// Python's name of a schema type: "Tensor", "Number", "tuple of ints", "dtype".
std::string pythonTypeName(const Type& t);

}  // namespace dk::python
