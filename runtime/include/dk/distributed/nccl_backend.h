// dk/distributed/nccl_backend.h: the NCCL backend, for CUDA tensors (init_process_group("nccl"),
// or new_group(ranks, timeout, "nccl")). Built in CUDA builds that find NCCL's header
// (/usr/local/cuda/include/nccl.h); libnccl is loaded on first use, as cuBLAS is (Note [cuBLAS
// loaded on first use]), so processes without a GPU never map it. Defined with the CUDA kernels
// (kernels/cuda/nccl_backend.cpp).
//
// One communicator per group, made on the first collective on the device of its tensor (rank 0
// makes the NCCL id and shares it through the group's store). Every NCCL call is enqueued on the
// legacy default stream, where dispatchkit's CUDA kernels run, so the collective follows the
// kernels that produced its tensors and precedes those issued after it; the group's worker waits
// for it with an event, polled until the group's timeout, after which the communicator is aborted
// and the collective raises the timeout error (Note [Naming the ranks that did not arrive]).
// Reductions are NCCL's own (sum, prod, min, max, avg); bool tensors reduce as uint8 (sum and max
// are "or" then, product and min "and"); int16 tensors are refused (NCCL has no int16).
#pragma once

#include <memory>

#include "dk/distributed/process_group.h"

namespace dk::distributed {

std::unique_ptr<Backend> makeNcclBackend(const BackendOptions& options);

}  // namespace dk::distributed
