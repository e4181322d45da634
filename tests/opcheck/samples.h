// tests/opcheck/samples.h: sample arguments for every operator of schemas/native_functions.yaml,
// the inputs dk-opcheck (tests/opcheck/opcheck_all.cpp) runs dk::testing::opcheck with.
//
// Note [opcheck samples]
// Most arguments come from the operator's schema (the YAML): an argument with a default takes
// it, and one without takes the value its type and name call for (a float64 [2, 3] tensor with
// distinct positive values for a Tensor, dim 1 for `int dim`, [2, 3] for a size, ...). A family
// whose arguments must agree with each other (matrix products, convolutions, indexing, losses)
// gets its samples from a rule written next to the family's name in samples.cpp, the way
// PyTorch's OpInfo declares sample inputs per operator. In-place and out= overloads take their
// functional form's arguments (plus an empty out tensor, which the operator resizes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/ivalue.h"

namespace dk::opcheck_samples {

// The samples of `op` (usually one), or nullopt with `why` set when the operator is not run
// here (the c10d collectives need a process group).
std::optional<std::vector<Stack>> samplesFor(const OperatorHandle& op, std::string* why);

}  // namespace dk::opcheck_samples
