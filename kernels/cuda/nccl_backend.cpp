// The NCCL backend of dk::distributed (dk/distributed/nccl_backend.h).
#include "dk/distributed/nccl_backend.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "cuda/cuda_error.h"
#include "cuda/device_guard.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"

namespace dk::distributed {

namespace {

// NCCL's functions, looked up the first time a group uses NCCL (Note [cuBLAS loaded on first use]).
struct NcclApi {
  decltype(&::ncclGetUniqueId) get_unique_id;
  decltype(&::ncclCommInitRank) comm_init_rank;
  decltype(&::ncclCommDestroy) comm_destroy;
  decltype(&::ncclCommAbort) comm_abort;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error;
  decltype(&::ncclAllReduce) all_reduce;
  decltype(&::ncclBroadcast) broadcast;
  decltype(&::ncclSend) send;
  decltype(&::ncclRecv) recv;
  decltype(&::ncclGroupStart) group_start;
  decltype(&::ncclGroupEnd) group_end;
  decltype(&::ncclGetErrorString) error_string;
};

const NcclApi& nccl() {
  static const NcclApi api = [] {
    const std::string soname = "libnccl.so." + std::to_string(NCCL_MAJOR);
    void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = dlopen(("/usr/local/cuda/lib64/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    DK_CHECK(lib != nullptr, "the nccl backend needs NCCL, and ", soname, " could not be loaded: ", dlerror());
    NcclApi loaded{};
    auto load = [&](auto& fn, const char* name) {
      void* found = dlsym(lib, name);
      DK_CHECK(found != nullptr, soname, " has no ", name, " (older than the NCCL header dispatchkit was built with)");
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(found);
    };
    load(loaded.get_unique_id, "ncclGetUniqueId");
    load(loaded.comm_init_rank, "ncclCommInitRank");
    load(loaded.comm_destroy, "ncclCommDestroy");
    load(loaded.comm_abort, "ncclCommAbort");
    load(loaded.comm_get_async_error, "ncclCommGetAsyncError");
    load(loaded.all_reduce, "ncclAllReduce");
    load(loaded.broadcast, "ncclBroadcast");
    load(loaded.send, "ncclSend");
    load(loaded.recv, "ncclRecv");
    load(loaded.group_start, "ncclGroupStart");
    load(loaded.group_end, "ncclGroupEnd");
    load(loaded.error_string, "ncclGetErrorString");
    return loaded;
  }();
  return api;
}

void checkNccl(ncclResult_t result, const char* what) {
  DK_CHECK(result == ncclSuccess, "nccl: ", what, " failed: ", nccl().error_string(result));
}

ncclDataType_t ncclType(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Byte:
    case ScalarType::Bool: return ncclUint8;
    case ScalarType::Char: return ncclInt8;
    case ScalarType::Int: return ncclInt32;
    case ScalarType::Long: return ncclInt64;
    case ScalarType::Half: return ncclFloat16;
    case ScalarType::Float: return ncclFloat32;
    case ScalarType::Double: return ncclFloat64;
    case ScalarType::BFloat16: return ncclBfloat16;
    default: DK_ERROR("nccl: ", toString(dtype), " tensors cannot be reduced (NCCL has no ", toString(dtype), " type)");
  }
}

ncclRedOp_t ncclOp(ReduceOp op, ScalarType dtype) {
  if (dtype == ScalarType::Bool) {
    return op == ReduceOp::PRODUCT || op == ReduceOp::MIN ? ncclMin : ncclMax;  // and / or
  }
  switch (op) {
    case ReduceOp::SUM: return ncclSum;
    case ReduceOp::PRODUCT: return ncclProd;
    case ReduceOp::MIN: return ncclMin;
    case ReduceOp::MAX: return ncclMax;
    case ReduceOp::AVG: return ncclAvg;
  }
  return ncclSum;
}

class NcclBackend : public Backend {
 public:
  explicit NcclBackend(const BackendOptions& options) : options_(options) {}

  ~NcclBackend() override {
    if (comm_ != nullptr) (void)nccl().comm_destroy(comm_);
  }

  std::string name() const override { return "nccl"; }
  bool supports(DeviceType device) const override { return device == DeviceType::CUDA; }

  void allReduce(Tensor& tensor, ReduceOp op, uint32_t) override {
    if (tensor.numel() == 0) return;
    run(tensor, "all_reduce", [&](ncclComm_t comm) {
      checkNccl(nccl().all_reduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                                  ncclType(tensor.dtype()), ncclOp(op, tensor.dtype()), comm, cudaStreamLegacy),
                "ncclAllReduce");
    });
  }

  void broadcast(Tensor& tensor, int root, uint32_t) override {
    if (tensor.numel() == 0) return;
    run(tensor, "broadcast", [&](ncclComm_t comm) {
      checkNccl(nccl().broadcast(tensor.data_ptr(), tensor.data_ptr(), tensor.nbytes(), ncclUint8, root, comm,
                                 cudaStreamLegacy),
                "ncclBroadcast");
    });
  }

  // Every rank broadcasts its piece (NCCL's all_gather wants equal pieces; this takes any).
  void allGather(Tensor& output, const Tensor& input, const std::vector<int64_t>& counts, uint32_t) override {
    size_t item = elementSize(input.dtype());
    run(output, "all_gather", [&](ncclComm_t comm) {
      checkNccl(nccl().group_start(), "ncclGroupStart");
      size_t offset = 0;
      for (int r = 0; r < options_.size; ++r) {
        size_t bytes = static_cast<size_t>(counts[static_cast<size_t>(r)]) * item;
        auto* dst = static_cast<char*>(output.data_ptr()) + offset;
        const void* src = r == options_.rank ? input.data_ptr() : dst;
        if (bytes) checkNccl(nccl().broadcast(src, dst, bytes, ncclUint8, r, comm, cudaStreamLegacy), "ncclBroadcast");
        offset += bytes;
      }
      checkNccl(nccl().group_end(), "ncclGroupEnd");
    });
  }

  void allToAll(Tensor& output, const Tensor& input, const std::vector<int64_t>& out_counts,
                const std::vector<int64_t>& in_counts, uint32_t) override {
    size_t item = elementSize(input.dtype());
    run(output, "all_to_all", [&](ncclComm_t comm) {
      checkNccl(nccl().group_start(), "ncclGroupStart");
      size_t in_at = 0, out_at = 0;
      for (int r = 0; r < options_.size; ++r) {
        size_t in_bytes = static_cast<size_t>(in_counts[static_cast<size_t>(r)]) * item;
        size_t out_bytes = static_cast<size_t>(out_counts[static_cast<size_t>(r)]) * item;
        if (in_bytes) {
          checkNccl(nccl().send(static_cast<const char*>(input.data_ptr()) + in_at, in_bytes, ncclUint8, r, comm,
                                cudaStreamLegacy),
                    "ncclSend");
        }
        if (out_bytes) {
          checkNccl(nccl().recv(static_cast<char*>(output.data_ptr()) + out_at, out_bytes, ncclUint8, r, comm,
                                cudaStreamLegacy),
                    "ncclRecv");
        }
        in_at += in_bytes;
        out_at += out_bytes;
      }
      checkNccl(nccl().group_end(), "ncclGroupEnd");
    });
  }

  // A one-element all_reduce on the group's device (NCCL has no barrier).
  void barrier(uint32_t tag) override {
    DK_CHECK(device_ >= 0, "nccl: a barrier needs an earlier collective to know the group's device");
    Tensor one = dk::detail::empty_contiguous({1}, ScalarType::Float, Device(DeviceType::CUDA, device_));
    allReduce(one, ReduceOp::SUM, tag);
  }

  // Sends and receives are enqueued at once (under the lock: a communicator is used by one thread
  // at a time); their waiters poll an event.
  std::function<void()> send(const Tensor& tensor, int dst, uint32_t) override {
    return post(tensor, "send", [&](ncclComm_t comm) {
      checkNccl(nccl().send(tensor.data_ptr(), tensor.nbytes(), ncclUint8, dst, comm, cudaStreamLegacy), "ncclSend");
    });
  }

  std::function<void()> recv(Tensor& tensor, int src, uint32_t) override {
    return post(tensor, "recv", [&](ncclComm_t comm) {
      checkNccl(nccl().recv(tensor.data_ptr(), tensor.nbytes(), ncclUint8, src, comm, cudaStreamLegacy), "ncclRecv");
    });
  }

 private:
  // The communicator, made on first use on `tensor`'s device: rank 0's NCCL id goes through the store.
  ncclComm_t commFor(const Tensor& tensor) {
    int device = tensor.device().index < 0 ? 0 : tensor.device().index;
    if (comm_ != nullptr) {
      DK_CHECK(device == device_, "nccl: the group's communicator is on cuda:", device_, ", not cuda:", device);
      return comm_;
    }
    ncclUniqueId id;
    if (options_.rank == 0) {
      checkNccl(nccl().get_unique_id(&id), "ncclGetUniqueId");
      options_.store->set("nccl_id", std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&id),
                                                          reinterpret_cast<uint8_t*>(&id) + sizeof id));
    } else {
      std::vector<uint8_t> bytes = options_.store->get("nccl_id");
      DK_CHECK(bytes.size() == sizeof id, "nccl: the id in the store has ", bytes.size(), " bytes, not ", sizeof id);
      std::memcpy(&id, bytes.data(), sizeof id);
    }
    cuda::DeviceGuard guard(Device(DeviceType::CUDA, device));
    checkNccl(nccl().comm_init_rank(&comm_, options_.size, id, options_.rank), "ncclCommInitRank");
    device_ = device;
    return comm_;
  }

