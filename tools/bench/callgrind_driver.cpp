// dk-bench-callgrind: the dispatchkit cases under callgrind, for instructions per call
// (tools/bench/run --callgrind; see callgrind_main.h).
#include "callgrind_main.h"
#include "dispatch_cases.h"

int main(int argc, char** argv) { return benchcase::callgrindMain(dk::bench::allCases(), argc, argv); }
