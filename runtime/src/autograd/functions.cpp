// What generated autograd code calls (Note [Generated autograd] in dk/autograd/functions.h).
#include "dk/autograd/functions.h"

#include "dk/autograd/autograd_meta.h"
#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/generated/ops/clone.h"
#include "dk/util/error.h"

namespace dk::autograd {

void copy_range(variable_list& out, IndexRange range, const Tensor& t) {
  DK_CHECK(range.size() == 1 && range.end <= out.size(), "copy_range: one gradient for a range of ", range.size());
  out[range.begin] = t;
}

void copy_range(variable_list& out, IndexRange range, const std::vector<Tensor>& ts) {
  DK_CHECK(range.size() == ts.size() && range.end <= out.size(), "copy_range: ", ts.size(),
           " gradients for a range of ", range.size());
  for (size_t i = 0; i < ts.size(); ++i) out[range.begin + i] = ts[i];
}

void check_version_bump_allowed(const Tensor& t) {
  DK_CHECK(!t.defined() || !t.is_inference() || InferenceMode::is_enabled(),
           "Inplace update to inference tensor outside InferenceMode is not allowed. You can make a clone to get a "
           "normal tensor before doing inplace update.");
}

void increment_version(const Tensor& t) {
  if (t.defined()) t.unsafeGetTensorImpl()->bump_version();
}

void as_view(const Tensor& base, const Tensor& view, bool multi_output) {
  if (!view.defined() || !base.defined()) return;
  TensorImpl* view_impl = view.unsafeGetTensorImpl();
  TensorImpl* base_impl = base.unsafeGetTensorImpl();
  if (view_impl == base_impl) return;
  // A kernel that built its output with detail::make_view did this already; one that did not
  // gets it here: the view writes base's memory, so it must see base's version counter.
  if (!view_impl->is_view()) {
    view_impl->set_base(base_impl->is_view() ? base_impl->base() : base.getIntrusivePtr());
    view_impl->set_version_counter(base_impl->version_counter());
  }
  // A view of an inference tensor is an inference tensor: nothing for autograd to track.
  if (base.is_inference()) return;
  AutogradMeta& meta = materialize_autograd_meta(view);
  meta.is_view_ = true;
  // Note [View creation meta]
  meta.creation_meta_ = InferenceMode::is_enabled() ? CreationMeta::InferenceMode
                        : !GradMode::is_enabled()   ? CreationMeta::NoGradMode
                        : multi_output              ? CreationMeta::MultiOutputNode
                                                    : CreationMeta::Default;
  meta.attr_version_ = view_impl->version();
}

void as_view(const Tensor& base, const std::vector<Tensor>& views, bool multi_output) {
  for (const Tensor& v : views) as_view(base, v, multi_output);
}

namespace detail {

void check_out_not_requiring_grad(const char* op, bool requires_grad) {
  DK_CHECK(!requires_grad, op,
           "(): functions with out=... arguments don't support automatic differentiation, but one of the "
           "arguments requires grad.");
}

Tensor clone_for_backward(const Tensor& t) {
  AutoDispatchBelowADInplaceOrView below;
  return dk::clone(t);
}

std::vector<SavedVariable> save_list(ArrayRef<Tensor> ts) {
  std::vector<SavedVariable> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.emplace_back(t, false);
  return out;
}

std::vector<Tensor> unpack_list(const std::vector<SavedVariable>& saved) {
  std::vector<Tensor> out;
  out.reserve(saved.size());
  for (const SavedVariable& v : saved) out.push_back(v.unpack());
  return out;
}

std::optional<Tensor> unpack_optional(const SavedVariable& saved) {
  Tensor t = saved.unpack();
  return t.defined() ? std::optional<Tensor>(std::move(t)) : std::nullopt;
}

std::vector<std::vector<int64_t>> args_sizes(ArrayRef<Tensor> ts) {
  std::vector<std::vector<int64_t>> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(t.sizes());
  return out;
}

}  // namespace detail

}  // namespace dk::autograd
