#include "dk/distributed/process_group.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <numeric>
#include <sstream>
#include <type_traits>

#include "dk/layers/profiler.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"

namespace dk::distributed {

// ---------------------------------------------------------------- ReduceOp

namespace {
constexpr std::string_view kReduceOpNames[] = {"sum", "product", "min", "max", "avg"};
}

std::string_view reduceOpName(ReduceOp op) { return kReduceOpNames[static_cast<int>(op)]; }

ReduceOp parseReduceOp(std::string_view name) {
  for (int i = 0; i < 5; ++i) {
    if (kReduceOpNames[i] == name) return static_cast<ReduceOp>(i);
  }
  DK_ERROR("unknown reduce op '", name, "': expected sum, product, min, max or avg");
}

namespace {
// One loop per reduce op (so that the compiler vectorizes each): out[i] = f(a[i], b[i]).
template <class T, class F>
void reduceLoop(T* out, const T* a, const T* b, size_t n, F f) {
  // Half and BFloat16 compute in float, as their arithmetic does elsewhere.
  using Acc = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(static_cast<Acc>(a[i]), static_cast<Acc>(b[i])));
}

template <class T>
void reduceTyped(ReduceOp op, T* out, const T* a, const T* b, size_t n) {
  if constexpr (std::is_same_v<T, bool>) {
    if (op == ReduceOp::SUM || op == ReduceOp::AVG || op == ReduceOp::MAX) {
      for (size_t i = 0; i < n; ++i) out[i] = a[i] || b[i];
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = a[i] && b[i];
    }
  } else {
    switch (op) {
      case ReduceOp::SUM:
      case ReduceOp::AVG: reduceLoop(out, a, b, n, [](auto x, auto y) { return x + y; }); break;
      case ReduceOp::PRODUCT: reduceLoop(out, a, b, n, [](auto x, auto y) { return x * y; }); break;
      // NaN wins, as torch.minimum and torch.maximum keep it.
      case ReduceOp::MIN: reduceLoop(out, a, b, n, [](auto x, auto y) { return (x != x || x < y) ? x : y; }); break;  // NOLINT
      case ReduceOp::MAX: reduceLoop(out, a, b, n, [](auto x, auto y) { return (x != x || x > y) ? x : y; }); break;  // NOLINT
    }
  }
}
}  // namespace

void reduceElements(ReduceOp op, ScalarType dtype, void* out, const void* a, const void* b, size_t n) {
  DK_DISPATCH_ALL_TYPES(dtype, "reduce", [&] {
    reduceTyped(op, static_cast<scalar_t*>(out), static_cast<const scalar_t*>(a), static_cast<const scalar_t*>(b), n);
  });
}

void divideElements(ScalarType dtype, void* data, size_t n, int64_t divisor) {
  DK_CHECK(dtype != ScalarType::Bool, "ReduceOp avg is not defined for bool tensors");
  DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(dtype, "avg", [&] {
    auto* p = static_cast<scalar_t*>(data);
    if constexpr (std::is_integral_v<scalar_t>) {
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<scalar_t>(p[i] / divisor);
    } else {
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<scalar_t>(static_cast<double>(p[i]) / static_cast<double>(divisor));
    }
  });
}

// ---------------------------------------------------------------- Work

std::shared_ptr<Work> Work::completed(std::string description) {
  auto work = std::make_shared<Work>(std::move(description));
  work->finish(nullptr);
  return work;
}

std::shared_ptr<Work> Work::deferred(std::string description, std::function<void()> waiter) {
  auto work = std::make_shared<Work>(std::move(description));
  work->waiter_ = std::move(waiter);
  return work;
}

void Work::runWaiter() {
  std::function<void()> waiter;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_ || !waiter_) return;
    waiter = std::move(waiter_);
    waiter_ = nullptr;
  }
  try {
    waiter();
    finish(nullptr);
  } catch (const std::exception& e) {
    finish(std::make_exception_ptr(Error(description_ + " failed: " + e.what())));
  }
}

bool Work::isCompleted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool Work::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ && !error_;
}

std::exception_ptr Work::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void Work::wait() {
  runWaiter();
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

bool Work::wait(std::chrono::milliseconds timeout) {
  runWaiter();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!done_cv_.wait_for(lock, timeout, [&] { return done_; })) return false;
  if (error_) std::rethrow_exception(error_);
  return true;
}

