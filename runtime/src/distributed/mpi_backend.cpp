#include "dk/distributed/mpi_backend.h"

// Open MPI's header, without its deprecated C++ bindings, and without the warnings it trips.
#define OMPI_SKIP_MPICXX 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-function-type"
#include <mpi.h>
#pragma GCC diagnostic pop

#include <climits>
#include <mutex>
#include <thread>

#include "dk/util/error.h"

namespace dk::distributed {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  DK_ERROR("mpi: ", what, " failed: ", std::string(text, static_cast<size_t>(len)));
}

// MPI itself, once per process: one datatype per dtype (so that a reduction knows its dtype) and
// one user operation per ReduceOp, computing with dispatchkit's reduceElements.
struct MpiRuntime {
  bool owns = false;
  MPI_Datatype types[kNumScalarTypes] = {};
  MPI_Op ops[5] = {};

  MpiRuntime() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
      owns = true;
      DK_CHECK(provided == MPI_THREAD_MULTIPLE, "mpi: this MPI library does not provide MPI_THREAD_MULTIPLE, which "
                                                "the mpi backend needs (a group's worker thread and the caller both "
                                                "call MPI)");
    }
    for (int t = 0; t < kNumScalarTypes; ++t) {
      check(MPI_Type_contiguous(static_cast<int>(elementSize(static_cast<ScalarType>(t))), MPI_BYTE, &types[t]),
            "MPI_Type_contiguous");
      check(MPI_Type_commit(&types[t]), "MPI_Type_commit");
    }
    check(MPI_Op_create(&reduce<ReduceOp::SUM>, 1, &ops[0]), "MPI_Op_create");
    check(MPI_Op_create(&reduce<ReduceOp::PRODUCT>, 1, &ops[1]), "MPI_Op_create");
    check(MPI_Op_create(&reduce<ReduceOp::MIN>, 1, &ops[2]), "MPI_Op_create");
    check(MPI_Op_create(&reduce<ReduceOp::MAX>, 1, &ops[3]), "MPI_Op_create");
    check(MPI_Op_create(&reduce<ReduceOp::SUM>, 1, &ops[4]), "MPI_Op_create");  // AVG: SUM, then divide
  }

  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns && !finalized) MPI_Finalize();
  }

  ScalarType dtypeOf(MPI_Datatype t) const {
    for (int i = 0; i < kNumScalarTypes; ++i) {
      if (types[i] == t) return static_cast<ScalarType>(i);
    }
    return ScalarType::Undefined;
  }

  template <ReduceOp Op>
  static void reduce(void* in, void* inout, int* len, MPI_Datatype* type);
};

MpiRuntime& runtime() {
  static MpiRuntime r;
  return r;
}

template <ReduceOp Op>
void MpiRuntime::reduce(void* in, void* inout, int* len, MPI_Datatype* type) {
  reduceElements(Op, runtime().dtypeOf(*type), inout, inout, in, static_cast<size_t>(*len));
}

int asInt(int64_t n, const char* what) {
  DK_CHECK(n <= INT_MAX, "mpi: ", what, " of ", n, " does not fit MPI's int counts");
  return static_cast<int>(n);
}

class MpiBackend : public Backend {
 public:
  explicit MpiBackend(const BackendOptions& options) : timeout_(options.timeout) {
    runtime();
    if (static_cast<int>(options.global_ranks.size()) == mpiWorld().second) {
      check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    } else {
      MPI_Group world_group, group;
      check(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group");
      check(MPI_Group_incl(world_group, static_cast<int>(options.global_ranks.size()), options.global_ranks.data(), &group),
            "MPI_Group_incl");
      check(MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, &comm_), "MPI_Comm_create_group");
      MPI_Group_free(&group);
      MPI_Group_free(&world_group);
    }
    int rank = -1;
    MPI_Comm_rank(comm_, &rank);
    DK_CHECK(rank == options.rank, "mpi: this process is rank ", rank, " of the group's communicator, not ", options.rank);
  }

  ~MpiBackend() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  std::string name() const override { return "mpi"; }
  bool supports(DeviceType device) const override { return device == DeviceType::CPU; }

