// dk-bench-startup LIB (case 7): loads LIB, whose static initializers register operator
// schemas (tools/bench/scale.py builds it from the generator's PyTorch-scale RegisterSchema
// shards: all 2,493 operators of PyTorch 1.13.1), and prints how long that took and how many
// aten operators exist afterwards. Exit status 1 unless there are `expected` (argv[2]) of them.
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include <dk/dispatch.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: dk-bench-startup LIB EXPECTED_OPERATORS\n";
    return 2;
  }
  auto& d = dk::Dispatcher::singleton();
  auto t0 = std::chrono::steady_clock::now();
  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  auto t1 = std::chrono::steady_clock::now();
  if (handle == nullptr) {
    std::cerr << "cannot load " << argv[1] << ": " << dlerror() << "\n";
    return 1;
  }
  long registered = 0;
  for (const auto& name : d.getAllOpNames())
    if (name.name.rfind("aten::", 0) == 0 && d.findSchema(name)) ++registered;
  std::cout << "startup_ms," << std::chrono::duration<double, std::milli>(t1 - t0).count() << "\n";
  std::cout << "operators," << registered << "\n";
  return registered == std::atol(argv[2]) ? 0 : 1;
}
