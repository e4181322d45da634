// dk/tensor_options.h: this header moved to dk/tensor/tensor_options.h when the runtime was split by layer
// (docs/design.md section 1). Include the new path; this one stays for existing code.
#pragma once

#include "dk/tensor/tensor_options.h"
