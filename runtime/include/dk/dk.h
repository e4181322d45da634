// dk/dk.h: everything: the dispatcher API, tensors, the generated operators (dk::add,
// Tensor methods, a + b), modes, observers, the profiler and autograd.
#pragma once

#include "dk/autograd/autograd.h"
#include "dk/core/parallel.h"
#include "dk/dispatch.h"
#include "dk/explain.h"
#include "dk/func/functionalize.h"
#include "dk/func/grad.h"
#include "dk/func/make_graph.h"
#include "dk/func/vmap.h"
#include "dk/generated/Functions.h"
#include "dk/generated/TensorOperators.h"
#include "dk/modes.h"
#include "dk/optim/adam.h"
#include "dk/optim/sgd.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/dispatch/tensor_factories.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/tensor/tensor_options.h"
#include "dk/tensor/type_promotion.h"
