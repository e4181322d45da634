// Intra-op parallelism: the thread count kernels may use, and parallel_for (Note [Intra-op
// parallelism]).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace dk {

// Note [Intra-op parallelism]
// A kernel splits its work over the threads of one process-wide pool with parallel_for, as
// ATen's at::parallel_for does: [begin, end) is cut into at most get_num_threads() chunks of at
// least grain_size elements; the calling thread runs the first chunk and the pool's workers the
// others, and parallel_for returns when all are done (rethrowing the first exception any chunk
// threw). A range of grain_size or fewer, a thread count of 1, a call from inside a parallel
// region (nesting) and a call while another thread's region holds the pool all run f(begin,
// end) on the calling thread, so small tensors pay one comparison. The workers (count - 1) start
// at the first region that needs them and sleep on a futex between regions. The count starts
// at DK_NUM_THREADS, else OMP_NUM_THREADS, else the number of CPUs the process may run on;
// set_num_threads changes it (and OpenBLAS's, for the matrix products) for the whole process.
// The grain of ATen's elementwise kernels: ranges up to this many elements stay on one thread.
inline constexpr int64_t kGrainSize = 32768;

// Sets the number of threads kernels use (n >= 1) for every thread of the process; not from
// inside a parallel region (an error: the region holds the pool).
void set_num_threads(int n);
int get_num_threads();
// 0 on the thread that called parallel_for (and outside any region), 1.. on the pool's workers.
int get_thread_num();
bool in_parallel_region();

namespace detail {
// A reference to the chunk function: no allocation per region.
struct ChunkFn {
  void* context;
  void (*call)(void* context, int64_t begin, int64_t end);
};
void parallelForImpl(int64_t begin, int64_t end, int64_t grain_size, ChunkFn fn);
// More than one thread, and not inside a region.
bool parallelAvailable();
}  // namespace detail

// Calls f(chunk_begin, chunk_end) over chunks covering [begin, end), on several threads when the
// range is larger than grain_size (Note [Intra-op parallelism]). f must be safe to run on
// disjoint chunks at once.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
  if (begin >= end) return;
  if (end - begin <= grain_size || !detail::parallelAvailable()) {
    f(begin, end);
    return;
  }
  detail::ChunkFn fn{const_cast<void*>(static_cast<const void*>(&f)), [](void* context, int64_t b, int64_t e) {
                       (*static_cast<const F*>(context))(b, e);
                     }};
  detail::parallelForImpl(begin, end, grain_size, fn);
}

}  // namespace dk
