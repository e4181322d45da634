// dk/func/batching_rules.h: batching rules shared by families of operators (Note [Pointwise
// batching rule]). Each is a boxed kernel for FuncTorchBatched.
#pragma once

#include "dk/dispatch/dispatcher.h"

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

// Note [vmap randomness]
// A random operator (tagged `nondeterministic_seeded` in the YAML) gets this rule at
// FuncTorchVmapMode, which every running vmap includes, so it runs first even for a random
// factory with no tensor argument. With any running vmap's randomness Error, functorch's
// default, it refuses. Otherwise a factory draws once for all the examples of the vmaps whose
// randomness is Different (their batch sizes go in front of `size`, outermost first, and the
// result is wrapped at each of their levels), and once for all the others (Same: one value for
// the whole batch, which vmap broadcasts). An operator with tensor arguments (dropout) goes on
// below: its randomness comes from the random factories it calls, which reach this rule in turn.
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
