#include "dk/distributed/distributed.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <set>

#ifdef DK_HAVE_GLOO
#include "dk/distributed/gloo_backend.h"
#endif
#ifdef DK_HAVE_MPI
#include "dk/distributed/mpi_backend.h"
#endif
#ifdef DK_HAVE_NCCL
#include "dk/distributed/nccl_backend.h"
#endif
#include "dk/generated/ops/all_gather_into_tensor.h"
#include "dk/generated/ops/all_gather_into_tensor_native.h"
#include "dk/generated/ops/all_reduce.h"
#include "dk/generated/ops/all_reduce_native.h"
#include "dk/generated/ops/all_to_all_single.h"
#include "dk/generated/ops/all_to_all_single_native.h"
#include "dk/generated/ops/barrier.h"
#include "dk/generated/ops/barrier_native.h"
#include "dk/generated/ops/broadcast.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/broadcast_native.h"
#include "dk/generated/ops/recv.h"
#include "dk/generated/ops/recv_native.h"
#include "dk/generated/ops/reduce_scatter_tensor.h"
#include "dk/generated/ops/reduce_scatter_tensor_native.h"
#include "dk/generated/ops/send.h"
#include "dk/generated/ops/send_native.h"
#include "dk/layers/modes.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"

namespace dk::distributed {

// ---------------------------------------------------------------- the groups of this process

namespace {

struct World {
  std::mutex mutex;
  std::shared_ptr<Store> store;                                   // the world's store
  std::shared_ptr<ProcessGroup> world;                            // the default group ("0")
  std::map<std::string, std::shared_ptr<ProcessGroup>> by_name;   // every live group of this rank
  std::set<std::string> destroyed;                                // names of destroyed groups
  int rank = -1;
  int world_size = 0;
  int groups_made = 0;  // new_group calls: the next group is named groups_made + 1
  std::string backend;
  std::chrono::milliseconds timeout{0};
};

World& world() {
  static World w;
  return w;
}

// RankLogger's note on a c10d call: the group, and for a collective the sequence number it is
// about to get ("group=0 seq=3"); send and recv are not numbered.
std::string annotateCollective(const OperatorHandle& op, const Stack& stack, size_t first) {
  const auto& args = op.schema().arguments();
  for (size_t i = 0; i < args.size() && first + i < stack.size(); ++i) {
    if (args[i].name != "group" || !stack[first + i].isString()) continue;
    const std::string& name = stack[first + i].toStringRef();
    std::string note = "group=" + name;
    const std::string& op_name = op.operator_name().name;
    if (op_name == "c10d::send" || op_name == "c10d::recv_") return note;
    World& w = world();
    std::lock_guard<std::mutex> lock(w.mutex);
    auto it = w.by_name.find(name);
    if (it != w.by_name.end()) note += " seq=" + std::to_string(it->second->sequenceNumber() + 1);
    return note;
  }
  return "";
}

void registerBuiltinBackends() {
  static std::once_flag once;
  std::call_once(once, [] {
    RankLogger::setAnnotator("c10d", annotateCollective);
#ifdef DK_HAVE_GLOO
    if (!isBackendAvailable("gloo")) registerBackend("gloo", makeGlooBackend);
#endif
#ifdef DK_HAVE_MPI
    if (!isBackendAvailable("mpi")) registerBackend("mpi", makeMpiBackend);
#endif
#ifdef DK_HAVE_NCCL
    if (!isBackendAvailable("nccl")) registerBackend("nccl", makeNcclBackend);
#endif
  });
}

int envInt(const char* name, const char* what) {
  const char* text = std::getenv(name);
  DK_CHECK(text != nullptr && *text, "init_process_group: ", what, " was not given and the environment variable ", name,
           " is not set (tools/dkrun sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)");
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  DK_CHECK(end != text && *end == '\0', "init_process_group: ", name, "='", text, "' is not an integer");
  return static_cast<int>(value);
}

}  // namespace

void init_process_group(const std::string& backend, int rank, int world_size, std::shared_ptr<Store> store,
                        std::chrono::milliseconds timeout) {
  registerBuiltinBackends();
  World& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  DK_CHECK(!w.world, "init_process_group: the default process group is already initialized (call destroy_process_group "
                     "first)");
#ifdef DK_HAVE_MPI
  if (backend == "mpi") {
    // The job's rank and size are MPI's (mpirun -n N); given ones must agree.
    auto [mpi_rank, mpi_size] = mpiWorld();
    DK_CHECK(rank == -1 || rank == mpi_rank, "init_process_group: rank ", rank, " was given, but MPI says this process is rank ",
             mpi_rank);
    DK_CHECK(world_size == -1 || world_size == mpi_size, "init_process_group: world_size ", world_size,
             " was given, but the MPI job has ", mpi_size, " processes");
    rank = mpi_rank;
    world_size = mpi_size;
    const char* port = std::getenv("MASTER_PORT");
    if (!store && !(port && *port)) store = std::make_shared<HashStore>();
  }
#endif
  if (world_size == -1) world_size = envInt("WORLD_SIZE", "world_size");
  if (rank == -1) rank = envInt("RANK", "rank");
  DK_CHECK(world_size >= 1, "init_process_group: world_size must be at least 1, got ", world_size);
  DK_CHECK(rank >= 0 && rank < world_size, "init_process_group: rank ", rank, " is out of range for world_size ",
           world_size, " (ranks are 0 to ", world_size - 1, ")");
  DK_CHECK(timeout.count() > 0, "init_process_group: the timeout must be positive");
  DK_CHECK(isBackendAvailable(backend), "init_process_group: unknown backend '", backend, "'; this build has: ",
           [] {
             std::string s;
             for (const auto& name : availableBackends()) s += (s.empty() ? "" : ", ") + name;
             return s;
           }());
  if (!store) {
    const char* addr = std::getenv("MASTER_ADDR");
    int port = envInt("MASTER_PORT", "a store");
    DK_CHECK(port > 0 && port < 65536, "init_process_group: MASTER_PORT=", port, " is not a TCP port");
    store = std::make_shared<TCPStore>(addr && *addr ? addr : "127.0.0.1", static_cast<uint16_t>(port), rank == 0,
                                       std::min(timeout, kDefaultStoreTimeout));
  }
  ProcessGroup::Options options;
  options.name = "0";
  options.backend = backend;
  options.rank = rank;
  options.timeout = timeout;
  for (int r = 0; r < world_size; ++r) options.global_ranks.push_back(r);
  auto group = std::make_shared<ProcessGroup>(std::move(options), store);
  w.store = store;
  w.world = group;
  w.by_name["0"] = group;
  w.destroyed.erase("0");
  w.rank = rank;
  w.world_size = world_size;
  w.groups_made = 0;
  w.backend = backend;
  w.timeout = timeout;
}

bool is_initialized() {
  World& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  return w.world != nullptr;
}

void destroy_process_group(const std::shared_ptr<ProcessGroup>& group) {
  World& w = world();
  std::vector<std::shared_ptr<ProcessGroup>> doomed;
  {
    std::lock_guard<std::mutex> lock(w.mutex);
    if (group && group != w.world) {
      auto it = w.by_name.find(group->name());
      if (it != w.by_name.end() && it->second == group) w.by_name.erase(it);
      w.destroyed.insert(group->name());
      doomed.push_back(group);
    } else {
      DK_CHECK(w.world || group, "destroy_process_group: no process group is initialized");
      for (auto& [name, g] : w.by_name) {
        w.destroyed.insert(name);
        doomed.push_back(g);
      }
      w.by_name.clear();
      w.world.reset();
      w.store.reset();
    }
  }
  for (auto& g : doomed) g->shutdown();  // outside the lock: queued work finishes first
}

std::shared_ptr<ProcessGroup> default_group() {
  World& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  DK_CHECK(w.world, "the default process group is not initialized: call dk::distributed::init_process_group first");
  return w.world;
}

std::shared_ptr<ProcessGroup> group_by_name(const std::string& name, const std::string& op) {
  World& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  auto it = w.by_name.find(name);
  if (it != w.by_name.end()) return it->second;
  DK_CHECK(!w.destroyed.count(name), op, ": process group '", name, "' was destroyed");
  DK_CHECK(w.world, op, ": no process group is initialized (call dk::distributed::init_process_group first)");
  DK_ERROR(op, ": this rank is not a member of a process group named '", name, "'");
}

std::shared_ptr<ProcessGroup> new_group(std::vector<int> ranks, std::chrono::milliseconds timeout,
                                        const std::string& backend) {
  World& w = world();
  std::shared_ptr<Store> store;
  ProcessGroup::Options options;
  {
    std::lock_guard<std::mutex> lock(w.mutex);
    DK_CHECK(w.world, "new_group: call dk::distributed::init_process_group first");
    std::sort(ranks.begin(), ranks.end());
    DK_CHECK(std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end(), "new_group: a rank is listed twice");
    for (int r : ranks) {
      DK_CHECK(r >= 0 && r < w.world_size, "new_group: rank ", r, " is out of range for world_size ", w.world_size);
    }
    if (ranks.empty()) {
      for (int r = 0; r < w.world_size; ++r) ranks.push_back(r);
    }
    options.name = std::to_string(++w.groups_made);
    options.backend = backend.empty() ? w.backend : backend;
    options.timeout = timeout.count() > 0 ? timeout : w.timeout;
    auto me = std::find(ranks.begin(), ranks.end(), w.rank);
    if (me == ranks.end()) return nullptr;  // not a member: the group's name is used up all the same
    options.rank = static_cast<int>(me - ranks.begin());
    options.global_ranks = ranks;
    store = w.store;
  }
  auto group = std::make_shared<ProcessGroup>(std::move(options), store);
  std::lock_guard<std::mutex> lock(w.mutex);
  w.by_name[group->name()] = group;
  return group;
}

namespace {
std::shared_ptr<ProcessGroup> orWorld(const std::shared_ptr<ProcessGroup>& group) {
  return group ? group : default_group();
}
}  // namespace

int get_rank(const std::shared_ptr<ProcessGroup>& group) { return orWorld(group)->rank(); }
int get_world_size(const std::shared_ptr<ProcessGroup>& group) { return orWorld(group)->size(); }

// ---------------------------------------------------------------- handing Work to the caller

namespace detail {
namespace {
struct AsyncSlot {
  bool active = false;
  WorkHandle work;
};
thread_local AsyncSlot tls_async;
}  // namespace

AsyncCollective::AsyncCollective() : outer_(tls_async.active), previous_(std::move(tls_async.work)) {
  tls_async.active = true;
  tls_async.work = nullptr;
}

AsyncCollective::~AsyncCollective() {
  tls_async.active = outer_;
  tls_async.work = std::move(previous_);
}

WorkHandle AsyncCollective::take(const char* op) {
  WorkHandle work = std::move(tls_async.work);
  tls_async.work = nullptr;
  return work ? work : Work::completed(op);
}

void finishCollective(WorkHandle work) {
  if (tls_async.active && !tls_async.work) {
    tls_async.work = std::move(work);  // the first collective of the scope is the caller's
    return;
  }
  work->wait();
}

namespace {
// What the kernels below do with the collective `issue` starts: hand its Work to an async caller,
// or run it on this thread when the group is idle (Note [Collectives on the caller's thread]) and
// wait.
template <class Issue>
void issueCollective(Issue&& issue) {
  if (tls_async.active && !tls_async.work) {
    tls_async.work = issue();
    return;
  }
  RunOnCallerThread on_caller;
  issue()->wait();
}
}  // namespace
}  // namespace detail

// ---------------------------------------------------------------- the kernels of the c10d operators

Tensor all_reduce_inplace(const Tensor& self, std::string_view reduce_op, std::string_view group) {
  const char* op = "c10d::all_reduce_";
  auto g = group_by_name(std::string(group), op);
  detail::issueCollective([&] { return g->allReduce(op, self, parseReduceOp(reduce_op)); });
  return self;
}

Tensor broadcast_inplace(const Tensor& self, int64_t src, std::string_view group) {
  const char* op = "c10d::broadcast_";
  auto g = group_by_name(std::string(group), op);
  detail::issueCollective([&] { return g->broadcast(op, self, static_cast<int>(src)); });
  return self;
}

Tensor all_gather_into_tensor_inplace(const Tensor& self, const Tensor& input, IntArrayRef split_sizes,
                                      std::string_view group) {
  const char* op = "c10d::all_gather_into_tensor_";
  auto g = group_by_name(std::string(group), op);
  std::vector<int64_t> splits(split_sizes.begin(), split_sizes.end());
  detail::issueCollective([&] { return g->allGather(op, self, input, splits); });
  return self;
}

Tensor reduce_scatter_tensor_inplace(const Tensor& self, const Tensor& input, std::string_view reduce_op,
                                     IntArrayRef split_sizes, std::string_view group) {
  const char* op = "c10d::reduce_scatter_tensor_";
  auto g = group_by_name(std::string(group), op);
  std::vector<int64_t> splits(split_sizes.begin(), split_sizes.end());
  detail::issueCollective([&] { return g->reduceScatter(op, self, input, parseReduceOp(reduce_op), splits); });
  return self;
}

Tensor all_to_all_single_inplace(const Tensor& self, const Tensor& input, IntArrayRef output_split_sizes,
                                 IntArrayRef input_split_sizes, std::string_view group) {
  const char* op = "c10d::all_to_all_single_";
  auto g = group_by_name(std::string(group), op);
  std::vector<int64_t> out_splits(output_split_sizes.begin(), output_split_sizes.end());
  std::vector<int64_t> in_splits(input_split_sizes.begin(), input_split_sizes.end());
  detail::issueCollective([&] { return g->allToAll(op, self, input, out_splits, in_splits); });
  return self;
}

void barrier(std::string_view group) {
  const char* op = "c10d::barrier";
  auto g = group_by_name(std::string(group), op);
  detail::issueCollective([&] { return g->barrier(op); });
}

void send(const Tensor& self, int64_t dst, int64_t tag, std::string_view group) {
  const char* op = "c10d::send";
  auto g = group_by_name(std::string(group), op);
  detail::issueCollective([&] { return g->send(op, self, static_cast<int>(dst), static_cast<int>(tag)); });
}

Tensor recv_inplace(const Tensor& self, int64_t src, int64_t tag, std::string_view group) {
  const char* op = "c10d::recv_";
  auto g = group_by_name(std::string(group), op);
  detail::issueCollective([&] { return g->recv(op, self, static_cast<int>(src), static_cast<int>(tag)); });
  return self;
}

// ---------------------------------------------------------------- the public functions

namespace {
// Runs `call` (which calls one c10d operator) and returns its Work: waited for unless async_op.
template <class F>
WorkHandle runCollective(const char* op, bool async_op, F&& call) {
  if (!async_op) {
    call();  // the kernel waits (on this thread when the group is idle: Note [Collectives on the caller's thread])
    return Work::completed(op);
  }
  detail::AsyncCollective scope;
  call();
  return scope.take(op);
}
}  // namespace

WorkHandle all_reduce(Tensor& tensor, ReduceOp op, const std::shared_ptr<ProcessGroup>& group, bool async_op) {
  std::string name = orWorld(group)->name();
  return runCollective("c10d::all_reduce_", async_op,
                       [&] { dk::c10d::all_reduce_(tensor, reduceOpName(op), name); });
}

WorkHandle broadcast(Tensor& tensor, int src, const std::shared_ptr<ProcessGroup>& group, bool async_op) {
  std::string name = orWorld(group)->name();
  return runCollective("c10d::broadcast_", async_op, [&] { dk::c10d::broadcast_(tensor, src, name); });
}

WorkHandle all_gather_into_tensor(Tensor& output, const Tensor& input, const std::shared_ptr<ProcessGroup>& group,
                                  bool async_op) {
  std::string name = orWorld(group)->name();
  return runCollective("c10d::all_gather_into_tensor_", async_op,
                       [&] { dk::c10d::all_gather_into_tensor_(output, input, {}, name); });
}

WorkHandle all_gather(std::vector<Tensor>& outputs, const Tensor& input, const std::shared_ptr<ProcessGroup>& group,
                      bool async_op) {
  auto g = orWorld(group);
  DK_CHECK(static_cast<int>(outputs.size()) == g->size(), "all_gather: got ", outputs.size(),
           " output tensors for a group of ", g->size(), " ranks");
  std::vector<int64_t> split_sizes;
  int64_t rows = 0;
  for (const Tensor& t : outputs) {
    DK_CHECK(t.defined(), "all_gather: outputs must be defined tensors");
    split_sizes.push_back(t.dim() ? t.size(0) : 1);
    rows += split_sizes.back();
  }
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  if (shape.empty()) shape.push_back(1);
  shape[0] = rows;
  Tensor flat = dk::detail::empty_contiguous(shape, input.dtype(), input.device());
  runCollective("c10d::all_gather_into_tensor_", true, [&] {
    dk::c10d::all_gather_into_tensor_(flat, input.dim() ? input : input.reshape({1}), split_sizes, g->name());
  });
  // The pieces go to the caller's tensors on the group's worker, after the collective.
  WorkHandle done = g->then("all_gather", [flat, outputs, split_sizes]() mutable {
    int64_t row = 0;
    for (size_t r = 0; r < outputs.size(); ++r) {
      outputs[r].copy_(flat.narrow(0, row, split_sizes[r]).view(outputs[r].sizes()));
      row += split_sizes[r];
    }
  });
  if (!async_op) done->wait();
  return done;
}

WorkHandle reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op,
                                 const std::shared_ptr<ProcessGroup>& group, bool async_op) {
  std::string name = orWorld(group)->name();
  return runCollective("c10d::reduce_scatter_tensor_", async_op,
                       [&] { dk::c10d::reduce_scatter_tensor_(output, input, reduceOpName(op), {}, name); });
}

