// dk/dispatch.h: the dispatcher API (README.md "Using the API", docs/semantics.md): keys, values,
// registration, calls, thread-local state.
#pragma once

#include "dk/dispatch_key.h"
#include "dk/dispatch_key_set.h"
#include "dk/dispatcher.h"
#include "dk/error.h"
#include "dk/function_schema.h"
#include "dk/generator.h"
#include "dk/ivalue.h"
#include "dk/kernel_function.h"
#include "dk/library.h"
#include "dk/local_dispatch_key_set.h"
#include "dk/scalar.h"
#include "dk/tensor.h"
