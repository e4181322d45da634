// vmap: levels, the inputs' and outputs' batch dims, the for-loop fallback at FuncTorchBatched
// and the batching rules of the view and list operators the fallback and vmap itself use
// (Note [vmap], Note [Batched tensors]).
#include "dk/func/vmap.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>

#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/library.h"
#include "dk/func/batched_tensor.h"
#include "dk/func/batching_rules.h"
#include "dk/func/dynamic_layer.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/cat_native.h"
#include "dk/generated/ops/detach_native.h"
#include "dk/generated/ops/expand_native.h"
#include "dk/generated/ops/mm_native.h"
#include "dk/generated/ops/permute_native.h"
#include "dk/generated/ops/repeat_native.h"
#include "dk/generated/ops/reshape_native.h"
#include "dk/generated/ops/select_native.h"
#include "dk/generated/ops/select_scatter.h"
#include "dk/generated/ops/select_scatter_native.h"
#include "dk/generated/ops/slice_native.h"
#include "dk/generated/ops/slice_scatter.h"
#include "dk/generated/ops/slice_scatter_native.h"
#include "dk/generated/ops/split_native.h"
#include "dk/generated/ops/squeeze_native.h"
#include "dk/generated/ops/stack_native.h"
#include "dk/generated/ops/t_native.h"
#include "dk/generated/ops/transpose_native.h"
#include "dk/generated/ops/unbind_native.h"
#include "dk/generated/ops/unsqueeze_native.h"
#include "dk/generated/ops/view_native.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/matmul.h"
#include "dk/generated/ops/permute.h"
#include "dk/generated/ops/select.h"
#include "dk/generated/ops/stack.h"
#include "dk/generated/ops/unsqueeze.h"

namespace dk::func {

namespace {

std::atomic<bool> g_warn_fallback{true};

int64_t wrapDim(int64_t dim, int64_t ndim, const char* what) {
  DK_CHECK(dim >= -ndim && dim < ndim, what, ": dim ", dim, " is out of range for ", ndim, " dims (expected ", -ndim,
           " <= dim < ", ndim, ")");
  return dim < 0 ? dim + ndim : dim;
}

// "0", "None", "(0, None)": the dims as functorch prints them in its messages.
std::string dimsText(const std::vector<BatchDim>& dims) {
  auto one = [](const BatchDim& d) { return d ? std::to_string(*d) : std::string("None"); };
  if (dims.size() == 1) return one(dims[0]);
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + one(dims[i]);
  return text + ")";
}

const BatchDim& dimFor(const std::vector<BatchDim>& dims, size_t i) { return dims.size() == 1 ? dims[0] : dims[i]; }

// The value's batch dim moved from the front to `target` (a view).
Tensor moveFrontTo(const Tensor& value, int64_t target) {
  if (target == 0) return value;
  std::vector<int64_t> order(static_cast<size_t>(value.dim()));
  std::iota(order.begin(), order.end(), 1);
  order[static_cast<size_t>(target)] = 0;
  for (int64_t d = 0; d < target; ++d) order[static_cast<size_t>(d)] = d + 1;
  for (int64_t d = target + 1; d < value.dim(); ++d) order[static_cast<size_t>(d)] = d;
  return value.permute(order);
}

// `t` (not batched at this level) repeated over a batch of `batch` at the front: a broadcast view.
Tensor broadcastFront(const Tensor& t, int64_t batch) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  sizes.insert(sizes.begin(), batch);
  return t.unsqueeze(0).expand(sizes);
}

std::vector<Tensor> runVmap(const TensorsFn& f, const std::vector<BatchDim>& in_dims,
                            const std::vector<BatchDim>& out_dims, Randomness randomness,
                            const std::vector<Tensor>& inputs) {
  // The messages' prefix, built only for an error.
  auto call = [&] { return "vmap(f, in_dims=" + dimsText(in_dims) + ", ...)(<inputs>)"; };
  DK_CHECK(!inputs.empty(), "vmap(f)(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying to "
           "vmap over a function with no inputs. The latter is unsupported.");
  DK_CHECK(in_dims.size() == 1 || in_dims.size() == inputs.size(), call(),
           ": in_dims is not compatible with the structure of `inputs`. in_dims has ", in_dims.size(),
           " entries but inputs has ", inputs.size(), ".");
  std::vector<int64_t> batch_sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BatchDim& d = dimFor(in_dims, i);
    if (!d) continue;
    DK_CHECK(inputs[i].defined(), call(), ": Got in_dim=", *d, " for input ", i, ", but that input is an undefined tensor.");
    const int64_t n = inputs[i].dim();
    DK_CHECK(*d >= -n && *d < n, call(), ": Got in_dim=", *d, " for some input, but that input is a Tensor of "
             "dimensionality ", n, " so expected in_dim to satisfy ", -n, " <= in_dim < ", n, ".");
    batch_sizes.push_back(inputs[i].size(*d));
  }
  DK_CHECK(!batch_sizes.empty(), call(), ": at least one input must be mapped, but every in_dim is None.");
  if (std::adjacent_find(batch_sizes.begin(), batch_sizes.end(), std::not_equal_to<>()) != batch_sizes.end()) {
    std::ostringstream sizes;
    for (size_t i = 0; i < batch_sizes.size(); ++i) sizes << (i ? ", " : "") << batch_sizes[i];
    DK_ERROR("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes [", sizes.str(),
             "] for the mapped dimension");
  }
  const int64_t batch = batch_sizes[0];

