// tools/showcase/demo_args.h: what the training demos (dk-train, dk-cnn, dk-transformer) share:
// their command line (--check, --steps N, --fake) and the accuracy of class scores, and the plan
// of one training step on fake tensors (--fake).
#pragma once

#include <dk/dk.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

namespace dk::demo {

struct Args {
  bool check = false;
  int64_t steps;
  bool fake = false;  // plan one step under FakeTensorMode on a pretend cuda:0 instead of training
};

// The demo's options, or nothing (after printing the usage) when the command line is wrong.
inline std::optional<Args> parseArgs(int argc, char** argv, const char* name, int64_t default_steps) {
  Args args{false, default_steps};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--check") {
      args.check = true;
    } else if (arg == "--fake") {
      args.fake = true;
    } else if (arg == "--steps" && i + 1 < argc) {
      args.steps = std::atoll(argv[++i]);
    } else {
      std::cerr << "usage: " << name << " [--check] [--steps N] [--fake]\n";
      return std::nullopt;
    }
  }
  return args;
}

// The share of positions where the largest score (along `dim`) is at the target class.
inline double accuracy(const Tensor& scores, const Tensor& targets, int64_t dim) {
  Tensor correct = dk::sum(dk::eq(dk::argmax(scores, dim), targets));
  return static_cast<double>(correct.item().toLong()) / static_cast<double>(targets.numel());
}

// --fake (Note [Fake tensors]): `t` as a fake tensor on a pretend cuda:0, requiring grad when it
// did.
inline Tensor fakeOnCuda(const Tensor& t) {
  Tensor f = FakeTensorMode::fromTensor(t, Device(DeviceType::CUDA, 0));
  if (t.requires_grad()) f.requires_grad_();
  return f;
}

// Counts the host allocations of more than one element while alive (a Scalar argument is a 0-dim
// host tensor, a constant even under FakeTensorMode).
class HostAllocationCounter : public Allocator {
 public:
  HostAllocationCounter() : inner_(setAllocator(DeviceType::CPU, this)) {}
  ~HostAllocationCounter() override { setAllocator(DeviceType::CPU, inner_); }
  HostAllocationCounter(const HostAllocationCounter&) = delete;
  HostAllocationCounter& operator=(const HostAllocationCounter&) = delete;
  DataPtr allocate(size_t nbytes, Device device) override {
    if (nbytes > sizeof(double)) ++count_;
    return inner_->allocate(nbytes, device);
  }
  int64_t count() const { return count_; }

 private:
  Allocator* inner_;
  int64_t count_ = 0;
};

// Runs `step` (the forward and backward of one batch on fake tensors, returning the loss) under
// FakeTensorMode; prints the loss's and each gradient's shape and device and the bytes the step
// would allocate. True when every parameter got a gradient of its shape on cuda:0 and no host
// memory was allocated for tensor data.
template <class Step>
bool planFakeStep(const std::vector<Tensor>& parameters, const Step& step) {
  auto fake = std::make_shared<FakeTensorMode>();
  HostAllocationCounter host;
  Tensor loss;
  {
    DispatchModeGuard guard(fake);
    loss = step();
  }
  const Device cuda(DeviceType::CUDA, 0);
  std::cout << "== one training step planned under FakeTensorMode on a pretend " << cuda << " (no GPU, no data)\n"
            << "  loss: " << loss << "\n";
  bool ok = loss.device() == cuda && host.count() == 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Tensor& g = parameters[i].grad();
    ok = ok && g.defined() && g.sizes() == parameters[i].sizes() && g.device() == cuda;
    std::cout << "  parameter " << i << " " << parameters[i].sizes() << ": gradient "
              << (g.defined() ? g.sizes() : IntArrayRef()) << " on " << (g.defined() ? g.device() : cuda) << "\n";
  }
  std::cout << "  bytes the step allocates on " << cuda << ": " << fake->bytes() << "; host allocations for data: "
            << host.count() << "\n" << (ok ? "fake plan passed" : "fake plan FAILED") << "\n";
  return ok;
}

}  // namespace dk::demo
