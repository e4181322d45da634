// dk/testing/opcheck.h: checking that an operator behaves as its schema and registrations say
// (library dispatchkit-testing; pkg-config and CMake name it dispatchkit-testing).
//
//   dk::OperatorHandle op = dk::Dispatcher::singleton().findSchemaOrThrow("myns::scale", "");
//   dk::testing::opcheckOrThrow(op, {dk::randn({3, 4}, dk::kDouble), 2.0});
//
// Note [opcheck]
// opcheck(op, args) calls the operator on copies of `args` once per check; each check says
// "ok", "skipped: <why>" or what went wrong:
//   schema                 a dispatch mode snapshots every tensor argument (storage, data,
//                          version) before the call; afterwards an argument without a write
//                          annotation (a!) whose data or version changed, an output sharing
//                          storage with an argument the schema does not alias it to, and two
//                          outputs sharing storage without a common alias set, each fail,
//                          naming the argument and the annotation it would need.
//   meta                   the same call on Meta tensors of the same sizes, strides and dtypes
//                          gives outputs of the CPU call's sizes, strides (of dims longer than
//                          1), storage offsets, dtypes and aliasing. Skipped for operators
//                          tagged data_dependent_output or dynamic_output_shape in the YAML.
//                          The arguments keep their layout (strides, storage offset). With a
//                          GPU, an operator with a CUDA kernel is also called on CUDA copies:
//                          layouts and aliasing as on Meta, values within atol/rtol.
//   boxed_unboxed          callBoxed and the typed call (op.typed<Sig>().call) give the same
//                          outputs and leave the arguments the same.
//   autograd_registration  with float inputs that require grad, an operator without an
//                          autograd kernel (nothing at Autograd or Autograd<Backend>, not
//                          CompositeImplicitAutograd) returns no new output that requires grad:
//                          one that does had its kernel record the graph of the operators it
//                          calls.
//   gradcheck              float64 inputs: backward against central finite differences
//                          (dk/testing/gradcheck.h), for operators with an autograd kernel;
//                          then double backward (gradgradcheck) where derivatives.yaml's
//                          formula is twice differentiable (no twice_differentiable: False),
//                          or where OpcheckOptions::double_backward says so.
// Random operators (tagged nondeterministic_seeded) run every call from the same seed.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/ivalue.h"
#include "dk/dispatch/kernel_function.h"

namespace dk::testing {

// Runs `op` typed: unboxes the arguments on `stack`, calls op.typed<Sig>().call(...) and
// pushes the returns. typedCall<Sig>() makes one for an operator of C++ signature Sig.
using TypedCall = void (*)(const OperatorHandle& op, Stack* stack);

struct OpcheckOptions {
  std::vector<std::string> checks = {"schema", "meta", "boxed_unboxed", "autograd_registration", "gradcheck"};
  // Tolerances for values computed by different kernels: the CUDA call against the CPU call
  // (|cuda - cpu| <= atol + rtol * |cpu|). The boxed and typed calls run one kernel and must
  // agree exactly.
  double atol = 1e-5, rtol = 1.3e-6;
  // The typed call boxed_unboxed compares with. Found by name for the operators of
  // schemas/native_functions.yaml; an operator defined elsewhere passes typedCall<Sig>()
  // (without one the check is skipped).
  TypedCall typed_call = nullptr;
  // gradcheck's tolerances (finite differences are less exact than the outputs compared
  // by the other checks).
  double grad_atol = 1e-5, grad_rtol = 1e-3;
  // Run double backward in the gradcheck check. Unset: as derivatives.yaml says for the
  // generated operators (twice_differentiable, default True), no for any other operator.
  std::optional<bool> double_backward;
};

struct OpcheckResult {
  std::string op;  // "dk::add.Tensor"
  // check name -> "ok", "skipped: <why>", or the failure message
  std::map<std::string, std::string> outcome;
  bool passed() const;                        // no check failed
  bool failed(std::string_view check) const;  // that check ran and failed
  // One line per check: "dk::add.Tensor  schema: ok" ...
  std::string toString() const;
};

OpcheckResult opcheck(const OperatorHandle& op, const Stack& args, OpcheckOptions options = {});
// Throws dk::Error "opcheck(ns::op.overload): <check> failed: <message>" for the first failed check.
void opcheckOrThrow(const OperatorHandle& op, const Stack& args, OpcheckOptions options = {});

// The typed call of the generated operator `name` ("dk::add.Tensor"), or null.
TypedCall generatedTypedCall(std::string_view name);

namespace detail {
// The boxed adapters of signature Sig (the generated ones, for the YAML's signatures) around a
// plain function that calls the operator typed; the operator is passed through a thread-local.
template <class Sig>
struct TypedThunk;
template <class R, class... Args>
struct TypedThunk<R(Args...)> {
  static inline thread_local const OperatorHandle* current = nullptr;
  static R call(Args... args) { return current->typed<R(Args...)>().call(std::forward<Args>(args)...); }
};

template <class Sig>
void callTyped(const OperatorHandle& op, Stack* stack) {
  const OperatorHandle* saved = TypedThunk<Sig>::current;
  TypedThunk<Sig>::current = &op;
  struct Restore {
    const OperatorHandle* saved;
    ~Restore() { TypedThunk<Sig>::current = saved; }
  } restore{saved};
  dk::detail::RuntimeFunctionFunctor<Sig> functor(&TypedThunk<Sig>::call);
  dk::detail::BoxingFor<Sig>::boxed(&functor, op, DispatchKeySet(), stack);
}
}  // namespace detail

template <class Sig>
TypedCall typedCall() {
  return &detail::callTyped<Sig>;
}

}  // namespace dk::testing