  std::vector<Tensor> outputs;
  DynamicLayerScope scope(batch, randomness);
  {
    std::vector<Tensor> wrapped;
    wrapped.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const BatchDim& d = dimFor(in_dims, i);
      wrapped.push_back(d ? makeBatched(inputs[i], *d, scope.level()) : inputs[i]);
    }
    outputs = f(wrapped);
  }
  DK_CHECK(out_dims.size() == 1 || out_dims.size() == outputs.size(), "vmap(f, ..., out_dims=", dimsText(out_dims),
           "): out_dims is not compatible with the structure of `outputs`. out_dims has ", out_dims.size(),
           " entries but f returned ", outputs.size(), " outputs.");
  std::vector<Tensor> results;
  results.reserve(outputs.size());
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Tensor& out = outputs[j];
    const BatchDim& d = dimFor(out_dims, j);
    const BatchedTensorImpl* b = out.defined() ? batchedAt(out, scope.level()) : nullptr;
    if (!d) {
      DK_CHECK(b == nullptr, "vmap(f, ..., out_dims=", dimsText(out_dims), "): f can not return a BatchedTensor "
               "when out_dim is None (output ", j, " depends on a mapped input)");
      results.push_back(out);
      continue;
    }
    DK_CHECK(out.defined(), "vmap(f, ..., out_dims=", dimsText(out_dims), "): output ", j,
             " is an undefined tensor; its out_dim must be None");
    const int64_t target = wrapDim(*d, out.dim() + 1, "vmap: out_dim");
    results.push_back(moveFrontTo(b ? valueWithBdimFirst(*b) : broadcastFront(out, batch), target));
  }
  return results;
}

// ---------------------------------------------------------------- the for-loop fallback

std::mutex g_warned_mutex;
std::set<std::string> g_warned;  // operators the fallback has warned about

void warnOnce(const OperatorHandle& op) {
  if (!g_warn_fallback.load(std::memory_order_relaxed)) return;
  const std::string name = op.operator_name().toString();
  {
    std::lock_guard<std::mutex> lock(g_warned_mutex);
    if (!g_warned.insert(name).second) return;
  }
  warn("vmap: there is a performance drop because " + name + " has no batching rule: it runs once per batch "
       "element and the results are stacked. Add a batching rule for it to run once for the whole batch.");
}

void batchedFallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  // An operator defined by a CompositeImplicitAutograd kernel runs it: its decomposition calls
  // operators on the batched tensors, which reach their own rules (the kernel is in the
  // operator's backend slots).
  if (op.hasKernelForDispatchKey(DispatchKey::CompositeImplicitAutograd) &&
      !op.hasKernelForDispatchKey(DispatchKey::CompositeExplicitAutograd) && !op.hasKernelForDispatchKey(DispatchKey::CPU)) {
    CallAsFromOutsideLayer fresh;
    op.redispatchBoxed(ks & backend_dispatch_keyset, stack);
    return;
  }
  const FunctionSchema& schema = op.schema();
  const std::string name = op.operator_name().name;  // "dk::add_", as PyTorch's messages name it
  const size_t n = schema.arguments().size();
  DK_CHECK(stack->size() >= n, "vmap fallback for ", op.operator_name(), ": ", n, " arguments expected, the stack has ",
           stack->size());
  const size_t base = stack->size() - n;
  const int64_t level = highestBatchLevel(stack->data() + base, n);
  DK_CHECK(level > 0, "vmap fallback for ", op.operator_name(), " ran without a batched argument");
  for (size_t i = 0; i < n; ++i) {
    const IValue& v = (*stack)[base + i];
    if (!v.isList()) continue;
    for (const IValue& e : v.toListElements())
      DK_CHECK(!e.isTensor() || maybeBatched(e.toTensor()) == nullptr, "Batching rule not implemented for ", name,
               ". We could not generate a fallback.");
  }
  for (const Argument& r : schema.returns())
    DK_CHECK(r.type.kind() == TypeKind::Tensor, "Batching rule not implemented for ", name,
             ". We could not generate a fallback.");
  const bool inplace = isInplaceSchema(schema);
  if (!inplace) {
    bool aliases = schema.is_mutable();
    for (const Argument& r : schema.returns()) aliases = aliases || r.alias_info.has_value();
    DK_CHECK(!aliases, "Batching rule not implemented for ", name, "; the fallback path doesn't work on out= or view "
             "ops.");
  }
  // Each argument batched at this level, with its batch dim first; the batch size.
  std::vector<Tensor> firsts(n);
  int64_t batch = -1;
  for (size_t i = 0; i < n; ++i) {
    const IValue& v = (*stack)[base + i];
    if (!v.isTensor()) continue;
    if (const BatchedTensorImpl* b = batchedAt(v.toTensor(), level)) {
      firsts[i] = valueWithBdimFirst(*b);
      batch = firsts[i].size(0);
    }
  }
  if (inplace && !firsts[0].defined()) {
    DK_ERROR("vmap: ", name, "(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args "
             "that has more elements than `self`. This happened due to `other` being vmapped over but `self` not being "
             "vmapped over at level ", level, ". Please try to use out-of-place operators instead of ", name, ".");
  }
  warnOnce(op);
  const size_t nrets = schema.returns().size();
  std::vector<std::vector<Tensor>> per_return(nrets);
  // Each element's call is below this vmap: a random operator there draws for that element
  // alone, not through the randomness rule again (Note [vmap randomness]).
  ExcludeDispatchKeyGuard below_vmap_mode(DispatchKey::FuncTorchVmapMode);
  for (int64_t e = 0; e < batch; ++e) {
    Stack s;
    s.reserve(n);
    for (size_t i = 0; i < n; ++i)
      s.push_back(firsts[i].defined() ? IValue(firsts[i].select(0, e)) : (*stack)[base + i]);
    op.callBoxed(&s);
    for (size_t r = 0; r < nrets; ++r) per_return[r].push_back(std::move(s[r]).toTensor());
  }
  IValue self = inplace ? (*stack)[base] : IValue();
  stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end());
  if (inplace) {
    stack->push_back(std::move(self));  // the slices were views of its value: written in place
    return;
  }
  for (size_t r = 0; r < nrets; ++r) stack->push_back(IValue(makeBatched(dk::stack(per_return[r], 0), 0, level)));
}

// ---------------------------------------------------------------- batching rules
// Views and lists, which the fallback cannot run (a view of stacked copies would not alias the
// input) and which vmap and the fallback use themselves, and mm. Each runs the operator once
// on the value, with the batch dim first, and wraps the result at the same level.

const BatchedTensorImpl& batchedSelf(const Tensor& self) {
  const BatchedTensorImpl* b = maybeBatched(self);
  DK_CHECK(b != nullptr, "vmap: a batching rule ran for a tensor that is not batched");
  return *b;
}

}  // namespace

// The rules (declared by the generator in each operator's <op>_native.h: the YAML names them at
// FuncTorchBatched, RegisterFuncTorchBatched.cpp registers them).

