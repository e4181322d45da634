// dk/distributed/distributed.h: PyTorch's torch.distributed for dispatchkit.
//
//   dk::distributed::init_process_group("gloo");   // RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   dk::Tensor t = dk::ones({4});
//   dk::distributed::all_reduce(t);                // every rank now holds the sum
//   auto work = dk::distributed::all_reduce(t, ReduceOp::MAX, nullptr, /*async_op=*/true);
//   ... compute ...
//   work->wait();
//   dk::distributed::destroy_process_group();
//
// Every collective is an operator of namespace c10d, declared in schemas/native_functions.yaml
// (c10d::all_reduce_, c10d::broadcast_, ...) with CPU (Gloo, MPI) and CUDA (NCCL) kernels, so
// dispatch modes, observers, the profiler, RankLogger and the trace see collectives like any other
// call. The functions here call those operators; a group is named in the call by its name
// ("0" for the world). Calling an operator directly (dk::c10d::all_reduce_(t, "sum", "0")) is
// synchronous; these functions with async_op=true return the Work instead.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dk/distributed/process_group.h"
#include "dk/distributed/store.h"

namespace dk::distributed {

// Starts the default group (the world, named "0"). rank / world_size of -1 read RANK and
// WORLD_SIZE; with no store, rank 0 serves a TCPStore at MASTER_ADDR:MASTER_PORT and the others
// connect to it. Errors: world size < 1, rank out of range, already initialized, unknown backend,
// missing environment, a rendezvous that does not complete within `timeout`.
void init_process_group(const std::string& backend = "gloo", int rank = -1, int world_size = -1,
                        std::shared_ptr<Store> store = nullptr, std::chrono::milliseconds timeout = kDefaultTimeout);
bool is_initialized();
// Destroys `group` (nullptr: every group, and the default one). Queued work finishes first; a
// collective on a destroyed group raises an error that says so.
void destroy_process_group(const std::shared_ptr<ProcessGroup>& group = nullptr);
// A group of some ranks of the world. Every rank of the world calls it, with the same ranks, in
// the same order (as in PyTorch); ranks outside `ranks` get nullptr. timeout 0: the world's.
std::shared_ptr<ProcessGroup> new_group(std::vector<int> ranks, std::chrono::milliseconds timeout = {},
                                        const std::string& backend = "");
std::shared_ptr<ProcessGroup> default_group();  // the world; error before init_process_group
// The group named `name` (how the c10d operators find theirs); a clear error for a destroyed
// group or one that never existed.
std::shared_ptr<ProcessGroup> group_by_name(const std::string& name, const std::string& op);
int get_rank(const std::shared_ptr<ProcessGroup>& group = nullptr);        // rank in the group
int get_world_size(const std::shared_ptr<ProcessGroup>& group = nullptr);  // size of the group

// The collectives. `group` nullptr is the world. With async_op false each returns once done (a
// completed Work); with async_op true it returns at once and Work::wait() finishes it.
using WorkHandle = std::shared_ptr<Work>;
WorkHandle all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::SUM, const std::shared_ptr<ProcessGroup>& group = nullptr,
                      bool async_op = false);
WorkHandle broadcast(Tensor& tensor, int src, const std::shared_ptr<ProcessGroup>& group = nullptr, bool async_op = false);
// Fills outputs[r] with rank r's tensor (sizes may differ along dim 0: uneven all-gather).
WorkHandle all_gather(std::vector<Tensor>& outputs, const Tensor& input,
                      const std::shared_ptr<ProcessGroup>& group = nullptr, bool async_op = false);
// output = the concatenation of every rank's input along dim 0.
WorkHandle all_gather_into_tensor(Tensor& output, const Tensor& input,
                                  const std::shared_ptr<ProcessGroup>& group = nullptr, bool async_op = false);
// output = the reduction of every rank's inputs[rank] (sizes may differ between ranks' pieces).
WorkHandle reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op = ReduceOp::SUM,
                          const std::shared_ptr<ProcessGroup>& group = nullptr, bool async_op = false);
// input is split evenly along dim 0; this rank gets piece `rank` of each rank's input.
WorkHandle reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::SUM,
                                 const std::shared_ptr<ProcessGroup>& group = nullptr, bool async_op = false);
// PyTorch's all_to_all_single: split sizes along dim 0, empty for even splits.
WorkHandle all_to_all_single(Tensor& output, const Tensor& input, std::vector<int64_t> output_split_sizes = {},
                             std::vector<int64_t> input_split_sizes = {},
                             const std::shared_ptr<ProcessGroup>& group = nullptr, bool async_op = false);
WorkHandle barrier(const std::shared_ptr<ProcessGroup>& group = nullptr, bool async_op = false);
// Point to point; dst/src are ranks of `group`. send's Work completes when the data has left.
WorkHandle send(const Tensor& tensor, int dst, const std::shared_ptr<ProcessGroup>& group = nullptr, int tag = 0,
                bool async_op = false);
WorkHandle recv(Tensor& tensor, int src, const std::shared_ptr<ProcessGroup>& group = nullptr, int tag = 0,
                bool async_op = false);

namespace detail {
// How a c10d kernel hands its Work to the function above that called the operator: inside an
// AsyncCollective scope the kernel stores the Work and returns at once; outside one (a direct call
// of the operator) it waits. A mode that answers the call without running the kernel leaves no
// Work, and the function returns a completed one.
class AsyncCollective {
 public:
  AsyncCollective();
  ~AsyncCollective();
  AsyncCollective(const AsyncCollective&) = delete;
  AsyncCollective& operator=(const AsyncCollective&) = delete;
  WorkHandle take(const char* op);  // the kernel's Work (completed when it left none)

 private:
  bool outer_;
  WorkHandle previous_;
};
void finishCollective(WorkHandle work);  // by the kernels: store it, or wait
}  // namespace detail

}  // namespace dk::distributed
