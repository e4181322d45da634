// dk/tensor/structured.h: the classes behind structured kernels (PyTorch's format:
// `structured: True` on an out= operator, `structured_delegate:` on its functional and
// in-place forms, `structured_inherits:` for the base class).
//
// Note [Structured kernels]
// An operator family that comes as functional, in-place and out= (add.Tensor, add_.Tensor,
// add.out) is written as two pieces:
//   - one meta function, shared by every backend: it checks the arguments and says what each
//     output is (sizes, strides, dtype, device) by calling set_output_raw_strided. The
//     generator declares it as `void meta(...)` of `dk::meta::structured_<functional>`
//     (structured_add_Tensor), with the arguments of the out= operator less its outputs;
//   - one implementation per backend, `void impl(..., const Tensor& out)` of
//     `dk::native::structured_<kernel>` (structured_add_out_cpu), deriving from the meta class.
//     It computes into outputs that already have the sizes and dtype meta() asked for.
// The generated wrapper of each form (Register<Key>.cpp) derives from the impl class, decides
// what set_output_raw_strided does, and runs meta() then impl():
//   - functional: allocates each output;
//   - in-place: checks that self has the sizes asked for and can hold the dtype;
//   - out=: resizes out (PyTorch's resize rules) and checks its dtype.
// The Meta key's wrappers run meta() alone, so every structured operator works on the meta
// device with no kernel written for it. What the in-place and out= forms accept when the out
// tensor's dtype differs from the one asked for depends on the base class: MetaBase wants it
// exactly ("Expected out tensor to have dtype float, but got double instead", as mm.out);
// TensorIteratorBase (the pointwise operators) accepts any dtype the result can be cast to,
// computes into a temporary of the asked dtype and copies it into out afterwards.
//
// The wrappers are in kernels/meta/structured_wrappers.h; the meta functions in
// kernels/meta/*_structured.cpp; the impls next to each backend's kernels.
#pragma once

#include <cstdint>

#include "dk/core/core_types.h"
#include "dk/tensor/tensor.h"
#include "dk/util/array_ref.h"

namespace dk {

// What meta() writes its outputs through. The generated wrappers implement it.
class MetaBase {
 public:
  // The outputs of this base accept no other dtype than the one meta() gives (in-place, out=).
  static constexpr bool kCastsOutputs = false;

  MetaBase() = default;
  MetaBase(const MetaBase&) = delete;
  MetaBase& operator=(const MetaBase&) = delete;

  // Output `index` has these sizes and dtype, on `device`; `strides` empty means contiguous.
  // A functional call allocates it; in-place and out= calls check (and resize) the given one.
  virtual void set_output_raw_strided(int64_t index, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                                      Device device) = 0;
  // The output tensor of an in-place or out= call (the self or out argument), an undefined
  // tensor in a functional call; after set_output_raw_strided, what impl() writes.
  virtual const Tensor& maybe_get_output(int64_t index) = 0;
  // The argument name of output `index` as error messages give it: "self" for in-place
  // calls, the out argument's name for out= calls, "result" for functional ones.
  virtual const char* output_name(int64_t index) const = 0;

  // The operator the wrapper runs, for messages: "dk::add" (functional and out=), "dk::add_".
  virtual const char* op_name() const = 0;

 protected:
  ~MetaBase() = default;
};

// The base of the pointwise operators' meta classes (`structured_inherits: TensorIteratorBase`).
// As PyTorch's TensorIterator does, it lets in-place and out= tensors of another dtype take the
// result when the result's dtype can be cast to theirs (PyTorch's canCast), and it remembers the
// dtype the operator computes in, which impl() reads.
class TensorIteratorBase : public MetaBase {
 public:
  static constexpr bool kCastsOutputs = true;

  // The dtype inputs are converted to before computing (for comparisons, not the result's);
  // meta() sets it.
  ScalarType common_dtype() const { return common_dtype_; }
  void set_common_dtype(ScalarType dtype) { common_dtype_ = dtype; }

 protected:
  ~TensorIteratorBase() = default;

 private:
  ScalarType common_dtype_ = ScalarType::Undefined;
};

}  // namespace dk

// How kernel files define the two halves (PyTorch's TORCH_META_FUNC and TORCH_IMPL_FUNC):
//   DK_META_FUNC(add_Tensor)(const Tensor& self, const Tensor& other, const Scalar& alpha) {...}
//   DK_IMPL_FUNC(add_out_cpu)(const Tensor& self, ..., const Tensor& out) {...}
#define DK_META_FUNC(name) void ::dk::meta::structured_##name::meta
#define DK_IMPL_FUNC(name) void ::dk::native::structured_##name::impl
