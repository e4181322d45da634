// The CPU elementwise kernels (kernels/cpu/binary.cpp, unary.cpp, compare.cpp, copy.cpp) and
// the TensorIterator under them: values against hand-worked cases and float64 reference
// loops, dtypes, broadcasting, strided inputs, zero-size tensors, in-place and out= forms, and
// every error by its exact text.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dk/core/generator.h"  // before Functions.h, which needs Generator complete
#include "dk/generated/ops/abs_native.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/add_native.h"
#include "dk/generated/ops/add_ops.h"
#include "dk/generated/ops/clamp.h"
#include "dk/generated/ops/clamp_ops.h"
#include "dk/generated/ops/copy_native.h"
#include "dk/generated/ops/copy_ops.h"
#include "dk/generated/ops/cos_ops.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/div_native.h"
#include "dk/generated/ops/eq.h"
#include "dk/generated/ops/eq_ops.h"
#include "dk/generated/ops/exp.h"
#include "dk/generated/ops/exp_ops.h"
#include "dk/generated/ops/fill.h"
#include "dk/generated/ops/fill_native.h"
#include "dk/generated/ops/gelu.h"
#include "dk/generated/ops/gelu_ops.h"
#include "dk/generated/ops/gt_ops.h"
#include "dk/generated/ops/item_native.h"
#include "dk/generated/ops/item_ops.h"
#include "dk/generated/ops/log_ops.h"
#include "dk/generated/ops/lt_ops.h"
#include "dk/generated/ops/maximum.h"
#include "dk/generated/ops/maximum_ops.h"
#include "dk/generated/ops/minimum_ops.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/mul_native.h"
#include "dk/generated/ops/neg.h"
#include "dk/generated/ops/neg_ops.h"
#include "dk/generated/ops/pow_ops.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/relu_native.h"
#include "dk/generated/ops/rsqrt_ops.h"
#include "dk/generated/ops/sigmoid_ops.h"
#include "dk/generated/ops/sin_ops.h"
#include "dk/generated/ops/sqrt_ops.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sub_native.h"
#include "dk/generated/ops/tanh_ops.h"
#include "dk/generated/ops/where.h"
#include "dk/generated/ops/where_native.h"
#include "dk/generated/ops/zero.h"
#include "dk/generated/ops/zero_native.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

#include "../kernels/cpu/tensor_iterator.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Tensor scalarTensor(double v, ScalarType dtype = kFloat) { return make({v}, {}, dtype); }

// Every other element of a 1-d tensor, as a view.
Tensor everyOther(const Tensor& t) {
  return detail::make_view(t, {(t.size(0) + 1) / 2}, {2 * t.stride(0)}, t.storage_offset());
}

// `t` broadcast to `sizes` (stride 0 on new and size-1 dims), as a view.
Tensor expanded(const Tensor& t, Sizes sizes) {
  Sizes strides(sizes.size(), 0);
  size_t offset = sizes.size() - static_cast<size_t>(t.dim());
  for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d)
    strides[offset + d] = t.sizes()[d] == 1 ? 0 : t.strides()[d];
  return detail::make_view(t, sizes, strides, t.storage_offset());
}

#define CHECK_VALUES(tensor, ...) CHECK(sameValues(read(tensor), Values(__VA_ARGS__)))
#define CHECK_CLOSE(tensor, expected, tol) CHECK(sameValues(read(tensor), expected, tol))

// out[i] = f(a[i], b[i]) for a and b broadcast together, in double (the reference loop).
Values broadcastReference(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f) {
  Sizes shape = inferBroadcastShape(a.sizes(), b.sizes());
  Tensor ea = expanded(a, shape), eb = expanded(b, shape);
  Values va = read(ea), vb = read(eb), out;
  for (size_t i = 0; i < va.size(); ++i) out.push_back(f(va[i], vb[i]));
  return out;
}

// Captures dk::warn messages while alive.
class WarningCapture {
 public:
  WarningCapture() : previous_(setWarningHandler([this](const std::string& m) { messages.push_back(m); })) {}
  ~WarningCapture() { setWarningHandler(previous_); }
  std::vector<std::string> messages;

 private:
  WarningHandler previous_;
};

Tensor metaTensor(Sizes sizes) { return detail::empty_contiguous(sizes, kFloat, Device(kMeta)); }

}  // namespace

// ---------------------------------------------------------------- TensorIterator

TEST_CASE("cpu-elementwise: TensorIterator shape, dtypes and coalescing", "[cpu-elementwise]") {
  using native::TensorIteratorConfig;
  // Contiguous operands of any shape coalesce into one run: the loop is a plain pointer loop.
  auto contiguous = TensorIteratorConfig("test")
                        .add_output(Tensor())
                        .add_input(make(Values(24, 1.0), {2, 3, 4}))
                        .add_input(make(Values(24, 1.0), {2, 3, 4}, kLong))
                        .promote_inputs_to_common_dtype(true)
                        .build();
  CHECK(contiguous.ndim() == 1);
  CHECK(contiguous.shape().vec() == Sizes{24});
  CHECK(contiguous.common_dtype() == kFloat);
  CHECK(contiguous.dtype(2) == kFloat);  // the int64 input was cast
  CHECK(contiguous.output().sizes() == Sizes{2, 3, 4});
  CHECK(contiguous.strideBytes(0, 0) == 4);
  // Transposed inputs: walked in memory order, still one run, and the output follows them.
  Tensor t = transposed(make(Values(6, 1.0), {2, 3}));
  auto both = TensorIteratorConfig("test").add_output(Tensor()).add_input(t).add_input(t).build();
  CHECK(both.ndim() == 1);
  CHECK(both.output().strides() == Sizes{1, 3});
  // Broadcasting keeps two dims (the broadcast input has stride 0 on the outer one).
  auto broadcast = TensorIteratorConfig("test")
                       .add_output(Tensor())
                       .add_input(make(Values(6, 1.0), {2, 3}))
                       .add_input(make(Values(3, 1.0), {3}))
                       .build();
  CHECK(broadcast.shape().vec() == Sizes{3, 2});
  CHECK(broadcast.strideBytes(2, 1) == 0);
  // Comparisons fix the output dtype; integer-to-float promotion for div-like ops.
  auto compare = TensorIteratorConfig("test")
                     .add_output(Tensor())
                     .add_input(make({1}, {1}, kInt))
                     .add_input(make({1}, {1}, kLong))
                     .promote_inputs_to_common_dtype(true)
                     .output_dtype(kBool)
                     .build();
  CHECK(compare.common_dtype() == kLong);
  CHECK(compare.output().dtype() == kBool);
  auto toFloat = TensorIteratorConfig("test")
                     .add_output(Tensor())
                     .add_input(make({1}, {1}, kInt))
                     .promote_inputs_to_common_dtype(true)
                     .promote_integer_inputs_to_float(true)
                     .build();
  CHECK(toFloat.common_dtype() == kFloat);
  CHECK(native::canCast(kLong, kFloat));
  CHECK(!native::canCast(kFloat, kLong));
  CHECK(!native::canCast(kLong, kBool));
  CHECK(native::canCast(kBool, kBool));
  CHECK(native::convertValue<uint8_t>(-1.0f) == 255);
  CHECK(native::convertValue<int64_t>(std::nan("")) == std::numeric_limits<int64_t>::min());
}

