// dk/distributed/process_group.h: process groups, the backends under them, and work handles.
//
// A ProcessGroup is a set of ranks that run collectives together (the world, made by
// init_process_group, or a subset made by new_group). It owns one worker thread: collectives
// run on it one at a time, in the order this rank issued them, so an async collective returns
// at once with a Work and the caller waits later. Each collective gets the group's next sequence
// number; the transport tags its messages with it, so ranks that disagree about the order of
// collectives fail rather than exchange the wrong data.
//
// Note [Naming the ranks that did not arrive]
// While a rank runs collective N it keeps "N <operator> <argument shapes>" under its monitoring
// key in the group's store (written by a background thread, every 20 ms when it changed, so the
// collectives never wait for the store). When a collective fails or times out, the rank reads
// every member's key and says which ranks were elsewhere (at another collective, or at none) and
// which entered the same collective with other arguments: c10d's desync debugging, always on.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dk/distributed/store.h"
#include "dk/tensor/tensor.h"

namespace dk::distributed {

// PyTorch's ReduceOp: SUM, PRODUCT, MIN, MAX, AVG (AVG divides the sum by the group size;
// integers truncate toward zero). On bool tensors SUM and MAX are "or", PRODUCT and MIN "and".
enum class ReduceOp : uint8_t { SUM, PRODUCT, MIN, MAX, AVG };
// "sum", "product", "min", "max", "avg": the spelling the c10d operators take.
std::string_view reduceOpName(ReduceOp op);
ReduceOp parseReduceOp(std::string_view name);  // dk::Error listing the valid names

// out[i] = a[i] <op> b[i] for n elements of `dtype` (out may be a or b); AVG reduces as SUM.
// What the backends' reductions and the local step of reduce_scatter use.
void reduceElements(ReduceOp op, ScalarType dtype, void* out, const void* a, const void* b, size_t n);
// data[i] /= divisor (integers truncate toward zero): the second step of AVG.
void divideElements(ScalarType dtype, void* data, size_t n, int64_t divisor);

inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(30);

// An operation started on a process group. wait() blocks until it completes and throws its
// error (a dk::Error naming the operator, the collective's sequence number and the ranks that did
// not arrive); a Work whose error was never waited for is dropped silently, as in c10d.
class Work {
 public:
  explicit Work(std::string description) : description_(std::move(description)) {}
  static std::shared_ptr<Work> completed(std::string description);
  // A Work that completes when `waiter` returns (or throws): the first wait() runs it. Point-to-point
  // operations are posted at once and finished this way, as c10d's Gloo sends and receives are.
  static std::shared_ptr<Work> deferred(std::string description, std::function<void()> waiter);

  bool isCompleted() const;
  bool isSuccess() const;  // completed without error
  void wait();             // rethrows the operation's error
  // Waits at most `timeout`; false when still running then (the operation goes on).
  bool wait(std::chrono::milliseconds timeout);
  std::exception_ptr exception() const;
  // "c10d::all_reduce_ (collective 3 of process group 0)"
  const std::string& description() const { return description_; }

  void finish(std::exception_ptr error);  // by the worker thread: once

