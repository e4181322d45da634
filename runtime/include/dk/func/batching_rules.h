// dk/func/batching_rules.h: batching rules shared by families of operators (Note [Pointwise
// batching rule], Note [Along-dims batching rule]). Each is a boxed kernel for FuncTorchBatched.
#pragma once

#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/library.h"

namespace dk::func {

// Note [Pointwise batching rule]
// A pointwise operator (out[i] = f(in[i]...) after broadcasting) runs once for the whole batch:
// every tensor argument batched at the call's level gives its value with the batch dim first,
// viewed with size-1 dims after the batch dim up to the highest logical rank of the arguments,
// so that the example dims of every argument line up from the right as broadcasting wants and
// the batch dim stays alone at the front; other tensors and non-tensor arguments are passed as
// they are (they broadcast from the right, below the batch dim). The results are wrapped at the
// same level with the batch dim first. An in-place operator writes into its self's value and
// returns self, which must then be batched at that level. Where the physical call would change
// type promotion (a batched argument that is logically 0-dim among arguments of different
// dtypes: it would count as a dimensioned tensor), the rule runs the for-loop fallback instead.
void pointwiseBatchingRule(const OperatorHandle& op, DispatchKeySet ks, Stack* stack);

// Note [Along-dims batching rule]
// A reduction, scan or sort of one tensor along the dims its `dim` arguments name (sum.dim_IntList,
// max.dim, cumsum, sort, topk, _softmax; `batching: along_dims` in the YAML) runs once for the
// whole batch: the tensor's value goes with the batch dim first, and each dim argument (an int,
// or each int of a list) is wrapped against the example's rank and moved one past the batch dim,
// so the operator never touches the batch dim and every result keeps it first. Where the dims
// do not say which example dims are meant (a 0-dim example, a dim of None or an empty list, which
// mean every dim), the rule runs the for-loop fallback instead.
void alongDimsBatchingRule(const OperatorHandle& op, DispatchKeySet ks, Stack* stack);

// Note [View copy batching rule]
// A view copy (tag view_copy: select_copy.int, view_copy, ...) under vmap runs its view, whose
// rule moves the batch dim where the view wants it, and copies each batched result's value into
// a fresh contiguous tensor with the batch dim first. RegisterBatching.cpp registers it for every
// view copy with the name of its view ("dk::select.int").
CppFunction viewCopyBatchingRule(const char* view);

// Note [vmap randomness]
// A random operator (tagged `nondeterministic_seeded` in the YAML) gets this rule at
// FuncTorchVmapMode, which every running vmap includes, so it runs first even for a random
// factory with no tensor argument; the front fallback hands a random operator to the innermost
// vmap whatever its arguments (Note [Dynamic layer stack]). The innermost vmap's randomness
// decides: Error, functorch's default, refuses. A factory with Same draws once for the whole
// batch (vmap broadcasts the result); with Different it draws with the batch size in front of
// `size` and wraps the draw at its level. Either way the draw is made by the layers below, with
// this vmap set aside, so an outer vmap applies its own policy in turn (nested Different vmaps
// draw one value per example of each). An operator with tensor arguments (dropout) goes on
// below: its randomness comes from the random factories it calls, which reach this rule in turn;
// with Different and no argument of this vmap, its first tensor is first repeated over the
// batch, so each example draws its own.
void randomnessBatchingRule(const OperatorHandle& op, DispatchKeySet ks, Stack* stack);

// Helpers of the rules and the fallback.
// The highest vmap level among the batched tensors of args[0, n), tensor lists included (0: none).
int64_t highestBatchLevel(const IValue* args, size_t n);
// `value` (batch dim first, `logical_rank` example dims) viewed with size-1 dims after the batch
// dim up to `rank` example dims.
Tensor padAfterBatch(Tensor value, int64_t logical_rank, int64_t rank);
// An in-place operator: its first (positional) argument is written and is what it returns.
bool isInplaceSchema(const FunctionSchema& schema);

}  // namespace dk::func
