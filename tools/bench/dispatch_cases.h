// The dispatchkit benchmark cases (issue 7), shared by the Google Benchmark program
// (bench_dispatch.cpp) and the callgrind driver (callgrind_driver.cpp). The c10 programs in
// torch/ define the cases they have in common under the same names.
#pragma once

#include "dk/autograd/autograd.h"
#include "dk/dispatch.h"
#include "dk/generated/TensorOperators.h"
#include "dk/modes.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/dispatch/tensor_factories.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/tensor/tensor_options.h"
#include "dk/tensor/type_promotion.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "bench_case.h"

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

// Every case, in report order: 1 baselines, 2 unboxed, 3 boxed, 4 redispatch chains, 5 idle
// features, 6 end to end, 7 registration, 8 concurrency.
std::vector<benchcase::Case> allCases();

}  // namespace dk::bench