 private:
  std::string description_;
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::function<void()> waiter_;  // deferred(): run by the first wait()
  void runWaiter();
};

// The transport under a group: one backend per kind of tensor it moves (Gloo for CPU tensors,
// NCCL for CUDA ones, or MPI). Called on the group's worker thread, one operation at a time;
// every call is synchronous and throws on failure. Tensors are contiguous; counts are in
// elements; `tag` is the operation's sequence number (collectives) or the user's tag (send/recv).
class Backend {
 public:
  virtual ~Backend();
  virtual std::string name() const = 0;  // "gloo"
  virtual bool supports(DeviceType device) const = 0;
  virtual void allReduce(Tensor& tensor, ReduceOp op, uint32_t tag) = 0;
  virtual void broadcast(Tensor& tensor, int root, uint32_t tag) = 0;
  // output = the inputs of every rank, concatenated in rank order; counts[r] = rank r's numel.
  virtual void allGather(Tensor& output, const Tensor& input, const std::vector<int64_t>& counts, uint32_t tag) = 0;
  // Sends input[in_offsets[r] .. + in_counts[r]] to rank r; receives rank r's piece at output's
  // out_counts prefix-sum offsets.
  virtual void allToAll(Tensor& output, const Tensor& input, const std::vector<int64_t>& out_counts,
                        const std::vector<int64_t>& in_counts, uint32_t tag) = 0;
  virtual void barrier(uint32_t tag) = 0;
  // Point to point, called on the caller's thread: each posts the transfer and returns what waits
  // for it to finish (throwing on failure or timeout).
  virtual std::function<void()> send(const Tensor& tensor, int dst, uint32_t tag) = 0;
  virtual std::function<void()> recv(Tensor& tensor, int src, uint32_t tag) = 0;
};

// What a backend is made from: this process's rank among `size` ranks (global_ranks: the members
// as ranks of the world), the store they meet through (prefixed with the group's and the
// backend's names), and the time after which an operation fails.
struct BackendOptions {
  std::shared_ptr<Store> store;
  int rank = 0;
  int size = 1;
  std::vector<int> global_ranks;
  std::chrono::milliseconds timeout{0};
};
using BackendFactory = std::function<std::unique_ptr<Backend>(const BackendOptions& options)>;
// Registers a backend by name ("gloo", "mpi", "nccl"); the built-in ones register themselves.
void registerBackend(const std::string& name, BackendFactory factory);
bool isBackendAvailable(const std::string& name);
std::vector<std::string> availableBackends();

// While alive, a collective this thread issues on an idle group runs on this thread instead of
// the group's worker (Note [Collectives on the caller's thread] in process_group.cpp): for callers
// that wait for the collective right away, as the c10d kernels do outside async_op calls.
class RunOnCallerThread {
 public:
  RunOnCallerThread();
  ~RunOnCallerThread();
  RunOnCallerThread(const RunOnCallerThread&) = delete;
  RunOnCallerThread& operator=(const RunOnCallerThread&) = delete;

