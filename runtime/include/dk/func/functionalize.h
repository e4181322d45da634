// dk/func/functionalize.h: functionalization, the transform that removes mutation and aliasing
// from a program (Note [Functionalization]).
//
//   auto f = [](const std::vector<dk::Tensor>& xs) {
//     dk::Tensor y = xs[0].clone();
//     y.select(0, 1).mul_(2);          // a write through a view
//     return std::vector<dk::Tensor>{y};
//   };
//   auto pure = dk::func::functionalize(f);
//   pure({x});  // the same values; the operators below ran mul, select_copy and select_scatter
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "dk/dispatch/library.h"
#include "dk/func/vmap.h"
#include "dk/tensor/tensor.h"

namespace dk::func {

// Note [Functionalization]
// Inside functionalize(f) every tensor f sees is a FunctionalTensor: a wrapper whose key set is
// Functionalize (plus its value's backend), holding a plain `value` that nothing else aliases.
// The kernels at Functionalize (generated from the YAML, RegisterFunctionalization.cpp) run each
// call on the values, below the layer, so the program below sees only functional operators:
//  - an operator that only reads its arguments (the fallback) runs on the values; its results
//    are wrapped as new bases;
//  - an operator that writes its arguments (add_, add.out) runs as its functional form (add),
//    and each written wrapper takes the result as its new value, which is then written back
//    into the wrapper's base (below);
//  - a view (select, view, transpose, split, ...) runs as its view copy (select_copy): the
//    result is a fresh tensor, wrapped as a view of the input's base, remembering how to be
//    computed again from the base (the view copy with the same arguments) and how a changed value
//    is written back into it (the view's inverse: select -> select_scatter).
// Aliasing is kept by sharing: a base and all views of it share one FunctionalStorage, the
// base's current value and a generation count. A write through a view computes the new base by
// applying the inverses from the view up to the base, stores it and bumps the generation; every
// other alias, when next used, sees its generation is old and replays its views from the new
// base. So the values a functionalized program computes are the eager program's, and the
// operators below it never write or alias.
//
// functionalize(f) is a layer of the dynamic layer stack (Note [Dynamic layer stack]): while it
// runs, Functionalize is in the thread's included set, so factories and operators on captured
// tensors are functionalized too (their results are wrapped); inside a grad transform, the front
// fallback hands calls to it when it is the innermost layer and its kernels call the layers below
// it. An input f writes is written back (copy_) into the caller's tensor when f returns, as
// functorch does. Writing into a tensor that is not a FunctionalTensor (a captured one made
// outside f) is refused, and so are operators the generator found no plan for (listed at the end
// of RegisterFunctionalization.cpp), with an error that names them.

// How a view is computed from its base, and how a changed value of it is written back.
struct ViewMeta {
  std::function<Tensor(const Tensor& base)> forward;
  std::function<Tensor(const Tensor& base, const Tensor& mutated_view)> reverse;
};

// What a base and its views share: the base's current value, and how many writes it has seen.
struct FunctionalStorage {
  Tensor base;
  uint64_t generation = 0;
};

class FunctionalTensor : public TensorImpl {
 public:
  // A new base holding `value`.
  explicit FunctionalTensor(Tensor value);
  // A view of `of` (itself a base or a view) holding `value`, computed from of's value by `meta`.
  FunctionalTensor(Tensor value, const FunctionalTensor& of, ViewMeta meta);

  // The current value: call sync() first (the kernels do) for writes made through other aliases.
  const Tensor& value() const { return value_; }
  bool is_functional_view() const { return !metas_.empty(); }
  const std::shared_ptr<FunctionalStorage>& storage() const { return storage_; }
  // Whether a write through this tensor or an alias of it happened since it was wrapped.
  bool was_written() const { return storage_->generation != 0; }

  // Replays this view from its base when an alias was written since the value was computed.
  // Runs operators: call it below the functionalize layer (the kernels do).
  void sync();
  // After a write through this tensor: `value` is its new value, written back into the base.
  void commit(Tensor value);

  intrusive_ptr<TensorImpl> shallow_copy_without_history() const override;

 private:
  void setValue(Tensor value);

  Tensor value_;
  std::shared_ptr<FunctionalStorage> storage_;
  std::vector<ViewMeta> metas_;  // from the base down to this view
  uint64_t generation_ = 0;
};

// The functional impl of `t`, or null when `t` is not a FunctionalTensor.
FunctionalTensor* maybeFunctional(const Tensor& t);
// `t` wrapped as a new base (a FunctionalTensor is returned as is).
Tensor toFunctional(const Tensor& t);
// The current value of a FunctionalTensor (synced first); `t` itself for any other tensor.
Tensor fromFunctional(const Tensor& t);

// f with its mutations and views functionalized (Note [Functionalization]). Inputs f writes are
// updated with copy_ when it returns; the outputs are plain tensors.
TensorsFn functionalize(TensorsFn f);

// f run functionalized on `inputs`: its outputs, and in `written` the value each input ends with
// when f wrote it (undefined for the others), not yet written back: what functionalize(f) does
// before its copy_, and what make_graph records.
std::vector<Tensor> runFunctionalized(const TensorsFn& f, const std::vector<Tensor>& inputs,
                                      std::vector<Tensor>* written);

// The kernels RegisterFunctionalization.cpp registers (Note [Functionalization]).
// An in-place or out= operator run as `functional` ("dk::add.Tensor"), whose arguments are the
// operator's less its out= ones and whose returns match its written arguments in order.
CppFunction functionalizeMutation(const char* functional);
// A view run as its view copy `view_copy` ("dk::select_copy.int", the view's arguments);
// `inverse` writes a changed view back into its base (FunctionalInverses.h).
using ViewInverse = Tensor(const Tensor& base, const Tensor& mutated_view, const Stack& args, size_t output);
CppFunction functionalizeView(const char* view_copy, ViewInverse* inverse);

}  // namespace dk::func
