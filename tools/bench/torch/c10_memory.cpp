// c10-bench-memory: the c10 counterpart of ../memory.cpp (heap bytes per operator entry).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <iostream>
#include <string>
#include <vector>

#include "alloc_counter.h"

namespace {
int64_t kernel(const at::Tensor& a, const at::Tensor& b) { return a.dim() + b.dim(); }
}  // namespace

int main() {
  constexpr int kOps = 2000;
  std::vector<std::string> schemas, names;
  for (int i = 0; i < kOps; ++i) {
    names.push_back("op_" + std::to_string(i));
    schemas.push_back(names.back() + "(Tensor a, Tensor b) -> int");
  }
  torch::Library lib(torch::Library::FRAGMENT, "mem", c10::nullopt, __FILE__, __LINE__);
  lib.def("warm(Tensor a, Tensor b) -> int").impl("warm", torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(kernel)));
  const int64_t before = benchalloc::live();
  for (int i = 0; i < kOps; ++i)
    lib.def(schemas[i].c_str()).impl(names[i].c_str(), torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(kernel)));
  const int64_t after = benchalloc::live();
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(("mem::op_" + std::to_string(kOps - 1)).c_str(), "");
  at::Tensor t = at::empty({2, 3});
  if (op.typed<int64_t(const at::Tensor&, const at::Tensor&)>().call(t, t) != 4) {
    std::cerr << "WRONG ANSWER: mem::op_" << kOps - 1 << "\n";
    return 1;
  }
  std::cout << "bytes_per_operator," << (after - before) / kOps << "\n";
  std::cout << "sizeof_operator_entry," << sizeof(c10::impl::OperatorEntry) << "\n";
  return 0;
}