Tensor select_batched(const Tensor& self, int64_t dim, int64_t index) {
  const BatchedTensorImpl& b = batchedSelf(self);
  const int64_t d = wrapDim(dim, self.dim(), "select()");
  return makeBatched(valueWithBdimFirst(b).select(d + 1, index), 0, b.level());
}

Tensor permute_batched(const Tensor& self, IntArrayRef dims) {
  const BatchedTensorImpl& b = batchedSelf(self);
  DK_CHECK(static_cast<int64_t>(dims.size()) == self.dim(), "number of dims don't match in permute");
  std::vector<int64_t> physical{0};
  for (int64_t d : dims) physical.push_back(wrapDim(d, self.dim(), "permute()") + 1);
  return makeBatched(valueWithBdimFirst(b).permute(physical), 0, b.level());
}

Tensor unsqueeze_batched(const Tensor& self, int64_t dim) {
  const BatchedTensorImpl& b = batchedSelf(self);
  const int64_t d = wrapDim(dim, self.dim() + 1, "unsqueeze()");
  return makeBatched(valueWithBdimFirst(b).unsqueeze(d + 1), 0, b.level());
}

Tensor expand_batched(const Tensor& self, IntArrayRef size, bool implicit) {
  const BatchedTensorImpl& b = batchedSelf(self);
  DK_CHECK(static_cast<int64_t>(size.size()) >= self.dim(), "expand(size=", size, "): the number of sizes provided (",
           size.size(), ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
  Tensor value = valueWithBdimFirst(b);
  // New leading dims go after the batch dim.
  for (size_t i = static_cast<size_t>(self.dim()); i < size.size(); ++i) value = value.unsqueeze(1);
  std::vector<int64_t> physical{value.size(0)};
  physical.insert(physical.end(), size.begin(), size.end());
  return makeBatched(value.expand(physical, implicit), 0, b.level());
}

Tensor stack_batched(ArrayRef<Tensor> tensors, int64_t dim) {
  DK_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  int64_t level = 0;
  int64_t batch = -1;
  for (const Tensor& t : tensors) {
    if (const BatchedTensorImpl* b = maybeBatched(t); b != nullptr && b->level() >= level) {
      if (b->level() > level) batch = b->value().size(b->bdim());
      level = b->level();
    }
  }
  std::vector<Tensor> physical;
  physical.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    const BatchedTensorImpl* b = batchedAt(t, level);
    physical.push_back(b ? valueWithBdimFirst(*b) : broadcastFront(t, batch));
  }
  const int64_t d = wrapDim(dim, tensors[0].dim() + 1, "stack()");
  return makeBatched(dk::stack(physical, d + 1), 0, level);
}

Tensor transpose_batched(const Tensor& self, int64_t dim0, int64_t dim1) {
  const BatchedTensorImpl& b = batchedSelf(self);
  if (self.dim() == 0) {  // transpose of a 0-dim tensor takes dims 0 / -1 and changes nothing
    wrapDim(dim0, 1, "transpose()");
    wrapDim(dim1, 1, "transpose()");
    return makeBatched(b.value(), b.bdim(), b.level());
  }
  const int64_t d0 = wrapDim(dim0, self.dim(), "transpose()");
  const int64_t d1 = wrapDim(dim1, self.dim(), "transpose()");
  return makeBatched(valueWithBdimFirst(b).transpose(d0 + 1, d1 + 1), 0, b.level());
}

Tensor t_batched(const Tensor& self) {
  DK_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return self.dim() < 2 ? transpose_batched(self, 0, 0) : transpose_batched(self, 0, 1);
}

Tensor view_batched(const Tensor& self, IntArrayRef size) {
  const BatchedTensorImpl& b = batchedSelf(self);
  Tensor value = valueWithBdimFirst(b);
  std::vector<int64_t> physical{value.size(0)};
  physical.insert(physical.end(), size.begin(), size.end());
  return makeBatched(value.view(physical), 0, b.level());
}

// The size-1 dims squeezed, never the batch dim.
Tensor squeeze_batched(const Tensor& self) {
  const BatchedTensorImpl& b = batchedSelf(self);
  Tensor value = valueWithBdimFirst(b);
  for (int64_t d = self.dim() - 1; d >= 0; --d)
    if (self.size(d) == 1) value = value.squeeze(d + 1);
  return makeBatched(value, 0, b.level());
}

