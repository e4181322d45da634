// dk/autograd/grad_mode.h: this header moved to dk/core/grad_mode.h when the runtime was split by layer
// (docs/design.md section 1). Include the new path; this one stays for existing code.
#pragma once

#include "dk/core/grad_mode.h"