TEST_CASE("cpu-elementwise: the trivial TensorIterator case gives the general geometry", "[cpu-elementwise]") {
  // Note [Trivial TensorIterator]: same sizes, row-major, one dtype. Whatever path builds it,
  // the result is one run over every element (or none for one element) and a row-major output.
  using native::TensorIteratorConfig;
  auto binary = [](const Tensor& out, const Tensor& a, const Tensor& b) {
    return TensorIteratorConfig("test")
        .add_output(out)
        .add_input(a)
        .add_input(b)
        .promote_inputs_to_common_dtype(true)
        .build();
  };
  Tensor a = make(Values(24, 1.0), {2, 3, 4}), b = make(Values(24, 2.0), {2, 3, 4});
  auto it = binary(Tensor(), a, b);
  CHECK(it.numel() == 24);
  CHECK(it.ndim() == 1);
  CHECK(it.shape().vec() == Sizes{24});
  for (int k = 0; k < 3; ++k) CHECK(it.strideBytes(k, 0) == 4);
  CHECK(it.output().sizes() == Sizes{2, 3, 4});
  CHECK(it.output().strides() == Sizes{12, 4, 1});
  CHECK(it.operand(1).is_same(a));
  CHECK(it.operand(2).is_same(b));
  CHECK(it.common_dtype() == kFloat);
  // One element, with or without dims: a 0-dim iteration.
  auto one = binary(Tensor(), make({1}, {1, 1}), make({2}, {1, 1}));
  CHECK(one.ndim() == 0);
  CHECK(one.numel() == 1);
  CHECK(one.output().sizes() == Sizes{1, 1});
  CHECK(one.output().strides() == Sizes{1, 1});
  CHECK(binary(Tensor(), scalarTensor(1), scalarTensor(2)).output().dim() == 0);
  CHECK_VALUES(ops::add_Tensor::call(make({1}, {1, 1}), make({2}, {1, 1}), 1), {3});
  // Size-1 dims inside: still one run, output strides as computeContiguousStrides.
  auto inner = binary(Tensor(), make(Values(6, 1.0), {3, 1, 2}), make(Values(6, 1.0), {3, 1, 2}));
  CHECK(inner.shape().vec() == Sizes{6});
  CHECK(inner.output().strides() == Sizes{2, 2, 1});
  // A contiguous input whose size-1 dim has another stride is not row-major: the general path
  // orders dims by that stride and lays the output out to match.
  Tensor base = make({1, 2, 3}, {3});
  Tensor odd = detail::make_view(base, {3, 1}, {1, 5}, 0);
  REQUIRE(odd.is_contiguous());
  auto oddIt = binary(Tensor(), odd, odd);
  CHECK(oddIt.output().strides() == Sizes{1, 3});
  CHECK_VALUES(ops::add_Tensor::call(odd, odd, 1), {2, 4, 6});

  // Dtypes: the trivial case must not skip promotion. Two wrapped float64 numbers compute in
  // the default dtype; integer inputs go to float for div-like ops; a fixed output dtype.
  Tensor w1 = scalarTensor(1, kDouble), w2 = scalarTensor(2, kDouble);
  w1.unsafeGetTensorImpl()->set_wrapped_number(true);
  w2.unsafeGetTensorImpl()->set_wrapped_number(true);
  auto wrapped = binary(Tensor(), w1, w2);
  CHECK(wrapped.common_dtype() == kFloat);
  CHECK(wrapped.dtype(1) == kFloat);
  CHECK(wrapped.output().dtype() == kFloat);
  auto toFloat = TensorIteratorConfig("test")
                     .add_output(Tensor())
                     .add_input(make({1, 2}, {2}, kInt))
                     .add_input(make({3, 4}, {2}, kInt))
                     .promote_inputs_to_common_dtype(true)
                     .promote_integer_inputs_to_float(true)
                     .build();
  CHECK(toFloat.common_dtype() == kFloat);
  CHECK(toFloat.dtype(1) == kFloat);
  CHECK(toFloat.dtype(2) == kFloat);
  auto compare = TensorIteratorConfig("test")
                     .add_output(Tensor())
                     .add_input(make({1, 2, 3}, {3}))
                     .add_input(make({1, 2, 3}, {3}))
                     .promote_inputs_to_common_dtype(true)
                     .output_dtype(kBool)
                     .build();
  CHECK(compare.output().dtype() == kBool);
  CHECK(compare.strideBytes(0, 0) == 1);
  CHECK(compare.strideBytes(1, 0) == 4);
  auto fixed =
      TensorIteratorConfig("test").add_output(Tensor()).add_input(make({1, 2}, {2}, kInt)).common_dtype(kLong).build();
  CHECK(fixed.dtype(1) == kLong);
  CHECK(fixed.output().dtype() == kLong);

  // In place: the output is self, with no copy of an input that is exactly self.
  Tensor s = make({1, 2, 3}, {3});
  auto inplace = binary(s, s, s);
  CHECK(inplace.output().is_same(s));
  CHECK(inplace.operand(0).is_same(s));
  CHECK(inplace.operand(2).is_same(s));
  // An out= tensor that is not an input keeps the general rules (resized here).
  Tensor out = make({0}, {1});
  WarningCapture warnings;
  auto outIt = binary(out, make({1, 2}, {2}), make({1, 2}, {2}));
  CHECK(outIt.output().is_same(out));
  CHECK(out.sizes() == Sizes{2});
  CHECK(warnings.messages.size() == 1);
}

TEST_CASE("cpu-elementwise: iterators over many dims keep their geometry past the inline storage",
          "[cpu-elementwise]") {
  // 9 dims of size 2 with strides 3^k never coalesce: 9 iteration dims, and 27 strides for
  // the 3 operands, more than the iterator keeps inline.
  Sizes sizes(9, 2), strides(9);
  int64_t stride = 1;
  for (size_t d = 9; d-- > 0;) {
    strides[d] = stride;
    stride *= 3;
  }
  Values values(9842);  // 1 + (3^9 - 1) / 2 elements reach the last one
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  Tensor base = make(values, {9842});
  Tensor gappy = detail::make_view(base, sizes, strides, 0);
  auto it = native::TensorIteratorConfig("test").add_output(Tensor()).add_input(gappy).add_input(gappy).build();
  CHECK(it.ndim() == 9);
  CHECK(it.numel() == 512);
  Values twice;
  for (double v : read(gappy)) twice.push_back(2 * v);
  CHECK(sameValues(read(ops::add_Tensor::call(gappy, gappy, 1)), twice));
  // Broadcast against 8 dims: the general path with a broadcast input.
  Tensor big = make(Values(256, 1.0), Sizes(8, 2));
  Tensor r = ops::add_Tensor::call(big, make({5, 7}, {2}), 1);
  CHECK(r.sizes() == Sizes(8, 2));
  Values expected;
  for (int i = 0; i < 128; ++i) {
    expected.push_back(6);
    expected.push_back(8);
  }
  CHECK(sameValues(read(r), expected));
  // Trivial with many dims: one run.
  CHECK(native::TensorIteratorConfig("test").add_output(Tensor()).add_input(big).add_input(big).build().ndim() == 1);
}

// ---------------------------------------------------------------- add / sub / mul / div

TEST_CASE("cpu-elementwise: add of two float tensors, with and without alpha", "[cpu-elementwise]") {
  Tensor a = make({1, 2, 3, 4}, {2, 2});
  Tensor b = make({10, 20, 30, 40}, {2, 2});
  Tensor r = ops::add_Tensor::call(a, b, 1);
  CHECK(r.dtype() == kFloat);
  CHECK(r.sizes() == Sizes{2, 2});
  CHECK(r.is_contiguous());
  CHECK_VALUES(r, {11, 22, 33, 44});
  CHECK_VALUES(ops::add_Tensor::call(a, b, 2), {21, 42, 63, 84});
  CHECK_VALUES(ops::add_Tensor::call(a, b, 0.5), {6, 12, 18, 24});
  // Through the dispatcher (the generated CPU registration).
  CHECK_VALUES(dk::add(a, b), {11, 22, 33, 44});
  CHECK_VALUES(dk::add(a, b, 3), {31, 62, 93, 124});
}

TEST_CASE("cpu-elementwise: add broadcasts against a float64 reference loop", "[cpu-elementwise]") {
  auto plus = [](double x, double y) { return x + y; };
  struct Case {
    Sizes a, b, out;
  };
  for (const Case& c : {Case{{2, 3}, {3}, {2, 3}}, Case{{2, 1}, {1, 3}, {2, 3}}, Case{{4, 1, 3}, {2, 1}, {4, 2, 3}},
                        Case{{}, {2, 2}, {2, 2}}, Case{{5}, {}, {5}}, Case{{3, 1, 1}, {1, 4, 5}, {3, 4, 5}}}) {
    Values va, vb;
    for (int64_t i = 0; i < computeNumel(c.a); ++i) va.push_back(0.5 * static_cast<double>(i) - 1);
    for (int64_t i = 0; i < computeNumel(c.b); ++i) vb.push_back(3.0 * static_cast<double>(i) + 0.25);
    for (ScalarType dtype : {kFloat, kDouble, kLong, kInt}) {
      Tensor a = make(va, c.a, dtype), b = make(vb, c.b, dtype);
      Tensor r = ops::add_Tensor::call(a, b, 1);
      CHECK(r.sizes() == c.out);
      CHECK(r.dtype() == dtype);
      CHECK(sameValues(read(r), broadcastReference(a, b, plus)));
    }
  }
}

TEST_CASE("cpu-elementwise: add over 1000 elements covers whole blocks and a partial one", "[cpu-elementwise]") {
  Values va, vb;
  for (int i = 0; i < 1003; ++i) {
    va.push_back(i * 0.25);
    vb.push_back(-i * 2.0);
  }
  Tensor a = make(va, {1003}), b = make(vb, {1003});
  auto plusThree = [](double x, double y) { return x + 3 * y; };
  CHECK(sameValues(read(ops::add_Tensor::call(a, b, 3)), broadcastReference(a, b, plusThree)));
  // Strided inputs (every other element) and a broadcast one take the other load paths.
  Tensor sa = everyOther(a);
  Tensor one = scalarTensor(7);
  auto plus = [](double x, double y) { return x + y; };
  CHECK(sameValues(read(ops::add_Tensor::call(sa, one, 1)), broadcastReference(sa, one, plus)));
}