 private:
  bool previous_;
};

class ProcessGroup {
 public:
  struct Options {
    std::string name;                 // "0" for the world, then "1", "2", ... (new_group)
    std::string backend = "gloo";     // a registered backend
    std::vector<int> global_ranks;    // the members, as ranks of the world
    int rank = 0;                     // this process's rank in the group
    std::chrono::milliseconds timeout = kDefaultTimeout;
    // Before each collective the ranks exchange what they are about to do (operator, dtype, sizes,
    // reduce op, root, splits) and all raise the same clear error when they disagree, instead of
    // aborting in the transport (Gloo cannot recover from a size mismatch). One small all-gather
    // per collective; DK_DISTRIBUTED_CHECKS=0 turns it off by default.
    bool check_arguments = defaultCheckArguments();
  };
  static bool defaultCheckArguments();
  // Rendezvous with the other members through `store` (prefixed with the group's name).
  ProcessGroup(Options options, const std::shared_ptr<Store>& store);
  ~ProcessGroup();  // shutdown()
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  const std::string& name() const { return options_.name; }
  int rank() const { return options_.rank; }
  int size() const { return static_cast<int>(options_.global_ranks.size()); }
  const std::vector<int>& globalRanks() const { return options_.global_ranks; }
  const std::string& backendName() const { return options_.backend; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  // Note [Argument check] on or off for the collectives issued from now on (every rank of the group
  // must set the same). Off saves one small all-gather per collective; a mismatch then goes to
  // the transport, which may abort or hang until the timeout.
  void setCheckArguments(bool on) { check_arguments_.store(on); }
  bool checksArguments() const { return check_arguments_.load(); }
  // Collectives issued on this rank so far: the next one gets sequenceNumber() + 1.
  uint64_t sequenceNumber() const;

  // The collectives, on tensors of this process (checked: contiguous, on a device the backend
  // moves, sizes that add up). Each returns at once; the Work completes when the transport is
  // done. `op` is the operator's name, for messages and the monitoring key.
  std::shared_ptr<Work> allReduce(const std::string& op, Tensor tensor, ReduceOp reduce);
  std::shared_ptr<Work> broadcast(const std::string& op, Tensor tensor, int root);
  // split_sizes: each rank's size along dim 0 (empty: every rank gives input's shape).
  std::shared_ptr<Work> allGather(const std::string& op, Tensor output, Tensor input, std::vector<int64_t> split_sizes);
  std::shared_ptr<Work> reduceScatter(const std::string& op, Tensor output, Tensor input, ReduceOp reduce,
                                      std::vector<int64_t> split_sizes);
  std::shared_ptr<Work> allToAll(const std::string& op, Tensor output, Tensor input, std::vector<int64_t> output_split_sizes,
                                 std::vector<int64_t> input_split_sizes);
  std::shared_ptr<Work> barrier(const std::string& op);
  std::shared_ptr<Work> send(const std::string& op, Tensor tensor, int dst, int tag);
  std::shared_ptr<Work> recv(const std::string& op, Tensor tensor, int src, int tag);

  // Runs `fn` on the worker after every operation issued before it: a local step that needs their
  // results (all_gather's copy into a list of tensors). Fails, without running fn, when the group
  // failed before it.
  std::shared_ptr<Work> then(const std::string& op, std::function<void()> fn);

  // Finishes the queued operations and stops the worker; later operations raise an error that
  // says the group was destroyed. Idempotent.
  void shutdown();
  bool isShutdown() const;

 private:
  struct Job {
    std::string op;
    std::string fingerprint;  // "Float[4, 2] sum": what the monitoring key and reports show
    std::string agreed;       // what every rank must pass the same (Note [Argument check])
    uint64_t sequence = 0;    // 0 for local steps; enqueue numbers the collectives (given as 1)
    std::vector<int64_t> sends, receives;  // all_to_all: elements to and from each rank
    std::function<void(Backend&, uint32_t tag)> run;  // tag: the sequence number
    std::shared_ptr<Work> work;
    bool check = true;  // run Note [Argument check] first (the group's setting when issued)
  };

  std::shared_ptr<Work> enqueue(Job job);
  // Note [Argument check]: throws ArgumentMismatch when the ranks disagree about `job`.
  void verifyAgreement(const Job& job);
  Backend& backendFor(const std::string& op, const Tensor& tensor);
  void checkUsable(const std::string& op) const;  // not destroyed, not broken
  std::shared_ptr<Work> pointToPoint(const std::string& op, Tensor tensor, int peer, int tag, bool sending);
  void workerLoop();
  void execute(Job& job);
  void monitorLoop();
  // The message for a collective that failed with `what`: the ranks that did not arrive.
  std::string diagnose(const Job& job, const std::string& what, bool timed_out);

  Options options_;
  std::shared_ptr<Store> store_;  // the group's view: keys are prefixed with its name
  std::unique_ptr<Backend> backend_;

  mutable std::mutex mutex_;
  std::condition_variable queue_cv_;
  std::deque<Job> queue_;
  uint64_t issued_ = 0;             // collectives issued (the last sequence number)
  bool stopping_ = false;
  bool running_ = false;            // a job runs (on the worker, or on its caller's thread)
  std::string broken_;              // set after a failure: why the group cannot be used
  std::atomic<bool> check_arguments_;
  std::thread worker_;

  // Note [Naming the ranks that did not arrive]
  std::mutex monitor_mutex_;
  std::condition_variable monitor_cv_;
  std::string monitor_state_;       // "3 c10d::all_reduce_ float[4]"; "" before the first
  std::string monitor_written_;
  bool monitor_stop_ = false;
  std::thread monitor_;
};

}  // namespace dk::distributed
