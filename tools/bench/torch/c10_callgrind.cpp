// c10-bench-callgrind: the c10 cases under callgrind (tools/bench/run --vs-libtorch; see
// ../callgrind_main.h).
#include "c10_cases.h"
#include "callgrind_main.h"

int main(int argc, char** argv) { return benchcase::callgrindMain(c10bench::allCases(), argc, argv); }
