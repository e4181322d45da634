// The NCCL backend on CUDA tensors, on the ranks tools/dkrun starts (one rank per GPU: NCCL
// refuses two ranks on one device; tests/meson.build runs one rank, a machine with more GPUs can
// run `tools/dkrun -n <GPUs> test_nccl`). Every collective against the value computed on the host,
// and a CUDA tensor on a Gloo group refused with a clear error. Exits 77 (skipped) without a GPU.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "dk/dk.h"
#include "dk/distributed/distributed.h"

namespace dist = dk::distributed;
using dk::Tensor;

namespace {
int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::cerr << "FAILED: " << what << "\n";
  }
}

// Copies between the host and a device (dk::Tensor::to takes a dtype only).
Tensor onDevice(const Tensor& t, dk::Device device) {
  Tensor out = dk::empty(t.sizes(), t.dtype(), std::nullopt, device);
  out.copy_(t);
  return out;
}
Tensor onHost(const Tensor& t) { return onDevice(t, dk::Device(dk::DeviceType::CPU)); }

bool same(const Tensor& a, const Tensor& b) {
  Tensor x = onHost(a).to(dk::kDouble).contiguous();
  Tensor y = onHost(b).to(dk::kDouble).contiguous();
  if (x.sizes() != y.sizes()) return false;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (x.data_ptr<double>()[i] != y.data_ptr<double>()[i]) return false;
  }
  return true;
}

template <class F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const dk::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::cout << "no CUDA device: skipped\n";
    return 77;
  }
  dist::init_process_group("nccl", -1, -1, nullptr, std::chrono::seconds(60));
  int rank = dist::get_rank(), world = dist::get_world_size();
  dk::Device gpu(dk::DeviceType::CUDA, rank % devices);
  auto rankTensor = [&](int r, int64_t n, dk::ScalarType dtype) {
    return (dk::arange(0, n, 1, dk::TensorOptions().dtype(dk::kDouble)) + static_cast<double>(r + 1)).to(dtype);
  };
  for (auto dtype : {dk::kFloat, dk::kDouble, dk::kHalf, dk::kBFloat16, dk::kInt, dk::kLong, dk::kByte}) {
    Tensor t = onDevice(rankTensor(rank, 1000, dtype), gpu);
    dist::all_reduce(t, dist::ReduceOp::MAX);
    expect(same(t, rankTensor(world - 1, 1000, dtype)), std::string("all_reduce max ") + std::string(dk::toString(dtype)));
  }
  Tensor s = onDevice(rankTensor(rank, 4096, dk::kFloat), gpu);
  dist::all_reduce(s);
  Tensor expected = rankTensor(0, 4096, dk::kFloat);
  for (int r = 1; r < world; ++r) expected = expected + rankTensor(r, 4096, dk::kFloat);
  expect(same(s, expected), "all_reduce sum");
  Tensor b = onDevice(rankTensor(rank, 77, dk::kLong), gpu);
  dist::broadcast(b, 0);
  expect(same(b, rankTensor(0, 77, dk::kLong)), "broadcast");
  Tensor all = dk::empty({10 * world}, dk::TensorOptions().dtype(dk::kFloat).device(gpu));
  dist::all_gather_into_tensor(all, onDevice(rankTensor(rank, 10, dk::kFloat), gpu));
  for (int r = 0; r < world; ++r) expect(same(all.narrow(0, 10 * r, 10), rankTensor(r, 10, dk::kFloat)), "all_gather");
  Tensor out = dk::empty({3 * world}, dk::TensorOptions().dtype(dk::kFloat).device(gpu));
  dist::all_to_all_single(out, onDevice(rankTensor(rank, 3 * world, dk::kFloat), gpu));
  for (int r = 0; r < world; ++r) {
    expect(same(out.narrow(0, 3 * r, 3), rankTensor(r, 3 * world, dk::kFloat).narrow(0, 3 * rank, 3)), "all_to_all");
  }
  dist::barrier();
  Tensor host = dk::ones({4});
  expect(errorOf([&] { dist::all_reduce(host); }).find("nccl backend, which cannot move") != std::string::npos,
         "a CPU tensor on an NCCL group is refused");
  Tensor shorts = dk::ones({4}, dk::TensorOptions().dtype(dk::kShort).device(gpu));
  expect(errorOf([&] { dist::all_reduce(shorts); }).find("NCCL has no") != std::string::npos,
         "int16 is refused by name");
  // A CUDA tensor on a Gloo group: refused, naming the backend to use.
  auto gloo = dist::new_group({}, std::chrono::seconds(30), "gloo");
  Tensor cuda_tensor = onDevice(dk::ones({4}), gpu);
  expect(errorOf([&] { dist::all_reduce(cuda_tensor, dist::ReduceOp::SUM, gloo); }).find("create the group with the nccl backend") !=
             std::string::npos,
         "a CUDA tensor on a Gloo group is refused");
  dist::destroy_process_group();
  std::cout << (failures ? "FAILED" : "all NCCL checks passed") << "\n";
  return failures ? 1 : 0;
}
