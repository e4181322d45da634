// Thread-local included/excluded sets and the guards that change them.
#include <catch2/catch.hpp>

#include <memory>
#include <thread>

#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/layers/autocast.h"
#include "dk/tensor/tensor.h"

using namespace dk;

TEST_CASE("tls: a fresh thread starts from the default sets") {
  LocalDispatchKeySet seen{};
  std::thread([&] { seen = tls_local_dispatch_key_set(); }).join();
  CHECK(seen.included == default_included_set);
  CHECK(seen.excluded == default_excluded_set);
}

TEST_CASE("tls: guards add keys and restore only what they changed") {
  auto before = tls_local_dispatch_key_set();
  {
    IncludeDispatchKeyGuard inc(DispatchKeySet{DispatchKey::Python, DispatchKey::BackendSelect});
    CHECK(tls_is_dispatch_key_included(DispatchKey::Python));
    {
      // Already included: the inner guard changes nothing and must not remove it on exit.
      IncludeDispatchKeyGuard again(DispatchKey::Python);
    }
    CHECK(tls_is_dispatch_key_included(DispatchKey::Python));
  }
  CHECK(tls_local_dispatch_key_set().included == before.included);
  CHECK(tls_is_dispatch_key_included(DispatchKey::BackendSelect));  // was there before: kept

  {
    ExcludeDispatchKeyGuard ex(DispatchKey::AutocastCPU);  // excluded by default: no change
    ExcludeDispatchKeyGuard ex2(DispatchKey::Tracer);
    CHECK(tls_is_dispatch_key_excluded(DispatchKey::Tracer));
  }
  CHECK(tls_is_dispatch_key_excluded(DispatchKey::AutocastCPU));
  CHECK_FALSE(tls_is_dispatch_key_excluded(DispatchKey::Tracer));
  CHECK(tls_local_dispatch_key_set().excluded == before.excluded);
}

TEST_CASE("tls: AutoDispatchBelowAutograd and AutoDispatchBelowADInplaceOrView") {
  {
    AutoDispatchBelowAutograd guard;
    CHECK(tls_is_dispatch_key_excluded(DispatchKey::AutogradCPU));
    CHECK(tls_is_dispatch_key_excluded(DispatchKey::AutogradOther));
    CHECK_FALSE(tls_is_dispatch_key_excluded(DispatchKey::ADInplaceOrView));
  }
  {
    AutoDispatchBelowADInplaceOrView guard;
    CHECK(tls_is_dispatch_key_excluded(DispatchKey::AutogradMeta));
    CHECK(tls_is_dispatch_key_excluded(DispatchKey::ADInplaceOrView));
  }
  CHECK_FALSE(tls_is_dispatch_key_excluded(DispatchKey::AutogradCPU));
  CHECK_FALSE(tls_is_dispatch_key_excluded(DispatchKey::ADInplaceOrView));
}

TEST_CASE("tls: grad mode and NoGradGuard") {
  CHECK(GradMode::is_enabled());
  {
    NoGradGuard no_grad;
    CHECK_FALSE(GradMode::is_enabled());
    {
      NoGradGuard nested;
      CHECK_FALSE(GradMode::is_enabled());
    }
    CHECK_FALSE(GradMode::is_enabled());
  }
  CHECK(GradMode::is_enabled());
  bool other_thread = false;
  {
    NoGradGuard no_grad;
    std::thread([&] { other_thread = GradMode::is_enabled(); }).join();
  }
  CHECK(other_thread);  // thread-local
}

TEST_CASE("tls: inference mode excludes only autograd and makes tensors without autograd keys") {
  Tensor normal = make_tensor({2});
  CHECK(normal.key_set().has(DispatchKey::AutogradCPU));
  CHECK(normal.key_set().has(DispatchKey::ADInplaceOrView));
  CHECK_FALSE(normal.is_inference());
  {
    InferenceMode guard;
    CHECK(InferenceMode::is_enabled());
    CHECK_FALSE(GradMode::is_enabled());
    CHECK(tls_is_dispatch_key_excluded(DispatchKey::AutogradCUDA));
    // Normal tensors still reach ADInplaceOrView (they carry it); inference tensors skip it.
    CHECK_FALSE(tls_is_dispatch_key_excluded(DispatchKey::ADInplaceOrView));
    CHECK_FALSE(tls_is_dispatch_key_included(DispatchKey::ADInplaceOrView));
    Tensor t = make_tensor({2}, ScalarType::Float, Device(DeviceType::CUDA, 0));
    CHECK(t.key_set() == DispatchKeySet(DispatchKey::CUDA));
    CHECK(t.is_inference());
    {
      InferenceMode off(false);
      CHECK_FALSE(InferenceMode::is_enabled());
      CHECK(GradMode::is_enabled());
      CHECK_FALSE(tls_is_dispatch_key_excluded(DispatchKey::AutogradCUDA));
      CHECK(tls_is_dispatch_key_included(DispatchKey::ADInplaceOrView));
    }
    CHECK_FALSE(tls_is_dispatch_key_included(DispatchKey::ADInplaceOrView));
    CHECK(InferenceMode::is_enabled());
  }
  CHECK_FALSE(InferenceMode::is_enabled());
  CHECK(GradMode::is_enabled());
  CHECK(tls_local_dispatch_key_set().excluded == default_excluded_set);
}

TEST_CASE("tls: guards destroyed out of order undo only their own change") {
  const LocalDispatchKeySet defaults = tls_local_dispatch_key_set();
  const DispatchKey k = DispatchKey::TESTING_ONLY_GenericMode;
  SECTION("InferenceMode outlives an IncludeDispatchKeyGuard made before it") {
    auto include = std::make_unique<IncludeDispatchKeyGuard>(k);
    auto inference = std::make_unique<InferenceMode>();
    include.reset();  // out of order
    CHECK_FALSE(tls_is_dispatch_key_included(k));
    inference.reset();
    CHECK_FALSE(tls_is_dispatch_key_included(k));  // not re-added by the InferenceMode
  }
  SECTION("an ExcludeDispatchKeyGuard ends inside InferenceMode") {
    auto exclude = std::make_unique<ExcludeDispatchKeyGuard>(DispatchKey::AutogradFunctionality);
    auto inference = std::make_unique<InferenceMode>();
    exclude.reset();  // it added the exclusion; InferenceMode found it there and added nothing
    inference.reset();
    CHECK_FALSE(tls_is_dispatch_key_excluded(DispatchKey::AutogradCPU));
  }
  SECTION("AutocastGuard outlives an IncludeDispatchKeyGuard made before it") {
    auto include = std::make_unique<IncludeDispatchKeyGuard>(k);
    auto autocast = std::make_unique<AutocastGuard>(DeviceType::CPU, ScalarType::BFloat16);
    CHECK(tls_is_dispatch_key_included(DispatchKey::AutocastCPU));
    include.reset();
    autocast.reset();
    CHECK_FALSE(tls_is_dispatch_key_included(k));
    CHECK_FALSE(tls_is_dispatch_key_included(DispatchKey::AutocastCPU));
    CHECK(tls_is_dispatch_key_excluded(DispatchKey::AutocastCPU));
  }
  CHECK(tls_local_dispatch_key_set().included == defaults.included);
  CHECK(tls_local_dispatch_key_set().excluded == defaults.excluded);
}
