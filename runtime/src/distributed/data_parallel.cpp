#include "dk/distributed/data_parallel.h"

#include <mutex>

#include "dk/autograd/engine.h"
#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/distributed/distributed.h"
#include "dk/generated/ops/add.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"

namespace dk::distributed {

// Note [DataParallel bookkeeping is not seen by modes]
// Copying gradients into and out of the buckets is DataParallel's bookkeeping: it runs with the
// Python key excluded, so dispatch modes (RankLogger, OpCounter, ...) see the model's operators
// and the collectives, not the copies (which differ between ranks when one of them skips a
// synchronization, and would hide the collective it skipped from tools/dk-ranklogs).
struct DataParallel::State {
  struct Bucket {
    std::vector<size_t> params;   // indices into State::params
    std::vector<int64_t> offsets;  // each one's first element in flat
    int64_t numel = 0;
    Tensor flat;                   // the bucket's gradients, made on first use
    size_t pending = 0;            // parameters whose gradient has not arrived in this backward
    WorkHandle work;               // the all_reduce in flight, or null
  };

  std::vector<Tensor> params;
  std::vector<std::pair<size_t, size_t>> slot;  // param -> (bucket, index in bucket)
  std::vector<Bucket> buckets;
  std::shared_ptr<ProcessGroup> group;

  std::mutex mutex;
  int no_sync = 0;
  bool in_backward = false;   // the end-of-backward callback is queued
  std::vector<bool> arrived;  // per parameter, in this backward
  size_t next_launch = 0;     // buckets before it have been launched

  void startBackward(const std::shared_ptr<State>& self);
  Tensor slotOf(size_t param);
  void launchReady();
  void finish();
};

// The first hook of a backward: reset the buckets, and have the engine call finish() at its end.
void DataParallel::State::startBackward(const std::shared_ptr<State>& self) {
  in_backward = true;
  std::fill(arrived.begin(), arrived.end(), false);
  for (Bucket& b : buckets) {
    b.pending = b.params.size();
    b.work = nullptr;
  }
  next_launch = 0;
  std::weak_ptr<State> weak = self;
  autograd::queue_callback([weak] {
    if (auto state = weak.lock()) state->finish();
  });
}

// Parameter `param`'s piece of its bucket's flat tensor, shaped like the parameter.
Tensor DataParallel::State::slotOf(size_t param) {
  auto [bucket_index, k] = slot[param];
  Bucket& b = buckets[bucket_index];
  const Tensor& p = params[param];
  if (!b.flat.defined()) b.flat = dk::detail::empty_contiguous({b.numel}, p.dtype(), p.device());
  return b.flat.narrow(0, b.offsets[k], p.numel()).view(p.sizes());
}

// Launches the buckets whose gradients are all there, in bucket order: every rank issues the
// same all_reduces in the same order whatever order its gradients arrived in.
void DataParallel::State::launchReady() {
  while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
    Bucket& b = buckets[next_launch++];
    b.work = all_reduce(b.flat, ReduceOp::AVG, group, /*async_op=*/true);
  }
}

// End of backward: launch what is left (parameters no gradient reached contribute what they
// have), wait for every bucket, and give each parameter its averaged gradient.
void DataParallel::State::finish() {
  NoGradGuard no_grad;
  std::lock_guard<std::mutex> lock(mutex);
  in_backward = false;
  {
    ExcludeDispatchKeyGuard bookkeeping(DispatchKey::Python);  // Note [DataParallel bookkeeping is not seen by modes]
    for (size_t i = 0; i < params.size(); ++i) {
      if (arrived[i]) continue;
      const Tensor& g = params[i].grad();
      Tensor dst = slotOf(i);
      if (g.defined()) {
        dst.copy_(g);
      } else {
        dst.zero_();
      }
      --buckets[slot[i].first].pending;
    }
  }
  launchReady();
  for (Bucket& b : buckets) {
    if (b.work) b.work->wait();
  }
  ExcludeDispatchKeyGuard bookkeeping(DispatchKey::Python);
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor averaged = slotOf(i);
    Tensor& grad = params[i].mutable_grad();
    if (grad.defined()) {
      grad.copy_(averaged);
    } else {
      grad = averaged.clone();
    }
  }
}