WorkHandle reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op,
                          const std::shared_ptr<ProcessGroup>& group, bool async_op) {
  auto g = orWorld(group);
  DK_CHECK(static_cast<int>(inputs.size()) == g->size(), "reduce_scatter: got ", inputs.size(),
           " input tensors for a group of ", g->size(), " ranks");
  std::vector<Tensor> flat_pieces;
  std::vector<int64_t> split_sizes;
  for (const Tensor& t : inputs) {
    flat_pieces.push_back(t.dim() ? t : t.reshape({1}));
    split_sizes.push_back(flat_pieces.back().size(0));
  }
  Tensor flat = dk::cat(flat_pieces, 0);
  Tensor out = output.dim() ? output : output.view({1});
  return runCollective("c10d::reduce_scatter_tensor_", async_op, [&] {
    dk::c10d::reduce_scatter_tensor_(out, flat, reduceOpName(op), split_sizes, g->name());
  });
}

WorkHandle all_to_all_single(Tensor& output, const Tensor& input, std::vector<int64_t> output_split_sizes,
                             std::vector<int64_t> input_split_sizes, const std::shared_ptr<ProcessGroup>& group,
                             bool async_op) {
  std::string name = orWorld(group)->name();
  return runCollective("c10d::all_to_all_single_", async_op, [&] {
    dk::c10d::all_to_all_single_(output, input, output_split_sizes, input_split_sizes, name);
  });
}

WorkHandle barrier(const std::shared_ptr<ProcessGroup>& group, bool async_op) {
  std::string name = orWorld(group)->name();
  return runCollective("c10d::barrier", async_op, [&] { dk::c10d::barrier(name); });
}

WorkHandle send(const Tensor& tensor, int dst, const std::shared_ptr<ProcessGroup>& group, int tag, bool async_op) {
  std::string name = orWorld(group)->name();
  return runCollective("c10d::send", async_op, [&] { dk::c10d::send(tensor, dst, tag, name); });
}

WorkHandle recv(Tensor& tensor, int src, const std::shared_ptr<ProcessGroup>& group, int tag, bool async_op) {
  std::string name = orWorld(group)->name();
  return runCollective("c10d::recv_", async_op, [&] { dk::c10d::recv_(tensor, src, tag, name); });
}

}  // namespace dk::distributed
