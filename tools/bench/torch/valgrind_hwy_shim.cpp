// Loaded (LD_PRELOAD) into c10-bench-callgrind under valgrind only. libtorch_cpu pulls in
// libhwy (through OpenCV and libjxl), whose static initializer measures its timer with rdtscp,
// an instruction valgrind 3.19 cannot decode on this CPU: the process dies with SIGILL before
// main. This replaces that one function (called through the PLT) with a constant; nothing the
// benchmarks do uses libhwy.
namespace hwy::platform {
double TimerResolution() { return 1e-9; }
}  // namespace hwy::platform