TEST_CASE("cpu-elementwise: add wraps integers, ors bools, rounds 16-bit floats", "[cpu-elementwise]") {
  CHECK_VALUES(ops::add_Tensor::call(make({127, -128}, {2}, kChar), make({1, -1}, {2}, kChar), 1), {-128, 127});
  CHECK_VALUES(ops::add_Tensor::call(make({250}, {1}, kByte), make({10}, {1}, kByte), 1), {4});
  Tensor maxLong = make({0}, {1}, kLong);
  *maxLong.data_ptr<int64_t>() = std::numeric_limits<int64_t>::max();
  CHECK(*ops::add_Tensor::call(maxLong, make({1}, {1}, kLong), 1).data_ptr<int64_t>() == std::numeric_limits<int64_t>::min());
  Tensor i32 = make({2147483647}, {1}, kInt);
  CHECK_VALUES(ops::add_Tensor::call(i32, make({1}, {1}, kInt), 1), {-2147483648.0});
  Tensor t = make({1, 0, 0}, {3}, kBool), f = make({1, 1, 0}, {3}, kBool);
  Tensor r = ops::add_Tensor::call(t, f, true);
  CHECK(r.dtype() == kBool);
  CHECK_VALUES(r, {1, 1, 0});
  // Half: 2048 + 1 is not representable (spacing 2 there); the sum rounds to even.
  Tensor h = ops::add_Tensor::call(make({2048, 0.1}, {2}, kHalf), make({1, 0.2}, {2}, kHalf), 1);
  CHECK(h.dtype() == kHalf);
  CHECK(read(h)[0] == 2048.0);
  float sum16 = static_cast<float>(Half(0.1f)) + static_cast<float>(Half(0.2f));  // computed in float, rounded once
  CHECK(read(h)[1] == static_cast<double>(static_cast<float>(Half(sum16))));
  Tensor bf = ops::add_Tensor::call(make({256}, {1}, kBFloat16), make({1}, {1}, kBFloat16), 1);
  CHECK(bf.dtype() == kBFloat16);
  CHECK_VALUES(bf, {256});
}

TEST_CASE("cpu-elementwise: add promotes dtypes as PyTorch", "[cpu-elementwise]") {
  CHECK(ops::add_Tensor::call(make({1}, {1}, kInt), make({1}, {1}, kDouble), 1).dtype() == kDouble);
  CHECK(ops::add_Tensor::call(make({1}, {1}, kByte), make({1}, {1}, kInt), 1).dtype() == kInt);
  CHECK(ops::add_Tensor::call(make({1}, {1}, kBool), make({1}, {1}, kLong), 1).dtype() == kLong);
  CHECK(ops::add_Tensor::call(make({1}, {1}, kHalf), make({1}, {1}, kBFloat16), 1).dtype() == kFloat);
  // A 0-dim tensor of a higher category counts; one of the same category does not.
  CHECK(ops::add_Tensor::call(make({1}, {1}, kInt), scalarTensor(2, kLong), 1).dtype() == kInt);
  Tensor r = ops::add_Tensor::call(make({1, 2}, {2}, kInt), scalarTensor(0.5, kDouble), 1);
  CHECK(r.dtype() == kDouble);
  CHECK_VALUES(r, {1.5, 2.5});
  // A wrapped number (a Scalar argument) counts as the default dtype.
  Tensor wrapped = scalarTensor(0.5, kDouble);
  wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
  Tensor w = ops::add_Tensor::call(make({1, 2}, {2}, kInt), wrapped, 1);
  CHECK(w.dtype() == kFloat);
  CHECK_VALUES(w, {1.5, 2.5});
  CHECK(ops::add_Tensor::call(make({1}, {1}, kHalf), wrapped, 1).dtype() == kHalf);
}

