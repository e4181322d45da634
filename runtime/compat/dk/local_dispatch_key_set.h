// dk/local_dispatch_key_set.h: this header moved to dk/core/local_dispatch_key_set.h when the runtime was split by layer
// (docs/design.md section 1). Include the new path; this one stays for existing code.
#pragma once

#include "dk/core/local_dispatch_key_set.h"
