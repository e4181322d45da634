// A downstream program built against the installed package:
//   g++ prog.cpp $(pkg-config --cflags --libs dispatchkit)
// It defines, registers, calls and introspects operators through the public API.
#include <dk/dispatch.h>
#include <dk/library.h>  // a path from before the split by layer: the compatibility headers are installed

#include <iostream>

namespace {
int64_t count_cpu(const dk::Tensor& a, const dk::Tensor& b) { return a.numel() + b.numel(); }
}  // namespace

DK_LIBRARY(downstream, m) { m.def("count(Tensor a, Tensor b) -> int"); }
DK_LIBRARY_IMPL(downstream, CPU, m) { m.impl("count", DK_FN(count_cpu)); }

int main() {
  auto op = dk::Dispatcher::singleton().findSchemaOrThrow("downstream::count", "");
  dk::Tensor a = dk::make_tensor({2, 3});
  int64_t unboxed = op.typed<int64_t(const dk::Tensor&, const dk::Tensor&)>().call(a, a);
  dk::Stack stack{a, a};
  op.callBoxed(&stack);
  if (unboxed != 12 || stack.at(0).toInt() != 12) {
    std::cerr << "wrong result: " << unboxed << "\n";
    return 1;
  }
  if (!op.hasKernelForDispatchKey(dk::DispatchKey::CPU)) return 1;
  std::cout << op.dumpComputedTable().substr(0, op.dumpComputedTable().find('\n')) << "\n";
  return 0;
}