  // Enqueues `call` on the communicator and returns an event recorded after it.
  template <class F>
  cudaEvent_t enqueue(const Tensor& tensor, F&& call) {
    std::lock_guard<std::mutex> lock(mutex_);
    ncclComm_t comm = commFor(tensor);
    cuda::DeviceGuard guard(Device(DeviceType::CUDA, device_));
    call(comm);
    cudaEvent_t done;
    DK_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    DK_CUDA_CHECK(cudaEventRecord(done, cudaStreamLegacy));
    return done;
  }

  // Polls `done` until it completes or the group's timeout passes; then aborts the communicator.
  void await(cudaEvent_t done, const char* what) {
    auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    auto pause = std::chrono::microseconds(1);
    while (true) {
      cudaError_t state = cudaEventQuery(done);
      if (state == cudaSuccess) break;
      if (state != cudaErrorNotReady) {
        cudaEventDestroy(done);
        DK_CUDA_CHECK(state);
      }
      ncclResult_t async_error = ncclSuccess;
      if (comm_ != nullptr) (void)nccl().comm_get_async_error(comm_, &async_error);
      if (async_error != ncclSuccess || std::chrono::steady_clock::now() >= deadline) {
        (void)nccl().comm_abort(comm_);
        comm_ = nullptr;
        cudaEventDestroy(done);
        if (async_error != ncclSuccess) DK_ERROR("nccl: ", what, " failed: ", nccl().error_string(async_error));
        DK_ERROR("nccl: ", what, " timed out after ", options_.timeout.count(), " ms");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(100));
    }
    cudaEventDestroy(done);
  }

  template <class F>
  void run(const Tensor& tensor, const char* what, F&& call) {
    await(enqueue(tensor, call), what);
  }

  template <class F>
  std::function<void()> post(const Tensor& tensor, const char* what, F&& call) {
    cudaEvent_t done = enqueue(tensor, call);
    return [this, done, what] { await(done, what); };
  }

  BackendOptions options_;
  std::mutex mutex_;
  ncclComm_t comm_ = nullptr;
  int device_ = -1;
};

}  // namespace

std::unique_ptr<Backend> makeNcclBackend(const BackendOptions& options) { return std::make_unique<NcclBackend>(options); }

}  // namespace dk::distributed
