// The Meta kernels (kernels/meta/): for every backend operator with a Meta kernel, the sizes,
// dtype and (contiguous) strides of its outputs and the errors it raises, against hand-worked
// expectations, called through the dispatcher (dk::add on meta tensors reaches add_meta) and,
// for the shape functions the CPU and CUDA kernels share, directly. Ends with a two-layer MLP
// run on meta tensors.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../kernels/meta/shape_functions.h"
#include "dk/core/generator.h"  // before Functions.h, which uses Generator without including it
#include "dk/generated/ops/_log_softmax.h"
#include "dk/generated/ops/_softmax.h"
#include "dk/generated/ops/abs.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/add_ops.h"
#include "dk/generated/ops/addmm.h"
#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/argmax.h"
#include "dk/generated/ops/argmax_ops.h"
#include "dk/generated/ops/bmm.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/cat_native.h"
#include "dk/generated/ops/clamp.h"
#include "dk/generated/ops/clamp_ops.h"
#include "dk/generated/ops/copy_ops.h"
#include "dk/generated/ops/cos.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/div_ops.h"
#include "dk/generated/ops/embedding.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/eq.h"
#include "dk/generated/ops/eq_ops.h"
#include "dk/generated/ops/exp.h"
#include "dk/generated/ops/fill.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/gelu.h"
#include "dk/generated/ops/gt.h"
#include "dk/generated/ops/gt_ops.h"
#include "dk/generated/ops/item_ops.h"
#include "dk/generated/ops/log.h"
#include "dk/generated/ops/lt.h"
#include "dk/generated/ops/lt_ops.h"
#include "dk/generated/ops/max.h"
#include "dk/generated/ops/maximum.h"
#include "dk/generated/ops/mean.h"
#include "dk/generated/ops/mean_ops.h"
#include "dk/generated/ops/minimum.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mse_loss.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/mul_ops.h"
#include "dk/generated/ops/neg.h"
#include "dk/generated/ops/nll_loss.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/pow.h"
#include "dk/generated/ops/pow_ops.h"
#include "dk/generated/ops/rand.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/rsqrt.h"
#include "dk/generated/ops/sigmoid.h"
#include "dk/generated/ops/sin.h"
#include "dk/generated/ops/sqrt.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sub_ops.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/sum_ops.h"
#include "dk/generated/ops/tanh.h"
#include "dk/generated/ops/where.h"
#include "dk/generated/ops/zero.h"
#include "dk/generated/ops/zeros.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/tensor/type_promotion.h"
#include "dk/util/error.h"

using namespace dk;

