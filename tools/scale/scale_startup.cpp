// Measures the startup registration of the PyTorch-scale library: loads it (its static
// initializers register 2,493 operator schemas, from the generator's constant data), times
// that, checks every one is there and equals the schema its text parses to, and checks that
// calling one (they have no kernels) fails with the dispatcher's usual error.
// Also prints the key universe the runtime was built with and the dispatch table's bytes per
// operator under it.
#include <dlfcn.h>

#include <chrono>
#include <iostream>
#include <string>

#include <dk/dispatch.h>
#include <dk/dispatch/operator_entry.h>
#include <dk/generated/aten/Operators.h>
#include <dk/generated/ops/zeros.h>

int main() {
  auto& d = dk::Dispatcher::singleton();
  size_t before = d.getAllOpNames().size();
  auto t0 = std::chrono::steady_clock::now();
  void* handle = dlopen(DK_SCALE_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
  auto t1 = std::chrono::steady_clock::now();
  if (handle == nullptr) {
    std::cerr << "cannot load " << DK_SCALE_LIBRARY << ": " << dlerror() << "\n";
    return 1;
  }
  size_t registered = 0;
  for (const auto& name : d.getAllOpNames())
    if (name.name.rfind("aten::", 0) == 0) ++registered;
  double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  std::cout << "registered " << registered << " aten operators (" << d.getAllOpNames().size() - before
            << " new) in " << ms << " ms, including loading the library\n";
  std::cout << "key universe: " << dk::kNumBackends << " backends, " << dk::kNumFunctionalityKeys - 1
            << " functionalities, " << dk::kDispatchTableSize << " table slots; dispatch table "
            << dk::kDispatchTableSize * sizeof(void*) << " B per operator (OperatorEntry "
            << sizeof(dk::OperatorEntry) << " B)\n";
  if (registered != 2493) return 1;

  // Every schema built from constant data (Note [Pre-built schemas]) is the one its text
  // parses to, and prints back to that text.
  size_t checked = 0;
  for (const dk::aten::ops::OperatorInfo& info : dk::aten::ops::all_operators()) {
    auto op = d.findSchema(dk::OperatorName{info.name, info.overload_name});
    dk::FunctionSchema parsed = dk::parseSchema(info.schema_str);
    parsed.set_operator_name(dk::OperatorName{info.name, info.overload_name});
    if (!op || !(op->schema() == parsed) || op->schema().str() != "aten::" + std::string(info.schema_str)) {
      std::cerr << "schema of " << info.name << "." << info.overload_name << " differs from its text: "
                << (op ? op->schema().str() : std::string("(not registered)")) << " vs aten::" << info.schema_str
                << "\n";
      return 1;
    }
    ++checked;
  }
  std::cout << checked << " schemas equal to their parsed text\n";

  // An operator with a schema and no kernel: the usual error, naming it and the backend.
  auto relu = d.findSchemaOrThrow("aten::relu", "");
  dk::Stack stack{dk::IValue(dk::zeros({2}))};
  try {
    relu.callBoxed(&stack);
    std::cerr << "aten::relu ran without a kernel\n";
    return 1;
  } catch (const dk::Error& e) {
    const std::string expected = "Could not run 'aten::relu' with arguments from the 'CPU' backend.";
    if (std::string(e.what()).find(expected) == std::string::npos) {
      std::cerr << "unexpected error for aten::relu: " << e.what() << "\n";
      return 1;
    }
  }
  std::cout << "a call without a kernel: Could not run 'aten::relu' with arguments from the 'CPU' backend (as "
               "expected)\n";
  return 0;
}
