// dk/dispatch.h: the dispatcher API (README.md "Using the API", docs/semantics.md): keys, values,
// registration, calls, thread-local state.
#pragma once

#include "dk/core/dispatch_key.h"
#include "dk/core/dispatch_key_set.h"
#include "dk/core/generator.h"
#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/core/scalar.h"
#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/function_schema.h"
#include "dk/dispatch/ivalue.h"
#include "dk/dispatch/kernel_function.h"
#include "dk/dispatch/library.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"