TEST_CASE("cpu-elementwise: add reads strided inputs and lays the output out like them", "[cpu-elementwise]") {
  Tensor base = make({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = transposed(base);  // [[0, 3], [1, 4], [2, 5]]
  Tensor r = ops::add_Tensor::call(t, t, 1);
  CHECK(r.sizes() == Sizes{3, 2});
  CHECK_VALUES(r, {0, 6, 2, 8, 4, 10});
  // The output follows the inputs' memory order, as in PyTorch: it is a transposed layout.
  CHECK(r.strides() == Sizes{1, 3});
  // Mixed: transposed plus contiguous.
  Tensor c = make({10, 20, 30, 40, 50, 60}, {3, 2});
  CHECK_VALUES(ops::add_Tensor::call(t, c, 1), {10, 23, 31, 44, 52, 65});
  // A sliced (stride 2) input.
  Tensor s = everyOther(make({1, 2, 3, 4, 5}, {5}));
  CHECK_VALUES(ops::add_Tensor::call(s, make({100}, {1}), 1), {101, 103, 105});
  // An expanded (stride 0) input is fine to read.
  CHECK_VALUES(ops::add_Tensor::call(expanded(make({1, 2}, {2}), {3, 2}), make({0, 0, 10, 10, 20, 20}, {3, 2}), 1),
               {1, 2, 11, 12, 21, 22});
}

TEST_CASE("cpu-elementwise: add of zero-size tensors", "[cpu-elementwise]") {
  Tensor r = ops::add_Tensor::call(make({}, {0, 3}), make({1, 2, 3}, {3}), 1);
  CHECK(r.sizes() == Sizes{0, 3});
  CHECK(r.numel() == 0);
  CHECK(ops::add_Tensor::call(make({}, {0}), scalarTensor(1), 1).sizes() == Sizes{0});
  CHECK(ops::add_Tensor::call(make({}, {2, 0}, kLong), make({}, {1, 0}, kLong), 1).sizes() == Sizes{2, 0});
}

TEST_CASE("cpu-elementwise: add errors", "[cpu-elementwise]") {
  CHECK_THROWS_WITH(ops::add_Tensor::call(make({1, 2, 3}, {3}), make({1, 2, 3, 4}, {4}), 1),
                    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0 "
                    "(shapes [3] and [4])");
  CHECK_THROWS_WITH(ops::add_Tensor::call(make({1}, {1}, kLong), make({1}, {1}, kLong), 0.5),
                    "For integral input tensors, argument alpha must not be a floating point number.");
  CHECK_THROWS_WITH(ops::add_Tensor::call(make({1}, {1}), make({1}, {1}), true),
                    "Boolean alpha only supported for Boolean results.");
  CHECK_THROWS_WITH(ops::add_Tensor::call(make({1}, {1}), metaTensor({1}), 1),
                    "dk::add: expected all tensors to be on the same device, but found at least two devices, cpu "
                    "(argument 'self') and meta (argument 'other')");
}

TEST_CASE("cpu-elementwise: add_ writes self, checks shape and dtype", "[cpu-elementwise]") {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3});
  void* data = a.data_ptr();
  Tensor r = ops::add__Tensor::call(a, make({10, 20, 30}, {3}), 1);
  CHECK(r.is_same(a));
  CHECK(a.data_ptr() == data);
  CHECK_VALUES(a, {11, 22, 33, 14, 25, 36});
  // Through the dispatcher.
  dk::ops::add__Tensor::call(a, make({1}, {1}), 2);
  CHECK_VALUES(a, {13, 24, 35, 16, 27, 38});
  // A float tensor can take an int64 other; an int32 self an int64 other (narrowed back).
  Tensor i = make({1, 2}, {2}, kInt);
  ops::add__Tensor::call(i, make({10, 20}, {2}, kLong), 1);
  CHECK(i.dtype() == kInt);
  CHECK_VALUES(i, {11, 22});
  CHECK_THROWS_WITH(ops::add__Tensor::call(make({1, 2}, {2}, kLong), make({1, 2}, {2}), 1),
                    "result type Float can't be cast to the desired output type Long");
  CHECK_THROWS_WITH(ops::add__Tensor::call(make({1, 0}, {2}, kBool), make({1, 2}, {2}, kLong), 1),
                    "result type Long can't be cast to the desired output type Bool");
  CHECK_THROWS_WITH(ops::add__Tensor::call(make({1, 2, 3}, {3}), make({1, 2, 3, 4, 5, 6}, {2, 3}), 1),
                    "output with shape [3] doesn't match the broadcast shape [2, 3]");
  // Writing an expanded tensor would write one element several times.
  CHECK_THROWS_WITH(ops::add__Tensor::call(expanded(make({1}, {1}), {3}), make({1, 2, 3}, {3}), 1),
                    "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                    "location. Please clone() the tensor before performing the operation.");
}

TEST_CASE("cpu-elementwise: add_ with an other that overlaps self", "[cpu-elementwise]") {
  // Partly shared dense memory is PyTorch's error (Note [Memory overlap]), nothing written.
  const char* partial = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory "
                        "location. Please clone() the tensor before performing the operation.";
  Tensor a = make({1, 2, 3, 4}, {2, 2});
  CHECK_THROWS_WITH(ops::add__Tensor::call(a, transposed(a), 1), partial);
  CHECK_VALUES(a, {1, 2, 3, 4});
  Tensor v = make({1, 2, 3, 4, 5}, {5});
  Tensor head = detail::make_view(v, {4}, {1}, 0), tail = detail::make_view(v, {4}, {1}, 1);
  CHECK_THROWS_WITH(ops::add__Tensor::call(tail, head, 1), partial);
  CHECK_VALUES(v, {1, 2, 3, 4, 5});
  // Strided views sharing elements cannot be ruled on (TooHard): the other is read first.
  Tensor w = make({1, 2, 3, 4, 5, 6, 7}, {7});
  Tensor even0 = detail::make_view(w, {3}, {2}, 0), even2 = detail::make_view(w, {3}, {2}, 2);
  ops::add__Tensor::call(even0, even2, 1);  // w[0:6:2] += w[2:7:2] with the old values
  CHECK_VALUES(w, {4, 2, 8, 4, 12, 6, 7});
  // self + self in place is exact aliasing: no copy needed, same result.
  Tensor s = make({1, 2, 3}, {3});
  ops::add__Tensor::call(s, s, 1);
  CHECK_VALUES(s, {2, 4, 6});
}

TEST_CASE("cpu-elementwise: add.out resizes, casts and checks its out tensor", "[cpu-elementwise]") {
  Tensor a = make({1, 2, 3}, {3}), b = make({10}, {1});
  // Right shape: written in place.
  Tensor out = make({0, 0, 0}, {3});
  void* data = out.data_ptr();
  Tensor r = ops::add_out::call(a, b, 1, out);
  CHECK(r.is_same(out));
  CHECK(out.data_ptr() == data);
  CHECK_VALUES(out, {11, 12, 13});
  // Empty: resized silently.
  Tensor empty = make({}, {0});
  {
    WarningCapture warnings;
    ops::add_out::call(a, b, 1, empty);
    CHECK(warnings.messages.empty());
  }
  CHECK(empty.sizes() == Sizes{3});
  CHECK_VALUES(empty, {11, 12, 13});
  // Wrong non-empty shape: resized with PyTorch's deprecation warning.
  Tensor small = make({5, 5}, {2, 1});
  {
    WarningCapture warnings;
    ops::add_out::call(make({1, 2, 3, 4, 5, 6}, {2, 3}), b, 1, small);
    REQUIRE(warnings.messages.size() == 1);
    CHECK(warnings.messages[0] ==
          "An output with one or more elements was resized since it had shape [2, 1], which does not match the "
          "required output shape [2, 3]. This behavior is deprecated, and in a future PyTorch release outputs will "
          "not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, "
          "inplace, to zero elements with t.resize_(0).");
  }
  CHECK(small.sizes() == Sizes{2, 3});
  CHECK_VALUES(small, {11, 12, 13, 14, 15, 16});
  // A wider out dtype is written through a cast.
  Tensor d = make({0, 0, 0}, {3}, kDouble);
  ops::add_out::call(make({1, 2, 3}, {3}, kInt), make({1}, {1}, kInt), 1, d);
  CHECK(d.dtype() == kDouble);
  CHECK_VALUES(d, {2, 3, 4});
  // A non-contiguous out is written where it points.
  Tensor base = make({0, 0, 0, 0, 0, 0}, {6});
  ops::add_out::call(a, b, 1, everyOther(base));
  CHECK_VALUES(base, {11, 0, 12, 0, 13, 0});
  CHECK_THROWS_WITH(ops::add_out::call(a, b, 1, make({0, 0, 0}, {3}, kLong)),
                    "result type Float can't be cast to the desired output type Long");
  CHECK_THROWS_WITH(ops::add_out::call(a, b, 1, metaTensor({3})),
                    "dk::add: expected all tensors to be on the same device, but found at least two devices, cpu "
                    "(argument 'self') and meta (argument 'out')");
}

TEST_CASE("cpu-elementwise: sub", "[cpu-elementwise]") {
  Tensor a = make({5, 7, 9}, {3}), b = make({1, 2, 3}, {3});
  CHECK_VALUES(ops::sub_Tensor::call(a, b, 1), {4, 5, 6});
  CHECK_VALUES(ops::sub_Tensor::call(a, b, 2), {3, 3, 3});
  CHECK_VALUES(ops::sub_Tensor::call(make({0}, {1}, kByte), make({1}, {1}, kByte), 1), {255});
  CHECK_VALUES(ops::sub_Tensor::call(make({1, 2}, {2, 1}, kLong), make({10, 20}, {2}, kLong), 1), {-9, -19, -8, -18});
  CHECK_VALUES(dk::sub(a, b), {4, 5, 6});
  CHECK_THROWS_WITH(ops::sub_Tensor::call(make({1}, {1}, kBool), make({1}, {1}, kBool), 1),
                    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                    "`logical_xor()` operator instead.");
  CHECK_THROWS_WITH(ops::sub_Tensor::call(make({1}, {1}), make({1}, {1}, kBool), 1),
                    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
                    "mask, use the `~` or `logical_not()` operator instead.");
  CHECK_THROWS_WITH(ops::sub_Tensor::call(make({1}, {1}, kInt), make({1}, {1}, kInt), 1.5),
                    "For integral input tensors, argument alpha must not be a floating point number.");
}

TEST_CASE("cpu-elementwise: mul and mul_", "[cpu-elementwise]") {
  Tensor a = make({1, 2, 3, 4}, {2, 2}), b = make({10, 100}, {2, 1});
  CHECK_VALUES(ops::mul_Tensor::call(a, b), {10, 20, 300, 400});
  CHECK_VALUES(dk::mul(a, b), {10, 20, 300, 400});
  CHECK_VALUES(ops::mul_Tensor::call(make({1, 1, 0}, {3}, kBool), make({1, 0, 0}, {3}, kBool)), {1, 0, 0});
  CHECK(ops::mul_Tensor::call(make({1}, {1}, kBool), make({1}, {1}, kBool)).dtype() == kBool);
  CHECK_VALUES(ops::mul_Tensor::call(make({16}, {1}, kChar), make({16}, {1}, kChar)), {0});  // 256 wraps
  CHECK_VALUES(ops::mul_Tensor::call(make({65536}, {1}, kInt), make({65536}, {1}, kInt)), {0});
  Tensor h = ops::mul_Tensor::call(make({0.1}, {1}, kHalf), make({3}, {1}, kHalf));
  CHECK(read(h)[0] == static_cast<double>(static_cast<float>(Half(static_cast<float>(Half(0.1f)) * 3.0f))));
  Tensor s = make({1, 2, 3}, {3}, kLong);
  CHECK(ops::mul__Tensor::call(s, scalarTensor(3, kLong)).is_same(s));
  CHECK_VALUES(s, {3, 6, 9});
  CHECK_THROWS_WITH(ops::mul__Tensor::call(s, scalarTensor(0.5, kDouble)),
                    "result type Double can't be cast to the desired output type Long");
}

TEST_CASE("cpu-elementwise: div is true division in floating point", "[cpu-elementwise]") {
  Tensor r = ops::div_Tensor::call(make({1, 7, -7}, {3}, kLong), make({2}, {1}, kLong));
  CHECK(r.dtype() == kFloat);
  CHECK_VALUES(r, {0.5, 3.5, -3.5});
  CHECK(ops::div_Tensor::call(make({1}, {1}, kBool), make({1}, {1}, kBool)).dtype() == kFloat);
  CHECK(ops::div_Tensor::call(make({1}, {1}, kInt), make({2}, {1}, kDouble)).dtype() == kDouble);
  CHECK(ops::div_Tensor::call(make({1}, {1}, kHalf), make({2}, {1}, kHalf)).dtype() == kHalf);
  CHECK_VALUES(ops::div_Tensor::call(make({1, -1, 0}, {3}), make({0}, {1})), {kInf, -kInf, kNaN});
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, kDouble), b = make({3, 7}, {2, 1}, kDouble);
  CHECK(sameValues(read(ops::div_Tensor::call(a, b)), broadcastReference(a, b, [](double x, double y) { return x / y; })));
  CHECK_VALUES(dk::div(a, b), broadcastReference(a, b, [](double x, double y) { return x / y; }));
}