namespace {

using Sizes = std::vector<int64_t>;

const Device kMetaDevice(DeviceType::Meta);

Tensor onMeta(Sizes sizes, ScalarType dtype = kFloat) { return detail::empty_contiguous(sizes, dtype, kMetaDevice); }

// A 0-dim CPU tensor: the kind of operand pointwise operators accept next to any device.
Tensor cpuScalar(ScalarType dtype = kFloat) { return detail::empty_contiguous({}, dtype, Device(kCPU)); }

// A 0-dim tensor made from a Python number (it promotes like a Scalar).
Tensor wrappedNumber(ScalarType dtype, Device device = kMetaDevice) {
  Tensor t = detail::empty_contiguous({}, dtype, device);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// The transpose of a fresh [cols, rows] tensor: sizes [rows, cols], strides [1, rows].
Tensor transposed(int64_t rows, int64_t cols, ScalarType dtype = kFloat) {
  Tensor base = onMeta({cols, rows}, dtype);
  return detail::make_view(base, {rows, cols}, {1, rows}, 0);
}

// A meta output of exactly these sizes, dtype and strides, with no data.
void requireMetaStrided(const Tensor& t, const Sizes& sizes, const Sizes& strides, ScalarType dtype) {
  REQUIRE(t.defined());
  CHECK(t.is_meta());
  CHECK(t.sizes() == sizes);
  CHECK(t.dtype() == dtype);
  CHECK(t.strides() == strides);
  CHECK(t.data_ptr() == nullptr);
}

// The same with contiguous strides.
void requireMeta(const Tensor& t, const Sizes& sizes, ScalarType dtype) {
  requireMetaStrided(t, sizes, computeContiguousStrides(sizes), dtype);
}

// Captures dk::warn messages while alive.
struct WarningCapture {
  std::vector<std::string> messages;
  WarningHandler previous;
  WarningCapture() {
    previous = setWarningHandler([this](const std::string& m) { messages.push_back(m); });
  }
  ~WarningCapture() { setWarningHandler(previous); }
};

const ScalarType kEveryDtype[] = {kByte, kChar, kShort, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16};

}  // namespace

// ---------------------------------------------------------------- binary

TEST_CASE("meta: binary operators broadcast and promote", "[meta][pointwise]") {
  requireMeta(add(onMeta({2, 1, 3}), onMeta({4, 1})), {2, 4, 3}, kFloat);
  requireMeta(sub(onMeta({3}), onMeta({2, 3}, kDouble)), {2, 3}, kDouble);
  requireMeta(mul(onMeta({5}, kInt), onMeta({5}, kByte)), {5}, kInt);
  requireMeta(maximum(onMeta({2, 2}, kHalf), onMeta({2, 2}, kBFloat16)), {2, 2}, kFloat);
  requireMeta(minimum(onMeta({1}, kChar), onMeta({0}, kByte)), {0}, kShort);  // int8 + uint8: int16
  requireMeta(add(onMeta({}, kLong), onMeta({}, kBool)), {}, kLong);
  // Dimensioned tensors outrank 0-dim ones of the same category; categories still promote.
  requireMeta(add(onMeta({3}, kInt), onMeta({}, kLong)), {3}, kInt);
  requireMeta(mul(onMeta({3}, kInt), onMeta({}, kDouble)), {3}, kDouble);
  requireMeta(mul(onMeta({3}, kInt), wrappedNumber(kDouble)), {3}, kFloat);
  requireMeta(add(onMeta({3}, kHalf), wrappedNumber(kDouble)), {3}, kHalf);
  // div is true division: integral and bool results become the default float dtype.
  requireMeta(div(onMeta({2, 3}, kLong), onMeta({3}, kInt)), {2, 3}, kFloat);
  requireMeta(div(onMeta({2}, kBool), onMeta({2}, kBool)), {2}, kFloat);
  requireMeta(div(onMeta({2}, kDouble), onMeta({2}, kLong)), {2}, kDouble);
  // Outputs follow the inputs' memory order (Note [Meta outputs]); the first input decides.
  requireMetaStrided(add(transposed(2, 3), transposed(2, 3)), {2, 3}, {1, 2}, kFloat);
  requireMetaStrided(mul(transposed(2, 3), onMeta({2, 3})), {2, 3}, {1, 2}, kFloat);
  requireMetaStrided(mul(onMeta({2, 3}), transposed(2, 3)), {2, 3}, {3, 1}, kFloat);
  requireMetaStrided(sub(transposed(2, 3, kInt), onMeta({3}, kInt)), {2, 3}, {1, 2}, kInt);
  requireMetaStrided(div(onMeta({4, 1}), transposed(4, 3)), {4, 3}, {1, 4}, kFloat);
  // Every dtype pair follows promoteTypes.
  for (ScalarType a : kEveryDtype) {
    for (ScalarType b : kEveryDtype) {
      requireMeta(mul(onMeta({2}, a), onMeta({2}, b)), {2}, promoteTypes(a, b));
    }
  }
}

TEST_CASE("meta: comparisons give Bool", "[meta][pointwise]") {
  requireMeta(eq(onMeta({2, 3}, kLong), onMeta({3}, kFloat)), {2, 3}, kBool);
  requireMeta(gt(onMeta({4, 1}, kHalf), onMeta({1, 5}, kHalf)), {4, 5}, kBool);
  requireMeta(lt(onMeta({}, kInt), onMeta({0, 2}, kDouble)), {0, 2}, kBool);
  requireMeta(eq(onMeta({2, 3}, kDouble), Scalar(1.5)), {2, 3}, kBool);
  requireMetaStrided(eq(transposed(3, 2, kBool), Scalar(true)), {3, 2}, {1, 3}, kBool);
  requireMetaStrided(gt(transposed(3, 2), transposed(3, 2, kLong)), {3, 2}, {1, 3}, kBool);
}

TEST_CASE("meta: binary operator errors", "[meta][pointwise]") {
  REQUIRE_THROWS_WITH(add(onMeta({2, 3}), onMeta({4})),
                      "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1 "
                      "(shapes [2, 3] and [4])");
  REQUIRE_THROWS_WITH(sub(onMeta({2}, kBool), onMeta({2}, kBool)),
                      "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                      "`logical_xor()` operator instead.");
  REQUIRE_THROWS_WITH(sub(onMeta({2}, kBool), onMeta({2}, kFloat)),
                      "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                      "invert a mask, use the `~` or `logical_not()` operator instead.");
  REQUIRE_THROWS_WITH(add(onMeta({2}, kLong), onMeta({2}, kLong), 2.5),
                      "For integral input tensors, argument alpha must not be a floating point number.");
  REQUIRE_THROWS_WITH(add(onMeta({2}, kFloat), onMeta({2}, kFloat), true),
                      "Boolean alpha only supported for Boolean results.");
  requireMeta(add(onMeta({2}, kBool), onMeta({2}, kBool), true), {2}, kBool);
  requireMeta(sub(onMeta({2}, kFloat), onMeta({2}, kFloat), 2.5), {2}, kFloat);
  // A 1-D CPU tensor next to a meta one is a device mismatch; a 0-dim CPU tensor is a scalar.
  Tensor cpu_vector = detail::empty_contiguous({2}, kFloat, Device(kCPU));
  REQUIRE_THROWS_WITH(add(onMeta({2}), cpu_vector),
                      "dk::add: expected all tensors to be on the same device, but found at least two devices, "
                      "meta (argument 'self') and cpu (argument 'other')");
  REQUIRE_THROWS_WITH(where(onMeta({2}, kBool), onMeta({2}), cpu_vector),
                      "dk::where: expected all tensors to be on the same device, but found at least two devices, "
                      "meta (argument 'condition') and cpu (argument 'other')");
  requireMeta(add(onMeta({2, 2}), cpuScalar(kDouble)), {2, 2}, kFloat);
  requireMeta(div(cpuScalar(kLong), onMeta({3}, kInt)), {3}, kFloat);
}

TEST_CASE("meta: in-place binary operators", "[meta][pointwise]") {
  Tensor self = onMeta({2, 3});
  Tensor r = ops::add__Tensor::call(self, onMeta({3}, kLong), 2);
  CHECK(r.is_same(self));
  CHECK(ops::mul__Tensor::call(self, onMeta({2, 1}, kDouble)).is_same(self));
  REQUIRE_THROWS_WITH(ops::add__Tensor::call(onMeta({3}), onMeta({2, 3}), 1),
                      "output with shape [3] doesn't match the broadcast shape [2, 3]");
  REQUIRE_THROWS_WITH(ops::mul__Tensor::call(onMeta({3}, kLong), onMeta({3}, kFloat)),
                      "result type Float can't be cast to the desired output type Long");
  REQUIRE_THROWS_WITH(ops::mul__Tensor::call(onMeta({3}, kBool), onMeta({3}, kByte)),
                      "result type Byte can't be cast to the desired output type Bool");
  const std::string overlap =
      "unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
      "Please clone() the tensor before performing the operation.";
  Tensor expanded = detail::make_view(onMeta({3}), {2, 3}, {0, 1}, 0);
  REQUIRE_THROWS_WITH(ops::add__Tensor::call(expanded, onMeta({2, 3}), 1), overlap);
  REQUIRE_THROWS_WITH(ops::mul__Tensor::call(expanded, onMeta({3})), overlap);
  REQUIRE_THROWS_WITH(relu_(expanded), overlap);
  REQUIRE_THROWS_WITH(ops::copy_::call(expanded, onMeta({2, 3}), false), overlap);
  // An in-place write may not be hidden behind a CPU scalar's exemption.
  REQUIRE_THROWS_WITH(ops::add__Tensor::call(cpuScalar(), onMeta({}), 1),
                      "dk::add_: expected all tensors to be on the same device, but found at least two devices, "
                      "cpu (argument 'self') and meta (argument 'other')");
}

TEST_CASE("meta: add.out checks and resizes out", "[meta][pointwise][out]") {
  SECTION("an empty out is resized silently") {
    WarningCapture warnings;
    Tensor out = onMeta({0});
    Tensor r = add(onMeta({2, 1}), onMeta({3}), 1, out);
    CHECK(r.is_same(out));
    requireMeta(out, {2, 3}, kFloat);
    CHECK(out.storage().nbytes() == 6 * sizeof(float));
    CHECK(warnings.messages.empty());
  }
  SECTION("an out with elements and the wrong shape is resized with PyTorch's warning") {
    WarningCapture warnings;
    Tensor out = onMeta({3}, kDouble);
    add(onMeta({2, 3}), onMeta({2, 3}), 1, out);
    requireMeta(out, {2, 3}, kDouble);
    REQUIRE(warnings.messages.size() == 1);
    CHECK(warnings.messages[0] ==
          "An output with one or more elements was resized since it had shape [3], which does not match the "
          "required output shape [2, 3]. This behavior is deprecated, and in a future PyTorch release outputs will "
          "not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, "
          "inplace, to zero elements with t.resize_(0).");
  }
  SECTION("an out of the right shape keeps its strides") {
    Tensor out = transposed(2, 3);
    add(onMeta({2, 3}), onMeta({3}), 1, out);
    CHECK(out.sizes() == Sizes{2, 3});
    CHECK(out.strides() == Sizes{1, 2});
  }
  SECTION("out must hold the result type") {
    REQUIRE_THROWS_WITH(add(onMeta({2}), onMeta({2}), 1, onMeta({2}, kLong)),
                        "result type Float can't be cast to the desired output type Long");
    Tensor resized_first = onMeta({0}, kLong);  // resized before the dtype check, as on the CPU
    REQUIRE_THROWS_WITH(add(onMeta({2, 2}), onMeta({2}), 1, resized_first),
                        "result type Float can't be cast to the desired output type Long");
    CHECK(resized_first.sizes() == Sizes{2, 2});
    Tensor out = onMeta({2}, kDouble);
    add(onMeta({2}, kInt), onMeta({2}, kInt), 1, out);  // Int into Double is allowed
    CHECK(out.dtype() == kDouble);
  }
  SECTION("out must be on the inputs' device") {
    REQUIRE_THROWS_WITH(add(onMeta({}), onMeta({}), 1, cpuScalar()),
                        "dk::add: expected all tensors to be on the same device, but found at least two devices, "
                        "meta (argument 'self') and cpu (argument 'out')");
  }
}

TEST_CASE("meta: pow, where, clamp", "[meta][pointwise]") {
  requireMeta(dk::pow(onMeta({2, 3}, kInt), 2), {2, 3}, kInt);
  requireMeta(dk::pow(onMeta({2, 3}, kInt), 2.5), {2, 3}, kFloat);
  requireMeta(dk::pow(onMeta({4}, kHalf), 3), {4}, kHalf);
  requireMeta(dk::pow(onMeta({4}, kBool), 2), {4}, kLong);
  requireMeta(dk::pow(onMeta({4}, kFloat), -1), {4}, kFloat);
  REQUIRE_THROWS_WITH(dk::pow(onMeta({2}, kLong), -2), "Integers to negative integer powers are not allowed.");
  REQUIRE_THROWS_WITH(dk::pow(onMeta({2}, kBool), true), "pow: unsupported dtype Bool");

  requireMeta(where(onMeta({2, 1, 1}, kBool), onMeta({3, 1}, kInt), onMeta({4}, kDouble)), {2, 3, 4}, kDouble);
  requireMeta(where(onMeta({3}, kBool), onMeta({3}, kLong), wrappedNumber(kDouble)), {3}, kFloat);
  {
    WarningCapture warnings;
    requireMeta(where(onMeta({3}, kByte), onMeta({3}), onMeta({3})), {3}, kFloat);
    REQUIRE(warnings.messages.size() == 1);
    CHECK(warnings.messages[0] ==
          "where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future "
          "version of PyTorch. Use a boolean condition instead.");
  }
  requireMetaStrided(where(onMeta({3, 2}, kBool), transposed(3, 2), onMeta({})), {3, 2}, {2, 1}, kFloat);
  requireMetaStrided(where(transposed(3, 2, kBool), onMeta({3, 2}), onMeta({})), {3, 2}, {1, 3}, kFloat);
  REQUIRE_THROWS_WITH(where(onMeta({3}, kFloat), onMeta({3}), onMeta({3})),
                      "where expected condition to be a boolean tensor, but got a tensor with dtype Float");
  REQUIRE_THROWS_WITH(where(onMeta({3}, kBool), onMeta({2}), onMeta({3})),
                      "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0 "
                      "(shapes [3] and [2])");

  requireMeta(clamp(onMeta({2}, kFloat), 0, std::nullopt), {2}, kFloat);
  requireMeta(clamp(onMeta({2}, kHalf), 0.5, 2.5), {2}, kHalf);
  requireMeta(clamp(onMeta({2}, kInt), std::nullopt, 3), {2}, kInt);
  requireMeta(clamp(onMeta({2}, kInt), 0.5, std::nullopt), {2}, kFloat);
  requireMeta(clamp(onMeta({2}, kByte), -1, 1), {2}, kByte);
  REQUIRE_THROWS_WITH(clamp(onMeta({2})), "torch.clamp: At least one of 'min' or 'max' must not be None");
  requireMeta(clamp(onMeta({2}, kBool), true, std::nullopt), {2}, kBool);
  requireMetaStrided(clamp(transposed(2, 4, kHalf), 0, 1), {2, 4}, {1, 2}, kHalf);
  requireMetaStrided(dk::pow(transposed(2, 4, kInt), 0.5), {2, 4}, {1, 2}, kFloat);
}

// ---------------------------------------------------------------- unary

TEST_CASE("meta: unary operators", "[meta][pointwise]") {
  using UnaryFn = Tensor (*)(const Tensor&);
  const UnaryFn floating_ops[] = {&dk::exp, &dk::log, &dk::sqrt, &dk::rsqrt, &dk::sin, &dk::cos, &dk::tanh, &dk::sigmoid};
  for (UnaryFn op : floating_ops) {
    requireMeta(op(onMeta({2, 3}, kDouble)), {2, 3}, kDouble);
    requireMeta(op(onMeta({4}, kHalf)), {4}, kHalf);
    requireMeta(op(onMeta({4}, kBFloat16)), {4}, kBFloat16);
    requireMeta(op(onMeta({}, kLong)), {}, kFloat);  // integral inputs give the default float dtype
    requireMeta(op(onMeta({0, 3}, kBool)), {0, 3}, kFloat);
    requireMetaStrided(op(transposed(3, 4, kByte)), {3, 4}, {1, 3}, kFloat);
  }
  for (ScalarType t : {kByte, kChar, kInt, kLong, kHalf, kFloat, kDouble, kBFloat16}) {
    requireMeta(neg(onMeta({2, 2}, t)), {2, 2}, t);
    requireMeta(dk::abs(onMeta({2, 2}, t)), {2, 2}, t);
    requireMeta(relu(onMeta({2, 2}, t)), {2, 2}, t);
  }
  requireMeta(gelu(onMeta({5}, kFloat)), {5}, kFloat);
  requireMetaStrided(gelu(transposed(2, 5, kBFloat16), "tanh"), {2, 5}, {1, 2}, kBFloat16);
  requireMetaStrided(neg(transposed(2, 5, kChar)), {2, 5}, {1, 2}, kChar);
  Tensor self = onMeta({3}, kInt);
  CHECK(relu_(self).is_same(self));

  REQUIRE_THROWS_WITH(neg(onMeta({2}, kBool)),
                      "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                      "mask, use the `~` or `logical_not()` operator instead.");
  REQUIRE_THROWS_WITH(dk::abs(onMeta({2}, kBool)), "abs: unsupported dtype Bool");
  REQUIRE_THROWS_WITH(relu(onMeta({2}, kBool)), "Boolean inputs not supported for relu");
  REQUIRE_THROWS_WITH(relu_(onMeta({2}, kBool)), "Boolean inputs not supported for relu");
  REQUIRE_THROWS_WITH(gelu(onMeta({2}, kLong)), "gelu: unsupported dtype Long");
  REQUIRE_THROWS_WITH(gelu(onMeta({2}), "erf"), "approximate argument must be either none or tanh.");
}

// ---------------------------------------------------------------- reductions

TEST_CASE("meta: sum and mean", "[meta][reduce]") {
  requireMeta(sum(onMeta({2, 3, 4})), {}, kFloat);
  requireMeta(sum(onMeta({2, 3}, kInt)), {}, kLong);
  requireMeta(sum(onMeta({2, 3}, kBool)), {}, kLong);
  requireMeta(sum(onMeta({2, 3}, kHalf)), {}, kHalf);
  requireMeta(sum(onMeta({2, 3}, kInt), kDouble), {}, kDouble);
  requireMeta(sum(onMeta({2, 3, 4}), {1}), {2, 4}, kFloat);
  requireMeta(sum(onMeta({2, 3, 4}), {0, -1}, true), {1, 3, 1}, kFloat);
  requireMeta(sum(onMeta({2, 3, 4}), {}, false), {}, kFloat);  // an empty list reduces every dim
  requireMeta(sum(onMeta({2, 3, 4}), std::optional<IntArrayRef>(), true), {1, 1, 1}, kFloat);
  requireMeta(sum(onMeta({0, 3}, kChar), {0}), {3}, kLong);
  requireMeta(sum(onMeta({}), {0}), {}, kFloat);
  requireMeta(sum(onMeta({}), {-1}, true), {}, kFloat);
  requireMeta(sum(transposed(3, 5, kByte), {1}, false, kInt), {3}, kInt);
  REQUIRE_THROWS_WITH(sum(onMeta({2, 3}), {1, -1}), "dim 1 appears multiple times in the list of dims");
  REQUIRE_THROWS_WITH(sum(onMeta({2, 3}), {2}),
                      "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  REQUIRE_THROWS_WITH(sum(onMeta({}), {1}), "Dimension out of range (expected to be in range of [-1, 0], but got 1)");

  requireMeta(mean(onMeta({2, 3}), {1}), {2}, kFloat);
  requireMeta(mean(onMeta({2, 3}, kHalf), {0}, true), {1, 3}, kHalf);
  requireMeta(mean(onMeta({2, 3}, kInt), {0}, false, kDouble), {3}, kDouble);
  requireMeta(mean(onMeta({4, 5}, kBFloat16), {}, false), {}, kBFloat16);
  REQUIRE_THROWS_WITH(mean(onMeta({2}, kLong), {0}),
                      "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                      "dtype. Got: Long");
  REQUIRE_THROWS_WITH(mean(onMeta({2}, kBool), {0}),
                      "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                      "dtype. Got: Bool");
  REQUIRE_THROWS_WITH(mean(onMeta({2}, kFloat), {0}, false, kInt),
                      "mean(): could not infer output dtype. Optional dtype must be either a floating point or "
                      "complex dtype. Got: Int");
}

TEST_CASE("meta: max.dim and argmax", "[meta][reduce]") {
  auto [values, indices] = dk::max(onMeta({2, 3, 4}, kHalf), 1);
  requireMeta(values, {2, 4}, kHalf);
  requireMeta(indices, {2, 4}, kLong);
  auto [kv, ki] = dk::max(onMeta({2, 3}, kBool), -1, true);
  requireMeta(kv, {2, 1}, kBool);
  requireMeta(ki, {2, 1}, kLong);
  auto [sv, si] = dk::max(onMeta({}, kInt), 0);
  requireMeta(sv, {}, kInt);
  requireMeta(si, {}, kLong);
  auto [ev, ei] = dk::max(onMeta({0, 3}), 1);  // reducing a non-empty dim of an empty tensor is fine
  requireMeta(ev, {0}, kFloat);
  requireMeta(ei, {0}, kLong);
  REQUIRE_THROWS_WITH(dk::max(onMeta({2, 0}), 1), "max(): Expected reduction dim 1 to have non-zero size.");
  REQUIRE_THROWS_WITH(dk::max(onMeta({2, 3}), 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");

  requireMeta(argmax(onMeta({2, 3, 4})), {}, kLong);
  requireMeta(argmax(onMeta({2, 3, 4}), std::nullopt, true), {1, 1, 1}, kLong);
  requireMeta(argmax(onMeta({2, 3, 4}, kInt), 0), {3, 4}, kLong);
  requireMeta(argmax(onMeta({2, 3, 4}, kDouble), -1, true), {2, 3, 1}, kLong);
  requireMeta(argmax(onMeta({}, kHalf), 0), {}, kLong);
  REQUIRE_THROWS_WITH(argmax(onMeta({0, 3})),
                      "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  REQUIRE_THROWS_WITH(argmax(onMeta({0, 3}), 0), "argmax(): Expected reduction dim 0 to have non-zero size.");
  REQUIRE_THROWS_WITH(argmax(onMeta({2}, kBool)), "argmax: unsupported dtype Bool");
}

// ---------------------------------------------------------------- linear algebra

TEST_CASE("meta: mm, bmm, addmm", "[meta][linalg]") {
  requireMeta(mm(onMeta({2, 3}), onMeta({3, 5})), {2, 5}, kFloat);
  requireMeta(mm(transposed(4, 3, kDouble), transposed(3, 2, kDouble)), {4, 2}, kDouble);
  requireMeta(mm(onMeta({0, 3}, kHalf), onMeta({3, 0}, kHalf)), {0, 0}, kHalf);
  requireMeta(mm(onMeta({2, 0}, kLong), onMeta({0, 4}, kLong)), {2, 4}, kLong);
  REQUIRE_THROWS_WITH(mm(onMeta({2, 3, 1}), onMeta({3, 5})), "self must be a matrix");
  REQUIRE_THROWS_WITH(mm(onMeta({2, 3}), onMeta({3})), "mat2 must be a matrix");
  REQUIRE_THROWS_WITH(mm(onMeta({2, 3}), onMeta({4, 5})), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  REQUIRE_THROWS_WITH(mm(onMeta({2, 3}), onMeta({3, 5}, kDouble)),
                      "expected m1 and m2 to have the same dtype, but got: float != double");
  REQUIRE_THROWS_WITH(mm(onMeta({2, 3}, kBool), onMeta({3, 5}, kBool)), "mm: unsupported dtype Bool");
  requireMeta(mm(onMeta({0, 3}, kBool), onMeta({3, 5}, kBool)), {0, 5}, kBool);  // nothing computed, as on the CPU

  requireMeta(bmm(onMeta({7, 2, 3}, kBFloat16), onMeta({7, 3, 4}, kBFloat16)), {7, 2, 4}, kBFloat16);
  requireMeta(bmm(onMeta({0, 2, 3}), onMeta({0, 3, 4})), {0, 2, 4}, kFloat);
  REQUIRE_THROWS_WITH(bmm(onMeta({2, 3}), onMeta({2, 3, 4})), "batch1 must be a 3D tensor");
  REQUIRE_THROWS_WITH(bmm(onMeta({2, 2, 3}), onMeta({3, 4})), "batch2 must be a 3D tensor");
  REQUIRE_THROWS_WITH(bmm(onMeta({2, 2, 3}), onMeta({2, 4, 4})),
                      "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].");
  REQUIRE_THROWS_WITH(bmm(onMeta({2, 2, 3}), onMeta({3, 3, 4})),
                      "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3].");
  REQUIRE_THROWS_WITH(bmm(onMeta({2, 2, 3}, kHalf), onMeta({2, 3, 4})),
                      "expected m1 and m2 to have the same dtype, but got: c10::Half != float");
  REQUIRE_THROWS_WITH(bmm(onMeta({2, 2, 3}, kBool), onMeta({2, 3, 4}, kBool)), "bmm: unsupported dtype Bool");

  requireMeta(addmm(onMeta({5}), onMeta({2, 3}), onMeta({3, 5})), {2, 5}, kFloat);
  requireMeta(addmm(onMeta({2, 1}, kDouble), onMeta({2, 3}, kDouble), onMeta({3, 5}, kDouble)), {2, 5}, kDouble);
  requireMeta(addmm(onMeta({}), onMeta({2, 3}), onMeta({3, 5}), 0.5, 2), {2, 5}, kFloat);
  requireMeta(addmm(onMeta({2, 5}), transposed(2, 3), transposed(3, 5)), {2, 5}, kFloat);
  // self may have another dtype: it is converted (PyTorch 1.13).
  requireMeta(addmm(onMeta({5}, kDouble), onMeta({2, 3}), onMeta({3, 5})), {2, 5}, kFloat);
  requireMeta(addmm(onMeta({5}, kInt), onMeta({2, 3}, kLong), onMeta({3, 5}, kLong), 2, 3), {2, 5}, kLong);
  REQUIRE_THROWS_WITH(addmm(onMeta({5}), onMeta({2, 3}, kHalf), onMeta({3, 5})),
                      "expected m1 and m2 to have the same dtype, but got: c10::Half != float");
  REQUIRE_THROWS_WITH(addmm(onMeta({5}, kLong), onMeta({2, 3}, kLong), onMeta({3, 5}, kLong), 1, 0.5),
                      "For integral input tensors, argument alpha must not be a floating point number.");
  REQUIRE_THROWS_WITH(addmm(onMeta({5}, kLong), onMeta({2, 3}, kLong), onMeta({3, 5}, kLong), 0.5, 1),
                      "For integral input tensors, argument beta must not be a floating point number.");
  REQUIRE_THROWS_WITH(addmm(onMeta({5}), onMeta({2, 3, 1}), onMeta({3, 5})), "mat1 must be a matrix, got 3-D tensor");
  REQUIRE_THROWS_WITH(addmm(onMeta({5}), onMeta({2, 3}), onMeta({3})), "mat2 must be a matrix, got 1-D tensor");
  REQUIRE_THROWS_WITH(addmm(onMeta({5}), onMeta({2, 3}), onMeta({2, 5})),
                      "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x5)");
  REQUIRE_THROWS_WITH(addmm(onMeta({3}), onMeta({2, 3}), onMeta({3, 5})),
                      "The expanded size of the tensor (5) must match the existing size (3) at non-singleton "
                      "dimension 1.  Target sizes: [2, 5].  Tensor sizes: [3]");
  REQUIRE_THROWS_WITH(addmm(onMeta({1, 2, 5}), onMeta({2, 3}), onMeta({3, 5})),
                      "expand(torch.meta.FloatTensor{[1, 2, 5]}, size=[2, 5]): the number of sizes provided (2) must "
                      "be greater or equal to the number of dimensions in the tensor (3)");
  REQUIRE_THROWS_WITH(addmm(onMeta({2, 5}), onMeta({2, 3}), cpuScalar()),
                      "dk::addmm: expected all tensors to be on the same device, but found at least two devices, "
                      "meta (argument 'self') and cpu (argument 'mat2')");
}

TEST_CASE("meta: mm.out", "[meta][linalg][out]") {
  Tensor out = onMeta({0});
  CHECK(mm(onMeta({2, 3}), onMeta({3, 4}), out).is_same(out));
  requireMeta(out, {2, 4}, kFloat);
  CHECK(out.storage().nbytes() == 8 * sizeof(float));
  Tensor strided_out = transposed(2, 4);
  mm(onMeta({2, 3}), onMeta({3, 4}), strided_out);
  CHECK(strided_out.strides() == Sizes{1, 2});
  REQUIRE_THROWS_WITH(mm(onMeta({2, 3}), onMeta({3, 4}), onMeta({2, 4}, kDouble)),
                      "Expected out tensor to have dtype float, but got double instead");
}

// ---------------------------------------------------------------- cat, copy_, fill_, zero_

TEST_CASE("meta: cat", "[meta][cat]") {
  requireMeta(cat({onMeta({2, 3}), onMeta({4, 3})}), {6, 3}, kFloat);
  requireMeta(cat({onMeta({2, 3}), onMeta({2, 1}, kDouble), transposed(2, 5, kInt)}, 1), {2, 9}, kDouble);
  requireMeta(cat({onMeta({2, 3}, kInt), onMeta({2, 3}, kLong)}, -2), {4, 3}, kLong);
  requireMeta(cat({onMeta({0}, kDouble), onMeta({2, 3}), onMeta({0})}, 1), {2, 3}, kDouble);  // legacy skip, still promotes
  requireMeta(cat({onMeta({0}, kLong), onMeta({0}, kInt)}), {0}, kLong);
  requireMeta(cat({onMeta({0, 3}), onMeta({2, 3})}), {2, 3}, kFloat);
  // An empty list has no tensor to dispatch on: the kernel's own check, called directly.
  REQUIRE_THROWS_WITH(native::cat_meta(std::vector<Tensor>{}, 0), "torch.cat(): expected a non-empty list of Tensors");
  REQUIRE_THROWS_WITH(cat({onMeta({2}), onMeta({})}), "zero-dimensional tensor (at position 1) cannot be concatenated");
  REQUIRE_THROWS_WITH(cat({onMeta({2, 3}), onMeta({2, 3, 1})}), "Tensors must have same number of dimensions: got 2 and 3");
  REQUIRE_THROWS_WITH(cat({onMeta({2, 3}), onMeta({2, 2}), onMeta({2, 4})}, 0),
                      "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 2 for tensor "
                      "number 1 in the list.");
  REQUIRE_THROWS_WITH(cat({onMeta({2, 3}), onMeta({2, 3})}, 2),
                      "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  REQUIRE_THROWS_WITH(cat({onMeta({2}), detail::empty_contiguous({2}, kFloat, Device(kCPU))}),
                      "dk::cat: expected all tensors to be on the same device, but found at least two devices, meta "
                      "(argument 'tensors[0]') and cpu (argument 'tensors[1]')");
}

TEST_CASE("meta: copy_, fill_, zero_ return self", "[meta][copy]") {
  Tensor self = onMeta({2, 3}, kHalf);
  CHECK(ops::copy_::call(self, onMeta({3}, kLong), false).is_same(self));
  CHECK(ops::copy_::call(self, detail::empty_contiguous({2, 1}, kDouble, Device(kCPU)), false).is_same(self));
  CHECK(fill_(self, 2.5).is_same(self));
  CHECK(zero_(self).is_same(self));
  requireMeta(self, {2, 3}, kHalf);
  REQUIRE_THROWS_WITH(ops::copy_::call(self, onMeta({4}), false),
                      "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1 "
                      "(shapes [2, 3] and [4])");
  REQUIRE_THROWS_WITH(ops::copy_::call(self, onMeta({4, 2, 3}), false),
                      "output with shape [2, 3] doesn't match the broadcast shape [4, 2, 3]");
  // fill_ refuses values the dtype cannot hold, as the CPU kernel does.
  CHECK(fill_(onMeta({2}, kByte), -1).is_meta());  // wraps from below
  REQUIRE_THROWS_WITH(fill_(onMeta({2}, kByte), 300), "value cannot be converted to type uint8_t without overflow");
  REQUIRE_THROWS_WITH(fill_(onMeta({2}, kChar), -129), "value cannot be converted to type int8_t without overflow");
  REQUIRE_THROWS_WITH(fill_(onMeta({2}, kLong), std::numeric_limits<double>::infinity()),
                      "value cannot be converted to type int64_t without overflow");
  REQUIRE_THROWS_WITH(fill_(onMeta({2}, kHalf), 1e5), "value cannot be converted to type at::Half without overflow");
  CHECK(fill_(onMeta({2}, kHalf), std::numeric_limits<double>::infinity()).is_meta());
  CHECK_NOTHROW(fill_(onMeta({2}, kBool), 2));  // every value converts to bool, as in PyTorch
  // A meta source cannot fill real memory.
  Tensor cpu = detail::empty_contiguous({2}, kFloat, Device(kCPU));
  REQUIRE_THROWS_WITH(ops::copy_::call(cpu, onMeta({2}), false), "Cannot copy out of meta tensor; no data!");
}

TEST_CASE("meta: item has no Meta kernel", "[meta][copy]") {
  REQUIRE_THROWS_AS(ops::item::call(onMeta({})), NotImplementedError);
}

// ---------------------------------------------------------------- neural networks

TEST_CASE("meta: softmax and log_softmax", "[meta][nn]") {
  requireMeta(_softmax(onMeta({2, 3}), 1, false), {2, 3}, kFloat);
  requireMeta(_log_softmax(transposed(4, 3, kDouble), -2, false), {4, 3}, kDouble);
  requireMeta(_softmax(onMeta({}, kBFloat16), 0, false), {}, kBFloat16);
  requireMeta(_log_softmax(onMeta({2, 3}, kHalf), 0, true), {2, 3}, kFloat);
  requireMeta(_softmax(onMeta({0, 3}, kHalf), -1, false), {0, 3}, kHalf);
  REQUIRE_THROWS_WITH(_softmax(onMeta({2, 3}), 2, false),
                      "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  REQUIRE_THROWS_WITH(_softmax(onMeta({2, 3}), 0, true), "conversion is supported for Half type only");
  REQUIRE_THROWS_WITH(_softmax(onMeta({2, 3}, kLong), 0, false), "_softmax: unsupported dtype Long");
  REQUIRE_THROWS_WITH(_log_softmax(onMeta({2, 3}, kBool), 0, false), "_log_softmax: unsupported dtype Bool");
}

TEST_CASE("meta: mse_loss", "[meta][nn]") {
  requireMeta(mse_loss(onMeta({2, 3}), onMeta({2, 3}), 0), {2, 3}, kFloat);
  requireMeta(mse_loss(onMeta({2, 3}), onMeta({3}, kDouble), 0), {2, 3}, kDouble);
  requireMeta(mse_loss(onMeta({2, 3}), onMeta({2, 3})), {}, kFloat);
  requireMeta(mse_loss(onMeta({2, 3}, kHalf), onMeta({1}, kHalf), 2), {}, kHalf);
  requireMeta(mse_loss(onMeta({2, 3}, kLong), onMeta({2, 3}, kFloat)), {}, kFloat);
  REQUIRE_THROWS_WITH(mse_loss(onMeta({2}, kLong), onMeta({2}, kLong)), "mse_loss: unsupported dtype Long");
  REQUIRE_THROWS_WITH(mse_loss(onMeta({2}), onMeta({2}), 3),
                      "mse_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), but got 3");
  REQUIRE_THROWS_WITH(mse_loss(onMeta({2}), onMeta({3})),
                      "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0 "
                      "(shapes [2] and [3])");
}

TEST_CASE("meta: nll_loss", "[meta][nn]") {
  requireMeta(nll_loss(onMeta({4, 3}), onMeta({4}, kLong)), {}, kFloat);
  requireMeta(nll_loss(onMeta({4, 3}, kDouble), onMeta({4}, kLong), onMeta({3}, kDouble), 0), {4}, kDouble);
  requireMeta(nll_loss(onMeta({4, 3}), onMeta({4}, kByte), std::nullopt, 2), {}, kFloat);
  requireMeta(nll_loss(onMeta({3}), onMeta({}, kLong), std::nullopt, 0), {}, kFloat);  // no batch dim
  requireMeta(nll_loss(onMeta({0, 3}), onMeta({0}, kLong), std::nullopt, 0), {0}, kFloat);
  REQUIRE_THROWS_WITH(nll_loss(onMeta({2, 3, 4}), onMeta({2}, kLong)), "input tensor should be 1D or 2D");
  REQUIRE_THROWS_WITH(nll_loss(onMeta({2, 3}), onMeta({2, 1}, kLong)),
                      "0D or 1D target tensor expected, multi-target not supported");
  REQUIRE_THROWS_WITH(nll_loss(onMeta({2, 3}), onMeta({4}, kLong)), "size mismatch (got input: [2, 3], target: [4])");
  REQUIRE_THROWS_WITH(nll_loss(onMeta({2, 3}), onMeta({2}, kLong), onMeta({2})),
                      "weight tensor should be defined either for all 3 classes or no classes but got weight tensor "
                      "of shape: [2]");
  REQUIRE_THROWS_WITH(nll_loss(onMeta({2, 3}), onMeta({2}, kInt)), "expected scalar type Long but found Int");
  REQUIRE_THROWS_WITH(nll_loss(onMeta({2, 3}), onMeta({2}, kLong), onMeta({3}, kDouble)),
                      "expected scalar type Float but found Double");
  REQUIRE_THROWS_WITH(nll_loss(onMeta({2, 3}, kLong), onMeta({2}, kLong)), "nll_loss: unsupported dtype Long");
  REQUIRE_THROWS_WITH(nll_loss(onMeta({2, 3}), onMeta({2}, kLong), std::nullopt, 7),
                      "nll_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), but got 7");
}

TEST_CASE("meta: embedding", "[meta][nn]") {
  requireMeta(embedding(onMeta({10, 4}), onMeta({5}, kLong)), {5, 4}, kFloat);
  requireMeta(embedding(onMeta({10, 4}, kHalf), onMeta({2, 3}, kInt)), {2, 3, 4}, kHalf);
  requireMeta(embedding(onMeta({10, 4}, kBool), onMeta({}, kLong)), {4}, kBool);
  requireMeta(embedding(onMeta({10, 4}), transposed(3, 2, kLong)), {3, 2, 4}, kFloat);
  REQUIRE_THROWS_WITH(embedding(onMeta({10}), onMeta({5}, kLong)), "'weight' must be 2-D");
  REQUIRE_THROWS_WITH(embedding(onMeta({10, 4}), onMeta({5}, kFloat)),
                      "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
                      "Int; but got torch.FloatTensor instead (while checking arguments for embedding)");
}

// ---------------------------------------------------------------- factories

TEST_CASE("meta: factories", "[meta][factories]") {
  requireMeta(empty({2, 3}, std::nullopt, std::nullopt, kMetaDevice), {2, 3}, kFloat);
  requireMeta(zeros({4}, kLong, std::nullopt, kMetaDevice), {4}, kLong);
  requireMeta(ones({}, kBool, std::nullopt, kMetaDevice), {}, kBool);
  requireMeta(full({2, 2}, 1.5, std::nullopt, std::nullopt, kMetaDevice), {2, 2}, kFloat);
  requireMeta(full({2, 2}, 7, std::nullopt, std::nullopt, kMetaDevice), {2, 2}, kLong);
  requireMeta(full({2, 2}, true, std::nullopt, std::nullopt, kMetaDevice), {2, 2}, kBool);
  requireMeta(full({3}, 7, kHalf, std::nullopt, kMetaDevice), {3}, kHalf);
  requireMeta(rand({3, 0}, std::nullopt, std::nullopt, kMetaDevice), {3, 0}, kFloat);
  requireMeta(randn({5}, kBFloat16, std::nullopt, kMetaDevice), {5}, kBFloat16);
  requireMeta(rand({2}, Generator(7), kDouble, std::nullopt, kMetaDevice), {2}, kDouble);
  requireMeta(randn({2}, Generator(7), kHalf, std::nullopt, kMetaDevice), {2}, kHalf);

  Tensor channels_last = empty({2, 3, 4, 5}, kFloat, std::nullopt, kMetaDevice, std::nullopt,
                               MemoryFormat::ChannelsLast);
  CHECK(channels_last.is_meta());
  CHECK(channels_last.sizes() == Sizes{2, 3, 4, 5});
  CHECK(channels_last.strides() == Sizes{60, 1, 15, 3});

  REQUIRE_THROWS_WITH(full({2}, 1e10, kInt, std::nullopt, kMetaDevice),
                      "value cannot be converted to type int without overflow");
  REQUIRE_THROWS_WITH(zeros({2, -1}, std::nullopt, std::nullopt, kMetaDevice),
                      "Trying to create tensor with negative dimension -1: [2, -1]");
  REQUIRE_THROWS_WITH(rand({2}, kLong, std::nullopt, kMetaDevice), "rand: unsupported dtype Long");
  REQUIRE_THROWS_WITH(randn({2}, kBool, std::nullopt, kMetaDevice), "randn: unsupported dtype Bool");
  REQUIRE_THROWS_WITH(ones({2}, std::nullopt, Layout::Sparse, kMetaDevice),
                      "ones: only the strided layout is supported, got Sparse");
  REQUIRE_THROWS_WITH(zeros({2}, std::nullopt, std::nullopt, kMetaDevice, true),
                      "zeros: only dense CPU tensors can be pinned");
  REQUIRE_THROWS_WITH(empty({2, 3}, std::nullopt, std::nullopt, kMetaDevice, std::nullopt, MemoryFormat::ChannelsLast),
                      "required rank 4 tensor to use channels_last format");
  REQUIRE_THROWS_WITH(empty({2}, std::nullopt, std::nullopt, kMetaDevice, std::nullopt, MemoryFormat::Preserve),
                      "unsupported memory format Preserve");
}

TEST_CASE("meta: arange lengths and dtypes", "[meta][factories]") {
  auto arangeMeta = [](const Scalar& start, const Scalar& end, const Scalar& step,
                       std::optional<ScalarType> dtype = std::nullopt) {
    return arange(start, end, step, dtype, std::nullopt, kMetaDevice);
  };
  requireMeta(arangeMeta(0, 10, 3), {4}, kLong);
  requireMeta(arangeMeta(0, 10, 1), {10}, kLong);
  requireMeta(arangeMeta(10, 0, -3), {4}, kLong);
  requireMeta(arangeMeta(0, 1, 0.1), {10}, kFloat);
  requireMeta(arangeMeta(1, 2.5, 0.5), {3}, kFloat);
  requireMeta(arangeMeta(true, 3, 1), {2}, kLong);
  requireMeta(arangeMeta(0, 0, 1), {0}, kLong);
  requireMeta(arangeMeta(0, 5, 1, kDouble), {5}, kDouble);
  // Long truncates the bounds before measuring; other integral dtypes measure the doubles.
  requireMeta(arangeMeta(0, 2.5, 1, kLong), {2}, kLong);
  requireMeta(arangeMeta(0, 2.5, 1, kInt), {3}, kInt);
  requireMeta(arangeMeta(0, 1, 0.25, kHalf), {4}, kHalf);
  REQUIRE_THROWS_WITH(arangeMeta(0, 10, 0), "step must be nonzero");
  REQUIRE_THROWS_WITH(arangeMeta(0, 2, 0.5, kInt), "step must be nonzero");  // the step truncates to 0
  REQUIRE_THROWS_WITH(arangeMeta(0, 10, -1), "upper bound and larger bound inconsistent with step sign");
  REQUIRE_THROWS_WITH(arangeMeta(0, std::numeric_limits<double>::infinity(), 1), "unsupported range: 0 -> inf");
  REQUIRE_THROWS_WITH(arangeMeta(0, 5, 1, kBool), "arange: unsupported dtype Bool");
}

// ---------------------------------------------------------------- shape functions

TEST_CASE("meta: shape functions shared with the CPU and CUDA kernels", "[meta][shape_functions]") {
  SECTION("canCast") {
    CHECK(meta::canCast(kInt, kFloat));
    CHECK(meta::canCast(kBool, kByte));
    CHECK(meta::canCast(kDouble, kHalf));
    CHECK(meta::canCast(kLong, kByte));
    CHECK_FALSE(meta::canCast(kFloat, kLong));
    CHECK_FALSE(meta::canCast(kHalf, kByte));
    CHECK_FALSE(meta::canCast(kInt, kBool));
    CHECK(meta::canCast(kBool, kBool));
    CHECK(meta::canCast(kFloat, kFloat));
  }
  SECTION("makeDimMask and reducedSizes") {
    meta::DimMask mask = meta::makeDimMask(std::vector<int64_t>{-1, 0}, 3);
    CHECK(mask.test(0));
    CHECK_FALSE(mask.test(1));
    CHECK(mask.test(2));
    CHECK(meta::reducedSizes({2, 3, 4}, mask, false) == Sizes{3});
    CHECK(meta::reducedSizes({2, 3, 4}, mask, true) == Sizes{1, 3, 1});
    CHECK(meta::makeDimMask(std::nullopt, 4).count() == 4);
  }
  SECTION("expandedStrides") {
    Tensor t = onMeta({3, 1});
    CHECK(meta::expandedStrides(t, {2, 3, 4}) == Sizes{0, 1, 0});
    CHECK(meta::expandedStrides(transposed(2, 3), {2, 3}) == Sizes{1, 2});
    REQUIRE_THROWS_WITH(meta::expandedStrides(t, {2, 4}),
                        "The expanded size of the tensor (2) must match the existing size (3) at non-singleton "
                        "dimension 0.  Target sizes: [2, 4].  Tensor sizes: [3, 1]");
  }
  SECTION("resizeOutput") {
    Tensor out = onMeta({2, 3});
    CHECK_FALSE(meta::resizeOutput(out, {2, 3}));
    Tensor empty_out = onMeta({0}, kDouble);
    CHECK(meta::resizeOutput(empty_out, {4, 5}));
    requireMeta(empty_out, {4, 5}, kDouble);
    CHECK(empty_out.storage().nbytes() == 20 * sizeof(double));
    // Shrinking keeps the storage (and warns: the out tensor had elements).
    WarningCapture warnings;
    CHECK(meta::resizeOutput(empty_out, {0}));
    CHECK(warnings.messages.size() == 1);
    CHECK(empty_out.storage().nbytes() == 20 * sizeof(double));
  }
  SECTION("arangeLength overflow") {
    REQUIRE_THROWS_WITH(meta::arangeLength(0, 1e300, 1e-300, kDouble), "invalid size, possible overflow?");
    REQUIRE_THROWS_WITH(meta::arangeLength(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                                           1, kLong),
                        "invalid size, possible overflow?");
  }
}

// ---------------------------------------------------------------- against the CPU kernels

namespace {

const Device kCpuDevice(DeviceType::CPU);

// A CPU tensor of zeros (valid class and row indices everywhere).
Tensor onCpu(Sizes sizes, ScalarType dtype = kFloat) {
  Tensor t = detail::empty_contiguous(sizes, dtype, kCpuDevice);
  zero_(t);
  return t;
}

// The transpose of a fresh CPU [cols, rows] tensor.
Tensor transposedCpu(int64_t rows, int64_t cols, ScalarType dtype = kFloat) {
  return detail::make_view(onCpu({cols, rows}, dtype), {rows, cols}, {1, rows}, 0);
}

// A meta tensor with t's geometry (sizes, strides, offset), dtype and wrapped-number flag.
Tensor metaTwin(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor base = onMeta({storageElementsFor(t.sizes(), t.strides(), t.storage_offset())}, t.dtype());
  Tensor twin = detail::make_view(base, t.sizes(), t.strides(), t.storage_offset());
  twin.unsafeGetTensorImpl()->set_wrapped_number(t.unsafeGetTensorImpl()->is_wrapped_number());
  return twin;
}

using TensorOp = std::function<Tensor(const std::vector<Tensor>&)>;

// op on the CPU inputs and on their meta twins: the same error, or outputs of the same sizes,
// strides and dtype (the meta one on meta).
void requireMatchesCpu(const TensorOp& op, const std::vector<Tensor>& cpu_inputs) {
  std::vector<Tensor> meta_inputs;
  for (const Tensor& t : cpu_inputs) meta_inputs.push_back(metaTwin(t));
  std::string cpu_error = "(none)", meta_error = "(none)";
  Tensor cpu_out, meta_out;
  try {
    cpu_out = op(cpu_inputs);
  } catch (const Error& e) {
    cpu_error = e.what();
  }
  try {
    meta_out = op(meta_inputs);
  } catch (const Error& e) {
    meta_error = e.what();
  }
  CHECK(meta_error == cpu_error);
  if (cpu_error != "(none)" || meta_error != "(none)") return;
  CHECK(meta_out.is_meta());
  CHECK(meta_out.sizes() == cpu_out.sizes());
  CHECK(meta_out.strides() == cpu_out.strides());
  CHECK(meta_out.dtype() == cpu_out.dtype());
}

template <class F>
TensorOp unaryOf(F f) {
  return [f](const std::vector<Tensor>& in) { return f(in[0]); };
}
template <class F>
TensorOp binaryOf(F f) {
  return [f](const std::vector<Tensor>& in) { return f(in[0], in[1]); };
}

}  // namespace

TEST_CASE("meta: pointwise outputs and errors match the CPU kernels", "[meta][cpu]") {
  WarningCapture quiet;
  const std::vector<std::vector<Tensor>> pairs = {
      {onCpu({2, 3}), onCpu({2, 3})},
      {onCpu({2, 1, 3}, kInt), onCpu({4, 1}, kDouble)},
      {transposedCpu(2, 3), onCpu({2, 3}, kLong)},
      {onCpu({2, 3}, kHalf), transposedCpu(2, 3, kBFloat16)},
      {onCpu({4, 1}, kByte), transposedCpu(4, 3, kChar)},
      {onCpu({3}, kBool), onCpu({}, kBool)},
      {onCpu({0, 3}), onCpu({3}, kInt)},
      {onCpu({2, 3}), onCpu({4})},  // does not broadcast
      {detail::make_view(onCpu({3}), {2, 3}, {0, 1}, 0), onCpu({2, 3})},  // an expanded self
      {onCpu({2}, kBool), onCpu({2}, kFloat)},
      // Row-major inputs with size-1 dims (equal strides on two dims) and broadcast ones: the
      // shape function's no-allocation path, which must order dims as the CPU iterator does.
      {onCpu({2, 1, 3}), onCpu({1, 1, 3})},
      {onCpu({3, 1}), onCpu({1, 4})},
      {onCpu({1, 1}), transposedCpu(2, 3)},
      {onCpu({1, 3, 1, 2}), onCpu({4, 1, 1, 1})},
  };
  const std::vector<TensorOp> binary_ops = {
      binaryOf([](const Tensor& a, const Tensor& b) { return add(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return add(a, b, 2.5); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return add(a, b, true); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return sub(a, b, 2); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return mul(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return div(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return maximum(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return minimum(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return eq(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return gt(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return lt(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return mse_loss(a, b, 0); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return mse_loss(a, b, 1); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return where(gt(a, b), a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return ops::add__Tensor::call(a, b, 1); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return ops::mul__Tensor::call(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return ops::sub__Tensor::call(a, b, 1); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return ops::div__Tensor::call(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) {
        Tensor out = detail::empty_contiguous({0}, kFloat, a.device());
        return ops::sub_out::call(a, b, 1, out);
      }),
      binaryOf([](const Tensor& a, const Tensor& b) {
        Tensor out = detail::empty_contiguous({0}, kLong, a.device());
        return ops::mul_out::call(a, b, out);
      }),
      binaryOf([](const Tensor& a, const Tensor& b) {
        Tensor out = detail::empty_contiguous({0}, kDouble, a.device());
        return ops::div_out::call(a, b, out);
      }),
      binaryOf([](const Tensor& a, const Tensor& b) {
        Tensor out = detail::empty_contiguous({0}, kDouble, a.device());
        return add(a, b, 1, out);
      }),
      binaryOf([](const Tensor& a, const Tensor& b) { return ops::eq__Tensor::call(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) { return ops::gt__Tensor::call(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) {
        Tensor out = detail::empty_contiguous({0}, kBool, a.device());
        return ops::lt_Tensor_out::call(a, b, out);
      }),
      binaryOf([](const Tensor& a, const Tensor& b) {
        Tensor out = detail::empty_contiguous({0}, kInt, a.device());
        return ops::eq_Tensor_out::call(a, b, out);
      }),
  };
  for (const TensorOp& op : binary_ops) {
    for (const auto& inputs : pairs) requireMatchesCpu(op, inputs);
  }

  const std::vector<Tensor> singles = {onCpu({2, 3}),         transposedCpu(3, 4, kInt), onCpu({}, kLong),
                                       onCpu({0, 2}, kHalf),  transposedCpu(2, 5, kBool), onCpu({3}, kByte),
                                       transposedCpu(4, 2, kBFloat16), onCpu({2, 2}, kDouble)};
  const std::vector<TensorOp> unary_ops = {
      unaryOf([](const Tensor& x) { return neg(x); }),      unaryOf([](const Tensor& x) { return dk::abs(x); }),
      unaryOf([](const Tensor& x) { return dk::exp(x); }),  unaryOf([](const Tensor& x) { return dk::log(x); }),
      unaryOf([](const Tensor& x) { return dk::sqrt(x); }), unaryOf([](const Tensor& x) { return rsqrt(x); }),
      unaryOf([](const Tensor& x) { return dk::sin(x); }),  unaryOf([](const Tensor& x) { return dk::cos(x); }),
      unaryOf([](const Tensor& x) { return dk::tanh(x); }), unaryOf([](const Tensor& x) { return sigmoid(x); }),
      unaryOf([](const Tensor& x) { return relu(x); }),     unaryOf([](const Tensor& x) { return relu_(x); }),
      unaryOf([](const Tensor& x) { return gelu(x); }),     unaryOf([](const Tensor& x) { return gelu(x, "tanh"); }),
      unaryOf([](const Tensor& x) { return gelu(x, "erf"); }),
      unaryOf([](const Tensor& x) { return clamp(x, 0, 1); }),
      unaryOf([](const Tensor& x) { return clamp(x, 0.5, std::nullopt); }),
      unaryOf([](const Tensor& x) { return clamp(x); }),
      unaryOf([](const Tensor& x) { return dk::pow(x, 2); }),
      unaryOf([](const Tensor& x) { return dk::pow(x, 0.5); }),
      unaryOf([](const Tensor& x) { return dk::pow(x, -1); }),
      unaryOf([](const Tensor& x) { return eq(x, Scalar(1.5)); }),
      unaryOf([](const Tensor& x) { return ops::eq__Scalar::call(x, Scalar(2)); }),
      unaryOf([](const Tensor& x) {
        Tensor out = detail::empty_contiguous({0}, kFloat, x.device());
        return ops::eq_Scalar_out::call(x, Scalar(2), out);
      }),
      unaryOf([](const Tensor& x) { return ops::pow__Scalar::call(x, 2); }),
      unaryOf([](const Tensor& x) { return ops::pow__Scalar::call(x, 0.5); }),
      unaryOf([](const Tensor& x) {
        Tensor out = detail::empty_contiguous({0}, kLong, x.device());
        return ops::pow_Tensor_Scalar_out::call(x, 3, out);
      }),
      unaryOf([](const Tensor& x) { return ops::clamp_::call(x, 0, 1); }),
      unaryOf([](const Tensor& x) { return ops::clamp_::call(x, 0.5, std::nullopt); }),
      unaryOf([](const Tensor& x) {
        Tensor out = detail::empty_contiguous({0}, kDouble, x.device());
        return ops::clamp_out::call(x, std::nullopt, 2, out);
      }),
      unaryOf([](const Tensor& x) { return fill_(x, 300); }),
      unaryOf([](const Tensor& x) { return fill_(x, -1); }),
      unaryOf([](const Tensor& x) { return zero_(x); }),
  };
  for (const TensorOp& op : unary_ops) {
    for (const Tensor& x : singles) requireMatchesCpu(op, {x});
  }
  requireMatchesCpu([](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
                    {onCpu({3, 1}, kByte), transposedCpu(3, 4), onCpu({}, kInt)});
  requireMatchesCpu([](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
                    {transposedCpu(3, 4, kBool), onCpu({3, 4}, kHalf), onCpu({4}, kHalf)});
  requireMatchesCpu([](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
                    {onCpu({3}, kFloat), onCpu({3}), onCpu({3})});
}

TEST_CASE("meta: other outputs and errors match the CPU kernels", "[meta][cpu]") {
  WarningCapture quiet;
  const std::vector<Tensor> inputs = {onCpu({2, 3, 4}), transposedCpu(3, 5, kInt), onCpu({}, kHalf),
                                      onCpu({0, 3}, kBool), onCpu({4, 0}, kDouble), onCpu({2, 3}, kLong)};
  const std::vector<TensorOp> reductions = {
      unaryOf([](const Tensor& x) { return sum(x); }),
      unaryOf([](const Tensor& x) { return sum(x, kDouble); }),
      unaryOf([](const Tensor& x) { return sum(x, {0}); }),
      unaryOf([](const Tensor& x) { return sum(x, {-1}, true); }),
      unaryOf([](const Tensor& x) { return sum(x, {0, 1}); }),
      unaryOf([](const Tensor& x) { return sum(x, {1, 1}); }),
      unaryOf([](const Tensor& x) { return sum(x, {2}); }),
      unaryOf([](const Tensor& x) { return mean(x, {0}); }),
      unaryOf([](const Tensor& x) { return mean(x, {}, true, kFloat); }),
      unaryOf([](const Tensor& x) { return mean(x, {0}, false, kInt); }),
      unaryOf([](const Tensor& x) { return std::get<0>(dk::max(x, 0)); }),
      unaryOf([](const Tensor& x) { return std::get<1>(dk::max(x, -1, true)); }),
      unaryOf([](const Tensor& x) { return std::get<0>(dk::max(x, 1)); }),
      unaryOf([](const Tensor& x) { return argmax(x); }),
      unaryOf([](const Tensor& x) { return argmax(x, std::nullopt, true); }),
      unaryOf([](const Tensor& x) { return argmax(x, 0); }),
      unaryOf([](const Tensor& x) { return argmax(x, -1, true); }),
      unaryOf([](const Tensor& x) {
        Tensor out = detail::empty_contiguous({0}, kFloat, x.device());
        return ops::sum_IntList_out::call(x, IntArrayRef{0}, false, std::nullopt, out);
      }),
      unaryOf([](const Tensor& x) {
        Tensor out = detail::empty_contiguous({0}, kFloat, x.device());
        return ops::sum_IntList_out::call(x, IntArrayRef{-1}, true, kDouble, out);
      }),
      unaryOf([](const Tensor& x) {
        Tensor out = detail::empty_contiguous({0}, kDouble, x.device());
        return ops::mean_out::call(x, IntArrayRef{0}, false, std::nullopt, out);
      }),
      unaryOf([](const Tensor& x) {
        Tensor out = detail::empty_contiguous({0}, kLong, x.device());
        return ops::mean_out::call(x, std::nullopt, false, std::nullopt, out);
      }),
      unaryOf([](const Tensor& x) {
        Tensor values = detail::empty_contiguous({0}, x.dtype(), x.device());
        Tensor indices = detail::empty_contiguous({0}, kLong, x.device());
        return std::get<1>(ops::max_dim_max::call(x, 0, false, values, indices));
      }),
      unaryOf([](const Tensor& x) {
        Tensor values = detail::empty_contiguous({0}, kFloat, x.device());
        Tensor indices = detail::empty_contiguous({0}, kLong, x.device());
        return std::get<0>(ops::max_dim_max::call(x, -1, true, values, indices));
      }),
      unaryOf([](const Tensor& x) {
        Tensor out = detail::empty_contiguous({0}, kLong, x.device());
        return ops::argmax_out::call(x, std::nullopt, false, out);
      }),
      unaryOf([](const Tensor& x) {
        Tensor out = detail::empty_contiguous({0}, kInt, x.device());
        return ops::argmax_out::call(x, 0, false, out);
      }),
      unaryOf([](const Tensor& x) { return _softmax(x, 0, false); }),
      unaryOf([](const Tensor& x) { return _log_softmax(x, -1, false); }),
      unaryOf([](const Tensor& x) { return _softmax(x, 1, true); }),
      unaryOf([](const Tensor& x) { return _log_softmax(x, 3, false); }),
  };
  for (const TensorOp& op : reductions) {
    for (const Tensor& x : inputs) requireMatchesCpu(op, {x});
  }

  const std::vector<std::vector<Tensor>> matrices = {
      {onCpu({2, 3}), onCpu({3, 4})},
      {transposedCpu(2, 3, kDouble), transposedCpu(3, 4, kDouble)},
      {onCpu({2, 3}, kLong), onCpu({3, 4}, kLong)},
      {onCpu({2, 3}), onCpu({4, 4})},
      {onCpu({2, 3}), onCpu({3, 4}, kDouble)},
      {onCpu({2, 3}, kBool), onCpu({3, 4}, kBool)},
      {onCpu({0, 3}, kBool), onCpu({3, 4}, kBool)},
      {onCpu({2, 3, 1}), onCpu({3, 4})},
      {onCpu({2, 3}), onCpu({3})},
  };
  const std::vector<TensorOp> products = {
      binaryOf([](const Tensor& a, const Tensor& b) { return mm(a, b); }),
      binaryOf([](const Tensor& a, const Tensor& b) {
        Tensor bias = a.is_meta() ? onMeta({4}, a.dtype()) : onCpu({4}, a.dtype());
        return addmm(bias, a, b);
      }),
      binaryOf([](const Tensor& a, const Tensor& b) {
        Tensor out = a.is_meta() ? onMeta({0}, a.dtype()) : onCpu({0}, a.dtype());
        return mm(a, b, out);
      }),
      binaryOf([](const Tensor& a, const Tensor& b) {
        Tensor out = a.is_meta() ? onMeta({1}, kInt) : onCpu({1}, kInt);
        return mm(a, b, out);
      }),
  };
  for (const TensorOp& op : products) {
    for (const auto& pair : matrices) requireMatchesCpu(op, pair);
  }
  auto bmmOp = binaryOf([](const Tensor& a, const Tensor& b) { return bmm(a, b); });
  requireMatchesCpu(bmmOp, {onCpu({2, 3, 4}), onCpu({2, 4, 5})});
  requireMatchesCpu(bmmOp, {onCpu({2, 3, 4}), onCpu({3, 4, 5})});
  requireMatchesCpu(bmmOp, {onCpu({2, 3, 4}, kHalf), onCpu({2, 4, 5})});
  requireMatchesCpu(bmmOp, {onCpu({2, 3}), onCpu({2, 4, 5})});
  auto addmmOp = [](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], 1, 2); };
  requireMatchesCpu(addmmOp, {onCpu({3}, kDouble), onCpu({2, 4}), onCpu({4, 3})});
  requireMatchesCpu(addmmOp, {onCpu({2, 1}), transposedCpu(2, 4), onCpu({4, 3})});
  requireMatchesCpu(addmmOp, {onCpu({4}), onCpu({2, 4}), onCpu({4, 3})});
  requireMatchesCpu([](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], 0.5, 1); },
                    {onCpu({3}, kLong), onCpu({2, 4}, kLong), onCpu({4, 3}, kLong)});

  auto catOp = [](int64_t dim) {
    return [dim](const std::vector<Tensor>& in) { return cat(in, dim); };
  };
  requireMatchesCpu(catOp(0), {onCpu({2, 3}), onCpu({4, 3}, kDouble), onCpu({0}, kInt)});
  requireMatchesCpu(catOp(-1), {transposedCpu(2, 3, kHalf), onCpu({2, 5}, kHalf)});
  requireMatchesCpu(catOp(1), {onCpu({0}), onCpu({0}, kLong)});
  requireMatchesCpu(catOp(0), {onCpu({2, 3}), onCpu({2, 4})});
  requireMatchesCpu(catOp(0), {onCpu({2, 3}), onCpu({2, 3, 1})});
  requireMatchesCpu(catOp(2), {onCpu({2, 3}), onCpu({2, 3})});
  requireMatchesCpu(catOp(0), {onCpu({2}), onCpu({})});

  auto nllOp = [](std::optional<Tensor> weight, int64_t reduction) {
    return [weight, reduction](const std::vector<Tensor>& in) {
      std::optional<Tensor> w;
      if (weight) w = in[0].is_meta() ? metaTwin(*weight) : *weight;
      return nll_loss(in[0], in[1], w, reduction);
    };
  };
  for (int64_t reduction : {0, 1, 2, 3}) {
    requireMatchesCpu(nllOp(std::nullopt, reduction), {onCpu({4, 3}), onCpu({4}, kLong)});
    requireMatchesCpu(nllOp(onCpu({3}), reduction), {onCpu({4, 3}), onCpu({4}, kByte)});
    requireMatchesCpu(nllOp(std::nullopt, reduction), {onCpu({3}), onCpu({}, kLong)});
  }
  requireMatchesCpu(nllOp(std::nullopt, 1), {onCpu({4, 3}), onCpu({4}, kInt)});
  requireMatchesCpu(nllOp(onCpu({3}, kDouble), 1), {onCpu({4, 3}), onCpu({4}, kLong)});
  requireMatchesCpu(nllOp(onCpu({2}), 1), {onCpu({4, 3}), onCpu({4}, kLong)});
  requireMatchesCpu(nllOp(std::nullopt, 1), {onCpu({4, 3}), onCpu({5}, kLong)});
  requireMatchesCpu(nllOp(std::nullopt, 1), {onCpu({4, 3}, kLong), onCpu({4}, kLong)});
  requireMatchesCpu(nllOp(std::nullopt, 1), {onCpu({4, 3, 2}), onCpu({4}, kLong)});

  auto embeddingOp = binaryOf([](const Tensor& w, const Tensor& i) { return embedding(w, i); });
  requireMatchesCpu(embeddingOp, {onCpu({10, 4}), onCpu({2, 3}, kLong)});
  requireMatchesCpu(embeddingOp, {transposedCpu(10, 4, kHalf), transposedCpu(2, 3, kInt)});
  requireMatchesCpu(embeddingOp, {onCpu({10, 4}), onCpu({3}, kFloat)});
  requireMatchesCpu(embeddingOp, {onCpu({10}), onCpu({3}, kLong)});

  auto copyOp = binaryOf([](const Tensor& self, const Tensor& src) { return ops::copy_::call(self, src, false); });
  requireMatchesCpu(copyOp, {onCpu({2, 3}), onCpu({3}, kLong)});
  requireMatchesCpu(copyOp, {transposedCpu(2, 3), onCpu({2, 3})});
  requireMatchesCpu(copyOp, {onCpu({2, 3}), onCpu({4})});
  requireMatchesCpu(copyOp, {onCpu({2, 3}), onCpu({4, 2, 3})});
  requireMatchesCpu(copyOp, {detail::make_view(onCpu({3}), {2, 3}, {0, 1}, 0), onCpu({2, 3})});
}

TEST_CASE("meta: factories match the CPU kernels", "[meta][cpu]") {
  auto both = [](const std::function<Tensor(Device)>& make) {
    requireMatchesCpu([&](const std::vector<Tensor>& in) { return make(in[0].device()); }, {onCpu({})});
  };
  both([](Device d) { return empty({2, 3}, kHalf, std::nullopt, d); });
  both([](Device d) { return empty({2, 3, 4, 5}, std::nullopt, std::nullopt, d, std::nullopt, MemoryFormat::ChannelsLast); });
  both([](Device d) { return empty({2, 3}, std::nullopt, std::nullopt, d, std::nullopt, MemoryFormat::ChannelsLast); });
  both([](Device d) { return empty({2, 3}, std::nullopt, std::nullopt, d, std::nullopt, MemoryFormat::Preserve); });
  both([](Device d) { return zeros({2, -1}, std::nullopt, std::nullopt, d); });
  both([](Device d) { return ones({0, 4}, kBool, std::nullopt, d); });
  both([](Device d) { return full({3}, 2.5, std::nullopt, std::nullopt, d); });
  both([](Device d) { return full({3}, 7, std::nullopt, std::nullopt, d); });
  both([](Device d) { return full({3}, 300, kByte, std::nullopt, d); });
  both([](Device d) { return rand({4}, kDouble, std::nullopt, d); });
  both([](Device d) { return randn({4}, kLong, std::nullopt, d); });
  both([](Device d) { return ones({2}, std::nullopt, Layout::Sparse, d); });
  const std::vector<std::array<Scalar, 3>> ranges = {
      {0, 10, 3}, {10, 0, -3}, {0, 1, 0.1}, {1, 2.5, 0.5}, {0, 10, 0}, {0, 10, -1}, {0, 2.5, 1}, {true, 3, 1}};
  for (const auto& r : ranges) {
    for (std::optional<ScalarType> dtype :
         {std::optional<ScalarType>(), std::optional<ScalarType>(kInt), std::optional<ScalarType>(kHalf),
          std::optional<ScalarType>(kBool), std::optional<ScalarType>(kLong)}) {
      both([&](Device d) { return arange(r[0], r[1], r[2], dtype, std::nullopt, d); });
    }
  }
}

// ---------------------------------------------------------------- a model on meta

TEST_CASE("meta: a two-layer MLP runs on meta tensors", "[meta][model]") {
  const int64_t batch = 64, in_features = 784, hidden = 128, classes = 10;
  Tensor x = randn({batch, in_features}, std::nullopt, std::nullopt, kMetaDevice);
  Tensor w1 = randn({in_features, hidden}, std::nullopt, std::nullopt, kMetaDevice);
  Tensor b1 = zeros({hidden}, std::nullopt, std::nullopt, kMetaDevice);
  Tensor w2 = randn({hidden, classes}, std::nullopt, std::nullopt, kMetaDevice);
  Tensor b2 = zeros({classes}, std::nullopt, std::nullopt, kMetaDevice);
  Tensor target = zeros({batch}, kLong, std::nullopt, kMetaDevice);

  Tensor h = relu(addmm(b1, x, w1));
  requireMeta(h, {batch, hidden}, kFloat);
  Tensor logits = add(mm(h, w2), b2);
  requireMeta(logits, {batch, classes}, kFloat);
  Tensor log_probs = _log_softmax(logits, 1, false);
  requireMeta(log_probs, {batch, classes}, kFloat);
  Tensor loss = nll_loss(log_probs, target);
  requireMeta(loss, {}, kFloat);
  Tensor per_sample = nll_loss(log_probs, target, std::nullopt, 0);
  requireMeta(per_sample, {batch}, kFloat);
  [[maybe_unused]] auto [best, predicted] = dk::max(log_probs, 1);
  requireMeta(predicted, {batch}, kLong);
  requireMeta(mean(ops::eq_Tensor::call(predicted, target), {0}, false, kFloat), {}, kFloat);

  // A wrong layer size is caught before any memory would have been touched.
  Tensor w_bad = randn({hidden + 1, classes}, std::nullopt, std::nullopt, kMetaDevice);
  REQUIRE_THROWS_WITH(mm(h, w_bad), "mat1 and mat2 shapes cannot be multiplied (64x128 and 129x10)");
}
