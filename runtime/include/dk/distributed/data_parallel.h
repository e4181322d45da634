// dk/distributed/data_parallel.h: data-parallel training (PyTorch's DistributedDataParallel).
//
//   dk::distributed::DataParallel ddp(model.parameters());   // broadcasts rank 0's values
//   for (each batch shard of this rank) {
//     Tensor loss = ...forward...;
//     loss.backward();       // buckets of gradients are all-reduced while backward goes on
//     optimizer.step();      // every rank applies the same averaged gradients
//   }
//
// dispatchkit has no Module: a DataParallel wraps the parameters (leaf tensors that require
// grad). It puts them into buckets of about bucket_cap_bytes, in reverse order (the order their
// gradients tend to arrive in), and hooks each parameter: when backward has produced the
// gradients of every parameter of a bucket, the bucket is copied into one flat tensor and
// averaged over the group with an asynchronous c10d::all_reduce_, while backward computes the
// gradients of the layers before it. Buckets are launched in bucket order on every rank (so
// their collectives line up). When backward ends (an engine callback), the remaining buckets are
// launched, every bucket is waited for, and each parameter's .grad becomes the average over the
// ranks of its accumulated gradient. The profiler shows each bucket's communication on the
// group's worker thread ("c10d::all_reduce_ [gloo, collective N]"), next to the backward nodes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dk/distributed/process_group.h"

namespace dk::distributed {

class DataParallel {
 public:
  struct Options {
    std::shared_ptr<ProcessGroup> group;               // nullptr: the world
    int64_t bucket_cap_bytes = int64_t{25} << 20;      // PyTorch's bucket_cap_mb=25
    bool broadcast_parameters = true;                  // copy rank 0's values to every rank first
  };

  explicit DataParallel(std::vector<Tensor> parameters) : DataParallel(std::move(parameters), Options{}) {}
  DataParallel(std::vector<Tensor> parameters, Options options);
  ~DataParallel();  // removes the hooks
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // While a NoSync is alive, backward accumulates gradients locally and communicates nothing
  // (gradient accumulation); the first backward after it averages the accumulated gradients.
  class NoSync {
   public:
    NoSync(NoSync&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;
    ~NoSync();

   private:
    friend class DataParallel;
    explicit NoSync(DataParallel* owner);
    DataParallel* owner_;
  };
  NoSync no_sync();

  const std::vector<Tensor>& parameters() const;
  // The parameters of each bucket, by their index in parameters(), in launch order.
  std::vector<std::vector<size_t>> bucket_assignment() const;
  const std::shared_ptr<ProcessGroup>& group() const;

  struct State;  // shared with the hooks and the end-of-backward callback

 private:
  std::shared_ptr<State> state_;
  std::vector<unsigned> hooks_;
};

}  // namespace dk::distributed