DataParallel::DataParallel(std::vector<Tensor> parameters, Options options) : state_(std::make_shared<State>()) {
  DK_CHECK(!parameters.empty(), "DataParallel: no parameters to train");
  DK_CHECK(options.bucket_cap_bytes > 0, "DataParallel: bucket_cap_bytes must be positive, got ",
           options.bucket_cap_bytes);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Tensor& p = parameters[i];
    DK_CHECK(p.defined() && p.requires_grad() && p.is_leaf(), "DataParallel: parameter ", i,
             " is not a leaf tensor that requires grad");
  }
  State& s = *state_;
  s.params = std::move(parameters);
  s.group = options.group ? options.group : default_group();
  s.arrived.assign(s.params.size(), false);
  s.slot.resize(s.params.size());
  // Buckets in reverse parameter order, each of one dtype and device, about bucket_cap_bytes.
  int64_t bytes = 0;
  for (size_t n = s.params.size(); n-- > 0;) {
    const Tensor& p = s.params[n];
    bool fresh = s.buckets.empty();
    if (!fresh) {
      const Tensor& first = s.params[s.buckets.back().params.front()];
      fresh = bytes + static_cast<int64_t>(p.nbytes()) > options.bucket_cap_bytes || first.dtype() != p.dtype() ||
              first.device() != p.device();
    }
    if (fresh) {
      s.buckets.emplace_back();
      bytes = 0;
    }
    State::Bucket& b = s.buckets.back();
    s.slot[n] = {s.buckets.size() - 1, b.params.size()};
    b.params.push_back(n);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    bytes += static_cast<int64_t>(p.nbytes());
  }
  if (options.broadcast_parameters) {
    NoGradGuard no_grad;
    for (Tensor& p : s.params) broadcast(p, 0, s.group);
  }
  std::weak_ptr<State> weak = state_;
  for (size_t i = 0; i < s.params.size(); ++i) {
    hooks_.push_back(s.params[i].register_hook([weak, i](const Tensor& grad) -> Tensor {
      auto state = weak.lock();
      if (!state) return Tensor();
      std::lock_guard<std::mutex> lock(state->mutex);
      if (state->no_sync > 0) return Tensor();
      if (!state->in_backward) state->startBackward(state);
      if (state->arrived[i]) return Tensor();  // a second gradient in one backward: finish() uses .grad
      {
        NoGradGuard no_grad;
        ExcludeDispatchKeyGuard bookkeeping(DispatchKey::Python);  // Note [DataParallel bookkeeping is not seen by modes]
        const Tensor& accumulated = state->params[i].grad();
        Tensor dst = state->slotOf(i);
        if (accumulated.defined()) {
          dst.copy_(dk::add(accumulated, grad));
        } else {
          dst.copy_(grad);
        }
      }
      state->arrived[i] = true;
      if (--state->buckets[state->slot[i].first].pending == 0) state->launchReady();
      return Tensor();
    }));
  }
}

DataParallel::~DataParallel() {
  for (size_t i = 0; i < hooks_.size(); ++i) state_->params[i].remove_hook(hooks_[i]);
}

DataParallel::NoSync::NoSync(DataParallel* owner) : owner_(owner) {
  std::lock_guard<std::mutex> lock(owner_->state_->mutex);
  ++owner_->state_->no_sync;
}

DataParallel::NoSync::~NoSync() {
  if (!owner_) return;
  std::lock_guard<std::mutex> lock(owner_->state_->mutex);
  --owner_->state_->no_sync;
}

DataParallel::NoSync DataParallel::no_sync() { return NoSync(this); }

const std::vector<Tensor>& DataParallel::parameters() const { return state_->params; }

const std::shared_ptr<ProcessGroup>& DataParallel::group() const { return state_->group; }

std::vector<std::vector<size_t>> DataParallel::bucket_assignment() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : state_->buckets) out.push_back(b.params);
  return out;
}

}  // namespace dk::distributed
