// Functionalization: functional tensors, the kernels at Functionalize and functionalize(f)
// (Note [Functionalization]).
#include "dk/func/functionalize.h"

#include <optional>
#include <string>
#include <utility>

#include "dk/dispatch/dispatcher.h"
#include "dk/func/dynamic_layer.h"
#include "dk/func/lazy_operator.h"
#include "dk/generated/ops/_to_copy_ops.h"
#include "dk/generated/ops/copy_ops.h"

namespace dk::func {

namespace {

constexpr DispatchKey kFunctionalize = DispatchKey::Functionalize;

// The key set of a functional tensor: its value's (autograd and inference state included, so a
// grad wrapper made of it records), less the keys of other transforms' wrappers and of fake
// tensors, plus Functionalize. While the layer runs, calls reach it through the front fallback,
// which excludes autograd for that hop (Note [Dynamic layer stack]).
DispatchKeySet functionalKeySet(const Tensor& value) {
  return value.key_set()
      .remove(DispatchKey::FuncTorchDynamicLayerFrontMode)
      .remove(DispatchKey::FuncTorchBatched)
      .remove(DispatchKey::Python)
      .add(kFunctionalize);
}

std::vector<int64_t> vec(const std::vector<int64_t>& v) { return v; }

bool innermostIsFunctionalize() {
  const std::vector<DynamicLayer>& layers = dynamicLayerStack();
  return !layers.empty() && layers.back().type == TransformType::Functionalize;
}

// For a kernel's calls on the values: below the functionalize layer when it is the innermost
// (Note [Dynamic layer stack]); otherwise (a functional tensor used after its transform returned,
// or reached from a batching rule of a vmap inside the transform) with Functionalize excluded, so
// the calls go on below it (a layer they reach restores its own key sets).
class BelowFunctionalize {
 public:
  BelowFunctionalize() {
    if (innermostIsFunctionalize()) {
      below_.emplace();
    } else {
      change_ = detail::KeySetChange::apply({}, {}, DispatchKeySet(kFunctionalize), {});
    }
  }
  ~BelowFunctionalize() { change_.undo(); }
  BelowFunctionalize(const BelowFunctionalize&) = delete;
  BelowFunctionalize& operator=(const BelowFunctionalize&) = delete;