TEST_CASE("cpu-elementwise: the structured forms of sub, mul and div", "[cpu-elementwise][structured]") {
  // One meta function and one impl per family (Note [Structured kernels]): every form computes
  // the same values and makes the same checks.
  Tensor a = make({5, 7, 9}, {3}), b = make({1, 2, 3}, {3});
  Tensor s = a.clone();
  CHECK(ops::sub__Tensor::call(s, b, 2).is_same(s));
  CHECK_VALUES(s, {3, 3, 3});
  Tensor out = make({}, {0});
  CHECK(ops::sub_out::call(a, b, 1, out).is_same(out));
  CHECK_VALUES(out, {4, 5, 6});
  CHECK_THROWS_WITH(ops::sub__Tensor::call(make({1}, {1}, kBool), make({1}, {1}, kBool), 1),
                    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                    "`logical_xor()` operator instead.");
  CHECK_THROWS_WITH(ops::sub_out::call(make({1}, {1}, kInt), make({1}, {1}, kInt), 1.5, make({0}, {1}, kInt)),
                    "For integral input tensors, argument alpha must not be a floating point number.");

  Tensor m = make({0, 0, 0}, {3}, kDouble);
  ops::mul_out::call(a, make({2}, {1}), m);  // Float result into a Double out, through a temporary
  CHECK(m.dtype() == kDouble);
  CHECK_VALUES(m, {10, 14, 18});
  CHECK_THROWS_WITH(ops::mul_out::call(a, b, make({0, 0, 0}, {3}, kLong)),
                    "result type Float can't be cast to the desired output type Long");

  Tensor d = make({1, 2, 3}, {3});
  CHECK(ops::div__Tensor::call(d, make({2}, {1}, kLong)).is_same(d));
  CHECK_VALUES(d, {0.5, 1, 1.5});
  CHECK_THROWS_WITH(ops::div__Tensor::call(make({1, 2}, {2}, kLong), make({2}, {1}, kLong)),
                    "result type Float can't be cast to the desired output type Long");
  Tensor q = make({}, {0}, kDouble);
  ops::div_out::call(make({1, 7}, {2}, kLong), make({2}, {1}, kLong), q);
  CHECK(q.dtype() == kDouble);
  CHECK_VALUES(q, {0.5, 3.5});
  // A Float self takes a Double result (cast back), computed in Double as PyTorch does.
  Tensor f = make({1, 2}, {2});
  ops::add__Tensor::call(f, make({0.25, 0.5}, {2}, kDouble), 1);
  CHECK(f.dtype() == kFloat);
  CHECK_VALUES(f, {1.25, 2.5});
  CHECK_THROWS_WITH(ops::div_out::call(a, b, expanded(make({0}, {1}), {3})),
                    "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                    "location. Please clone() the tensor before performing the operation.");
}

TEST_CASE("cpu-elementwise: pow with a Scalar exponent", "[cpu-elementwise]") {
  Tensor x = make({0.5, 2, 3, 4}, {4}, kDouble);
  for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 2.5, 0.0, 1.0}) {
    Values expected;
    for (double v : read(x)) expected.push_back(std::pow(v, e));
    CHECK(sameValues(read(ops::pow_Tensor_Scalar::call(x, e)), expected, 1e-15));
  }
  Tensor f = make({1.5, 2, 9}, {3});
  CHECK(ops::pow_Tensor_Scalar::call(f, 2).dtype() == kFloat);
  CHECK_VALUES(ops::pow_Tensor_Scalar::call(f, 2), {2.25, 4, 81});
  CHECK_VALUES(ops::pow_Tensor_Scalar::call(make({4}, {1}, kHalf), 0.5), {2});
  // Integers: exact, wrapping like multiplication.
  Tensor i = make({2, 3, -2}, {3}, kLong);
  CHECK(ops::pow_Tensor_Scalar::call(i, 3).dtype() == kLong);
  CHECK_VALUES(ops::pow_Tensor_Scalar::call(i, 3), {8, 27, -8});
  CHECK_VALUES(ops::pow_Tensor_Scalar::call(i, 0), {1, 1, 1});
  CHECK_VALUES(ops::pow_Tensor_Scalar::call(make({3}, {1}, kLong), 39), {4052555153018976267.0});
  CHECK_VALUES(ops::pow_Tensor_Scalar::call(make({2}, {1}, kChar), 7), {-128});
  // An integer tensor to a floating power computes in the default dtype.
  Tensor fi = ops::pow_Tensor_Scalar::call(make({4, 9}, {2}, kInt), 0.5);
  CHECK(fi.dtype() == kFloat);
  CHECK_VALUES(fi, {2, 3});
  CHECK(ops::pow_Tensor_Scalar::call(make({1}, {1}, kBool), 2).dtype() == kLong);
  // A strided base.
  CHECK_VALUES(ops::pow_Tensor_Scalar::call(transposed(make({1, 2, 3, 4}, {2, 2})), 2), {1, 9, 4, 16});
  CHECK_THROWS_WITH(ops::pow_Tensor_Scalar::call(make({2}, {1}, kLong), -1),
                    "Integers to negative integer powers are not allowed.");
  CHECK_THROWS_WITH(ops::pow_Tensor_Scalar::call(make({1}, {1}, kBool), true), "pow: unsupported dtype Bool");
}

// ---------------------------------------------------------------- compare

TEST_CASE("cpu-elementwise: maximum and minimum propagate NaN and promote", "[cpu-elementwise]") {
  Tensor a = make({1, 5, kNaN, 3}, {4}), b = make({2, 4, 1, kNaN}, {4});
  CHECK_VALUES(ops::maximum::call(a, b), {2, 5, kNaN, kNaN});
  CHECK_VALUES(ops::minimum::call(a, b), {1, 4, kNaN, kNaN});
  Tensor r = ops::maximum::call(make({1, 5}, {2}, kInt), make({2.5}, {1}, kDouble));
  CHECK(r.dtype() == kDouble);
  CHECK_VALUES(r, {2.5, 5});
  CHECK_VALUES(ops::maximum::call(make({1, 0}, {2}, kBool), make({0, 0}, {2}, kBool)), {1, 0});
  CHECK_VALUES(ops::minimum::call(make({-3, 4}, {2, 1}, kLong), make({0, 1, 2}, {3}, kLong)), {-3, -3, -3, 0, 1, 2});
  CHECK_VALUES(dk::maximum(a, b), {2, 5, kNaN, kNaN});
  // The structured out= forms: a wider out takes the result through a cast.
  Tensor out = make({}, {0}, kDouble);
  CHECK(ops::maximum_out::call(a, b, out).is_same(out));
  CHECK_VALUES(out, {2, 5, kNaN, kNaN});
  CHECK(ops::minimum_out::call(make({1, 5}, {2}, kInt), make({3}, {1}, kInt), out).is_same(out));
  CHECK_VALUES(out, {1, 3});
  CHECK_THROWS_WITH(ops::minimum_out::call(a, b, make({}, {0}, kInt)),
                    "result type Float can't be cast to the desired output type Int");
}

TEST_CASE("cpu-elementwise: eq, gt, lt give bool tensors", "[cpu-elementwise]") {
  Tensor a = make({1, 2, 3}, {3}), b = make({2, 2, 2}, {3}, kLong);
  Tensor e = ops::eq_Tensor::call(a, b);
  CHECK(e.dtype() == kBool);
  CHECK_VALUES(e, {0, 1, 0});
  CHECK_VALUES(ops::gt_Tensor::call(a, b), {0, 0, 1});
  CHECK_VALUES(ops::lt_Tensor::call(a, b), {1, 0, 0});
  CHECK_VALUES(ops::eq_Tensor::call(make({kNaN}, {1}), make({kNaN}, {1})), {0});
  CHECK_VALUES(ops::gt_Tensor::call(make({1, 2}, {2, 1}, kInt), make({0, 1, 2}, {3}, kByte)), {1, 0, 0, 1, 1, 0});
  CHECK_VALUES(dk::eq(a, b), {0, 1, 0});
  // Compared in the common dtype: 2 (int) vs 2.5 in float is unequal.
  CHECK_VALUES(ops::eq_Tensor::call(make({2}, {1}, kLong), scalarTensor(2.5, kDouble)), {0});
  CHECK_THROWS_WITH(ops::lt_Tensor::call(make({1, 2}, {2}), make({1, 2, 3}, {3})),
                    "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0 "
                    "(shapes [2] and [3])");
}

TEST_CASE("cpu-elementwise: eq with a Scalar compares in the promoted dtype", "[cpu-elementwise]") {
  CHECK_VALUES(ops::eq_Scalar::call(make({1, 2, 3}, {3}, kLong), Scalar(2)), {0, 1, 0});
  CHECK_VALUES(ops::eq_Scalar::call(make({2, 3}, {2}, kLong), Scalar(2.5)), {0, 0});
  CHECK_VALUES(ops::eq_Scalar::call(make({2, 3}, {2}, kInt), Scalar(3.0)), {0, 1});
  // The Scalar is rounded to the tensor's dtype first: Half(0.1) == 0.1 holds.
  CHECK_VALUES(ops::eq_Scalar::call(make({0.1, 0.2}, {2}, kHalf), Scalar(0.1)), {1, 0});
  CHECK_VALUES(ops::eq_Scalar::call(make({1, 0}, {2}, kBool), Scalar(true)), {1, 0});
  CHECK_VALUES(ops::eq_Scalar::call(transposed(make({1, 2, 3, 1}, {2, 2})), Scalar(1)), {1, 0, 0, 1});
  CHECK_VALUES(dk::eq(make({1, 2, 3}, {3}, kLong), Scalar(3)), {0, 0, 1});
}

TEST_CASE("cpu-elementwise: where picks by a broadcast condition", "[cpu-elementwise]") {
  Tensor cond = make({1, 0, 1}, {3}, kBool);
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}), b = make({-1, -2}, {2, 1}, kLong);
  Tensor r = native::where_cpu(cond, a, b);
  CHECK(r.dtype() == kFloat);
  CHECK(r.sizes() == Sizes{2, 3});
  CHECK_VALUES(r, {1, -1, 3, 4, -2, 6});
  CHECK_VALUES(dk::where(cond, a, b), {1, -1, 3, 4, -2, 6});
  CHECK(native::where_cpu(cond, make({1}, {1}, kInt), make({1}, {1}, kLong)).dtype() == kLong);
  {
    WarningCapture warnings;
    CHECK_VALUES(native::where_cpu(make({0, 1}, {2}, kByte), make({1, 2}, {2}), make({3, 4}, {2})), {3, 2});
    REQUIRE(warnings.messages.size() == 1);
    CHECK(warnings.messages[0] ==
          "where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future "
          "version of PyTorch. Use a boolean condition instead.");
  }
  CHECK_THROWS_WITH(native::where_cpu(make({1}, {1}), a, b),
                    "where expected condition to be a boolean tensor, but got a tensor with dtype Float");
  CHECK_THROWS_WITH(native::where_cpu(make({1, 0}, {2}, kBool), a, b),
                    "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1 "
                    "(shapes [2] and [2, 3])");
}

