// The error raised when a dtype dispatch meets a dtype outside its group.
#include "dk/tensor/dtype_dispatch.h"

#include "dk/util/error.h"

namespace dk::detail {

void throwUnsupportedDtype(const char* opname, ScalarType t) { DK_ERROR(opname, ": unsupported dtype ", t); }

}  // namespace dk::detail
