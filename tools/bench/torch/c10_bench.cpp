// c10-bench: Google Benchmark timings of the c10 cases (tools/bench/run --vs-libtorch).
#include "c10_cases.h"
#include "gbench_main.h"

int main(int argc, char** argv) { return benchcase::gbenchMain(c10bench::allCases(), argc, argv); }