TEST_CASE("cpu-elementwise: clamp", "[cpu-elementwise]") {
  Tensor x = make({-2, -0.5, 0.5, 3, kNaN}, {5});
  CHECK_VALUES(ops::clamp::call(x, Scalar(-1), Scalar(1)), {-1, -0.5, 0.5, 1, kNaN});
  CHECK_VALUES(ops::clamp::call(x, Scalar(0), std::nullopt), {0, 0, 0.5, 3, kNaN});
  CHECK_VALUES(ops::clamp::call(x, std::nullopt, Scalar(0)), {-2, -0.5, 0, 0, kNaN});
  // min > max: everything becomes max.
  CHECK_VALUES(ops::clamp::call(make({0, 5, 10}, {3}), Scalar(6), Scalar(4)), {4, 4, 4});
  Tensor i = ops::clamp::call(make({-5, 0, 5}, {3}, kInt), Scalar(-1), Scalar(1));
  CHECK(i.dtype() == kInt);
  CHECK_VALUES(i, {-1, 0, 1});
  // An integer tensor with a floating bound computes in the default dtype.
  Tensor f = ops::clamp::call(make({-5, 0, 5}, {3}, kLong), Scalar(0.5), std::nullopt);
  CHECK(f.dtype() == kFloat);
  CHECK_VALUES(f, {0.5, 0.5, 5});
  CHECK(ops::clamp::call(make({1}, {1}, kHalf), Scalar(0), Scalar(2)).dtype() == kHalf);
  CHECK_VALUES(dk::clamp(x, Scalar(-1), Scalar(1)), {-1, -0.5, 0.5, 1, kNaN});
  CHECK_THROWS_WITH(ops::clamp::call(x, std::nullopt, std::nullopt),
                    "torch.clamp: At least one of 'min' or 'max' must not be None");
}

// ---------------------------------------------------------------- unary

TEST_CASE("cpu-elementwise: floating unary math against std:: in double", "[cpu-elementwise]") {
  struct Op {
    const char* name;
    std::function<Tensor(const Tensor&)> kernel;
    std::function<double(double)> reference;
  };
  std::vector<Op> ops{
      {"exp", ops::exp::call, [](double v) { return std::exp(v); }},
      {"log", ops::log::call, [](double v) { return std::log(v); }},
      {"sqrt", ops::sqrt::call, [](double v) { return std::sqrt(v); }},
      {"rsqrt", ops::rsqrt::call, [](double v) { return 1 / std::sqrt(v); }},
      {"sin", ops::sin::call, [](double v) { return std::sin(v); }},
      {"cos", ops::cos::call, [](double v) { return std::cos(v); }},
      {"tanh", ops::tanh::call, [](double v) { return std::tanh(v); }},
      {"sigmoid", ops::sigmoid::call, [](double v) { return 1 / (1 + std::exp(-v)); }},
  };
  Values inputs{0.25, 0.5, 1, 1.5, 2, 3, 7.5, 10, 0.125, 4, 5, 6, 8, 9, 11, 12, 13, 14, 15};  // more than one block
  for (const Op& op : ops) {
    INFO(op.name);
    Values expected;
    for (double v : inputs) expected.push_back(op.reference(v));
    for (auto [dtype, tol] : {std::pair{kDouble, 1e-15}, std::pair{kFloat, 1e-6}, std::pair{kHalf, 1e-3},
                              std::pair{kBFloat16, 1e-2}}) {
      Tensor r = op.kernel(make(inputs, {static_cast<int64_t>(inputs.size())}, dtype));
      CHECK(r.dtype() == dtype);
      // The reference rounded to the dtype (exp(15) is past Half's range: inf).
      CHECK(sameValues(read(r), read(make(expected, {static_cast<int64_t>(expected.size())}, dtype)), tol));
    }
    // Integer and bool inputs compute in float32.
    Tensor fromInt = op.kernel(make({1, 2, 4}, {3}, kLong));
    CHECK(fromInt.dtype() == kFloat);
    CHECK(sameValues(read(fromInt), Values{op.reference(1), op.reference(2), op.reference(4)}, 1e-6));
    CHECK(op.kernel(make({1, 0}, {2}, kBool)).dtype() == kFloat);
    // Strided input.
    Tensor strided = everyOther(make({1, 99, 2, 99, 4}, {5}, kDouble));
    CHECK(sameValues(read(op.kernel(strided)), Values{op.reference(1), op.reference(2), op.reference(4)}, 1e-15));
    CHECK(op.kernel(make({}, {0, 2})).sizes() == Sizes{0, 2});
  }
  CHECK_VALUES(ops::log::call(make({-1, 0}, {2})), {kNaN, -kInf});
  CHECK_VALUES(ops::sqrt::call(make({-1}, {1})), {kNaN});
  CHECK_VALUES(dk::exp(make({0}, {1})), {1});
}

TEST_CASE("cpu-elementwise: the in-place and out= forms of the structured unary operators",
          "[cpu-elementwise][structured]") {
  struct Forms {
    const char* name;
    std::function<Tensor(const Tensor&)> functional;
    std::function<Tensor(const Tensor&)> inplace;
    std::function<Tensor(const Tensor&, const Tensor&)> out;
  };
  const std::vector<Forms> forms{
      {"exp", ops::exp::call, ops::exp_::call, ops::exp_out::call},
      {"log", ops::log::call, ops::log_::call, ops::log_out::call},
      {"sqrt", ops::sqrt::call, ops::sqrt_::call, ops::sqrt_out::call},
      {"rsqrt", ops::rsqrt::call, ops::rsqrt_::call, ops::rsqrt_out::call},
      {"sin", ops::sin::call, ops::sin_::call, ops::sin_out::call},
      {"cos", ops::cos::call, ops::cos_::call, ops::cos_out::call},
      {"tanh", ops::tanh::call, ops::tanh_::call, ops::tanh_out::call},
      {"sigmoid", ops::sigmoid::call, ops::sigmoid_::call, ops::sigmoid_out::call},
      {"neg", ops::neg::call, ops::neg_::call, ops::neg_out::call},
      {"gelu", [](const Tensor& t) { return ops::gelu::call(t, "tanh"); },
       [](const Tensor& t) { return ops::gelu_::call(t, "tanh"); },
       [](const Tensor& t, const Tensor& out) { return ops::gelu_out::call(t, "tanh", out); }},
  };
  const Values inputs{0.25, 0.5, 1, 1.5, 2, 3};
  for (const Forms& f : forms) {
    INFO(f.name);
    Tensor x = make(inputs, {2, 3});
    Values expected = read(f.functional(x));
    Tensor y = transposed(make(inputs, {3, 2}));  // a strided self is written where it points
    Tensor fy = f.functional(y);
    CHECK(f.inplace(y).is_same(y));
    CHECK(read(y) == read(fy));
    Tensor out = make({}, {0}, kDouble);  // resized, and Float results cast into it
    CHECK(f.out(x, out).is_same(out));
    CHECK(out.sizes() == Sizes{2, 3});
    CHECK(sameValues(read(out), expected, 1e-6));
    if (std::string(f.name) != "neg" && std::string(f.name) != "gelu") {
      CHECK_THROWS_WITH(f.inplace(make({1, 2}, {2}, kLong)),
                        "result type Float can't be cast to the desired output type Long");
    }
    CHECK_THROWS_WITH(f.out(x, make({}, {0}, kLong)),
                      "result type Float can't be cast to the desired output type Long");
  }
  CHECK_THROWS_WITH(ops::gelu_::call(make({1}, {1}), "erf"), "approximate argument must be either none or tanh.");
  CHECK_THROWS_WITH(ops::neg_::call(make({1}, {1}, kBool)),
                    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                    "mask, use the `~` or `logical_not()` operator instead.");
}

TEST_CASE("cpu-elementwise: neg and abs", "[cpu-elementwise]") {
  CHECK_VALUES(ops::neg::call(make({1, -2, 0}, {3})), {-1, 2, 0});
  CHECK_VALUES(ops::neg::call(make({-128, 5}, {2}, kChar)), {-128, -5});
  CHECK_VALUES(ops::neg::call(make({1, 0}, {2}, kByte)), {255, 0});
  CHECK(ops::neg::call(make({1}, {1}, kHalf)).dtype() == kHalf);
  CHECK_VALUES(native::abs_cpu(make({-1.5, 2, -0.0}, {3})), {1.5, 2, 0});
  CHECK(!std::signbit(read(native::abs_cpu(make({-0.0}, {1})))[0]));
  CHECK_VALUES(native::abs_cpu(make({-128, -3, 4}, {3}, kChar)), {-128, 3, 4});
  CHECK_VALUES(native::abs_cpu(make({-7}, {1}, kLong)), {7});
  CHECK(native::abs_cpu(make({-7}, {1}, kLong)).dtype() == kLong);
  CHECK_VALUES(native::abs_cpu(make({200}, {1}, kByte)), {200});
  CHECK_VALUES(dk::neg(make({3}, {1})), {-3});
  CHECK_THROWS_WITH(ops::neg::call(make({1}, {1}, kBool)),
                    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                    "mask, use the `~` or `logical_not()` operator instead.");
  CHECK_THROWS_WITH(native::abs_cpu(make({1}, {1}, kBool)), "abs: unsupported dtype Bool");
}

TEST_CASE("cpu-elementwise: relu and relu_", "[cpu-elementwise]") {
  Tensor x = make({-1, 0, 2, kNaN}, {4});
  CHECK_VALUES(native::relu_cpu(x), {0, 0, 2, kNaN});
  CHECK_VALUES(x, {-1, 0, 2, kNaN});
  CHECK_VALUES(native::relu_cpu(make({-3, 3}, {2}, kLong)), {0, 3});
  CHECK(native::relu_cpu(make({-3, 3}, {2}, kLong)).dtype() == kLong);
  Tensor y = make({-1, 5, -2, 7}, {2, 2});
  Tensor t = transposed(y);
  CHECK(native::relu_inplace_cpu(t).is_same(t));
  CHECK_VALUES(y, {0, 5, 0, 7});
  CHECK_VALUES(dk::relu(make({-1, 1}, {2})), {0, 1});
  CHECK_THROWS_WITH(native::relu_cpu(make({1}, {1}, kBool)), "Boolean inputs not supported for relu");
  CHECK_THROWS_WITH(native::relu_inplace_cpu(make({1}, {1}, kBool)), "Boolean inputs not supported for relu");
}