void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    DK_CHECK(!done_, "Work::finish called twice for ", description_);
    done_ = true;
    error_ = std::move(error);
  }
  done_cv_.notify_all();
}

// ---------------------------------------------------------------- backends

Backend::~Backend() = default;

namespace {
std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, BackendFactory>& registry() {
  static std::map<std::string, BackendFactory> r;
  return r;
}
}  // namespace

void registerBackend(const std::string& name, BackendFactory factory) {
  std::lock_guard<std::mutex> lock(registryMutex());
  DK_CHECK(!registry().count(name), "a distributed backend named '", name, "' is already registered");
  registry()[name] = std::move(factory);
}

bool isBackendAvailable(const std::string& name) {
  std::lock_guard<std::mutex> lock(registryMutex());
  return registry().count(name) != 0;
}

std::vector<std::string> availableBackends() {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

// ---------------------------------------------------------------- ProcessGroup

namespace {
std::string fingerprintOf(const Tensor& t) {
  std::ostringstream out;
  out << toString(t.dtype()) << "[";
  for (int64_t d = 0; d < t.dim(); ++d) out << (d ? ", " : "") << t.size(d);
  out << "]";
  return out.str();
}

std::string joinRanks(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

constexpr auto kMonitorInterval = std::chrono::milliseconds(20);

// Note [Collectives on the caller's thread]
// A caller that is going to wait for a collective anyway (a synchronous call: the c10d kernels
// outside an async_op call) runs it on its own thread when the group is idle (nothing queued,
// nothing running), which saves the two thread hand-offs (to the worker and back) that dominate
// a small collective's time. Otherwise it is queued behind the others, as usual, so the order in
// which this rank issues collectives is the order in which they run.
thread_local bool tls_run_on_caller_thread = false;
}  // namespace

ProcessGroup::ProcessGroup(Options options, const std::shared_ptr<Store>& store)
    : options_(std::move(options)), check_arguments_(options_.check_arguments) {
  DK_CHECK(store != nullptr, "ProcessGroup: the store is null");
  DK_CHECK(!options_.global_ranks.empty(), "ProcessGroup '", options_.name, "': a group needs at least one rank");
  DK_CHECK(options_.rank >= 0 && options_.rank < size(), "ProcessGroup '", options_.name, "': rank ", options_.rank,
           " is out of range for a group of ", size());
  DK_CHECK(options_.timeout.count() > 0, "ProcessGroup '", options_.name, "': the timeout must be positive");
  BackendFactory factory;
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    auto it = registry().find(options_.backend);
    if (it == registry().end()) {
      std::string known;
      for (const auto& [name, f] : registry()) known += (known.empty() ? "" : ", ") + name;
      DK_ERROR("unknown distributed backend '", options_.backend, "' (this build has: ", known,
               "); the mpi backend needs -Dmpi=enabled and Open MPI, nccl a CUDA build with NCCL");
    }
    factory = it->second;
  }
  store_ = std::make_shared<PrefixStore>("pg" + options_.name + "/", store);
  backend_ = factory(BackendOptions{std::make_shared<PrefixStore>(options_.backend + "/", store_), options_.rank, size(),
                                    options_.global_ranks, options_.timeout});
  worker_ = std::thread([this] { workerLoop(); });
  monitor_ = std::thread([this] { monitorLoop(); });
}

ProcessGroup::~ProcessGroup() { shutdown(); }

uint64_t ProcessGroup::sequenceNumber() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return issued_;
}

bool ProcessGroup::isShutdown() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopping_;
}

void ProcessGroup::shutdown() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  {
    std::lock_guard<std::mutex> lock(monitor_mutex_);
    monitor_stop_ = true;
  }
  monitor_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
}

std::shared_ptr<Work> ProcessGroup::enqueue(Job job) {
  std::unique_lock<std::mutex> lock(mutex_);
  DK_CHECK(!stopping_, job.op, ": process group '", name(), "' was destroyed");
  DK_CHECK(broken_.empty(), job.op, ": process group '", name(), "' cannot be used after an earlier failure: ", broken_);
  std::ostringstream what;
  what << job.op;
  job.check = check_arguments_.load();
  if (job.sequence != 0) {
    job.sequence = ++issued_;
    what << " (collective " << job.sequence << " of process group " << name() << ")";
  }
  job.work = std::make_shared<Work>(what.str());
  std::shared_ptr<Work> work = job.work;
  if (tls_run_on_caller_thread && queue_.empty() && !running_) {
    // Note [Collectives on the caller's thread]
    running_ = true;
    lock.unlock();
    execute(job);
    lock.lock();
    running_ = false;
    bool more = !queue_.empty() || stopping_;
    lock.unlock();
    if (more) queue_cv_.notify_one();
    return work;
  }
  queue_.push_back(std::move(job));
  lock.unlock();
  queue_cv_.notify_one();  // after unlocking: the worker does not wake into a held lock
  return work;
}

