// dk/explain.h: dk::explain and dk::ExplainGuard (Note [explain] in dk/dispatch/explain.h).
#pragma once

#include "dk/dispatch/explain.h"