TEST_CASE("cpu-elementwise: gelu, exact and tanh-approximated", "[cpu-elementwise]") {
  Values inputs{-3, -1, -0.5, 0, 0.5, 1, 3};
  Values exact, approx;
  for (double v : inputs) {
    exact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    approx.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  CHECK(sameValues(read(ops::gelu::call(make(inputs, {7}, kDouble), "none")), exact, 1e-14));
  CHECK(sameValues(read(ops::gelu::call(make(inputs, {7}), "none")), exact, 1e-6));
  CHECK(sameValues(read(ops::gelu::call(make(inputs, {7}, kDouble), "tanh")), approx, 1e-14));
  CHECK(sameValues(read(ops::gelu::call(make(inputs, {7}, kBFloat16), "tanh")), approx, 2e-2));
  // Values PyTorch gives: gelu(1) = 0.8413447, gelu(1, 'tanh') = 0.8411920.
  CHECK(std::fabs(read(ops::gelu::call(make({1}, {1}), "none"))[0] - 0.8413447) < 1e-6);
  CHECK(std::fabs(read(ops::gelu::call(make({1}, {1}), "tanh"))[0] - 0.8411920) < 1e-6);
  CHECK(sameValues(read(dk::gelu(make(inputs, {7}, kDouble))), exact, 1e-14));
  CHECK_THROWS_WITH(ops::gelu::call(make({1}, {1}, kLong), "none"), "gelu: unsupported dtype Long");
  CHECK_THROWS_WITH(ops::gelu::call(make({1}, {1}), "erf"), "approximate argument must be either none or tanh.");
}

// ---------------------------------------------------------------- copy_, fill_, zero_, item

TEST_CASE("cpu-elementwise: copy_ converts dtypes", "[cpu-elementwise]") {
  Tensor f = make({1.7, -1.7, 300, -1}, {4});
  Tensor i = make({0, 0, 0, 0}, {4}, kLong);
  CHECK(native::copy_inplace_cpu(i, f, false).is_same(i));
  CHECK_VALUES(i, {1, -1, 300, -1});
  Tensor u = make({0, 0, 0, 0}, {4}, kByte);
  native::copy_inplace_cpu(u, f, false);
  CHECK_VALUES(u, {1, 255, 44, 255});  // truncation, then modulo 256
  Tensor b = make({0, 0, 0}, {3}, kBool);
  native::copy_inplace_cpu(b, make({0, 0.5, kNaN}, {3}), false);
  CHECK_VALUES(b, {0, 1, 1});
  Tensor h = make({0, 0}, {2}, kHalf);
  native::copy_inplace_cpu(h, make({0.1, 70000}, {2}, kDouble), false);
  CHECK(read(h)[0] == static_cast<double>(static_cast<float>(Half(0.1f))));
  CHECK(read(h)[1] == kInf);
  Tensor bf = make({0}, {1}, kBFloat16);
  native::copy_inplace_cpu(bf, make({257}, {1}, kInt), false);
  CHECK_VALUES(bf, {256});
  Tensor l = make({0, 0}, {2}, kLong);
  native::copy_inplace_cpu(l, make({1, 0}, {2}, kBool), false);
  CHECK_VALUES(l, {1, 0});
  Tensor d = make({0, 0}, {2}, kDouble);
  native::copy_inplace_cpu(d, make({1.5, -2.25}, {2}, kHalf), false);
  CHECK_VALUES(d, {1.5, -2.25});
  // Every pair of dtypes round-trips a small integer.
  for (ScalarType from : {kByte, kChar, kShort, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16}) {
    for (ScalarType to : {kByte, kChar, kShort, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16}) {
      Tensor dst = make({0, 0, 0}, {3}, to);
      native::copy_inplace_cpu(dst, make({1, 0, 1}, {3}, from), false);
      CHECK_VALUES(dst, {1, 0, 1});
    }
  }
}

TEST_CASE("cpu-elementwise: copy_ broadcasts and handles strided and overlapping tensors", "[cpu-elementwise]") {
  Tensor self = make({0, 0, 0, 0, 0, 0}, {2, 3});
  native::copy_inplace_cpu(self, make({1, 2, 3}, {3}), false);
  CHECK_VALUES(self, {1, 2, 3, 1, 2, 3});
  native::copy_inplace_cpu(self, scalarTensor(9, kLong), false);
  CHECK_VALUES(self, {9, 9, 9, 9, 9, 9});
  // Into a transposed view.
  Tensor base = make({0, 0, 0, 0}, {2, 2});
  native::copy_inplace_cpu(transposed(base), make({1, 2, 3, 4}, {2, 2}), false);
  CHECK_VALUES(base, {1, 3, 2, 4});
  // From a sliced view, with conversion.
  Tensor dst = make({0, 0, 0}, {3}, kInt);
  native::copy_inplace_cpu(dst, everyOther(make({1, 2, 3, 4, 5}, {5})), false);
  CHECK_VALUES(dst, {1, 3, 5});
  // Partly overlapping dense source and destination: PyTorch's error.
  Tensor v = make({1, 2, 3, 4, 5}, {5});
  CHECK_THROWS_WITH(
      native::copy_inplace_cpu(detail::make_view(v, {4}, {1}, 1), detail::make_view(v, {4}, {1}, 0), false),
      Catch::Contains("some elements of the input tensor and the written-to tensor refer to a single memory"));
  CHECK_VALUES(v, {1, 2, 3, 4, 5});
  // Strided views sharing elements (no rule applies): as if the source were read first.
  Tensor u = make({1, 2, 3, 4, 5, 6, 7}, {7});
  native::copy_inplace_cpu(detail::make_view(u, {3}, {2}, 2), detail::make_view(u, {3}, {2}, 0), false);
  CHECK_VALUES(u, {1, 2, 1, 4, 3, 6, 5});
  // Self onto itself.
  Tensor s = make({1, 2}, {2});
  CHECK(native::copy_inplace_cpu(s, s, false).is_same(s));
  CHECK_VALUES(s, {1, 2});
  // Zero-size.
  Tensor z = make({}, {0, 2});
  native::copy_inplace_cpu(z, make({1, 2}, {2}), false);
  CHECK(z.sizes() == Sizes{0, 2});
  // Through the dispatcher.
  Tensor t = make({0, 0}, {2}, kDouble);
  dk::ops::copy_::call(t, make({5, 6}, {2}, kLong), false);
  CHECK_VALUES(t, {5, 6});
}

TEST_CASE("cpu-elementwise: copy_ of a large transpose goes by tiles, to the same values", "[cpu-elementwise]") {
  // 70 x 95 (above the tiled path's 3,600 elements, not a multiple of the 32 x 32 tile) for each
  // element size, and 200 x 300 split over the threads.
  for (ScalarType dtype : {kByte, kHalf, kFloat, kDouble}) {
    for (const Sizes& sizes : {Sizes{70, 95}, Sizes{200, 300}}) {
      INFO("dtype " << dtype << " rows " << sizes[0] << " cols " << sizes[1]);
      const int64_t rows = sizes[0], cols = sizes[1];
      Values v(static_cast<size_t>(rows * cols));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7) % 251);
      Tensor source = make(v, {cols, rows}, dtype);  // its transpose is [rows, cols], strides (1, rows)
      Tensor dst = make(Values(v.size(), 0.0), {rows, cols}, dtype);
      native::copy_inplace_cpu(dst, transposed(source), false);
      Values want;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) want.push_back(v[static_cast<size_t>(j * rows + i)]);
      CHECK(read(dst) == want);
    }
  }
}

