// dk/core_types.h: this header moved to dk/core/core_types.h when the runtime was split by layer
// (docs/design.md section 1). Include the new path; this one stays for existing code.
#pragma once

#include "dk/core/core_types.h"
