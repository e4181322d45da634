// Helpers shared by the dispatcher tests: tensors with chosen key sets and tagged kernels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dk/dispatch.h"

namespace dk::testing {

// A metadata-only tensor whose key set is exactly `ks`.
inline Tensor tensorWithKeys(DispatchKeySet ks, Device device = Device(DeviceType::CPU)) {
  return Tensor(make_intrusive<TensorImpl>(ks, ScalarType::Float, device, std::vector<int64_t>{1}));
}
inline Tensor cpuTensor() { return make_tensor({1}); }
inline Tensor cudaTensor() { return make_tensor({1}, ScalarType::Float, Device(DeviceType::CUDA, 0)); }
// A sparse CPU tensor: Sparse has no autograd key of its own, so it uses AutogradOther.
inline Tensor sparseCpuTensor() {
  return tensorWithKeys(DispatchKeySet{DispatchKey::SparseCPU, DispatchKey::AutogradOther, DispatchKey::ADInplaceOrView});
}

// A kernel of `int(Tensor x) -> int` that returns its tag.
inline CppFunction tagKernel(int64_t tag, std::string debug) {
  return CppFunction([tag](const Tensor&) -> int64_t { return tag; }).debug(std::move(debug));
}

// One registration held alive by its own Library, so a test can undo it alone.
inline std::unique_ptr<Library> implAt(const std::string& ns, const char* op, DispatchKey key, CppFunction fn) {
  auto lib = std::make_unique<Library>(Library::IMPL, ns, key);
  lib->impl(op, std::move(fn));
  return lib;
}

using UnaryIntOp = TypedOperatorHandle<int64_t(const Tensor&)>;
inline UnaryIntOp unaryIntOp(const std::string& ns, const std::string& name) {
  return Dispatcher::singleton().findSchemaOrThrow(ns + "::" + name, "").typed<int64_t(const Tensor&)>();
}

// `ns::op(Tensor x) -> int` with a CPU kernel that returns `value`, registered for the lifetime
// of the object.
class IntOpWithCpuKernel {
 public:
  IntOpWithCpuKernel(const std::string& ns, int64_t value)
      : ns_(ns), def_(Library::DEF, ns), cpu_(Library::IMPL, ns, DispatchKey::CPU) {
    def_.def("op(Tensor x) -> int");
    cpu_.impl("op", tagKernel(value, "cpu_value_kernel"));
  }
  UnaryIntOp typed() const { return unaryIntOp(ns_, "op"); }
  OperatorHandle handle() const { return Dispatcher::singleton().findSchemaOrThrow(ns_ + "::op", ""); }

 private:
  std::string ns_;
  Library def_, cpu_;
};

// Captures warnings for the lifetime of the object.
class WarningCapture {
 public:
  WarningCapture() {
    previous_ = setWarningHandler([this](const std::string& m) { messages.push_back(m); });
  }
  ~WarningCapture() { setWarningHandler(previous_); }
  std::vector<std::string> messages;

 private:
  WarningHandler previous_;
};

}  // namespace dk::testing