TEST_CASE("cpu-elementwise: copy_ errors", "[cpu-elementwise]") {
  CHECK_THROWS_WITH(native::copy_inplace_cpu(make({0, 0}, {2}), make({1, 2, 3}, {3}), false),
                    "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0 "
                    "(shapes [2] and [3])");
  CHECK_THROWS_WITH(native::copy_inplace_cpu(make({0, 0}, {2}), make({1, 2, 3, 4}, {2, 2}), false),
                    "output with shape [2] doesn't match the broadcast shape [2, 2]");
  CHECK_THROWS_WITH(native::copy_inplace_cpu(expanded(make({0}, {1}), {3}), make({1, 2, 3}, {3}), false),
                    "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                    "location. Please clone() the tensor before performing the operation.");
  CHECK_THROWS_WITH(native::copy_inplace_cpu(make({0}, {1}), metaTensor({1}), false),
                    "copy_: the cpu kernel copies between cpu tensors only, not from meta to cpu (a copy to or from "
                    "another device is the job of that device's copy_ kernel)");
}

TEST_CASE("cpu-elementwise: fill_ and zero_", "[cpu-elementwise]") {
  Tensor t = make({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(native::fill_inplace_cpu(t, 2.5).is_same(t));
  CHECK_VALUES(t, {2.5, 2.5, 2.5, 2.5, 2.5, 2.5});
  Tensor base = make({1, 2, 3, 4, 5}, {5});
  native::fill_inplace_cpu(everyOther(base), 0);
  CHECK_VALUES(base, {0, 2, 0, 4, 0});
  Tensor u = make({0}, {1}, kByte);
  native::fill_inplace_cpu(u, -1);
  CHECK_VALUES(u, {255});
  Tensor b = make({0, 0}, {2}, kBool);
  native::fill_inplace_cpu(b, true);
  CHECK_VALUES(b, {1, 1});
  Tensor h = make({0}, {1}, kHalf);
  native::fill_inplace_cpu(h, kInf);
  CHECK_VALUES(h, {kInf});
  Tensor i = make({0, 0}, {2}, kLong);
  native::fill_inplace_cpu(i, 2.9);
  CHECK_VALUES(i, {2, 2});
  CHECK_THROWS_WITH(native::fill_inplace_cpu(u, 256), "value cannot be converted to type uint8_t without overflow");
  CHECK_THROWS_WITH(native::fill_inplace_cpu(make({0}, {1}, kChar), 128),
                    "value cannot be converted to type int8_t without overflow");
  CHECK_THROWS_WITH(native::fill_inplace_cpu(make({0}, {1}, kInt), 1e10),
                    "value cannot be converted to type int without overflow");
  CHECK_THROWS_WITH(native::fill_inplace_cpu(h, 70000), "value cannot be converted to type at::Half without overflow");
  CHECK_THROWS_WITH(native::fill_inplace_cpu(make({0}, {1}, kBFloat16), 1e300),
                    "value cannot be converted to type at::BFloat16 without overflow");
  CHECK_THROWS_WITH(native::fill_inplace_cpu(make({0}, {1}, kShort), 32768),
                    "value cannot be converted to type int16_t without overflow");
  // Every value converts to bool, as in PyTorch: zeros({3}, kBool).fill_(2) is all true.
  for (Scalar v : {Scalar(2), Scalar(-3), Scalar(0.3), Scalar(kNaN), Scalar(kInf), Scalar(int64_t{1} << 40)}) {
    Tensor fresh = make({0, 0, 0}, {3}, kBool);
    native::fill_inplace_cpu(fresh, v);
    CHECK_VALUES(fresh, {1, 1, 1});
  }
  native::fill_inplace_cpu(b, 0.0);
  CHECK_VALUES(b, {0, 0});
  Tensor s16 = make({0, 0}, {2}, kShort);
  native::fill_inplace_cpu(s16, -32768);
  CHECK_VALUES(s16, {-32768, -32768});
  CHECK_THROWS_WITH(native::fill_inplace_cpu(i, kNaN), "value cannot be converted to type int64_t without overflow");
  // zero_, contiguous and not.
  Tensor z = make({1, 2, 3, 4}, {2, 2}, kDouble);
  CHECK(native::zero_inplace_cpu(z).is_same(z));
  CHECK_VALUES(z, {0, 0, 0, 0});
  Tensor zb = make({1, 2, 3, 4, 5}, {5}, kInt);
  native::zero_inplace_cpu(everyOther(zb));
  CHECK_VALUES(zb, {0, 2, 0, 4, 0});
  dk::zero_(zb);
  CHECK_VALUES(zb, {0, 0, 0, 0, 0});
  dk::fill_(zb, 3);
  CHECK_VALUES(zb, {3, 3, 3, 3, 3});
}

TEST_CASE("cpu-elementwise: item", "[cpu-elementwise]") {
  Scalar f = native::item_cpu(scalarTensor(2.5));
  CHECK(f.isFloatingPoint());
  CHECK(f.toDouble() == 2.5);
  Scalar h = native::item_cpu(make({0.1}, {1}, kHalf));
  CHECK(h.isFloatingPoint());
  CHECK(h.toDouble() == static_cast<double>(static_cast<float>(Half(0.1f))));
  Scalar l = native::item_cpu(make({-7}, {1, 1}, kChar));
  CHECK(l.isIntegral());
  CHECK(l.toLong() == -7);
  Scalar big = native::item_cpu(make({9007199254740993.0}, {}, kLong));
  CHECK(big.toLong() == 9007199254740992);  // the double the test wrote
  Scalar b = native::item_cpu(make({1}, {}, kBool));
  CHECK(b.isBoolean());
  CHECK(b.toBool());
  // One element of a strided view.
  CHECK(native::item_cpu(detail::make_view(make({1, 2, 3}, {3}), {1}, {1}, 2)).toDouble() == 3);
  CHECK(dk::ops::item::call(scalarTensor(4, kInt)).toLong() == 4);
  CHECK_THROWS_WITH(native::item_cpu(make({1, 2}, {2})), "a Tensor with 2 elements cannot be converted to Scalar");
  CHECK_THROWS_WITH(native::item_cpu(make({}, {0})), "a Tensor with 0 elements cannot be converted to Scalar");
}

TEST_CASE("cpu-elementwise: the in-place and out= forms of pow, clamp and the comparisons",
          "[cpu-elementwise][structured]") {
  // pow_ and pow.Tensor_Scalar_out.
  Tensor p = transposed(make({1, 3, 2, 4}, {2, 2}));  // a strided self is written where it points
  CHECK(ops::pow__Scalar::call(p, 2).is_same(p));
  CHECK_VALUES(p, {1, 4, 9, 16});
  Tensor pout = make({}, {0}, kDouble);
  CHECK(ops::pow_Tensor_Scalar_out::call(make({2, 3}, {2}, kLong), 3, pout).is_same(pout));
  CHECK(pout.sizes() == Sizes{2});
  CHECK_VALUES(pout, {8, 27});
  CHECK_THROWS_WITH(ops::pow__Scalar::call(make({4}, {1}, kLong), 0.5),
                    "result type Float can't be cast to the desired output type Long");
  CHECK_THROWS_WITH(ops::pow__Scalar::call(make({4}, {1}, kLong), -1),
                    "Integers to negative integer powers are not allowed.");

  // clamp_ and clamp.out.
  Tensor c = make({-2, 0.5, 3, kNaN}, {4});
  CHECK(ops::clamp_::call(c, Scalar(-1), Scalar(1)).is_same(c));
  CHECK_VALUES(c, {-1, 0.5, 1, kNaN});
  Tensor cout = make({}, {0}, kDouble);
  ops::clamp_out::call(make({-5, 0, 5}, {3}, kInt), Scalar(0), std::nullopt, cout);
  CHECK_VALUES(cout, {0, 0, 5});
  CHECK_THROWS_WITH(ops::clamp_::call(make({1, 2}, {2}, kLong), Scalar(0.5), std::nullopt),
                    "result type Float can't be cast to the desired output type Long");
  CHECK_THROWS_WITH(ops::clamp_out::call(make({1}, {1}), Scalar(0), std::nullopt, make({}, {0}, kLong)),
                    "result type Float can't be cast to the desired output type Long");
  CHECK_THROWS_WITH(ops::clamp_::call(c, std::nullopt, std::nullopt),
                    "torch.clamp: At least one of 'min' or 'max' must not be None");

  // The in-place comparisons write 0 and 1 in self's dtype (PyTorch: x.eq_(y) stays float).
  const Values a{1, 2, 3};
  const Values b{3, 2, 1};
  Tensor e = make(a, {3});
  CHECK(ops::eq__Tensor::call(e, make(b, {3})).is_same(e));
  CHECK(e.dtype() == kFloat);
  CHECK_VALUES(e, {0, 1, 0});
  Tensor g = make(a, {3}, kLong);
  ops::gt__Tensor::call(g, make(b, {3}, kDouble));  // compared in double, written as Long
  CHECK_VALUES(g, {0, 0, 1});
  Tensor l = make(a, {3});
  ops::lt__Tensor::call(l, make(b, {3}));
  CHECK_VALUES(l, {1, 0, 0});
  Tensor es = make({2, 2.5, 3}, {3});
  ops::eq__Scalar::call(es, Scalar(2.5));
  CHECK_VALUES(es, {0, 1, 0});
  Tensor bout = make({}, {0}, kBool);
  CHECK(ops::eq_Tensor_out::call(make(a, {3}), make(b, {3}), bout).is_same(bout));
  CHECK(bout.dtype() == kBool);
  CHECK_VALUES(bout, {0, 1, 0});
  Tensor lout = make({9, 9, 9}, {3}, kLong);  // any dtype Bool casts to
  ops::gt_Tensor_out::call(make(a, {3}), make(b, {3}), lout);
  CHECK_VALUES(lout, {0, 0, 1});
  Tensor fout = make({}, {0});
  ops::eq_Scalar_out::call(make(a, {3}, kInt), Scalar(3), fout);
  CHECK_VALUES(fout, {0, 0, 1});
  ops::lt_Tensor_out::call(make({1, 5}, {2, 1}), make(b, {3}), bout);  // broadcast, resized
  CHECK(bout.sizes() == Sizes{2, 3});
  CHECK_VALUES(bout, {1, 1, 0, 0, 0, 0});
  CHECK_THROWS_WITH(ops::gt__Tensor::call(make(a, {3}), make({1, 2, 3, 4, 5, 6}, {2, 3})),
                    "output with shape [3] doesn't match the broadcast shape [2, 3]");
}
