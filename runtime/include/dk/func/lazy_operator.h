// dk/func/lazy_operator.h: an operator found by its full name on first use, and the boxed kernels
// that hold one (the generated registrations of functionalization and of the view copies' rule).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/library.h"

namespace dk::func {

// For kernels registered with the name of another operator they call ("dk::add.Tensor"): the
// handle is looked up on the first call, not at registration, since the order in which the
// library's files register their operators is not known. Thread-safe; later calls read it.
class LazyOperator {
 public:
  explicit LazyOperator(const char* full_name) : full_name_(full_name) {}
  const OperatorHandle& get() {
    std::call_once(once_, [this] {
      const std::string name = full_name_;
      const size_t dot = name.find('.');
      const std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);
      handle_.emplace(Dispatcher::singleton().findSchemaOrThrow(name.substr(0, dot), overload));
    });
    return *handle_;
  }

 private:
  const char* full_name_;
  std::once_flag once_;
  std::optional<OperatorHandle> handle_;
};

// A boxed kernel calling `fn` with `state` (kept alive by the kernel) as its functor.
template <class State>
CppFunction boxedKernelWith(std::shared_ptr<State> state, BoxedKernelFunction* fn, std::string debug) {
  OperatorKernel* raw = state.get();
  return CppFunction::makeFromKernelFunction(KernelFunction::makeFromParts(nullptr, raw, fn, std::move(state)),
                                             std::nullopt, nullptr)
      .debug(std::move(debug));
}

}  // namespace dk::func
