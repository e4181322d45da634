// dk/distributed/mpi_backend.h: the MPI backend (Debian's Open MPI, -Dmpi=enabled|auto), for CPU
// tensors, as c10d's ProcessGroupMPI: run the program under `mpirun -n N` and call
// init_process_group("mpi"); the rank and world size are MPI's (RANK and WORLD_SIZE are not
// needed; given ones must agree). A store is optional: with MASTER_ADDR and MASTER_PORT set the
// ranks share a TCPStore for the monitoring keys (Note [Naming the ranks that did not arrive]),
// otherwise each rank has a HashStore of its own and a timeout names no ranks.
//
// MPI is initialized with MPI_THREAD_MULTIPLE (the group's worker runs the collectives while the
// caller posts sends and receives) and finalized at exit. Collectives are MPI's non-blocking ones
// (MPI_Iallreduce, MPI_Ibcast, MPI_Iallgatherv, MPI_Ialltoallv, MPI_Ibarrier) waited for with
// MPI_Test until the group's timeout, so a hang becomes an error here too; the reductions are
// dispatchkit's own (one user MPI_Op per ReduceOp over one MPI datatype per dtype).
#pragma once

#include <memory>

#include "dk/distributed/process_group.h"

namespace dk::distributed {

std::unique_ptr<Backend> makeMpiBackend(const BackendOptions& options);
// Initializes MPI once (MPI_THREAD_MULTIPLE) and returns MPI_COMM_WORLD's rank and size.
std::pair<int, int> mpiWorld();

}  // namespace dk::distributed
