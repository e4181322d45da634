// kernels/meta/structured_wrappers.h: what the generated wrappers of structured families
// derive from (Note [Structured kernels] in dk/tensor/structured.h). Each is the final class
// over a family's impl class (or, at Meta, its meta class) and decides what
// set_output_raw_strided does for its form:
//
//   detail::StructuredFunctional<native::structured_add_out_cpu, 1> op("dk::add");
//   op.meta(self, other, alpha);
//   op.impl(self, other, alpha, op.maybe_get_output(0));
//   return op.take_output(0);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "dk/tensor/structured.h"
#include "dk/tensor/tensor.h"
#include "shape_functions.h"

namespace dk::meta {

// A new output: contiguous when `strides` is empty.
Tensor allocateOutput(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device);

// One given output of an in-place or out= call: the tensor given, and the temporary written
// instead when it has another dtype (a casting base only).
struct GivenOutput {
  Tensor target;
  Tensor temporary;

  const Tensor& written() const { return temporary.defined() ? temporary : target; }
};

// Makes `slot` ready to take an output of these sizes, dtype and device. In order:
//   - the device must be the output's: "Expected out tensor to have device cpu, but got meta
//     instead";
//   - in-place: the sizes must be the given tensor's, "output with shape [3] doesn't match the
//     broadcast shape [2, 3]" (casting bases: PyTorch's TensorIterator words) or "Bad in-place
//     call: input tensor size [3] and output tensor size [2, 3] should match"; out=: the given
//     tensor is resized (resizeOutput; an exact base checks the dtype first);
//   - dtype: casting bases need checkCanCastToOutput and get a temporary when the dtypes
//     differ; exact ones need it equal (checkOutDtypeExact; in-place: "Bad in-place call: input
//     tensor dtype float and output tensor dtype double should match");
//   - casting bases: the given tensor has no two elements at one address
//     (checkNoInternalOverlap).
void prepareGivenOutput(GivenOutput& slot, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device,
                        bool inplace, bool casts);
// Copies the temporary, if any, into the given tensor.
void finishGivenOutput(GivenOutput& slot);

}  // namespace dk::meta

namespace dk::detail {

// The functional form: each output is a new tensor.
template <class Op, size_t N>
class StructuredFunctional final : public Op {
 public:
  explicit StructuredFunctional(const char* op_name) : op_name_(op_name) {}

  void set_output_raw_strided(int64_t index, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                              Device device) override {
    outputs_[static_cast<size_t>(index)] = meta::allocateOutput(sizes, strides, dtype, device);
  }
  const Tensor& maybe_get_output(int64_t index) override { return outputs_[static_cast<size_t>(index)]; }
  const char* output_name(int64_t /*index*/) const override { return "result"; }
  const char* op_name() const override { return op_name_; }

  Tensor take_output(int64_t index) { return std::move(outputs_[static_cast<size_t>(index)]); }

 private:
  const char* op_name_;
  std::array<Tensor, N> outputs_;
};

// The in-place and out= forms: each output is a given tensor. kInplace: its sizes must already
// be right; otherwise it is resized. Op::kCastsOutputs: a given tensor of another dtype takes a
// result it can be cast to, through a temporary that finish() copies in.
template <class Op, size_t N, bool kInplace>
class StructuredGiven final : public Op {
 public:
  StructuredGiven(const char* op_name, std::array<Tensor, N> given, std::array<const char*, N> names)
      : op_name_(op_name), names_(names) {
    for (size_t i = 0; i < N; ++i) slots_[i].target = std::move(given[i]);
  }

  void set_output_raw_strided(int64_t index, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                              Device device) override {
    meta::prepareGivenOutput(slots_[static_cast<size_t>(index)], sizes, strides, dtype, device, kInplace,
                             Op::kCastsOutputs);
  }
  const Tensor& maybe_get_output(int64_t index) override { return slots_[static_cast<size_t>(index)].written(); }
  const char* output_name(int64_t index) const override { return names_[static_cast<size_t>(index)]; }
  const char* op_name() const override { return op_name_; }

  // Copies each temporary into its given tensor.
  void finish() {
    for (meta::GivenOutput& slot : slots_) meta::finishGivenOutput(slot);
  }

 private:
  const char* op_name_;
  std::array<const char*, N> names_;
  std::array<meta::GivenOutput, N> slots_;
};

template <class Op, size_t N>
using StructuredInplace = StructuredGiven<Op, N, /*kInplace=*/true>;
template <class Op, size_t N>
using StructuredOut = StructuredGiven<Op, N, /*kInplace=*/false>;

}  // namespace dk::detail
