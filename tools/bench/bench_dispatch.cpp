// dk-bench: Google Benchmark timings of the dispatchkit cases (tools/bench/run). Each case
// checks its answer before it is timed (gbench_main.h).
#include "dispatch_cases.h"
#include "gbench_main.h"

int main(int argc, char** argv) { return benchcase::gbenchMain(dk::bench::allCases(), argc, argv); }
