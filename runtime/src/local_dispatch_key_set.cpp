// Thread-local dispatch state: included/excluded sets, grad mode, inference mode.
#include "dk/local_dispatch_key_set.h"

namespace dk {

namespace detail {
constinit thread_local ThreadDispatchKeys tls_dispatch_keys __attribute__((tls_model("initial-exec"))) = {
    default_included_set, ~default_excluded_set.raw_repr()};
}  // namespace detail

namespace {
constinit thread_local bool tls_grad_mode_enabled = true;
constinit thread_local bool tls_inference_mode_enabled = false;
}  // namespace

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet ks) {
  auto& tls = detail::tls_dispatch_keys;
  added_ = DispatchKeySet::fromRaw(ks.raw_repr() & ~tls.included.raw_repr());
  tls.included = tls.included | added_;
}

IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() {
  auto& tls = detail::tls_dispatch_keys;
  tls.included = DispatchKeySet::fromRaw(tls.included.raw_repr() & ~added_.raw_repr());
}

ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet ks) {
  auto& tls = detail::tls_dispatch_keys;
  uint64_t wanted = ks.raw_repr() & kFunctionalityMask;
  added_ = DispatchKeySet::fromRaw(wanted & tls.allowed);
  tls.allowed &= ~added_.raw_repr();
}

ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() {
  auto& tls = detail::tls_dispatch_keys;
  tls.allowed |= added_.raw_repr();
}

bool GradMode::is_enabled() { return tls_grad_mode_enabled; }
void GradMode::set_enabled(bool enabled) { tls_grad_mode_enabled = enabled; }

InferenceMode::InferenceMode(bool enabled)
    : prev_enabled_(tls_inference_mode_enabled),
      prev_grad_mode_(tls_grad_mode_enabled),
      prev_keys_(detail::tls_dispatch_keys) {
  auto& tls = detail::tls_dispatch_keys;
  tls_inference_mode_enabled = enabled;
  if (enabled) {
    tls_grad_mode_enabled = false;
    tls.allowed &= ~((autograd_dispatch_keyset | DispatchKeySet(DispatchKey::ADInplaceOrView)).raw_repr() &
                     kFunctionalityMask);
  } else {
    // InferenceMode(false) inside an inference block restores normal autograd dispatch.
    tls_grad_mode_enabled = true;
    tls.set_excluded(tls.excluded() - (autograd_dispatch_keyset | DispatchKeySet(DispatchKey::ADInplaceOrView)));
  }
}

InferenceMode::~InferenceMode() {
  tls_inference_mode_enabled = prev_enabled_;
  tls_grad_mode_enabled = prev_grad_mode_;
  detail::tls_dispatch_keys = prev_keys_;
}

bool InferenceMode::is_enabled() { return tls_inference_mode_enabled; }

}  // namespace dk
