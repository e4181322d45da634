#include "dk/core/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>

#include "dk/util/error.h"

namespace dk {

namespace {

thread_local int tl_thread_num = 0;
thread_local bool tl_in_region = false;

int defaultThreadCount() {
  for (const char* var : {"DK_NUM_THREADS", "OMP_NUM_THREADS"}) {
    if (const char* value = std::getenv(var)) {
      char* end = nullptr;
      const long n = std::strtol(value, &end, 10);
      if (end != value && *end == '\0' && n >= 1 && n <= 4096) return static_cast<int>(n);
    }
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The pool: workers_ sleep until generation_ changes, then each takes chunks of the current
// region until none are left and reports that it is done; the region's caller waits for every
// worker, so the region (and the chunk function on the caller's stack) outlives every use.
//
// Note [Pool after fork]
// A child made by fork() has one thread, the one that forked: the workers stayed in the parent,
// and a mutex another thread held at the fork stays held. So the child's pool is reset in a
// pthread_atfork child handler: fresh mutexes, no workers (the next region starts its own),
// and the old workers' std::thread handles set aside unjoined (joining would wait forever,
// destroying a joinable one terminates), kept reachable in `abandoned_` for the life of the
// process. A process that forks to run workers of its own (the distributed tests) can use the
// intra-op pool on both sides.
class Pool {
 public:
  static Pool& get() {
    static Pool* pool = [] {
      auto* created = new Pool();  // never destroyed: workers may still sleep at exit
      pthread_atfork(nullptr, nullptr, [] { Pool::get().resetInChild(); });
      return created;
    }();
    return *pool;
  }

  int threads() const { return threads_.load(std::memory_order_relaxed); }

  void setThreads(int n) {
    std::lock_guard<std::mutex> lock(region_mutex_);
    stopWorkers();
    threads_.store(n, std::memory_order_relaxed);
  }

  // Runs the region on the pool; false when another thread's region holds it.
  bool run(int64_t begin, int64_t end, int64_t grain_size, detail::ChunkFn fn) {
    std::unique_lock<std::mutex> lock(region_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    const int n = threads();
    const int64_t grain = std::max<int64_t>(grain_size, 1);
    const int64_t max_chunks = (end - begin + grain - 1) / grain;
    const int64_t chunks = std::min<int64_t>(n, max_chunks);
    if (chunks <= 1) return false;
    startWorkers(n - 1);
    begin_ = begin;
    end_ = end;
    chunk_size_ = (end - begin + chunks - 1) / chunks;
    chunks_ = chunks;
    fn_ = fn;
    error_ = nullptr;
    next_chunk_.store(1, std::memory_order_relaxed);  // chunk 0 is the caller's
    pending_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    tl_in_region = true;
    runChunk(0);
    takeChunks();
    tl_in_region = false;
    for (int left = pending_workers_.load(std::memory_order_acquire); left != 0;
         left = pending_workers_.load(std::memory_order_acquire))
      pending_workers_.wait(left, std::memory_order_acquire);
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  // Note [Pool after fork]. Runs in the child, which has this one thread.
  void resetInChild() {
    new (&region_mutex_) std::mutex();
    new (&error_mutex_) std::mutex();
    if (!workers_.empty()) {
      if (abandoned_ == nullptr) abandoned_ = new std::vector<std::thread>();
      for (std::thread& t : workers_) abandoned_->push_back(std::move(t));
      workers_.clear();
    }
    stopping_.store(false, std::memory_order_relaxed);
    pending_workers_.store(0, std::memory_order_relaxed);
    tl_in_region = false;
  }

  void runChunk(int64_t chunk) {
    const int64_t b = begin_ + chunk * chunk_size_;
    const int64_t e = std::min(end_, b + chunk_size_);
    if (b >= e) return;
    try {
      fn_.call(fn_.context, b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }

  void takeChunks() {
    for (int64_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed); c < chunks_;
         c = next_chunk_.fetch_add(1, std::memory_order_relaxed))
      runChunk(c);
  }

  void workerLoop(int index, uint64_t seen) {
    tl_thread_num = index;
    tl_in_region = true;  // a worker is always inside a region: nested parallel_for runs serially
    while (true) {
      generation_.wait(seen, std::memory_order_acquire);
      seen = generation_.load(std::memory_order_acquire);
      if (stopping_.load(std::memory_order_acquire)) return;
      takeChunks();
      if (pending_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_workers_.notify_one();
    }
  }

  // Under region_mutex_.
  void startWorkers(int count) {
    if (static_cast<int>(workers_.size()) == count) return;
    stopWorkers();
    const uint64_t seen = generation_.load(std::memory_order_acquire);
    for (int i = 0; i < count; ++i) workers_.emplace_back([this, i, seen] { workerLoop(i + 1, seen); });
  }

  void stopWorkers() {
    if (workers_.empty()) return;
    stopping_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stopping_.store(false, std::memory_order_release);
  }

  std::atomic<int> threads_{defaultThreadCount()};
  std::mutex region_mutex_;  // one region at a time; held while it runs
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<int> pending_workers_{0};
  // The current region, written before generation_ is bumped (release) and read after the
  // workers see it (acquire).
  int64_t begin_ = 0, end_ = 0, chunk_size_ = 0, chunks_ = 0;
  detail::ChunkFn fn_{};
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::vector<std::thread>* abandoned_ = nullptr;  // Note [Pool after fork]
};

}  // namespace

void set_num_threads(int n) {
  DK_CHECK(n > 0, "Expected positive number of threads");
  // A region holds the pool until it ends: changing its threads from inside one would wait on itself.
  DK_CHECK(!tl_in_region, "set_num_threads cannot be called inside a parallel region");
  Pool::get().setThreads(n);
}

int get_num_threads() { return Pool::get().threads(); }

int get_thread_num() { return tl_thread_num; }

bool in_parallel_region() { return tl_in_region; }

namespace detail {

bool parallelAvailable() { return !tl_in_region && Pool::get().threads() > 1; }

void parallelForImpl(int64_t begin, int64_t end, int64_t grain_size, ChunkFn fn) {
  if (!Pool::get().run(begin, end, grain_size, fn)) fn.call(fn.context, begin, end);
}

}  // namespace detail

}  // namespace dk