RunOnCallerThread::RunOnCallerThread() : previous_(tls_run_on_caller_thread) { tls_run_on_caller_thread = true; }
RunOnCallerThread::~RunOnCallerThread() { tls_run_on_caller_thread = previous_; }

bool ProcessGroup::defaultCheckArguments() {
  const char* env = std::getenv("DK_DISTRIBUTED_CHECKS");
  return !(env && std::string_view(env) == "0");
}

namespace {
// The ranks disagreed about a collective: every rank raises it, and the group stays usable
// (no rank sent anything).
struct ArgumentMismatch : Error {
  using Error::Error;
};

constexpr size_t kCheckBytes = 512;        // each rank's description in the argument check
constexpr uint32_t kCheckTag = 1u << 31;   // the check's messages, apart from the collectives'

std::string joinCounts(const std::vector<int64_t>& v) {
  std::ostringstream out;
  for (size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
  return out.str();
}

std::vector<int64_t> parseCounts(const std::string& text) {
  std::vector<int64_t> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(std::stoll(item));
  }
  return out;
}
}  // namespace

// Note [Argument check]
// Each rank describes the collective it is about to run in kCheckBytes bytes: the operator and
// what must agree ("agreed": dtype, element count, reduce op, root, splits), and for all_to_all
// what it sends to and expects from each rank. One all-gather of these descriptions, and every
// rank compares all of them, so all raise the same error, and none sends a byte of the real data.
void ProcessGroup::verifyAgreement(const Job& job) {
  std::string mine = job.op + " " + job.agreed;
  std::string pairs = job.sends.empty() ? "" : joinCounts(job.sends) + ";" + joinCounts(job.receives);
  std::string text = mine + "\n" + pairs;
  if (text.size() >= kCheckBytes) text = mine.substr(0, kCheckBytes - 2) + "\n";  // too long to pair-check
  Tensor in = dk::detail::empty_contiguous({static_cast<int64_t>(kCheckBytes)}, ScalarType::Byte, Device(DeviceType::CPU));
  std::memset(in.data_ptr(), 0, kCheckBytes);
  std::memcpy(in.data_ptr(), text.data(), text.size());
  Tensor all = dk::detail::empty_contiguous({static_cast<int64_t>(kCheckBytes) * size()}, ScalarType::Byte,
                                           Device(DeviceType::CPU));
  backend_->allGather(all, in, std::vector<int64_t>(static_cast<size_t>(size()), kCheckBytes),
                      kCheckTag | static_cast<uint32_t>(job.sequence));
  const char* base = static_cast<const char*>(all.data_ptr());
  std::vector<std::string> agreed(static_cast<size_t>(size())), paired(static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r) {
    std::string t(base + static_cast<size_t>(r) * kCheckBytes, strnlen(base + static_cast<size_t>(r) * kCheckBytes, kCheckBytes));
    auto cut = t.find('\n');
    agreed[static_cast<size_t>(r)] = t.substr(0, cut);
    paired[static_cast<size_t>(r)] = cut == std::string::npos ? "" : t.substr(cut + 1);
  }
  std::ostringstream out;
  out << job.op << ": collective " << job.sequence << " on process group '" << name() << "': ";
  bool differ = std::any_of(agreed.begin(), agreed.end(), [&](const std::string& a) { return a != agreed[0]; });
  if (differ) {
    out << "the ranks called different collectives or passed different arguments: ";
    for (int r = 0; r < size(); ++r) out << (r ? "; " : "") << "rank " << r << " called " << agreed[static_cast<size_t>(r)];
    throw ArgumentMismatch(out.str());
  }
  if (job.sends.empty()) return;
  // all_to_all: what rank r sends to rank p is what p expects from r.
  std::vector<std::vector<int64_t>> sends(static_cast<size_t>(size())), receives(static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r) {
    const std::string& t = paired[static_cast<size_t>(r)];
    auto semi = t.find(';');
    if (semi == std::string::npos) return;  // a description too long to carry the counts
    sends[static_cast<size_t>(r)] = parseCounts(t.substr(0, semi));
    receives[static_cast<size_t>(r)] = parseCounts(t.substr(semi + 1));
  }
  for (int r = 0; r < size(); ++r) {
    for (int p = 0; p < size(); ++p) {
      auto sent = sends[static_cast<size_t>(r)].at(static_cast<size_t>(p));
      auto expected = receives[static_cast<size_t>(p)].at(static_cast<size_t>(r));
      if (sent != expected) {
        out << "rank " << r << " sends " << sent << " elements to rank " << p << ", which expects " << expected;
        throw ArgumentMismatch(out.str());
      }
    }
  }
}