Tensor squeeze_batched(const Tensor& self, int64_t dim) {
  const BatchedTensorImpl& b = batchedSelf(self);
  const int64_t d = wrapDim(dim, std::max<int64_t>(self.dim(), 1), "squeeze()");
  if (self.dim() == 0 || self.size(d) != 1) return makeBatched(b.value(), b.bdim(), b.level());
  return makeBatched(valueWithBdimFirst(b).squeeze(d + 1), 0, b.level());
}

Tensor slice_batched(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                    int64_t step) {
  const BatchedTensorImpl& b = batchedSelf(self);
  const int64_t d = wrapDim(dim, self.dim(), "slice()");
  return makeBatched(valueWithBdimFirst(b).slice(d + 1, start, end, step), 0, b.level());
}

Tensor detach_batched(const Tensor& self) {
  const BatchedTensorImpl& b = batchedSelf(self);
  return makeBatched(b.value().detach(), b.bdim(), b.level());
}

namespace {
std::vector<Tensor> batchedEach(std::vector<Tensor> values, int64_t level) {
  for (Tensor& v : values) v = makeBatched(std::move(v), 0, level);
  return values;
}
}  // namespace

std::vector<Tensor> unbind_batched(const Tensor& self, int64_t dim) {
  const BatchedTensorImpl& b = batchedSelf(self);
  const int64_t d = wrapDim(dim, self.dim(), "unbind()");
  return batchedEach(valueWithBdimFirst(b).unbind(d + 1), b.level());
}

std::vector<Tensor> split_batched(const Tensor& self, int64_t split_size, int64_t dim) {
  const BatchedTensorImpl& b = batchedSelf(self);
  const int64_t d = wrapDim(dim, self.dim(), "split()");
  return batchedEach(valueWithBdimFirst(b).split(split_size, d + 1), b.level());
}

namespace {
// The scatters' arguments with the batch dim first, an unmapped one broadcast over the batch;
// the level and the example rank of self.
struct ScatterArgs {
  Tensor self, src;
  int64_t level;
  int64_t rank;
};

ScatterArgs scatterArgs(const Tensor& self, const Tensor& src) {
  const BatchedTensorImpl* a = maybeBatched(self);
  const BatchedTensorImpl* b = maybeBatched(src);
  const int64_t level = std::max(a ? a->level() : 0, b ? b->level() : 0);
  a = batchedAt(self, level);
  b = batchedAt(src, level);
  const Tensor self_v = a ? valueWithBdimFirst(*a) : Tensor();
  const Tensor src_v = b ? valueWithBdimFirst(*b) : Tensor();
  const int64_t batch = a ? self_v.size(0) : src_v.size(0);
  return {a ? self_v : broadcastFront(self, batch), b ? src_v : broadcastFront(src, batch), level, self.dim()};
}
}  // namespace

Tensor select_scatter_batched(const Tensor& self, const Tensor& src, int64_t dim, int64_t index) {
  ScatterArgs p = scatterArgs(self, src);
  const int64_t d = wrapDim(dim, p.rank, "select_scatter()");
  return makeBatched(dk::select_scatter(p.self, p.src, d + 1, index), 0, p.level);
}

Tensor slice_scatter_batched(const Tensor& self, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                             std::optional<int64_t> end, int64_t step) {
  ScatterArgs p = scatterArgs(self, src);
  const int64_t d = wrapDim(dim, p.rank, "slice_scatter()");
  return makeBatched(dk::slice_scatter(p.self, p.src, d + 1, start, end, step), 0, p.level);
}

Tensor cat_batched(ArrayRef<Tensor> tensors, int64_t dim) {
  DK_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  const std::vector<IValue> as_values(tensors.begin(), tensors.end());
  const int64_t level = highestBatchLevel(as_values.data(), as_values.size());
  int64_t batch = -1;
  for (const Tensor& t : tensors)
    if (const BatchedTensorImpl* b = batchedAt(t, level)) batch = b->value().size(b->bdim());
  std::vector<Tensor> physical;
  physical.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    const BatchedTensorImpl* b = batchedAt(t, level);
    physical.push_back(b ? valueWithBdimFirst(*b) : broadcastFront(t, batch));
  }
  const int64_t d = wrapDim(dim, std::max<int64_t>(tensors[0].dim(), 1), "cat()");
  return makeBatched(dk::cat(physical, d + 1), 0, level);
}

