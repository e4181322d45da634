// dk/tensor_factories.h: this header moved to dk/dispatch/tensor_factories.h (by way of
// dk/tensor/tensor_factories.h, when the runtime was split by layer: docs/design.md section 1).
// Include the new path; this one stays for existing code.
#pragma once

#include "dk/dispatch/tensor_factories.h"
