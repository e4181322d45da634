// dk/distributed/gloo_backend.h: the Gloo backend (Debian's libgloo, TCP transport) for CPU
// tensors: the default backend of init_process_group.
//
// Gloo's ring and halving-doubling algorithms with dispatchkit's own reduction functions (every
// dtype, every ReduceOp); the messages of a collective carry its sequence number as their tag.
// The TCP device binds the address in DK_GLOO_HOST, else 127.0.0.1 when MASTER_ADDR is a
// loopback address (or unset), else this machine's host name.
#pragma once

#include <memory>

#include "dk/distributed/process_group.h"

namespace dk::distributed {

std::unique_ptr<Backend> makeGlooBackend(const BackendOptions& options);

}  // namespace dk::distributed
