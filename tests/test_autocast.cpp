// Autocast: the AutocastCPU key, AutocastGuard, and the generated per-policy kernels.
#include <catch2/catch.hpp>

#include "dk/autograd/autograd.h"
#include "dk/dispatch.h"
#include "dk/generated/TensorOperators.h"
#include "dk/generated/ops/abs.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/linear.h"
#include "dk/generated/ops/max.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/softmax.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sum.h"
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

TEST_CASE("autocast: mm runs in bfloat16, softmax in float32, binary operators promote") {
  dk::manual_seed(3);
  Tensor a = dk::randn({4, 3}), b = dk::randn({3, 5});
  Tensor x = dk::randn({2, 6}).to(ScalarType::BFloat16);
  {
    AutocastGuard guard(DeviceType::CPU, ScalarType::BFloat16);
    Tensor y = dk::mm(a, b);                      // lower_precision_fp
    CHECK(y.dtype() == ScalarType::BFloat16);
    Tensor l = dk::linear(a, dk::randn({2, 3}));  // a composite with its own policy
    CHECK(l.dtype() == ScalarType::BFloat16);
    Tensor s = dk::softmax(x, 1);                 // fp32
    CHECK(s.dtype() == ScalarType::Float);
    CHECK(dk::sum(x).dtype() == ScalarType::Float);
    Tensor p = dk::add(x, dk::randn({2, 6}));     // promote: bfloat16 + float32 -> float32
    CHECK(p.dtype() == ScalarType::Float);
    CHECK(dk::add(x, x).dtype() == ScalarType::BFloat16);
    CHECK(dk::relu(a).dtype() == ScalarType::Float);  // no policy: falls through unchanged
    CHECK(dk::mm(a.to(ScalarType::Long), b.to(ScalarType::Long)).dtype() == ScalarType::Long);  // not floating
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
