// dk/error.h: this header moved to dk/util/error.h when the runtime was split by layer
// (docs/design.md section 1). Include the new path; this one stays for existing code.
#pragma once

#include "dk/util/error.h"