void ProcessGroup::workerLoop() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queue_cv_.wait(lock, [&] { return !running_ && (stopping_ || !queue_.empty()); });
      if (queue_.empty()) return;  // stopping, and everything issued has run
      job = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    execute(job);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_ = false;
    }
  }
}

// Runs one job on this thread (the worker's, or the caller's: Note [Collectives on the caller's
// thread]); the group runs one job at a time (running_).
void ProcessGroup::execute(Job& job) {
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure = broken_;
  }
  if (!failure.empty()) {
    job.work->finish(std::make_exception_ptr(
        Error(job.op + ": process group '" + name() + "' cannot be used after an earlier failure: " + failure)));
    return;
  }
  if (job.sequence != 0) {
    std::lock_guard<std::mutex> lock(monitor_mutex_);
    monitor_state_ = std::to_string(job.sequence) + " " + job.op + " " + job.fingerprint;
  }
  auto start = std::chrono::steady_clock::now();
  try {
    {
      // The communication, in the trace of a running profiler (next to the calls on the thread
      // that issued it: DataParallel's overlap with backward shows there). Recorded before the
      // Work completes, so a profiler stopped right after wait() has it.
      profiler::RecordFunction range(
          job.sequence != 0 ? job.op + " [" + options_.backend + ", collective " + std::to_string(job.sequence) + "]"
                            : job.op,
          job.sequence != 0 ? "communication" : "local");
      if (job.sequence != 0 && job.check && size() > 1) verifyAgreement(job);
      job.run(*backend_, static_cast<uint32_t>(job.sequence));
    }
    job.work->finish(nullptr);
  } catch (const ArgumentMismatch& e) {
    job.work->finish(std::current_exception());
  } catch (const std::exception& e) {
    bool timed_out = std::chrono::steady_clock::now() - start >= options_.timeout;
    std::string message = job.sequence != 0 ? diagnose(job, e.what(), timed_out)
                                            : job.op + " on process group '" + name() + "' failed: " + e.what();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      broken_ = message;
    }
    job.work->finish(std::make_exception_ptr(Error(message)));
  }
}

// Wakes every kMonitorInterval (the worker never wakes it: a collective costs no thread switch
// here) and writes the state when it changed.
void ProcessGroup::monitorLoop() {
  std::unique_lock<std::mutex> lock(monitor_mutex_);
  while (true) {
    if (monitor_state_ != monitor_written_) {
      std::string state = monitor_state_;
      lock.unlock();
      try {
        store_->set("monitor/" + std::to_string(rank()), state);
      } catch (const std::exception&) {
        // The store is gone (rank 0 exited): nothing left to tell.
      }
      lock.lock();
      monitor_written_ = state;
    }
    if (monitor_stop_) return;
    monitor_cv_.wait_for(lock, kMonitorInterval, [&] { return monitor_stop_; });
  }
}

