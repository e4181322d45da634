// FakeTensorMode (Note [Fake tensors]): programs run on Meta kernels with no data allocated
// (a counting allocator watches the host and the meta allocators), report the shapes, dtypes
// and devices the real program would have (cuda included, with no GPU), record autograd
// graphs, and refuse every read of data with a clear error.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <vector>

#include "dk/dk.h"
#include "dk/layers/fake_tensor.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

// Counts the allocations of a device type while installed, except those of one element at most:
// a Scalar argument becomes a 0-dim cpu tensor (a constant, real under FakeTensorMode as in
// PyTorch).
class CountingAllocator : public Allocator {
 public:
  explicit CountingAllocator(DeviceType type) : type_(type), inner_(setAllocator(type, this)) {}
  ~CountingAllocator() override { setAllocator(type_, inner_); }
  DataPtr allocate(size_t nbytes, Device device) override {
    if (nbytes > sizeof(double)) ++count;
    return inner_->allocate(nbytes, device);
  }
  std::atomic<int64_t> count{0};

 private:
  DeviceType type_;
  Allocator* inner_;
};

const Device kCuda(DeviceType::CUDA, 0);

Tensor mlp(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
  return dk::log_softmax(dk::add(dk::relu(dk::linear(x, w1, b1)).mm(w2.t()), b2), 1);
}

}  // namespace

TEST_CASE("fake tensors: an MLP's forward and backward on a pretend cuda:0, with no data") {
  auto fake = std::make_shared<FakeTensorMode>();
  CountingAllocator host(DeviceType::CPU);
  Tensor y, w1;
  {
    DispatchModeGuard guard(fake);
    auto on_cuda = TensorOptions().device(kCuda);
    Tensor x = dk::randn({64, 784}, on_cuda);
    w1 = dk::randn({256, 784}, on_cuda.requires_grad(true));
    Tensor b1 = dk::zeros({256}, on_cuda.requires_grad(true));
    Tensor w2 = dk::randn({10, 256}, on_cuda.requires_grad(true));
    Tensor b2 = dk::zeros({10}, on_cuda.requires_grad(true));
    y = mlp(x, w1, b1, w2, b2);
    Tensor target = dk::zeros({64}, TensorOptions().dtype(kLong).device(kCuda));
    Tensor loss = dk::nll_loss(y, target);
    loss.backward();
    REQUIRE(w1.grad().defined());
    CHECK(w1.grad().sizes() == std::vector<int64_t>{256, 784});
    CHECK(w1.grad().device() == kCuda);
    CHECK(maybeFake(w1.grad()) != nullptr);
  }
  CHECK(host.count == 0);
  CHECK(y.sizes() == std::vector<int64_t>{64, 10});
  CHECK(y.dtype() == kFloat);
  CHECK(y.device() == kCuda);
  CHECK(maybeFake(y) != nullptr);
  CHECK(y.grad_fn() != nullptr);  // autograd ran above the mode
  // The inputs, weights and activations the real forward would have allocated, and more.
  CHECK(fake->bytes() >= (64 * 784 + 256 * 784 + 256 + 10 * 256 + 10 + 64 * 256 + 64 * 10) * 4);
}

TEST_CASE("fake tensors: a convolution block and attention keep their shapes and devices") {
  auto fake = std::make_shared<FakeTensorMode>();
  CountingAllocator host(DeviceType::CPU);
  DispatchModeGuard guard(fake);
  auto on_cuda = TensorOptions().device(kCuda);
  Tensor images = dk::randn({8, 3, 32, 32}, on_cuda);
  Tensor kernel = dk::randn({16, 3, 3, 3}, on_cuda);
  Tensor bias = dk::zeros({16}, on_cuda);
  Tensor features = dk::max_pool2d(dk::relu(dk::conv2d(images, kernel, bias, {1, 1}, {1, 1})), {2, 2});
  CHECK(features.sizes() == std::vector<int64_t>{8, 16, 16, 16});
  CHECK(features.device() == kCuda);
  Tensor q = dk::randn({2, 4, 10, 16}, on_cuda);
  Tensor scores = dk::softmax(dk::div(dk::matmul(q, q.transpose(-2, -1)), 4.0), -1);
  Tensor attended = dk::layer_norm(dk::matmul(scores, q), {16});
  CHECK(attended.sizes() == std::vector<int64_t>{2, 4, 10, 16});
  CHECK(attended.device() == kCuda);
  CHECK(host.count == 0);
}

TEST_CASE("fake tensors: cpu fakes, fromTensor, in place and views") {
  auto fake = std::make_shared<FakeTensorMode>();
  Tensor real = make({1, 2, 3, 4, 5, 6}, {2, 3}).t();
  Tensor f = FakeTensorMode::fromTensor(real);
  CHECK(f.sizes() == real.sizes());
  CHECK(f.strides() == real.strides());
  CHECK(f.device() == Device(DeviceType::CPU));
  CountingAllocator host(DeviceType::CPU);
  DispatchModeGuard guard(fake);
  Tensor g = dk::mul(f, 2.0);
  CHECK(g.device() == Device(DeviceType::CPU));
  Tensor same = g.add_(f);
  CHECK(same.unsafeGetTensorImpl() == g.unsafeGetTensorImpl());  // in place: the fake that was written
  Tensor row = g.select(0, 1);
  CHECK(row.sizes() == std::vector<int64_t>{2});
  CHECK(maybeFake(row) != nullptr);
  CHECK(host.count == 0);
}

TEST_CASE("fake tensors: reading data is a clear error, and so are real tensors under the mode") {
  auto fake = std::make_shared<FakeTensorMode>();
  Tensor real = make({1, 2, 3}, {3});
  Tensor f = FakeTensorMode::fromTensor(real, kCuda);
  {
    DispatchModeGuard guard(fake);
    CHECK_THROWS_WITH(dk::sum(f).item(), Catch::Contains("FakeTensorMode: dk::item reads the data of a fake tensor"));
    CHECK_THROWS_WITH(f.data_ptr(), Catch::Contains("data_ptr() of a fake tensor"));
    CHECK_THROWS_WITH(dk::add(f, real), Catch::Contains("got a real tensor (argument 'other')"));
  }
  CHECK_THROWS_WITH(dk::neg(f), Catch::Contains("is a fake tensor (it has no data) and no dispatch mode is running"));
  std::ostringstream printed;
  printed << f;
  CHECK(printed.str() == "tensor(..., device='cuda:0', size=(3,))");
}

TEST_CASE("fake tensors: the README's example plans 96 MiB on cuda:0") {
  auto fake = std::make_shared<FakeTensorMode>();
  CountingAllocator host(DeviceType::CPU);
  DispatchModeGuard guard(fake);
  auto gpu = TensorOptions().device(kCuda);
  Tensor y = dk::matmul(dk::randn({4096, 4096}, gpu), dk::randn({4096, 1024}, gpu));
  CHECK(y.sizes() == std::vector<int64_t>{4096, 1024});
  CHECK(y.device() == kCuda);
  CHECK(fake->bytes() == int64_t{96} << 20);
  CHECK(host.count == 0);
}
