// Grad mode and inference mode: two thread-local flags, and the key-set change InferenceMode makes.
#include "dk/core/grad_mode.h"

namespace dk {

namespace {
constinit thread_local bool tls_grad_mode_enabled = true;
constinit thread_local bool tls_inference_mode_enabled = false;
}  // namespace

bool GradMode::is_enabled() { return tls_grad_mode_enabled; }
void GradMode::set_enabled(bool enabled) { tls_grad_mode_enabled = enabled; }

InferenceMode::InferenceMode(bool enabled)
    : prev_enabled_(tls_inference_mode_enabled), prev_grad_mode_(tls_grad_mode_enabled) {
  // Only the autograd keys are excluded: normal tensors still reach ADInplaceOrView, which
  // keeps their version counters and views right; inference tensors lack the key, and with it
  // out of the included set their calls skip that slot.
  const DispatchKeySet ad_inplace_or_view(DispatchKey::ADInplaceOrView);
  tls_inference_mode_enabled = enabled;
  tls_grad_mode_enabled = !enabled;
  change_ = enabled ? detail::KeySetChange::apply({}, ad_inplace_or_view, autograd_dispatch_keyset, {})
                    : detail::KeySetChange::apply(ad_inplace_or_view, {}, {}, autograd_dispatch_keyset);
}

InferenceMode::~InferenceMode() {
  tls_inference_mode_enabled = prev_enabled_;
  tls_grad_mode_enabled = prev_grad_mode_;
  change_.undo();
}

bool InferenceMode::is_enabled() { return tls_inference_mode_enabled; }

}  // namespace dk