std::string ProcessGroup::diagnose(const Job& job, const std::string& what, bool timed_out) {
  std::ostringstream out;
  out << job.op << ": collective " << job.sequence << " on process group '" << name() << "' (rank " << rank() << " of "
      << size() << ", " << options_.backend << ", " << job.fingerprint << ") ";
  if (timed_out) {
    out << "did not complete within " << options_.timeout.count() << " ms";
  } else {
    out << "failed";
  }
  // Give the others' monitor threads time to write what they are doing now.
  std::this_thread::sleep_for(kMonitorInterval * 3);
  std::vector<std::string> elsewhere, mismatched;
  std::vector<int> absent;
  std::string mine = std::to_string(job.sequence) + " " + job.op + " " + job.fingerprint;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    std::vector<uint8_t> value;
    bool found = false;
    try {
      found = store_->tryGet("monitor/" + std::to_string(r), value);
    } catch (const std::exception&) {
      out << "; the store cannot be read to name the ranks that did not arrive";
      return out.str() + " (" + what + ")";
    }
    if (!found) {
      absent.push_back(r);
      continue;
    }
    std::string theirs(value.begin(), value.end());
    if (theirs == mine) continue;
    std::string seq = theirs.substr(0, theirs.find(' '));
    std::string rest = theirs.substr(std::min(theirs.size(), seq.size() + 1));
    if (seq == std::to_string(job.sequence)) {
      mismatched.push_back("rank " + std::to_string(r) + " called " + rest);
    } else {
      elsewhere.push_back("rank " + std::to_string(r) + " (last entered collective " + seq + ", " + rest + ")");
    }
  }
  if (!elsewhere.empty() || !absent.empty()) {
    out << "; ranks that had not arrived: ";
    bool first = true;
    for (const auto& e : elsewhere) {
      out << (first ? "" : ", ") << e;
      first = false;
    }
    if (!absent.empty()) out << (first ? "" : ", ") << "rank" << (absent.size() > 1 ? "s " : " ") << joinRanks(absent)
                             << " (no collective on this group yet)";
  }
  if (!mismatched.empty()) {
    out << "; ranks that entered it with other arguments: ";
    for (size_t i = 0; i < mismatched.size(); ++i) out << (i ? ", " : "") << mismatched[i];
  }
  if (elsewhere.empty() && absent.empty() && mismatched.empty()) out << "; every rank entered it";
  out << " (transport: " << what << ")";
  return out.str();
}

Backend& ProcessGroup::backendFor(const std::string& op, const Tensor& tensor) {
  DK_CHECK(tensor.defined(), op, ": expected a defined tensor");
  DK_CHECK(backend_->supports(tensor.device().type), op, ": process group '", name(), "' uses the ", options_.backend,
           " backend, which cannot move ", tensor.device(), " tensors",
           tensor.is_cuda() ? " (create the group with the nccl backend)" : "");
  DK_CHECK(tensor.is_contiguous(), op, ": tensors must be contiguous");
  return *backend_;
}

namespace {
// Element counts of the dim-0 pieces split_sizes describes, for a tensor shaped like `like`
// (rows of like.numel() / like.size(0) elements). Empty split_sizes: `n` equal pieces of `even`
// elements each.
std::vector<int64_t> countsOf(const std::string& op, const char* what, const std::vector<int64_t>& split_sizes,
                              const Tensor& like, int n, int64_t even) {
  if (split_sizes.empty()) return std::vector<int64_t>(static_cast<size_t>(n), even);
  DK_CHECK(static_cast<int>(split_sizes.size()) == n, op, ": ", what, " has ", split_sizes.size(),
           " entries, expected one per rank of the group (", n, ")");
  DK_CHECK(like.dim() > 0, op, ": split sizes need tensors with at least one dimension");
  int64_t row = like.size(0) == 0 ? 0 : like.numel() / like.size(0);
  std::vector<int64_t> counts;
  for (int64_t s : split_sizes) {
    DK_CHECK(s >= 0, op, ": ", what, " has a negative entry (", s, ")");
    counts.push_back(s * row);
  }
  return counts;
}

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }
}  // namespace

std::shared_ptr<Work> ProcessGroup::allReduce(const std::string& op, Tensor tensor, ReduceOp reduce) {
  backendFor(op, tensor);
  DK_CHECK(!(reduce == ReduceOp::AVG && tensor.dtype() == ScalarType::Bool), op,
           ": ReduceOp avg is not defined for bool tensors");
  int n = size();
  std::string what = fingerprintOf(tensor) + " " + std::string(reduceOpName(reduce));
  return enqueue(Job{op, what, what, 1, {}, {}, [tensor, reduce, n](Backend& b, uint32_t tag) mutable {
                   b.allReduce(tensor, reduce == ReduceOp::AVG ? ReduceOp::SUM : reduce, tag);
                   if (reduce == ReduceOp::AVG) {
                     divideElements(tensor.dtype(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()), n);
                   }
                 }, nullptr});
}

