// The PrivateUse1 example backend: every operator through one boxed fallback, and native
// kernels taking precedence over it.
#include <catch2/catch.hpp>

#include "dk/autograd/autograd.h"
#include "dk/dispatch.h"
#include "dk/dispatch/privateuse1_backend.h"
#include "dk/generated/TensorOperators.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/linear.h"
#include "dk/generated/ops/log_softmax.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/split.h"
#include "dk/generated/ops/zeros.h"
#include "dk/modes.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/dispatch/tensor_factories.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/tensor/tensor_options.h"
#include "dk/tensor/type_promotion.h"

using namespace dk;

namespace {
const Device kPU1(DeviceType::PrivateUse1);

Tensor mlp(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2) {
  return dk::log_softmax(dk::relu(dk::linear(x, w1, b1)).mm(w2.t()), 1);
}

void checkClose(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  Tensor ca = a.contiguous(), cb = b.contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) CHECK(ca.data_ptr<float>()[i] == Approx(cb.data_ptr<float>()[i]));
}
}  // namespace

TEST_CASE("privateuse1: the MLP runs on the fallback backend and matches the CPU") {
  auto backend = privateuse1::installFallbackBackend();
  dk::manual_seed(1);
  Tensor x = dk::randn({4, 3}), w1 = dk::randn({5, 3}), b1 = dk::randn({5}), w2 = dk::randn({2, 5});
  Tensor expected = mlp(x, w1, b1, w2);
  int64_t before = privateuse1::fallbackCalls();
  Tensor px = privateuse1::fromCpu(x), pw1 = privateuse1::fromCpu(w1), pb1 = privateuse1::fromCpu(b1),
         pw2 = privateuse1::fromCpu(w2);
  CHECK(px.device() == kPU1);
  CHECK(px.key_set().has(DispatchKey::PrivateUse1));
  Tensor y = mlp(px, pw1, pb1, pw2);
  CHECK(y.device() == kPU1);
  CHECK(privateuse1::fallbackCalls() > before);
  checkClose(privateuse1::toCpu(y), expected);
}

TEST_CASE("privateuse1: in-place and out= results land in the original tensors") {
  auto backend = privateuse1::installFallbackBackend();
  Tensor a = privateuse1::fromCpu(dk::tensor({1.0, 2.0}));
  Tensor b = privateuse1::fromCpu(dk::tensor({10.0, 20.0}));
  Tensor r = a.add_(b);
  CHECK(r.is_same(a));
  CHECK(privateuse1::toCpu(a).data_ptr<float>()[1] == 22.0f);
  Tensor out = privateuse1::fromCpu(dk::zeros({2}));
  dk::add(a, b, 1, out);
  CHECK(privateuse1::toCpu(out).data_ptr<float>()[0] == 21.0f);
  std::vector<Tensor> parts = dk::split(privateuse1::fromCpu(dk::arange(0, 6, 1)), 2);
  REQUIRE(parts.size() == 3);
  CHECK(parts[2].device() == kPU1);
}

TEST_CASE("privateuse1: a native kernel registered later takes precedence over the fallback") {
  auto backend = privateuse1::installFallbackBackend();
  Tensor a = privateuse1::fromCpu(dk::tensor({-1.0, 3.0}));
  CHECK(privateuse1::toCpu(dk::relu(a)).data_ptr<float>()[0] == 0.0f);
  int native_calls = 0;
  {
    Library native(Library::IMPL, "dk", DispatchKey::PrivateUse1);
    native.impl("relu", CppFunction([&native_calls](const Tensor& self) -> Tensor {
      ++native_calls;
      return self;  // a deliberately different answer, to prove this kernel ran
    }));
    int64_t before = privateuse1::fallbackCalls();
    Tensor r = dk::relu(a);
    CHECK(native_calls == 1);
    CHECK(privateuse1::fallbackCalls() == before);
    CHECK(r.is_same(a));
  }
  Tensor r = dk::relu(a);
  CHECK(native_calls == 1);
  CHECK(privateuse1::toCpu(r).data_ptr<float>()[1] == 3.0f);
}
