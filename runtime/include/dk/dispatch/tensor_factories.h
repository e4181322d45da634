// dk/dispatch/tensor_factories.h: the factory operators, each with its TensorOptions form as in
// PyTorch's C++ API: dk::zeros({2, 3}, dk::TensorOptions().dtype(dk::kDouble).device(dk::kMeta)).
// The generator writes those forms into each operator's header (Note [TensorOptions forms] in
// codegen/api/cpp.py); this header gathers the factories for code that wants only them.
#pragma once

#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/empty_like.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/ones_like.h"
#include "dk/generated/ops/rand.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/zeros.h"
#include "dk/generated/ops/zeros_like.h"
