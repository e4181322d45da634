// dk/dispatch/kernel_reclamation.h: when a deregistered kernel may be freed (Note [Kernel reclamation]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "dk/dispatch/kernel_function.h"

namespace dk::detail {

// The boxed kernel every operator's ThreadRegistration slot holds (a default backend fallback):
// registers the calling thread, drops the key from its included set and redispatches below it.
void threadRegistrationFallback(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack);

// Threads registered now (threads that made a call and have not exited); for tests.
size_t registeredThreadCount();

// Kernels no table publishes any more, kept until no call can still be running them.
class RetiredKernels {
 public:
  // Takes a kernel that the tables no longer point at (the caller has already published the
  // new tables), then frees whatever has become safe to free.
  void retire(std::shared_ptr<const KernelFunction> kernel);
  // Starts a grace period for everything retired so far (if none is running) and frees what no
  // call can still be running. Returns how many retired kernels remain.
  size_t reclaim();
  size_t size() const;  // retired and not yet freed

 private:
  using Kernels = std::vector<std::shared_ptr<const KernelFunction>>;
  // Moves what may be freed into `out`; `force` starts a grace period even for a small batch.
  void advance(bool force, Kernels& out);

  mutable std::mutex mutex_;
  Kernels pending_;                  // retired since the running grace period began
  Kernels waiting_;                  // retired before it began: freed when it ends
  std::vector<uint64_t> waiting_on_; // threads that were inside a call when it began
};

}  // namespace dk::detail