  void allReduce(Tensor& tensor, ReduceOp op, uint32_t) override {
    if (tensor.numel() == 0) return;
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, tensor.data_ptr(), asInt(tensor.numel(), "a tensor"),
                         runtime().types[static_cast<int>(tensor.dtype())], runtime().ops[static_cast<int>(op)], comm_,
                         &request),
          "MPI_Iallreduce");
    wait(request, "all_reduce");
  }

  void broadcast(Tensor& tensor, int root, uint32_t) override {
    if (tensor.numel() == 0) return;
    MPI_Request request;
    check(MPI_Ibcast(tensor.data_ptr(), asInt(static_cast<int64_t>(tensor.nbytes()), "a message"), MPI_BYTE, root, comm_,
                     &request),
          "MPI_Ibcast");
    wait(request, "broadcast");
  }

  void allGather(Tensor& output, const Tensor& input, const std::vector<int64_t>& counts, uint32_t) override {
    auto item = static_cast<int64_t>(elementSize(input.dtype()));
    std::vector<int> bytes, offsets;
    int64_t at = 0;
    for (int64_t c : counts) {
      bytes.push_back(asInt(c * item, "a message"));
      offsets.push_back(asInt(at, "an offset"));
      at += c * item;
    }
    MPI_Request request;
    check(MPI_Iallgatherv(input.data_ptr(), asInt(static_cast<int64_t>(input.nbytes()), "a message"), MPI_BYTE,
                          output.data_ptr(), bytes.data(), offsets.data(), MPI_BYTE, comm_, &request),
          "MPI_Iallgatherv");
    wait(request, "all_gather");
  }

  void allToAll(Tensor& output, const Tensor& input, const std::vector<int64_t>& out_counts,
                const std::vector<int64_t>& in_counts, uint32_t) override {
    auto item = static_cast<int64_t>(elementSize(input.dtype()));
    std::vector<int> out_bytes, out_offsets, in_bytes, in_offsets;
    int64_t out_at = 0, in_at = 0;
    for (size_t r = 0; r < out_counts.size(); ++r) {
      out_bytes.push_back(asInt(out_counts[r] * item, "a message"));
      out_offsets.push_back(asInt(out_at, "an offset"));
      out_at += out_counts[r] * item;
      in_bytes.push_back(asInt(in_counts[r] * item, "a message"));
      in_offsets.push_back(asInt(in_at, "an offset"));
      in_at += in_counts[r] * item;
    }
    MPI_Request request;
    check(MPI_Ialltoallv(input.data_ptr(), in_bytes.data(), in_offsets.data(), MPI_BYTE, output.data_ptr(),
                         out_bytes.data(), out_offsets.data(), MPI_BYTE, comm_, &request),
          "MPI_Ialltoallv");
    wait(request, "all_to_all");
  }

  void barrier(uint32_t) override {
    MPI_Request request;
    check(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
    wait(request, "barrier");
  }

  std::function<void()> send(const Tensor& tensor, int dst, uint32_t tag) override {
    auto request = std::make_shared<MPI_Request>();
    check(MPI_Isend(tensor.data_ptr(), asInt(static_cast<int64_t>(tensor.nbytes()), "a message"), MPI_BYTE, dst,
                    asInt(tag, "a tag"), comm_, request.get()),
          "MPI_Isend");
    return [this, request] { wait(*request, "send"); };
  }

  std::function<void()> recv(Tensor& tensor, int src, uint32_t tag) override {
    auto request = std::make_shared<MPI_Request>();
    check(MPI_Irecv(tensor.data_ptr(), asInt(static_cast<int64_t>(tensor.nbytes()), "a message"), MPI_BYTE, src,
                    asInt(tag, "a tag"), comm_, request.get()),
          "MPI_Irecv");
    return [this, request] { wait(*request, "recv"); };
  }

 private:
  // MPI_Test until done or the group's timeout: MPI cannot cancel a collective, so after a timeout
  // the request is left behind (and the group refuses further collectives).
  void wait(MPI_Request& request, const char* what) {
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    auto pause = std::chrono::microseconds(1);
    while (true) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      DK_CHECK(std::chrono::steady_clock::now() < deadline, "mpi: ", what, " timed out after ", timeout_.count(), " ms");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(200));
    }
  }

  std::chrono::milliseconds timeout_;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace

std::pair<int, int> mpiWorld() {
  runtime();
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return {rank, size};
}

std::unique_ptr<Backend> makeMpiBackend(const BackendOptions& options) { return std::make_unique<MpiBackend>(options); }

}  // namespace dk::distributed
