// Making tensors: TensorOptions (dk/tensor/tensor_options.h), dk::tensor from values
// (dk/tensor/tensor_from_values.h), and empty_strided, empty_contiguous and from_blob
// (dk/tensor/empty_tensor.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/tensor/type_promotion.h"
#include "dk/util/error.h"
#include "dk/util/half.h"

using namespace dk;

namespace {

using Sizes = std::vector<int64_t>;

template <class T>
std::vector<T> values(const Tensor& t) {
  // Logical order, whatever the strides (2-D at most: enough here).
  std::vector<T> out;
  const T* p = t.data_ptr<T>();
  if (t.dim() == 1) {
    for (int64_t i = 0; i < t.size(0); ++i) out.push_back(p[i * t.stride(0)]);
  } else if (t.dim() == 2) {
    for (int64_t i = 0; i < t.size(0); ++i)
      for (int64_t j = 0; j < t.size(1); ++j) out.push_back(p[i * t.stride(0) + j * t.stride(1)]);
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(p[i]);
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- options and factories

TEST_CASE("tensor: TensorOptions chain") {
  TensorOptions o = TensorOptions().dtype(kFloat).device(kCPU);
  CHECK(o.dtype() == kFloat);
  CHECK(o.device() == Device(kCPU));
  CHECK(o.has_dtype());
  CHECK_FALSE(o.has_layout());
  TensorOptions defaults;
  CHECK(defaults.dtype() == kFloat);
  CHECK(defaults.device() == Device(kCPU));
  CHECK(defaults.layout() == Layout::Strided);
  CHECK_FALSE(defaults.requires_grad());
  CHECK_FALSE(defaults.pinned_memory());
  CHECK_FALSE(defaults.has_dtype());
  TensorOptions cuda = dk::dtype(kLong).device("cuda:1").requires_grad(true);
  CHECK(cuda.device() == Device(kCUDA, 1));
  CHECK(cuda.requires_grad());
  CHECK(TensorOptions().device(kCUDA, 0).device() == Device(kCUDA, 0));
  CHECK(TensorOptions(kHalf).dtype() == kHalf);
  CHECK(TensorOptions(kMeta).device() == Device(kMeta));
  CHECK(defaults.merged_with(kDouble).dtype() == kDouble);
  CHECK(o.merged_with(TensorOptions()).dtype() == kFloat);
  std::ostringstream out;
  out << TensorOptions().dtype(kDouble);
  CHECK(out.str() == "TensorOptions(dtype=float64, device=cpu, layout=Strided, requires_grad=false, pinned_memory=false)");
}

TEST_CASE("tensor: dk::tensor from values") {
  Tensor f = tensor({1.0, 2.0});
  CHECK(f.dtype() == kFloat);
  CHECK(f.sizes() == Sizes{2});
  CHECK(values<float>(f) == std::vector<float>{1, 2});
  Tensor i = tensor({{1, 2}, {3, 4}});
  CHECK(i.dtype() == kLong);
  CHECK(i.sizes() == Sizes{2, 2});
  CHECK(values<int64_t>(i) == std::vector<int64_t>{1, 2, 3, 4});
  Tensor b = tensor({true, false});
  CHECK(b.dtype() == kBool);
  CHECK(values<bool>(b) == std::vector<bool>{true, false});
  Tensor s = tensor(3.5);
  CHECK(s.dim() == 0);
  CHECK(s.data_ptr<float>()[0] == 3.5f);
  CHECK(tensor(7).dtype() == kLong);
  CHECK(tensor(true).dtype() == kBool);
  Tensor d3 = tensor({{{1.5f, 2.5f}}, {{3.5f, 4.5f}}});
  CHECK(d3.sizes() == Sizes{2, 1, 2});
  Tensor d4 = tensor({{{{1, 2, 3}}}});
  CHECK(d4.sizes() == Sizes{1, 1, 1, 3});
  CHECK(d4.is_contiguous());
  // Options override the dtype; values are converted.
  CHECK(values<int32_t>(tensor({1, 2}, kInt)) == std::vector<int32_t>{1, 2});
  CHECK(values<double>(tensor({1, 2}, dk::dtype(kDouble).device(kCPU))) == std::vector<double>{1, 2});
  CHECK(values<int64_t>(tensor({1.9, -1.9}, kLong)) == std::vector<int64_t>{1, -1});
  CHECK(values<bool>(tensor({0.0, 0.5}, kBool)) == std::vector<bool>{false, true});
  CHECK(values<uint8_t>(tensor({255, 256}, kByte)) == std::vector<uint8_t>{255, 0});
  CHECK(tensor({1.0f / 3.0f}, kHalf).data_ptr<Half>()[0].x == 0x3555);
  CHECK(values<float>(tensor({true, false}, kFloat)) == std::vector<float>{1, 0});
  CHECK(values<float>(tensor(std::vector<double>{0.5, 1.5})) == std::vector<float>{0.5, 1.5});
  CHECK(tensor(std::vector<bool>{true}).dtype() == kBool);
  CHECK(tensor(std::initializer_list<double>{}).sizes() == Sizes{0});
  // Errors.
  CHECK_THROWS_WITH(tensor({{1, 2}, {3, 4, 5}}), "tensor: ragged nested list: expected 2 elements at dim 1, got 3");
  CHECK_THROWS_WITH(tensor({1.0}, Device(kCUDA, 0)),
                    "tensor: values can only be written to a cpu tensor here, not cuda:0 (make it on the cpu and copy "
                    "it)");
  CHECK_THROWS_WITH(tensor({1e300}, kLong), "tensor: value 1e+300 cannot be converted to dtype Long");
  // requires_grad(true) makes a leaf that requires grad, as torch::tensor does.
  Tensor leaf = tensor({1.0, 2.0}, dk::requires_grad());
  CHECK(leaf.requires_grad());
  CHECK(leaf.is_leaf());
  CHECK_FALSE(tensor({1.0}, dk::requires_grad(false)).requires_grad());
  CHECK_THROWS_WITH(tensor({1, 2}, dk::requires_grad()),
                    "Only Tensors of floating point and complex dtype can require gradients");
}

TEST_CASE("tensor: empty_strided and empty_contiguous") {
  Tensor t = detail::empty_strided({2, 3}, {1, 2}, kFloat, kCPU);
  CHECK(t.strides() == Sizes{1, 2});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.storage_offset() == 0);
  Tensor c = detail::empty_contiguous({4, 5}, kBFloat16, kCPU);
  CHECK(c.strides() == Sizes{5, 1});
  CHECK(c.storage().nbytes() == 40);
  CHECK(detail::empty_contiguous({}, kBool, kCPU).storage().nbytes() == 1);
  CHECK_THROWS_WITH(detail::empty_contiguous({-1, 2}, kFloat, kCPU),
                    "Trying to create tensor with negative dimension -1: [-1, 2]");
  CHECK_THROWS_WITH(detail::empty_strided({2, 2}, {1}, kFloat, kCPU), "empty_strided: 2 sizes but 1 strides");
  CHECK_THROWS_WITH(detail::empty_strided({2}, {-1}, kFloat, kCPU), "empty_strided: negative stride -1 in [-1]");
  CHECK_THROWS_WITH(detail::empty_contiguous({2}, ScalarType::Undefined, kCPU), "empty_strided: the dtype is Undefined");
  CHECK_THROWS_WITH(detail::empty_contiguous({int64_t{1} << 62, 8}, kDouble, kCPU),
                    "the storage needed for sizes [4611686018427387904, 8] and strides [8, 1] overflows int64");
  CHECK_THROWS_WITH(detail::empty_contiguous({int64_t{1} << 61}, kDouble, kCPU),
                    "the storage for sizes [2305843009213693952] of dtype Double overflows int64");
}

TEST_CASE("tensor: from_blob wraps memory it does not own, or frees it with a deleter") {
  float data[6] = {1, 2, 3, 4, 5, 6};
  {
    Tensor t = from_blob(data, {2, 3});
    CHECK(t.dtype() == kFloat);
    CHECK(t.data_ptr() == data);
    CHECK(t.storage().allocator() == nullptr);
    CHECK(t.storage().nbytes() == sizeof(data));
    t.data_ptr<float>()[4] = 50;
    CHECK(data[4] == 50);
    Tensor columns = from_blob(data, {3, 2}, {1, 3});
    CHECK(values<float>(columns) == std::vector<float>{1, 4, 2, 50, 3, 6});
  }
  CHECK(data[0] == 1);  // nothing was freed

  int64_t* owned = new int64_t[4]{7, 8, 9, 10};
  int deleted = 0;
  {
    Tensor t = from_blob(
        owned, {4},
        [&](void* p) {
          ++deleted;
          delete[] static_cast<int64_t*>(p);
        },
        kLong);
    Tensor v = detail::make_view(t, {2}, {2}, 1);
    CHECK(values<int64_t>(v) == std::vector<int64_t>{8, 10});
    t = Tensor();
    CHECK(deleted == 0);
  }
  CHECK(deleted == 1);
  CHECK_THROWS_WITH(from_blob(nullptr, {2}), "from_blob: null data for a tensor of 8 bytes");
  CHECK_THROWS_WITH(from_blob(data, {2}, TensorOptions().pinned_memory(true)),
                    "from_blob: pinned memory is not supported yet");
}
