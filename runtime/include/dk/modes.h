// dk/modes.h: everything that runs around the kernels: dispatch modes (the mode stack and the
// modes that ship with the library), observers, the profiler and autocast.
#pragma once

#include "dk/dispatch/dispatch_mode.h"
#include "dk/dispatch/observer.h"
#include "dk/layers/autocast.h"
#include "dk/layers/fake_tensor.h"
#include "dk/layers/modes.h"
#include "dk/layers/profiler.h"
