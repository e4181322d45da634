// dk/tensor/tensor_factories.h: this header moved to dk/dispatch/tensor_factories.h when the
// generated operator calls became inline dispatcher calls (Note [Generated calls]): the factory
// overloads call them, so they sit with the dispatcher. Include the new path; this one stays
// for existing code.
#pragma once

#include "dk/dispatch/tensor_factories.h"