std::shared_ptr<Work> ProcessGroup::broadcast(const std::string& op, Tensor tensor, int root) {
  backendFor(op, tensor);
  DK_CHECK(root >= 0 && root < size(), op, ": source rank ", root, " is out of range for process group '", name(),
           "' of ", size(), " ranks");
  std::string what = fingerprintOf(tensor) + " from " + std::to_string(root);
  return enqueue(Job{op, what, std::string(toString(tensor.dtype())) + " " + std::to_string(tensor.numel()) + " from " + std::to_string(root),
                     1, {}, {}, [tensor, root](Backend& b, uint32_t tag) mutable { b.broadcast(tensor, root, tag); }, nullptr});
}

std::shared_ptr<Work> ProcessGroup::allGather(const std::string& op, Tensor output, Tensor input,
                                              std::vector<int64_t> split_sizes) {
  backendFor(op, output);
  backendFor(op, input);
  DK_CHECK(output.dtype() == input.dtype(), op, ": output is ", toString(output.dtype()), " but input is ",
           toString(input.dtype()));
  std::vector<int64_t> counts = countsOf(op, "split_sizes", split_sizes, input, size(), input.numel());
  DK_CHECK(counts[static_cast<size_t>(rank())] == input.numel(), op, ": split_sizes gives rank ", rank(), " ",
           split_sizes.empty() ? 0 : split_sizes[static_cast<size_t>(rank())], " rows, but its input has ",
           input.dim() ? input.size(0) : 0);
  DK_CHECK(output.numel() == sum(counts), op, ": output has ", output.numel(), " elements, expected ", sum(counts),
           " (the inputs of all ", size(), " ranks)");
  std::string agreed = std::string(toString(input.dtype())) + " counts " + joinCounts(counts);
  return enqueue(Job{op, fingerprintOf(input), agreed, 1, {}, {}, [output, input, counts](Backend& b, uint32_t tag) mutable {
    b.allGather(output, input, counts, tag);
  }, nullptr});
}

std::shared_ptr<Work> ProcessGroup::reduceScatter(const std::string& op, Tensor output, Tensor input, ReduceOp reduce,
                                                  std::vector<int64_t> split_sizes) {
  backendFor(op, output);
  backendFor(op, input);
  DK_CHECK(output.dtype() == input.dtype(), op, ": output is ", toString(output.dtype()), " but input is ",
           toString(input.dtype()));
  DK_CHECK(!(reduce == ReduceOp::AVG && input.dtype() == ScalarType::Bool), op,
           ": ReduceOp avg is not defined for bool tensors");
  std::vector<int64_t> counts = countsOf(op, "split_sizes", split_sizes, input, size(), output.numel());
  DK_CHECK(input.numel() == sum(counts), op, ": input has ", input.numel(), " elements, expected ", sum(counts),
           " (the outputs of all ", size(), " ranks)");
  int64_t mine = counts[static_cast<size_t>(rank())];
  DK_CHECK(output.numel() == mine, op, ": output has ", output.numel(), " elements, expected ", mine);
  int n = size();
  std::string agreed = std::string(toString(input.dtype())) + " counts " + joinCounts(counts) + " " +
                       std::string(reduceOpName(reduce));
  return enqueue(Job{op, fingerprintOf(input) + " " + std::string(reduceOpName(reduce)), agreed, 1, {}, {},
                 [output, input, counts, mine, reduce, n](Backend& b, uint32_t tag) mutable {
                   // Every rank sends each rank its piece; the n pieces received are reduced here.
                   Tensor pieces = dk::detail::empty_contiguous({mine * n}, input.dtype(), input.device());
                   b.allToAll(pieces, input, std::vector<int64_t>(static_cast<size_t>(n), mine), counts, tag);
                   auto* out = static_cast<uint8_t*>(output.data_ptr());
                   const auto* in = static_cast<const uint8_t*>(pieces.data_ptr());
                   size_t bytes = static_cast<size_t>(mine) * elementSize(output.dtype());
                   std::memcpy(out, in, bytes);
                   ReduceOp step = reduce == ReduceOp::AVG ? ReduceOp::SUM : reduce;
                   for (int r = 1; r < n; ++r) {
                     reduceElements(step, output.dtype(), out, out, in + bytes * static_cast<size_t>(r),
                                    static_cast<size_t>(mine));
                   }
                   if (reduce == ReduceOp::AVG) divideElements(output.dtype(), out, static_cast<size_t>(mine), n);
                 }, nullptr});
}

