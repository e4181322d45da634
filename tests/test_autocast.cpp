// Autocast: the AutocastCPU key, AutocastGuard, and the generated per-policy kernels.
#include <catch2/catch.hpp>

#include "dk/autograd/autograd.h"
#include "dk/dispatch.h"
#include "dk/generated/TensorOperators.h"
#include "dk/generated/ops/abs.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/baddbmm.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/exp.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/linear.h"
#include "dk/generated/ops/max.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mse_loss.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/softmax.h"
#include "dk/generated/ops/stack.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/zeros.h"
#include "dk/modes.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/dispatch/tensor_factories.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/tensor/tensor_options.h"
#include "dk/tensor/type_promotion.h"

using namespace dk;

TEST_CASE("autocast: the keys are excluded by default and enabled by AutocastGuard") {
  CHECK(tls_is_dispatch_key_excluded(DispatchKey::AutocastCPU));
  CHECK_FALSE(autocast::is_enabled(DeviceType::CPU));
  {
    AutocastGuard guard(DeviceType::CPU, ScalarType::BFloat16);
    CHECK(autocast::is_enabled(DeviceType::CPU));
    CHECK_FALSE(tls_is_dispatch_key_excluded(DispatchKey::AutocastCPU));
    CHECK(autocast::get_autocast_dtype(DeviceType::CPU) == ScalarType::BFloat16);
    {
      AutocastGuard half(DeviceType::CPU, ScalarType::Half);
      CHECK(autocast::get_autocast_dtype(DeviceType::CPU) == ScalarType::Half);
    }
    CHECK(autocast::get_autocast_dtype(DeviceType::CPU) == ScalarType::BFloat16);
    CHECK_FALSE(autocast::is_enabled(DeviceType::CUDA));
  }
  CHECK_FALSE(autocast::is_enabled(DeviceType::CPU));
  CHECK_THROWS_WITH(AutocastGuard(DeviceType::CPU, ScalarType::Long),
                    "AutocastGuard: the autocast dtype must be a floating type, got Long");
}

TEST_CASE("autocast: PyTorch 1.13.1's CPU lists: mm in bfloat16, losses in float32, the rest unchanged") {
  dk::manual_seed(3);
  Tensor a = dk::randn({4, 3}), b = dk::randn({3, 5});
  Tensor x = dk::randn({2, 6}).to(ScalarType::BFloat16);
  {
    AutocastGuard guard(DeviceType::CPU, ScalarType::BFloat16);
    Tensor y = dk::mm(a, b);                      // lower_precision_fp
    CHECK(y.dtype() == ScalarType::BFloat16);
    Tensor l = dk::linear(a, dk::randn({2, 3}));  // a composite with its own policy
    CHECK(l.dtype() == ScalarType::BFloat16);
    CHECK(dk::baddbmm(a.unsqueeze(0), a.unsqueeze(0), dk::randn({1, 3, 3})).dtype() == ScalarType::BFloat16);
    CHECK(dk::mse_loss(x, x).dtype() == ScalarType::Float);  // fp32
    // Policies PyTorch has only on CUDA: on CPU these keep bfloat16.
    CHECK(dk::softmax(x, 1).dtype() == ScalarType::BFloat16);
    CHECK(dk::sum(x).dtype() == ScalarType::BFloat16);
    CHECK(dk::exp(x).dtype() == ScalarType::BFloat16);
    // No policy for binary operators: type promotion decides, a 0-dim float32 does not widen.
    CHECK(dk::add(x, dk::randn({2, 6})).dtype() == ScalarType::Float);
    CHECK(dk::add(x, dk::full({}, 1.0)).dtype() == ScalarType::BFloat16);
    // cat and stack promote to the widest floating type among their tensors (CPU's promote list).
    CHECK(dk::cat({x, dk::randn({1, 6}).to(ScalarType::Half)}).dtype() == ScalarType::Float);
    CHECK(dk::stack({x, x}).dtype() == ScalarType::BFloat16);
    CHECK(dk::relu(a).dtype() == ScalarType::Float);  // no policy: falls through unchanged
    CHECK(dk::mm(a.to(ScalarType::Long), b.to(ScalarType::Long)).dtype() == ScalarType::Long);  // not floating
    // float64 is never cast: a double mm stays double, a float/double mix fails as in PyTorch.
    Tensor ad = a.to(ScalarType::Double), bd = b.to(ScalarType::Double);
    CHECK(dk::mm(ad, bd).dtype() == ScalarType::Double);
    CHECK_THROWS(dk::mm(a, bd));
    // The bfloat16 product is close to the float32 one.
    Tensor ref;
    {
      ExcludeDispatchKeyGuard off(DispatchKey::AutocastCPU);
      ref = dk::mm(a, b);
    }
    Tensor diff = dk::abs(dk::sub(y.to(ScalarType::Float), ref));
    CHECK(std::get<0>(dk::max(diff.view({-1}), 0)).item().toDouble() < 0.1);
  }
  CHECK(dk::mm(a, b).dtype() == ScalarType::Float);
  auto mm = Dispatcher::singleton().findSchemaOrThrow("dk::mm", "");
  CHECK(mm.dumpComputedTable().find("AutocastCPU: AutocastCPU_mm [kernel]") != std::string::npos);
  auto relu = Dispatcher::singleton().findSchemaOrThrow("dk::relu", "");
  CHECK(relu.dumpComputedTable().find("AutocastCPU: fallthrough autocast_fallthrough (default) [backend fallback]") !=
        std::string::npos);
}

TEST_CASE("autocast: per-device policies: sum has a CUDA kernel (fp32_set_opt_dtype) and none on CPU") {
  auto sum = Dispatcher::singleton().findSchemaOrThrow("dk::sum", "");
  const std::string table = sum.dumpComputedTable();
  CHECK(table.find("AutocastCUDA: AutocastCUDA_sum [kernel]") != std::string::npos);
  CHECK(table.find("AutocastCPU: fallthrough autocast_fallthrough (default) [backend fallback]") != std::string::npos);
  // The policy's rule, on the device type at hand: an unset dtype becomes float32 for an eligible
  // first argument (floating, on that device type, not float64); a given dtype is kept.
  Tensor h = dk::zeros({2}, ScalarType::BFloat16);
  CHECK(autocast::set_opt_dtype(ScalarType::Float, std::nullopt, h, DeviceType::CPU) == ScalarType::Float);
  CHECK(autocast::set_opt_dtype(ScalarType::Float, ScalarType::Half, h, DeviceType::CPU) == ScalarType::Half);
  CHECK_FALSE(autocast::set_opt_dtype(ScalarType::Float, std::nullopt, h, DeviceType::CUDA).has_value());
  CHECK_FALSE(autocast::set_opt_dtype(ScalarType::Float, std::nullopt, dk::zeros({2}, ScalarType::Double),
                                      DeviceType::CPU).has_value());
  CHECK_FALSE(autocast::set_opt_dtype(ScalarType::Float, std::nullopt, dk::zeros({2}, ScalarType::Long),
                                      DeviceType::CPU).has_value());
  // cast and promote_type leave float64 alone.
  Tensor d = dk::zeros({2}, ScalarType::Double);
  CHECK(autocast::cast(ScalarType::BFloat16, d, DeviceType::CPU).dtype() == ScalarType::Double);
  CHECK(autocast::promote_type(ScalarType::BFloat16, DeviceType::CPU, d) == ScalarType::BFloat16);
  CHECK(autocast::promote_type(ScalarType::BFloat16, DeviceType::CPU, h.to(ScalarType::Float)) == ScalarType::Float);
}
