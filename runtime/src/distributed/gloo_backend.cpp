#include "dk/distributed/gloo_backend.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "dk/tensor/dtype_dispatch.h"
#include "dk/util/error.h"

namespace dk::distributed {

namespace {

// Gloo's rendezvous reads and writes through this view of a dk store.
class GlooStore : public ::gloo::rendezvous::Store {
 public:
  explicit GlooStore(std::shared_ptr<distributed::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<uint8_t> v = store_->get(key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  std::shared_ptr<distributed::Store> store_;
};

std::string deviceHost() {
  if (const char* host = std::getenv("DK_GLOO_HOST"); host && *host) return host;
  const char* master = std::getenv("MASTER_ADDR");
  std::string m = master ? master : "";
  if (m.empty() || m == "localhost" || m.rfind("127.", 0) == 0) return "127.0.0.1";
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) == 0 && name[0]) return name;
  return "127.0.0.1";
}

// One TCP device per process, shared by every group (each group has its own context and pairs).
std::shared_ptr<::gloo::transport::Device> sharedDevice() {
  static std::mutex mutex;
  static std::shared_ptr<::gloo::transport::Device> device;
  std::lock_guard<std::mutex> lock(mutex);
  if (!device) {
    ::gloo::transport::tcp::attr attr;
    attr.hostname = deviceHost();
    device = ::gloo::transport::tcp::CreateDevice(attr);
  }
  return device;
}

// Point-to-point slots stay clear of the collectives' (Gloo builds those from their 32-bit tag).
constexpr uint64_t kPointToPointSlot = uint64_t{1} << 56;

class GlooBackend : public Backend {
 public:
  GlooBackend(const std::shared_ptr<Store>& store, int rank, int size, std::chrono::milliseconds timeout)
      : timeout_(timeout) {
    auto context = std::make_shared<::gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    GlooStore gloo_store(store);
    std::shared_ptr<::gloo::transport::Device> device = sharedDevice();
    try {
      context->connectFullMesh(gloo_store, device);
    } catch (const std::exception& e) {
      DK_ERROR("gloo: rank ", rank, " of ", size, " could not connect to the other ranks: ", e.what());
    }
    context_ = std::move(context);
  }

  std::string name() const override { return "gloo"; }
  bool supports(DeviceType device) const override { return device == DeviceType::CPU; }

  void allReduce(Tensor& tensor, ReduceOp op, uint32_t tag) override {
    if (tensor.numel() == 0) return;
    ScalarType dtype = tensor.dtype();
    ::gloo::AllreduceOptions opts(context_);
    DK_DISPATCH_ALL_TYPES(dtype, "all_reduce", [&] {
      opts.setOutput(static_cast<scalar_t*>(tensor.data_ptr()), static_cast<size_t>(tensor.numel()));
    });
    opts.setReduceFunction([op, dtype](void* out, const void* a, const void* b, size_t n) {
      reduceElements(op, dtype, out, a, b, n);
    });
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    ::gloo::allreduce(opts);
  }

  void broadcast(Tensor& tensor, int root, uint32_t tag) override {
    if (tensor.numel() == 0) return;
    ::gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(tensor.data_ptr()), tensor.nbytes());
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    ::gloo::broadcast(opts);
  }

  void allGather(Tensor& output, const Tensor& input, const std::vector<int64_t>& counts, uint32_t tag) override {
    size_t item = elementSize(input.dtype());
    std::vector<size_t> bytes;
    for (int64_t c : counts) bytes.push_back(static_cast<size_t>(c) * item);
    ::gloo::AllgathervOptions opts(context_);
    opts.setInput(static_cast<uint8_t*>(input.data_ptr()), input.nbytes());
    opts.setOutput(static_cast<uint8_t*>(output.data_ptr()), bytes);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    ::gloo::allgatherv(opts);
  }

  void allToAll(Tensor& output, const Tensor& input, const std::vector<int64_t>& out_counts,
                const std::vector<int64_t>& in_counts, uint32_t tag) override {
    auto item = static_cast<int64_t>(elementSize(input.dtype()));
    std::vector<int64_t> out_bytes, in_bytes;
    for (int64_t c : out_counts) out_bytes.push_back(c * item);
    for (int64_t c : in_counts) in_bytes.push_back(c * item);
    // Gloo refuses null buffers: empty tensors lend it a byte of their own.
    uint8_t dummy_in = 0, dummy_out = 0;
    auto* in = input.numel() ? static_cast<uint8_t*>(input.data_ptr()) : &dummy_in;
    auto* out = output.numel() ? static_cast<uint8_t*>(output.data_ptr()) : &dummy_out;
    ::gloo::AlltoallvOptions opts(context_);
    opts.setInput(in, in_bytes);
    opts.setOutput(out, out_bytes);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    ::gloo::alltoallv(opts);
  }

  void barrier(uint32_t tag) override {
    ::gloo::BarrierOptions opts(context_);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    ::gloo::barrier(opts);
  }

  std::function<void()> send(const Tensor& tensor, int dst, uint32_t tag) override {
    auto buffer = unboundBuffer(tensor);
    buffer->send(dst, kPointToPointSlot | tag);
    auto timeout = timeout_;
    return [buffer = std::shared_ptr<::gloo::transport::UnboundBuffer>(std::move(buffer)), timeout] {
      buffer->waitSend(timeout);
    };
  }

  std::function<void()> recv(Tensor& tensor, int src, uint32_t tag) override {
    auto buffer = unboundBuffer(tensor);
    buffer->recv(src, kPointToPointSlot | tag);
    auto timeout = timeout_;
    return [buffer = std::shared_ptr<::gloo::transport::UnboundBuffer>(std::move(buffer)), timeout] {
      buffer->waitRecv(timeout);
    };
  }

 private:
  // Gloo refuses null buffers: an empty tensor lends it a byte that is never read or written.
  std::unique_ptr<::gloo::transport::UnboundBuffer> unboundBuffer(const Tensor& tensor) {
    static uint8_t empty_byte = 0;
    void* data = tensor.numel() ? tensor.data_ptr() : &empty_byte;
    return context_->createUnboundBuffer(data, tensor.nbytes());
  }

  std::chrono::milliseconds timeout_;
  std::shared_ptr<::gloo::Context> context_;
};

}  // namespace

std::unique_ptr<Backend> makeGlooBackend(const BackendOptions& options) {
  return std::make_unique<GlooBackend>(options.store, options.rank, options.size, options.timeout);
}

}  // namespace dk::distributed