// reshape views the value when it can and copies otherwise, as the unbatched reshape does.
Tensor reshape_batched(const Tensor& self, IntArrayRef shape) {
  const BatchedTensorImpl& b = batchedSelf(self);
  Tensor value = valueWithBdimFirst(b);
  std::vector<int64_t> physical{value.size(0)};
  physical.insert(physical.end(), shape.begin(), shape.end());
  return makeBatched(value.reshape(physical), 0, b.level());
}

// repeat of the value with the batch dim repeated once.
Tensor repeat_batched(const Tensor& self, IntArrayRef repeats) {
  const BatchedTensorImpl& b = batchedSelf(self);
  DK_CHECK(static_cast<int64_t>(repeats.size()) >= self.dim(),
           "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  Tensor value = padAfterBatch(valueWithBdimFirst(b), self.dim(), static_cast<int64_t>(repeats.size()));
  std::vector<int64_t> physical{1};
  physical.insert(physical.end(), repeats.begin(), repeats.end());
  return makeBatched(value.repeat(physical), 0, b.level());
}

// mm of one or two batched matrices is one batched product: matmul broadcasts a batched
// [B, n, k] against a plain [k, m] (or the other way round) and multiplies two batched ones
// matrix by matrix.
Tensor mm_batched(const Tensor& self, const Tensor& mat2) {
  DK_CHECK(self.dim() == 2, "self must be a matrix");
  DK_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  const BatchedTensorImpl* a = maybeBatched(self);
  const BatchedTensorImpl* b = maybeBatched(mat2);
  const int64_t level = std::max(a ? a->level() : 0, b ? b->level() : 0);
  auto physical = [level](const Tensor& t) {
    const BatchedTensorImpl* bt = batchedAt(t, level);
    return bt ? valueWithBdimFirst(*bt) : t;
  };
  return makeBatched(dk::matmul(physical(self), physical(mat2)), 0, level);
}

void forLoopBatchingFallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) { batchedFallback(op, ks, stack); }

TensorsFn vmap(TensorsFn f, std::vector<BatchDim> in_dims, std::vector<BatchDim> out_dims, Randomness randomness) {
  DK_CHECK(f, "vmap: the function to map is empty");
  DK_CHECK(!in_dims.empty(), "vmap: in_dims must hold one entry per input, or one for all of them");
  DK_CHECK(!out_dims.empty(), "vmap: out_dims must hold one entry per output, or one for all of them");
  return [f = std::move(f), in_dims = std::move(in_dims), out_dims = std::move(out_dims), randomness](
             const std::vector<Tensor>& inputs) { return runVmap(f, in_dims, out_dims, randomness, inputs); };
}

std::function<Tensor(const Tensor&)> vmap(std::function<Tensor(const Tensor&)> f, BatchDim in_dim, BatchDim out_dim,
                                          Randomness randomness) {
  DK_CHECK(f, "vmap: the function to map is empty");
  TensorsFn many = vmap([f = std::move(f)](const std::vector<Tensor>& xs) { return std::vector<Tensor>{f(xs[0])}; },
                        {in_dim}, {out_dim}, randomness);
  return [many = std::move(many)](const Tensor& x) { return many({x})[0]; };
}

int64_t currentVmapLevel() {
  const std::vector<DynamicLayer>& layers = dynamicLayerStack();
  for (auto it = layers.rbegin(); it != layers.rend(); ++it)
    if (it->type == TransformType::Vmap) return it->level;
  return 0;
}

bool setVmapFallbackWarningEnabled(bool enabled) { return g_warn_fallback.exchange(enabled); }

// The fallback is the library's own: registered once and kept for the life of the process, as
// the dispatcher's defaults are (the handle is never destroyed; the global keeps it reachable).
[[maybe_unused]] RegistrationHandleRAII* const g_fallback =
    new RegistrationHandleRAII(Dispatcher::singleton().registerDefaultFallback(
        DispatchKey::FuncTorchBatched, KernelFunction::makeFromBoxedFunction<&batchedFallback>(),
        "vmap_fallback (default)"));


}  // namespace dk::func
