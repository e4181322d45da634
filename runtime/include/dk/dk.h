// dk/dk.h: everything: the dispatcher API, tensors, the generated operators (dk::add,
// Tensor methods, a + b), modes, observers, the profiler and autograd.
#pragma once

#include "dk/autocast.h"
#include "dk/autograd/autograd.h"
#include "dk/dispatch.h"
#include "dk/dispatch_mode.h"
#include "dk/empty_tensor.h"
#include "dk/generated/Functions.h"
#include "dk/generated/TensorOperators.h"
#include "dk/modes.h"
#include "dk/observer.h"
#include "dk/profiler.h"
#include "dk/tensor_factories.h"
#include "dk/tensor_from_values.h"
#include "dk/tensor_options.h"
#include "dk/type_promotion.h"
