// dk/intrusive_ptr.h: this header moved to dk/util/intrusive_ptr.h when the runtime was split by layer
// (docs/design.md section 1). Include the new path; this one stays for existing code.
#pragma once

#include "dk/util/intrusive_ptr.h"
