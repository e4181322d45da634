// Freeing deregistered kernels once no call can still be running them.
//
// Note [Kernel reclamation]
// Tables publish the address of a registration's KernelFunction, and a call on another thread
// may have loaded that address just before a deregistration replaced it, so a deregistered
// kernel (and whatever its functor captured) cannot be freed at once. It is retired instead,
// and freed after a grace period: once every thread that was inside a dispatcher call when the
// period began has been seen outside any call. The parts (docs/design.md, "Kernel
// reclamation"):
//
// - Each thread counts the calls it is inside (ThreadDispatchKeys::call_depth, Note [Call depth
//   scope]): counted in before the table is read, out when the kernel returns or throws. A
//   redispatch is not counted: it runs inside the call that handed it its key set.
// - The reclaimer must know every thread that calls, at no cost to the call. A thread starts
//   with the internal ThreadRegistration key in its constant-initialized included set; it is
//   the highest key, so the thread's first call lands in that slot, which every table fills
//   with threadRegistrationFallback: it adds the thread's counter to the registry, removes the
//   key and redispatches. From then on the key is gone and calls never see it. A thread leaves
//   the registry when it exits (a pthread key destructor, which runs after C++ thread_local
//   destructors; a call made later still re-registers it).
// - A grace period begins with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): every thread of
//   the process executes a full memory barrier. That makes the plain increment enough: a
//   thread whose increment the reclaimer cannot yet see also cannot have read the old table.
//   The reclaimer then notes the registered threads whose count is not zero; each later
//   attempt drops those it sees at zero (or gone), and when none is left the batch is freed.
//   A thread seen at zero once after the barrier holds no retired kernel: its next call reads
//   the new tables.
// - Grace periods are batched (kBatch kernels) so that a deregistration costs one membarrier
//   per batch; Dispatcher::reclaimRetiredKernels starts one at once. Without membarrier (an old
//   kernel, a sandbox) nothing is freed: retiring forever is the safe fallback.
//
// Retired kernels are destroyed outside every lock: a functor's destructor may run user code
// that registers or deregisters (a captured Library, say).
#include "dk/dispatch/kernel_reclamation.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "dk/core/local_dispatch_key_set.h"
#include "dk/dispatch/dispatcher.h"
#include "dk/util/error.h"

namespace dk::detail {

namespace {

// Kernels retired before a grace period starts on its own (Note [Kernel reclamation]).
constexpr size_t kBatch = 32;

struct ThreadRecord {
  uint64_t id;
  const uint64_t* call_depth;  // the thread's ThreadDispatchKeys::call_depth
};

// The registered threads. Leaked: threads may exit during or after static destruction.
struct ThreadRegistry {
  std::mutex mutex;
  std::vector<ThreadRecord> threads;
  uint64_t next_id = 1;
  pthread_key_t exit_key{};
};

constinit thread_local uint64_t tls_thread_id = 0;  // 0: not registered

void onThreadExit(void*);
void beforeFork();
void afterForkInParent();
void afterForkInChild();

ThreadRegistry& threadRegistry() {
  static ThreadRegistry* const registry = [] {
    auto* r = new ThreadRegistry();
    DK_CHECK(pthread_key_create(&r->exit_key, &onThreadExit) == 0, "cannot create the thread-exit key of the "
             "kernel reclaimer (pthread_key_create failed)");
    pthread_atfork(&beforeFork, &afterForkInParent, &afterForkInChild);
    return r;
  }();
  return *registry;
}

void onThreadExit(void*) {
  ThreadRegistry& r = threadRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = std::find_if(r.threads.begin(), r.threads.end(), [](const ThreadRecord& t) { return t.id == tls_thread_id; });
    if (it != r.threads.end()) r.threads.erase(it);
  }
  tls_thread_id = 0;
  // A call made by a later destructor registers the thread again (and sets the key again).
  tls_dispatch_keys.included = DispatchKeySet::fromRaw(tls_dispatch_keys.included.raw_repr() | kThreadRegistrationBit);
}

// Only the forking thread lives on in the child; the other records name threads that are gone.
void beforeFork() { threadRegistry().mutex.lock(); }
void afterForkInParent() { threadRegistry().mutex.unlock(); }
void afterForkInChild() {
  ThreadRegistry& r = threadRegistry();
  std::erase_if(r.threads, [](const ThreadRecord& t) { return t.id != tls_thread_id; });
  r.mutex.unlock();
}

// Every registered thread whose call count is not zero now.
std::vector<uint64_t> threadsInsideACall() {
  ThreadRegistry& r = threadRegistry();
  std::vector<uint64_t> inside;
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const ThreadRecord& t : r.threads)
    if (__atomic_load_n(t.call_depth, __ATOMIC_ACQUIRE) != 0) inside.push_back(t.id);
  return inside;
}

// Drops from `ids` the threads now outside every call, or gone.
void dropQuiescent(std::vector<uint64_t>& ids) {
  ThreadRegistry& r = threadRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::erase_if(ids, [&](uint64_t id) {
    auto it = std::find_if(r.threads.begin(), r.threads.end(), [&](const ThreadRecord& t) { return t.id == id; });
    return it == r.threads.end() || __atomic_load_n(it->call_depth, __ATOMIC_ACQUIRE) == 0;
  });
}

// A full memory barrier on every running thread of the process; false when the kernel has none.
bool barrierOnEveryThread() {
  static const bool available = [] {
    long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  return available && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

}  // namespace

void registerThisThread() {
  ThreadDispatchKeys& tls = tls_dispatch_keys;
  if (tls_thread_id == 0) {
    ThreadRegistry& r = threadRegistry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.threads.push_back({r.next_id, &tls.call_depth});
    tls_thread_id = r.next_id++;
    // Any non-null value: the destructor runs at thread exit.
    pthread_setspecific(r.exit_key, reinterpret_cast<void*>(uintptr_t{1}));
  }
  tls.included = DispatchKeySet::fromRaw(tls.included.raw_repr() & ~kThreadRegistrationBit);
}

void threadRegistrationFallback(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  registerThisThread();
  op.redispatchBoxed(ks.remove(DispatchKey::ThreadRegistration), stack);
}

size_t registeredThreadCount() {
  ThreadRegistry& r = threadRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.threads.size();
}

void RetiredKernels::advance(bool force, Kernels& out) {
  if (!waiting_.empty()) {
    dropQuiescent(waiting_on_);
    if (!waiting_on_.empty()) return;
    out.insert(out.end(), std::make_move_iterator(waiting_.begin()), std::make_move_iterator(waiting_.end()));
    waiting_.clear();
  }
  if (pending_.empty() || (!force && pending_.size() < kBatch)) return;
  if (!barrierOnEveryThread()) return;  // keep everything (Note [Kernel reclamation])
  std::vector<uint64_t> inside = threadsInsideACall();
  if (inside.empty()) {
    out.insert(out.end(), std::make_move_iterator(pending_.begin()), std::make_move_iterator(pending_.end()));
  } else {
    waiting_ = std::move(pending_);
    waiting_on_ = std::move(inside);
  }
  pending_.clear();
}

void RetiredKernels::retire(std::shared_ptr<const KernelFunction> kernel) {
  Kernels freed;  // destroyed after the lock is released
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(std::move(kernel));
  advance(false, freed);
}

size_t RetiredKernels::reclaim() {
  Kernels freed;
  std::lock_guard<std::mutex> lock(mutex_);
  advance(true, freed);
  return pending_.size() + waiting_.size();
}

size_t RetiredKernels::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size() + waiting_.size();
}

}  // namespace dk::detail