std::shared_ptr<Work> ProcessGroup::allToAll(const std::string& op, Tensor output, Tensor input,
                                             std::vector<int64_t> output_split_sizes,
                                             std::vector<int64_t> input_split_sizes) {
  backendFor(op, output);
  backendFor(op, input);
  DK_CHECK(output.dtype() == input.dtype(), op, ": output is ", toString(output.dtype()), " but input is ",
           toString(input.dtype()));
  int n = size();
  DK_CHECK(!input_split_sizes.empty() || input.numel() % n == 0, op, ": input has ", input.numel(),
           " elements, which do not split evenly over ", n, " ranks (give input_split_sizes)");
  DK_CHECK(!output_split_sizes.empty() || output.numel() % n == 0, op, ": output has ", output.numel(),
           " elements, which do not split evenly over ", n, " ranks (give output_split_sizes)");
  std::vector<int64_t> in_counts = countsOf(op, "input_split_sizes", input_split_sizes, input, n, input.numel() / n);
  std::vector<int64_t> out_counts = countsOf(op, "output_split_sizes", output_split_sizes, output, n, output.numel() / n);
  DK_CHECK(sum(in_counts) == input.numel(), op, ": input_split_sizes add up to ", sum(in_counts),
           " elements, but input has ", input.numel());
  DK_CHECK(sum(out_counts) == output.numel(), op, ": output_split_sizes add up to ", sum(out_counts),
           " elements, but output has ", output.numel());
  return enqueue(Job{op, fingerprintOf(input), std::string(toString(input.dtype())), 1, in_counts, out_counts,
                     [output, input, out_counts, in_counts](Backend& b, uint32_t tag) mutable {
                       b.allToAll(output, input, out_counts, in_counts, tag);
                     }, nullptr});
}

std::shared_ptr<Work> ProcessGroup::then(const std::string& op, std::function<void()> fn) {
  return enqueue(Job{op, "", "", 0, {}, {}, [fn = std::move(fn)](Backend&, uint32_t) { fn(); }, nullptr});
}

std::shared_ptr<Work> ProcessGroup::barrier(const std::string& op) {
  return enqueue(Job{op, "", "", 1, {}, {}, [](Backend& b, uint32_t tag) { b.barrier(tag); }, nullptr});
}

void ProcessGroup::checkUsable(const std::string& op) const {
  std::lock_guard<std::mutex> lock(mutex_);
  DK_CHECK(!stopping_, op, ": process group '", name(), "' was destroyed");
  DK_CHECK(broken_.empty(), op, ": process group '", name(), "' cannot be used after an earlier failure: ", broken_);
}

// Sends and receives are posted on the caller's thread, not queued behind the collectives, so that
// a rank can send and receive at once (a ring); their Work waits for the transfer.
std::shared_ptr<Work> ProcessGroup::pointToPoint(const std::string& op, Tensor tensor, int peer, int tag, bool sending) {
  backendFor(op, tensor);
  const char* role = sending ? "destination" : "source";
  DK_CHECK(peer >= 0 && peer < size() && peer != rank(), op, ": ", role, " rank ", peer,
           peer == rank() ? " is this rank" : " is out of range", " (process group '", name(), "' of ", size(), " ranks)");
  DK_CHECK(tag >= 0, op, ": tags are non-negative, got ", tag);
  checkUsable(op);
  auto waiter = sending ? backend_->send(tensor, peer, static_cast<uint32_t>(tag))
                        : backend_->recv(tensor, peer, static_cast<uint32_t>(tag));
  return Work::deferred(op + (sending ? " to rank " : " from rank ") + std::to_string(peer) + " (tag " +
                            std::to_string(tag) + ") on process group '" + name() + "'",
                        [waiter, tensor] { waiter(); });
}

std::shared_ptr<Work> ProcessGroup::send(const std::string& op, Tensor tensor, int dst, int tag) {
  return pointToPoint(op, std::move(tensor), dst, tag, /*sending=*/true);
}

std::shared_ptr<Work> ProcessGroup::recv(const std::string& op, Tensor tensor, int src, int tag) {
  return pointToPoint(op, std::move(tensor), src, tag, /*sending=*/false);
}

}  // namespace dk::distributed
