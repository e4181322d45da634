// Printing TensorOptions.
#include "dk/tensor/tensor_options.h"

namespace dk {

std::ostream& operator<<(std::ostream& out, const TensorOptions& options) {
  return out << "TensorOptions(dtype=" << dtypeName(options.dtype()) << ", device=" << options.device()
             << ", layout=" << options.layout() << ", requires_grad=" << (options.requires_grad() ? "true" : "false")
             << ", pinned_memory=" << (options.pinned_memory() ? "true" : "false") << ")";
}

}  // namespace dk
