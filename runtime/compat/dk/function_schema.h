// dk/function_schema.h: this header moved to dk/dispatch/function_schema.h when the runtime was split by layer
// (docs/design.md section 1). Include the new path; this one stays for existing code.
#pragma once

#include "dk/dispatch/function_schema.h"
