// dk-bench-memory (case 7): heap bytes per operator entry. Registers N operators, each a
// schema and one CPU kernel (what a typical generated operator has), and prints the growth of
// the live heap divided by N: the entry with its dispatch table, fallthrough masks, schema,
// registration history and the registry's share, and the Library's undo handles. It also
// prints that figure without the schema's own heap (its argument and return vectors, measured
// as what copies of the same parsed schema hold): the table and history the target
// names.
#include <dk/dispatch.h>

#include <iostream>
#include <string>
#include <vector>

#include "alloc_counter.h"

namespace {
int64_t kernel(const dk::Tensor& a, const dk::Tensor& b) { return a.dim() + b.dim(); }
}  // namespace

int main() {
  constexpr int kOps = 2000;
  std::vector<std::string> schemas, names;
  for (int i = 0; i < kOps; ++i) {
    names.push_back("op_" + std::to_string(i));
    schemas.push_back(names.back() + "(Tensor a, Tensor b) -> int");
  }
  dk::Library lib(dk::Library::FRAGMENT, "mem");
  lib.def("warm(Tensor a, Tensor b) -> int").impl("warm", dk::DispatchKey::CPU, DK_FN(kernel));
  const int64_t before = benchalloc::live();
  for (int i = 0; i < kOps; ++i) lib.def(schemas[i]).impl(names[i], dk::DispatchKey::CPU, DK_FN(kernel));
  const int64_t after = benchalloc::live();
  // The right answer: the last operator is there and calls its kernel.
  auto op = dk::Dispatcher::singleton().findSchemaOrThrow("mem::op_" + std::to_string(kOps - 1), "");
  dk::Tensor t = dk::make_tensor({2, 3});
  if (op.typed<int64_t(const dk::Tensor&, const dk::Tensor&)>().call(t, t) != 4) {
    std::cerr << "WRONG ANSWER: mem::op_" << kOps - 1 << "\n";
    return 1;
  }
  // The schema's heap: N copies of one registered schema, each holding its own vectors.
  std::vector<dk::FunctionSchema> copies;
  copies.reserve(kOps);
  const int64_t before_copies = benchalloc::live();
  for (int i = 0; i < kOps; ++i) copies.push_back(op.schema());
  const int64_t schema_heap = (benchalloc::live() - before_copies) / kOps;
  std::cout << "bytes_per_operator," << (after - before) / kOps << "\n";
  std::cout << "schema_heap_bytes," << schema_heap << "\n";
  std::cout << "table_and_history_bytes," << (after - before) / kOps - schema_heap << "\n";
  std::cout << "sizeof_operator_entry," << sizeof(dk::OperatorEntry) << "\n";
  return 0;
}
