// Measures the startup registration of the PyTorch-scale library: loads it (its static
// initializers register 2,493 operator schemas), times that, and checks every one is there.
#include <dlfcn.h>

#include <chrono>
#include <iostream>

#include <dk/dispatch.h>

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
  return registered == 2493 ? 0 : 1;
}
