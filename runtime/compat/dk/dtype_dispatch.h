// dk/dtype_dispatch.h: this header moved to dk/tensor/dtype_dispatch.h when the runtime was split by layer
// (docs/design.md section 1). Include the new path; this one stays for existing code.
#pragma once

#include "dk/tensor/dtype_dispatch.h"