 private:
  std::optional<LayersBelowScope> below_;
  detail::KeySetChange change_;
};

// Functional tensors are unwrapped to their current values; anything else is kept.
Tensor unwrapSynced(const Tensor& t) {
  FunctionalTensor* f = maybeFunctional(t);
  if (f == nullptr) return t;
  f->sync();
  return f->value();
}

bool anyFunctionalArgument(const Stack& stack, size_t base, bool* any_tensor) {
  bool functional = false;
  for (size_t i = base; i < stack.size(); ++i) {
    IValue v = stack[i];
    mapTensors(v, [&](const Tensor& t) {
      if (t.defined()) *any_tensor = true;
      functional = functional || maybeFunctional(t) != nullptr;
      return t;
    });
  }
  return functional;
}

[[noreturn]] void refuse(const OperatorHandle& op, const std::string& why) {
  DK_ERROR("functionalize: cannot functionalize ", op.operator_name(), ": ", why,
           " (the operators it cannot functionalize are listed at the end of RegisterFunctionalization.cpp)");
}

// Note [Functionalization]: operators that only read their arguments.
void functionalizeFallback(const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  const FunctionSchema& schema = op.schema();
  for (const Argument& a : schema.arguments())
    if (a.alias_info && a.alias_info->is_write) refuse(op, "it writes its argument '" + a.name + "' and has no functional form");
  for (const Argument& r : schema.returns())
    if (r.alias_info) refuse(op, "it returns a view of an argument and has no view copy");
  const size_t base = stack->size() - schema.arguments().size();
  bool any_tensor = false;
  // Results are functional when an argument was, and a factory's when the layer runs (its
  // included Functionalize brought the call here); an operator on captured plain tensors only
  // gives plain results.
  const bool wrap = anyFunctionalArgument(*stack, base, &any_tensor) || (!any_tensor && innermostIsFunctionalize());
  BelowFunctionalize below;
  for (size_t i = base; i < stack->size(); ++i) mapTensors((*stack)[i], unwrapSynced);
  op.callBoxed(stack);
  if (!wrap) return;
  const size_t rbase = stack->size() - schema.returns().size();
  for (size_t i = rbase; i < stack->size(); ++i) mapTensors((*stack)[i], [](const Tensor& t) { return toFunctional(t); });
}

[[maybe_unused]] RegistrationHandleRAII* const g_fallback = new RegistrationHandleRAII(
    Dispatcher::singleton().registerDefaultFallback(
        kFunctionalize, KernelFunction::makeFromBoxedFunction<&functionalizeFallback>(), "functionalize (default)"));

// Note [Functionalization]: an in-place or out= operator as its functional form plus write-back.
struct MutationKernel : OperatorKernel {
  explicit MutationKernel(const char* functional) : functional(functional) {}
  LazyOperator functional;
};

void functionalizeMutationBoxed(OperatorKernel* kernel, const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  const OperatorHandle& functional = static_cast<MutationKernel*>(kernel)->functional.get();
  const FunctionSchema& schema = op.schema();
  const auto& args = schema.arguments();
  const size_t n = args.size();
  const size_t m = functional.schema().arguments().size();  // the arguments less the out= ones
  const size_t base = stack->size() - n;
  std::vector<IValue> inputs(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  std::vector<size_t> written;
  for (size_t i = 0; i < n; ++i) {
    if (!args[i].alias_info || !args[i].alias_info->is_write) continue;
    written.push_back(i);
    DK_CHECK(maybeFunctional(inputs[i].toTensor()) != nullptr, "functionalize: ", op.operator_name(),
             " writes into its argument '", args[i].name, "', which is not a functional tensor: a tensor made outside "
             "the functionalized function cannot be written inside it; pass it as an input");
  }
  BelowFunctionalize below;
  Stack call;
  call.reserve(m);
  for (size_t i = 0; i < m; ++i) {
    IValue v = inputs[i];
    mapTensors(v, unwrapSynced);
    call.push_back(std::move(v));
  }
  functional.callBoxed(&call);
  DK_CHECK(call.size() == written.size(), "functionalize: ", functional.operator_name(), " gave ", call.size(),
           " results for the ", written.size(), " arguments ", op.operator_name(), " writes");
  for (size_t k = 0; k < written.size(); ++k) {
    const Argument& a = args[written[k]];
    FunctionalTensor* target = maybeFunctional(inputs[written[k]].toTensor());
    Tensor result = call[k].toTensor();
    if (!a.is_out()) {
      // In place: the result keeps the written tensor's shape and dtype (eq_ writes booleans
      // as self's dtype), as the eager kernel does.
      DK_CHECK(result.sizes() == target->value().sizes(), "output with shape ", IntArrayRef(target->value().sizes()),
               " doesn't match the broadcast shape ", IntArrayRef(result.sizes()));
      if (result.dtype() != target->dtype())
        result = ops::_to_copy::call(result, target->dtype(), std::nullopt, std::nullopt, std::nullopt, false, std::nullopt);
    }
    target->commit(std::move(result));
  }
  stack->resize(base);
  for (size_t j = 0; j < schema.returns().size(); ++j) {
    std::optional<size_t> i = writtenArgumentOfReturn(schema, j);
    DK_CHECK(i.has_value(), "functionalize: ", op.operator_name(), " returns something other than its written arguments");
    stack->push_back(inputs[*i]);
  }
}

// Note [Functionalization]: a view as its view copy, remembering how to replay and invert it.
struct ViewKernel : OperatorKernel {
  ViewKernel(const char* view_copy, ViewInverse* inverse) : view_copy(view_copy), inverse(inverse) {}
  LazyOperator view_copy;
  ViewInverse* inverse;
};

void functionalizeViewBoxed(OperatorKernel* kernel, const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  auto* self = static_cast<ViewKernel*>(kernel);
  const OperatorHandle& copy = self->view_copy.get();
  const size_t n = op.schema().arguments().size();
  const size_t base = stack->size() - n;
  FunctionalTensor* input = maybeFunctional((*stack)[base].toTensor());
  BelowFunctionalize below;
  if (input == nullptr) {  // a view of a captured plain tensor: a plain view
    for (size_t i = base; i < stack->size(); ++i) mapTensors((*stack)[i], unwrapSynced);
    op.callBoxed(stack);
    return;
  }
  input->sync();
  // The view's arguments, kept for replays and the inverse; its input is the base they get.
  auto args = std::make_shared<Stack>(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  (*args)[0] = IValue();
  for (size_t i = 1; i < args->size(); ++i) mapTensors((*args)[i], unwrapSynced);
  Stack call = *args;
  call[0] = IValue(input->value());
  copy.callBoxed(&call);
  const bool is_list = call[0].isList();
  std::vector<IValue> outputs = is_list ? call[0].toListElements() : std::vector<IValue>{call[0]};
  const OperatorHandle copy_op = copy;
  ViewInverse* inverse = self->inverse;
  for (size_t k = 0; k < outputs.size(); ++k) {
    ViewMeta meta;
    meta.forward = [copy_op, args, k, is_list](const Tensor& from) {
      Stack s = *args;
      s[0] = IValue(from);
      copy_op.callBoxed(&s);
      return is_list ? s[0].toListElements()[k].toTensor() : s[0].toTensor();
    };
    meta.reverse = [inverse, args, k](const Tensor& from, const Tensor& mutated_view) {
      return inverse(from, mutated_view, *args, k);
    };
    outputs[k] = IValue(Tensor(make_intrusive<FunctionalTensor>(outputs[k].toTensor(), *input, std::move(meta))));
  }
  stack->resize(base);
  stack->push_back(is_list ? IValue::makeList(call[0].listElementType(), std::move(outputs)) : outputs[0]);
}

}  // namespace

FunctionalTensor::FunctionalTensor(Tensor value)
    : TensorImpl(Storage(), functionalKeySet(value), value.dtype(), value.device(), vec(value.sizes()),
                 vec(value.strides()), 0),
      value_(std::move(value)),
      storage_(std::make_shared<FunctionalStorage>()) {
  storage_->base = value_;
}

FunctionalTensor::FunctionalTensor(Tensor value, const FunctionalTensor& of, ViewMeta meta)
    : TensorImpl(Storage(), functionalKeySet(value), value.dtype(), value.device(), vec(value.sizes()),
                 vec(value.strides()), 0),
      value_(std::move(value)),
      storage_(of.storage_),
      metas_(of.metas_),
      generation_(of.generation_) {
  metas_.push_back(std::move(meta));
}

void FunctionalTensor::setValue(Tensor value) {
  set_sizes_and_strides(vec(value.sizes()), vec(value.strides()));
  dtype_ = value.dtype();
  value_ = std::move(value);
}

void FunctionalTensor::sync() {
  if (generation_ == storage_->generation) return;
  Tensor v = storage_->base;
  for (const ViewMeta& meta : metas_) v = meta.forward(v);
  setValue(std::move(v));
  generation_ = storage_->generation;
}

void FunctionalTensor::commit(Tensor value) {
  if (metas_.empty()) {
    storage_->base = value;
  } else {
    // The views from the base down to this one's input, then the inverses back up.
    std::vector<Tensor> chain{storage_->base};
    for (size_t k = 0; k + 1 < metas_.size(); ++k) chain.push_back(metas_[k].forward(chain.back()));
    Tensor written = value;
    for (size_t k = metas_.size(); k-- > 0;) written = metas_[k].reverse(chain[k], written);
    storage_->base = std::move(written);
  }
  ++storage_->generation;
  setValue(std::move(value));
  generation_ = storage_->generation;
}

intrusive_ptr<TensorImpl> FunctionalTensor::shallow_copy_without_history() const {
  auto copy = make_intrusive<FunctionalTensor>(value_);
  copy->storage_ = storage_;
  copy->metas_ = metas_;
  copy->generation_ = generation_;
  copy->set_version_counter(version_counter());
  return copy;
}

FunctionalTensor* maybeFunctional(const Tensor& t) {
  if (!t.key_set().has(kFunctionalize)) return nullptr;
  return dynamic_cast<FunctionalTensor*>(t.unsafeGetTensorImpl());
}

Tensor toFunctional(const Tensor& t) {
  if (!t.defined() || maybeFunctional(t) != nullptr) return t;
  return Tensor(make_intrusive<FunctionalTensor>(t));
}

Tensor fromFunctional(const Tensor& t) { return unwrapSynced(t); }

std::vector<Tensor> runFunctionalized(const TensorsFn& f, const std::vector<Tensor>& inputs,
                                      std::vector<Tensor>* written) {
  std::vector<Tensor> outputs;
  written->assign(inputs.size(), Tensor());
  DynamicLayerScope layer{DynamicLayerScope::Functionalize{}};
  std::vector<Tensor> wrapped;
  wrapped.reserve(inputs.size());
  for (const Tensor& x : inputs) wrapped.push_back(x.defined() ? Tensor(make_intrusive<FunctionalTensor>(x)) : x);
  std::vector<Tensor> results = f(wrapped);
  BelowFunctionalize below;
  for (const Tensor& r : results) outputs.push_back(unwrapSynced(r));
  for (size_t i = 0; i < inputs.size(); ++i) {
    FunctionalTensor* w = maybeFunctional(wrapped[i]);
    if (w != nullptr && w->was_written()) (*written)[i] = unwrapSynced(wrapped[i]);
  }
  return outputs;
}

TensorsFn functionalize(TensorsFn f) {
  return [f = std::move(f)](const std::vector<Tensor>& inputs) {
    std::vector<Tensor> written;
    std::vector<Tensor> outputs = runFunctionalized(f, inputs, &written);
    // Inputs f wrote take their new values, outside the layer (functorch's input mutations).
    for (size_t i = 0; i < inputs.size(); ++i)
      if (written[i].defined()) ops::copy_::call(inputs[i], written[i], false);
    return outputs;
  };
}

CppFunction functionalizeMutation(const char* functional) {
  return boxedKernelWith(std::make_shared<MutationKernel>(functional), &functionalizeMutationBoxed,
                         std::string("functionalize as ") + functional);
}

CppFunction functionalizeView(const char* view_copy, ViewInverse* inverse) {
  return boxedKernelWith(std::make_shared<ViewKernel>(view_copy, inverse), &functionalizeViewBoxed,
                         std::string("functionalize as ") + view_copy);
}

}  // namespace dk::func
