// The dispatch benchmark cases (issue: benchmarks), shared by the Google Benchmark program
// and the callgrind driver. Each case verifies its answer before it is timed.
#pragma once

#include <dk/dispatch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dk::bench {

// The baseline kernel: two tensors in, an int out; never inlined.
int64_t twoTensorKernel(const Tensor& a, const Tensor& b);

using TwoTensorOp = TypedOperatorHandle<int64_t(const Tensor&, const Tensor&)>;

// Registers the benchmark operators once (a kernel at CPU; a 2-layer and a 5-layer chain).
struct Registry {
  Registry();
  std::vector<std::unique_ptr<Library>> libraries;  // first: the operators exist before the handles
  TwoTensorOp plain;    // bench::plain: CPU kernel only
  TwoTensorOp chain2;   // bench::chain2: Autograd -> CPU
  TwoTensorOp chain5;   // bench::chain5: GenericMode -> GenericWrapper -> Autograd -> ADInplaceOrView -> CPU
  OperatorHandle plain_handle;
};
Registry& registry();

// A case: `run(n)` performs n calls and returns a checksum; `expected(n)` is what it must be.
struct Case {
  std::string name;
  std::function<int64_t(int64_t)> run;
  int64_t per_call_result;  // every call returns this; the checksum is n * per_call_result
};
std::vector<Case> allCases();

}  // namespace dk::bench
