// The tensor library core: storage and allocators, TensorImpl geometry and views, 16-bit
// floats, dtype dispatch, type promotion, options, factories, shape helpers and printing.
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

std::string str(const Tensor& t) {
  std::ostringstream out;
  out << t;
  return out.str();
}

// Counts allocations and frees; registered for PrivateUse1 while a test runs.
class CountingAllocator final : public Allocator {
 public:
  int allocations = 0;
  int frees = 0;
  size_t last_nbytes = 0;
  DataPtr allocate(size_t nbytes, Device device) override {
    ++allocations;
    last_nbytes = nbytes;
    auto* block = new Block{this, ::operator new(nbytes == 0 ? 1 : nbytes)};
    return DataPtr(block->memory, block, &Block::free, device);
  }

 private:
  struct Block {
    CountingAllocator* owner;
    void* memory;
    static void free(void* context) {
      auto* block = static_cast<Block*>(context);
      ++block->owner->frees;
      ::operator delete(block->memory);
      delete block;
    }
  };
};

class ScopedAllocator {
 public:
  ScopedAllocator(DeviceType type, Allocator* allocator) : type_(type), previous_(setAllocator(type, allocator)) {}
  ~ScopedAllocator() { setAllocator(type_, previous_); }

 private:
  DeviceType type_;
  Allocator* previous_;
};

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

uint16_t halfBits(float f) { return Half(f).x; }
uint16_t bf16Bits(float f) { return BFloat16(f).x; }
float fromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

}  // namespace

// ---------------------------------------------------------------- handle and key set

TEST_CASE("tensor: Tensor is one pointer wide and undefined tensors read an empty key set") {
  STATIC_REQUIRE(sizeof(Tensor) == sizeof(void*));
  Tensor undefined;
  CHECK_FALSE(undefined.defined());
  CHECK(undefined.key_set().empty());
  CHECK(undefined.use_count() == 0);
  CHECK(undefined.data_ptr() == nullptr);
  CHECK_FALSE(undefined.is_view());
  CHECK(str(undefined) == "Tensor(undefined)");
}

TEST_CASE("tensor: allocated tensors get the device key set, inference tensors no autograd keys") {
  Tensor t = detail::empty_contiguous({2}, kFloat, kCPU);
  CHECK(t.key_set() == computeTensorKeySet(Device(kCPU), false));
  CHECK(t.key_set().has(DispatchKey::CPU));
  CHECK(t.key_set().has(DispatchKey::AutogradCPU));
  CHECK_FALSE(t.is_inference());
  {
    InferenceMode guard;
    Tensor i = detail::empty_contiguous({2}, kFloat, kCPU);
    CHECK(i.is_inference());
    CHECK(i.key_set() == DispatchKeySet(DispatchKey::CPU));
  }
  Tensor m = detail::empty_contiguous({2}, kFloat, kMeta);
  CHECK(m.key_set().has(DispatchKey::Meta));
}

TEST_CASE("tensor: the metadata-only constructor and make_tensor still work") {
  Tensor t = make_tensor({2, 3});
  CHECK(t.sizes() == std::vector<int64_t>{2, 3});
  CHECK(t.strides() == std::vector<int64_t>{3, 1});
  CHECK(t.numel() == 6);
  CHECK(t.dtype() == kFloat);
  CHECK_FALSE(t.has_storage());
  CHECK(t.data_ptr() == nullptr);
  CHECK(t.is_contiguous());
  CHECK(t._version() == 0);
  Tensor raw(make_intrusive<TensorImpl>(DispatchKeySet(DispatchKey::CPU), kLong, Device(kCPU), Sizes{4}));
  CHECK(raw.dtype() == kLong);
  CHECK(raw.sizes() == Sizes{4});
  Tensor copy = raw;
  CHECK(raw.use_count() == 2);
  CHECK(copy.is_same(raw));
  TensorImpl* released = copy.release_impl();
  CHECK_FALSE(copy.defined());
  Tensor back = Tensor::reclaim(released);
  CHECK(back.is_same(raw));
  CHECK(raw.use_count() == 2);
}

// ---------------------------------------------------------------- storage and allocators

TEST_CASE("tensor: CPU storage is 64-byte aligned, sized by the geometry, and shared by views") {
  Tensor t = detail::empty_contiguous({3, 5}, kDouble, kCPU);
  REQUIRE(t.has_storage());
  CHECK(t.storage().nbytes() == 3 * 5 * 8);
  CHECK(t.nbytes() == 120);
  CHECK(t.element_size() == 8);
  CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % kHostAlignment == 0);
  CHECK(t.storage().device() == Device(kCPU));
  CHECK(t.storage().allocator() == defaultHostAllocator());
  CHECK(t.storage().use_count() == 1);
  {
    Tensor v = detail::make_view(t, {5}, {1}, 5);
    CHECK(v.storage().is_same(t.storage()));
    CHECK(t.storage().use_count() == 2);
    CHECK(v.data_ptr() == static_cast<char*>(t.data_ptr()) + 5 * 8);
  }
  CHECK(t.storage().use_count() == 1);

  Tensor strided = detail::empty_strided({2, 3}, {1, 2}, kInt, kCPU);
  CHECK(strided.storage().nbytes() == 6 * 4);
  Tensor gappy = detail::empty_strided({2, 2}, {10, 1}, kInt, kCPU);
  CHECK(gappy.storage().nbytes() == 12 * 4);
  Tensor none = detail::empty_contiguous({4, 0}, kFloat, kCPU);
  CHECK(none.storage().nbytes() == 0);
  CHECK(none.data_ptr() == nullptr);
}

TEST_CASE("tensor: memory is freed when the last tensor or view of it goes") {
  CountingAllocator counting;
  ScopedAllocator scope(kPrivateUse1, &counting);
  {
    Tensor t = detail::empty_contiguous({2, 4}, kFloat, kPrivateUse1);
    CHECK(counting.allocations == 1);
    CHECK(counting.last_nbytes == 32);
    CHECK(t.device() == Device(kPrivateUse1));
    CHECK(t.key_set().has(DispatchKey::PrivateUse1));
    Tensor v = detail::make_view(t, {4}, {1}, 4);
    t = Tensor();
    CHECK(counting.frees == 0);  // the view keeps the storage alive
    CHECK(v.base().storage().nbytes() == 32);
  }
  CHECK(counting.frees == 1);
}

TEST_CASE("tensor: a new tensor's objects and small bytes share one block, each living as long as needed") {
  // Note [One block per new tensor]: the storage and version counter outlive the tensor through
  // a view, and the bytes stay readable until the last of them goes.
  Tensor view;
  {
    Tensor t = detail::empty_contiguous({4}, kFloat, kCPU);
    CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % kHostAlignment == 0);
    CHECK(t.storage().allocator() == defaultHostAllocator());
    for (int i = 0; i < 4; ++i) t.data_ptr<float>()[i] = static_cast<float>(i);
    view = detail::make_view(t, {2}, {1}, 2);
    t.unsafeGetTensorImpl()->bump_version();
  }
  CHECK(view._version() == 1);
  CHECK(view.data_ptr<float>()[0] == 2.0f);
  CHECK(view.data_ptr<float>()[1] == 3.0f);
  CHECK(view.storage().use_count() == 2);  // the view and its base
  view = Tensor();
  // More bytes than are kept inline come from the allocator, still aligned.
  Tensor big = detail::empty_contiguous({4096}, kDouble, kCPU);
  CHECK(reinterpret_cast<uintptr_t>(big.data_ptr()) % kHostAlignment == 0);
  CHECK(big.storage().nbytes() == 4096 * 8);
  // A storage given new memory (a resize) keeps working; the inline bytes go with the block.
  Tensor small = detail::empty_contiguous({2}, kFloat, kCPU);
  StorageImpl* storage = small.storage().unsafeGetStorageImpl();
  storage->set_data_ptr(defaultHostAllocator()->allocate(64, Device(kCPU)), 64);
  CHECK(reinterpret_cast<uintptr_t>(small.data_ptr()) % kHostAlignment == 0);
  small.data_ptr<float>()[1] = 5.0f;
  CHECK(small.data_ptr<float>()[1] == 5.0f);
  // A geometry the TensorImpl refuses after the block is made: nothing leaks (ASan checks).
  CHECK_THROWS_AS(detail::empty_strided({int64_t{1} << 62, 4, 0}, {0, 0, 0}, kFloat, kCPU), Error);
}

TEST_CASE("tensor: the allocator registry") {
  CHECK(getAllocator(kCPU) == defaultHostAllocator());
  CHECK(getAllocator(kPrivateUse1) == defaultHostAllocator());
  CHECK(getAllocator(kMeta) == metaAllocator());
  Allocator* cuda = setAllocator(kCUDA, nullptr);  // whatever a CUDA build registered
  CHECK_THROWS_WITH(getAllocator(kCUDA), "no allocator is registered for device type cuda");
  CHECK_THROWS_WITH(detail::empty_contiguous({2}, kFloat, Device(kCUDA, 0)),
                    "no allocator is registered for device type cuda");
  setAllocator(kCUDA, cuda);

  DataPtr host = defaultHostAllocator()->allocate(100, Device(kCPU));
  CHECK(host.get() != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(host.get()) % 64 == 0);
  CHECK(defaultHostAllocator()->allocate(0, Device(kCPU)).get() == nullptr);
  DataPtr moved = std::move(host);
  CHECK(host.get() == nullptr);  // NOLINT: testing the moved-from state
  CHECK(moved.get() != nullptr);
  moved.clear();
  CHECK(moved.get() == nullptr);
}

TEST_CASE("tensor: meta tensors allocate nothing") {
  CHECK(metaAllocator()->allocate(1 << 20, Device(kMeta)).get() == nullptr);
  Tensor m = detail::empty_contiguous({1000, 1000}, kDouble, kMeta);
  CHECK(m.is_meta());
  CHECK(m.data_ptr() == nullptr);
  CHECK(m.storage().data() == nullptr);
  CHECK(m.storage().nbytes() == 8000000);  // the size is known, the memory is not there
  CHECK(m.numel() == 1000000);
  Tensor v = detail::make_view(m, {1000}, {1000}, 3);
  CHECK(v.data_ptr() == nullptr);
  CHECK(v.is_view());
  Tensor literal = tensor({1.0, 2.0}, kMeta);
  CHECK(literal.is_meta());
  CHECK(literal.data_ptr() == nullptr);
  CHECK(literal.sizes() == Sizes{2});
}

// ---------------------------------------------------------------- geometry and views

TEST_CASE("tensor: contiguous strides and the contiguity cache") {
  CHECK(computeContiguousStrides({2, 3, 4}) == Sizes{12, 4, 1});
  CHECK(computeContiguousStrides({2, 0, 3}) == Sizes{3, 3, 1});
  CHECK(computeContiguousStrides({}).empty());
  CHECK(isContiguousLayout({2, 3}, {3, 1}));
  CHECK_FALSE(isContiguousLayout({2, 3}, {1, 2}));
  CHECK(isContiguousLayout({2, 1, 3}, {3, 99, 1}));  // size-1 dims never step
  CHECK(isContiguousLayout({2, 0}, {7, 7}));         // no elements
  CHECK(isContiguousLayout({}, {}));

  Tensor t = detail::empty_contiguous({2, 3}, kFloat, kCPU);
  CHECK(t.is_contiguous());
  Tensor transposed = detail::make_view(t, {3, 2}, {1, 3}, 0);
  CHECK_FALSE(transposed.is_contiguous());
  TensorImpl* impl = transposed.unsafeGetTensorImpl();
  impl->set_sizes_and_strides({6}, {1});
  CHECK(transposed.is_contiguous());
  CHECK(transposed.numel() == 6);
  impl->set_sizes_and_strides({3}, {2});
  CHECK_FALSE(transposed.is_contiguous());
  impl->set_sizes_contiguous({2, 3});
  CHECK(transposed.is_contiguous());
  CHECK(transposed.strides() == Sizes{3, 1});
  CHECK_THROWS_WITH(impl->set_sizes_and_strides({2}, {1, 1}), "set_sizes_and_strides: 1 sizes but 2 strides");
}

TEST_CASE("tensor: accessors") {
  Tensor t = detail::empty_strided({2, 3, 4}, {12, 4, 1}, kHalf, kCPU);
  CHECK(t.dim() == 3);
  CHECK(t.size(0) == 2);
  CHECK(t.size(-1) == 4);
  CHECK(t.stride(-2) == 4);
  CHECK(t.storage_offset() == 0);
  CHECK(t.scalar_type() == kHalf);
  CHECK(t.element_size() == 2);
  CHECK(t.nbytes() == 48);
  CHECK(t.options() == TensorOptions().dtype(kHalf).device(kCPU).layout(Layout::Strided));
  CHECK_THROWS_WITH(t.size(3), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  CHECK_THROWS_WITH(t.stride(-4), "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  Tensor scalar = tensor(2.0);
  CHECK(scalar.dim() == 0);
  CHECK(scalar.numel() == 1);
  CHECK_THROWS_WITH(scalar.size(0), "Dimension specified as 0 but tensor has no dimensions");
}

TEST_CASE("tensor: data_ptr adds the storage offset and checks the dtype") {
  Tensor t = tensor({10, 11, 12, 13, 14, 15});
  Tensor v = detail::make_view(t, {2, 2}, {3, 1}, 1);
  CHECK(v.storage_offset() == 1);
  CHECK(v.data_ptr<int64_t>() == t.data_ptr<int64_t>() + 1);
  CHECK(values<int64_t>(v) == std::vector<int64_t>{11, 12, 14, 15});
  CHECK_THROWS_WITH(t.data_ptr<float>(), "data_ptr: expected scalar type Float but found Long");
  CHECK_THROWS_WITH(Tensor().data_ptr<bool>(), "data_ptr: expected scalar type Bool but found Undefined");
  v.unsafeGetTensorImpl()->set_storage_offset(2);
  CHECK(v.data_ptr<int64_t>()[0] == 12);
  intrusive_ptr<TensorImpl> impl = v.getIntrusivePtr();
  CHECK(impl.get() == v.unsafeGetTensorImpl());
  CHECK(v.use_count() == 2);
  Tensor h = tensor({1.5}, kHalf);
  CHECK(static_cast<float>(h.data_ptr<Half>()[0]) == 1.5f);
  Tensor b = tensor({1.5}, kBFloat16);
  CHECK(static_cast<float>(b.data_ptr<BFloat16>()[0]) == 1.5f);
}

TEST_CASE("tensor: views share storage and version counter and record their base") {
  Tensor base = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0});
  CHECK_FALSE(base.is_view());
  CHECK_FALSE(base.base().defined());
  Tensor v = detail::make_view(base, {2, 3}, {3, 1}, 0);
  CHECK(v.is_view());
  CHECK(v.base().is_same(base));
  CHECK(v.key_set() == base.key_set());
  CHECK(v.dtype() == base.dtype());
  CHECK(v.unsafeGetTensorImpl()->version_counter() == base.unsafeGetTensorImpl()->version_counter());

  CHECK(base._version() == 0);
  v.unsafeGetTensorImpl()->bump_version();
  CHECK(base._version() == 1);
  base.unsafeGetTensorImpl()->bump_version();
  CHECK(v._version() == 2);

  Tensor vv = detail::make_view(v, {3}, {2}, 0);  // a view of a view: the base is the original
  CHECK(vv.base().is_same(base));
  CHECK(vv._version() == 2);
  CHECK(values<float>(vv) == std::vector<float>{1, 3, 5});

  // A fresh tensor has its own counter.
  Tensor other = tensor({1.0});
  CHECK(other._version() == 0);

  CHECK_THROWS_WITH(detail::make_view(base, {4}, {2}, 1),
                    "make_view: a view with sizes [4] and strides [2] at offset 1 needs 8 elements of storage, but "
                    "the storage holds 6");
  CHECK_THROWS_WITH(detail::make_view(base, {2}, {1, 1}, 0), "make_view: 1 sizes but 2 strides");
  CHECK_THROWS_WITH(detail::make_view(Tensor(), {1}, {1}, 0), "make_view: the base tensor is undefined");
}

TEST_CASE("tensor: the autograd metadata slot") {
  struct Meta : AutogradMetaInterface {
    bool* destroyed;
    explicit Meta(bool* d) : destroyed(d) {}
    ~Meta() override { *destroyed = true; }
  };
  bool destroyed = false;
  {
    Tensor t = tensor({1.0});
    CHECK(t.unsafeGetTensorImpl()->autograd_meta() == nullptr);
    t.unsafeGetTensorImpl()->set_autograd_meta(std::make_unique<Meta>(&destroyed));
    CHECK(dynamic_cast<Meta*>(t.unsafeGetTensorImpl()->autograd_meta()) != nullptr);
  }
  CHECK(destroyed);
}

TEST_CASE("tensor: inferSize") {
  CHECK(inferSize({2, -1}, 6) == Sizes{2, 3});
  CHECK(inferSize({-1}, 0) == Sizes{0});
  CHECK(inferSize({2, 3}, 6) == Sizes{2, 3});
  CHECK(inferSize({}, 1).empty());
  CHECK_THROWS_WITH(inferSize({-1, -1}, 4), "only one dimension can be inferred");
  CHECK_THROWS_WITH(inferSize({2, -2}, 4), "invalid shape dimension -2");
  CHECK_THROWS_WITH(inferSize({2, -1}, 7), "shape '[2, -1]' is invalid for input of size 7");
  CHECK_THROWS_WITH(inferSize({2, 4}, 7), "shape '[2, 4]' is invalid for input of size 7");
  CHECK_THROWS_WITH(inferSize({0, -1}, 0),
                    "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified dimension size "
                    "-1 can be any value and is ambiguous");
  // A zero among the known sizes of a tensor that has elements: the shape is just invalid.
  CHECK_THROWS_WITH(inferSize({-1, 0}, 6), "shape '[-1, 0]' is invalid for input of size 6");
}

TEST_CASE("tensor: computeStrideForView") {
  using Result = std::optional<Sizes>;
  // Contiguous: any reshape is a view.
  CHECK(computeStrideForView({2, 3, 4}, {12, 4, 1}, {6, 4}) == Result(Sizes{4, 1}));
  CHECK(computeStrideForView({2, 3, 4}, {12, 4, 1}, {24}) == Result(Sizes{1}));
  CHECK(computeStrideForView({2, 3}, {3, 1}, {3, 2}) == Result(Sizes{2, 1}));
  CHECK(computeStrideForView({6}, {1}, {1, 2, 1, 3, 1}) == Result(Sizes{6, 3, 3, 1, 1}));
  // Transposed: cannot be flattened.
  CHECK(computeStrideForView({3, 2}, {1, 3}, {6}) == std::nullopt);
  // ...but splitting or merging within one dense chunk works.
  CHECK(computeStrideForView({3, 2}, {1, 3}, {3, 2, 1}) == Result(Sizes{1, 3, 3}));
  // Every other column of a [4, 12] is evenly spaced: it flattens.
  CHECK(computeStrideForView({4, 6}, {12, 2}, {24}) == Result(Sizes{2}));
  // The first 6 columns of a [4, 12]: rows cannot merge, columns can split.
  CHECK(computeStrideForView({4, 6}, {12, 1}, {4, 2, 3}) == Result(Sizes{12, 3, 1}));
  CHECK(computeStrideForView({4, 6}, {12, 1}, {2, 2, 6}) == Result(Sizes{24, 12, 1}));
  CHECK(computeStrideForView({4, 6}, {12, 1}, {24}) == std::nullopt);
  CHECK(computeStrideForView({4, 6}, {12, 1}, {2, 12}) == std::nullopt);
  CHECK(computeStrideForView({4, 6}, {12, 1}, {8, 3}) == std::nullopt);
  // Size-1 dims with odd strides are ignored.
  CHECK(computeStrideForView({2, 1, 3}, {3, 100, 1}, {6}) == Result(Sizes{1}));
  // Expanded (stride 0) dims can still be split.
  CHECK(computeStrideForView({4}, {0}, {2, 2}) == Result(Sizes{0, 0}));
  // 0-dim and empty tensors.
  CHECK(computeStrideForView({}, {}, {1, 1}) == Result(Sizes{1, 1}));
  CHECK(computeStrideForView({1}, {5}, {}) == Result(Sizes{}));
  CHECK(computeStrideForView({2, 0}, {7, 7}, {2, 0}) == Result(Sizes{7, 7}));
  CHECK(computeStrideForView({2, 0}, {7, 7}, {0, 3}) == Result(Sizes{3, 1}));
  // Element counts must match.
  CHECK(computeStrideForView({2, 3}, {3, 1}, {5}) == std::nullopt);
}

TEST_CASE("tensor: inferBroadcastShape") {
  CHECK(inferBroadcastShape({2, 3}, {3}) == Sizes{2, 3});
  CHECK(inferBroadcastShape({2, 1}, {1, 4}) == Sizes{2, 4});
  CHECK(inferBroadcastShape({}, {2}) == Sizes{2});
  CHECK(inferBroadcastShape({5, 1, 3}, {4, 1}) == Sizes{5, 4, 3});
  CHECK(inferBroadcastShape({0}, {1}) == Sizes{0});
  CHECK_THROWS_WITH(inferBroadcastShape({2, 3}, {4}),
                    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1 "
                    "(shapes [2, 3] and [4])");
  CHECK_THROWS_WITH(inferBroadcastShape({2, 3}, {3, 3}),
                    "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0 "
                    "(shapes [2, 3] and [3, 3])");
  CHECK_THROWS_WITH(inferBroadcastShape({0}, {2}),
                    "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 0 "
                    "(shapes [0] and [2])");
}

TEST_CASE("tensor: maybe_wrap_dim") {
  CHECK(maybe_wrap_dim(-1, 2) == 1);
  CHECK(maybe_wrap_dim(-2, 2) == 0);
  CHECK(maybe_wrap_dim(1, 2) == 1);
  CHECK(maybe_wrap_dim(0, 0) == 0);
  CHECK(maybe_wrap_dim(-1, 0) == 0);
  CHECK_THROWS_WITH(maybe_wrap_dim(5, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
  CHECK_THROWS_WITH(maybe_wrap_dim(-3, 2), "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  CHECK_THROWS_WITH(maybe_wrap_dim(1, 0), "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  CHECK_THROWS_WITH(maybe_wrap_dim(0, 0, false), "Dimension specified as 0 but tensor has no dimensions");
}

// ---------------------------------------------------------------- 16-bit floats

TEST_CASE("tensor: Half conversions round to nearest even") {
  CHECK(halfBits(0.0f) == 0x0000);
  CHECK(halfBits(-0.0f) == 0x8000);
  CHECK(halfBits(1.0f) == 0x3c00);
  CHECK(halfBits(-2.0f) == 0xc000);
  CHECK(halfBits(0.5f) == 0x3800);
  CHECK(halfBits(65504.0f) == 0x7bff);  // largest finite
  CHECK(halfBits(65519.0f) == 0x7bff);  // below the halfway point to 65536
  CHECK(halfBits(65520.0f) == 0x7c00);  // halfway: rounds to even, which is infinity
  CHECK(halfBits(1e10f) == 0x7c00);
  CHECK(halfBits(-1e10f) == 0xfc00);
  // Ties between neighbours 1 and 1 + 2^-10 go to the even one.
  CHECK(halfBits(1.0f + 0x1p-11f) == 0x3c00);
  CHECK(halfBits(1.0f + 3 * 0x1p-11f) == 0x3c02);
  CHECK(halfBits(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);  // just above the tie
  CHECK(halfBits(1.0f + 0x1p-11f - 0x1p-20f) == 0x3c00);  // just below
  // Subnormals: units of 2^-24.
  CHECK(halfBits(0x1p-24f) == 0x0001);
  CHECK(halfBits(0x1p-25f) == 0x0000);        // tie with 0: even
  CHECK(halfBits(1.5f * 0x1p-25f) == 0x0001);  // above the tie
  CHECK(halfBits(3 * 0x1p-25f) == 0x0002);     // tie between 1 and 2: even
  CHECK(halfBits(5 * 0x1p-25f) == 0x0002);     // tie between 2 and 3: even
  CHECK(halfBits(0x1p-30f) == 0x0000);
  CHECK(halfBits(-0x1p-24f) == 0x8001);
  CHECK(halfBits(0x1p-14f - 0x1p-26f) == 0x0400);  // rounds up out of the subnormals
  CHECK(halfBits(0x1p-14f) == 0x0400);             // smallest normal
  CHECK(halfBits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  // Specials.
  CHECK(halfBits(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(halfBits(-std::numeric_limits<float>::infinity()) == 0xfc00);
  Half nan = std::numeric_limits<float>::quiet_NaN();
  CHECK((nan.x & 0x7c00) == 0x7c00);
  CHECK((nan.x & 0x03ff) != 0);
  CHECK(std::isnan(static_cast<float>(nan)));
  CHECK(std::isinf(static_cast<float>(Half(0x7c00, Half::from_bits()))));
  CHECK(static_cast<float>(Half(0x0001, Half::from_bits())) == 0x1p-24f);
  CHECK(static_cast<float>(Half(0x3555, Half::from_bits())) == 0.333251953125f);
  CHECK(static_cast<float>(Half(0x8000, Half::from_bits())) == 0.0f);
  CHECK(std::signbit(static_cast<float>(Half(0x8000, Half::from_bits()))));

  // Every non-NaN half survives the round trip through float.
  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    Half h(static_cast<uint16_t>(bits), Half::from_bits());
    float f = h;
    if (std::isnan(f)) continue;
    if (Half(f).x != bits) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("tensor: BFloat16 conversions round to nearest even") {
  CHECK(bf16Bits(1.0f) == 0x3f80);
  CHECK(bf16Bits(-2.0f) == 0xc000);
  CHECK(bf16Bits(fromBits(0x3f808000)) == 0x3f80);  // tie: even
  CHECK(bf16Bits(fromBits(0x3f818000)) == 0x3f82);  // tie: even
  CHECK(bf16Bits(fromBits(0x3f808001)) == 0x3f81);  // above the tie
  CHECK(bf16Bits(fromBits(0x3f807fff)) == 0x3f80);  // below the tie
  CHECK(bf16Bits(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to infinity
  CHECK(bf16Bits(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(bf16Bits(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(bf16Bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  BFloat16 nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(static_cast<float>(nan)));
  BFloat16 low_payload_nan = fromBits(0x7f800001);  // NaN whose payload is only in the low bits
  CHECK(std::isnan(static_cast<float>(low_payload_nan)));
  CHECK(static_cast<float>(BFloat16(0x4049, BFloat16::from_bits())) == 3.140625f);

  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    BFloat16 b(static_cast<uint16_t>(bits), BFloat16::from_bits());
    float f = b;
    if (std::isnan(f)) continue;
    if (BFloat16(f).x != bits) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("tensor: 16-bit arithmetic goes through float") {
  Half a = 1.5f, b = 2.25f;
  Half sum = a + b;
  CHECK(static_cast<float>(sum) == 3.75f);
  CHECK(a < b);
  CHECK(a + 1 == 2.5f);
  Half third = 1.0f / 3.0f;
  CHECK(third.x == 0x3555);
  BFloat16 c = 3.0f;
  BFloat16 product = c * c;
  CHECK(static_cast<float>(product) == 9.0f);
  Half from_double = 0.1;
  CHECK(from_double.x == 0x2e66);
  std::ostringstream out;
  out << Half(0.5f) << " " << BFloat16(2.0f);
  CHECK(out.str() == "0.5 2");
  Scalar s = Half(0.5f);
  CHECK(s.isFloatingPoint());
  CHECK(s.toDouble() == 0.5);
  CHECK(Scalar(2.5).to<Half>().x == Half(2.5f).x);
}

// ---------------------------------------------------------------- dtypes

TEST_CASE("tensor: dtype properties and C++ types") {
  CHECK(elementSize(kByte) == 1);
  CHECK(elementSize(kChar) == 1);
  CHECK(elementSize(kBool) == 1);
  CHECK(elementSize(kHalf) == 2);
  CHECK(elementSize(kBFloat16) == 2);
  CHECK(elementSize(kInt) == 4);
  CHECK(elementSize(kFloat) == 4);
  CHECK(elementSize(kLong) == 8);
  CHECK(elementSize(kDouble) == 8);
  CHECK(elementSize(ScalarType::Undefined) == 0);
  CHECK(isFloatingType(kHalf));
  CHECK(isFloatingType(kBFloat16));
  CHECK(isFloatingType(kDouble));
  CHECK_FALSE(isFloatingType(kLong));
  CHECK_FALSE(isFloatingType(kBool));
  CHECK(isIntegralType(kByte, false));
  CHECK(isIntegralType(kLong, false));
  CHECK_FALSE(isIntegralType(kBool, false));
  CHECK(isIntegralType(kBool, true));
  CHECK_FALSE(isIntegralType(kFloat, true));
  STATIC_REQUIRE(cppTypeToScalarType<float> == kFloat);
  STATIC_REQUIRE(CppTypeToScalarType<int64_t>::value == kLong);
  STATIC_REQUIRE(CppTypeToScalarType<uint8_t>::value == kByte);
  STATIC_REQUIRE(CppTypeToScalarType<int8_t>::value == kChar);
  STATIC_REQUIRE(CppTypeToScalarType<bool>::value == kBool);
  STATIC_REQUIRE(CppTypeToScalarType<Half>::value == kHalf);
  STATIC_REQUIRE(CppTypeToScalarType<BFloat16>::value == kBFloat16);
  CHECK(dtypeName(kFloat) == "float32");
  CHECK(dtypeName(kDouble) == "float64");
  CHECK(dtypeName(kByte) == "uint8");
  CHECK(dtypeName(kBFloat16) == "bfloat16");
  CHECK(get_default_dtype() == kFloat);
}

TEST_CASE("tensor: dtype dispatch") {
  for (ScalarType t : {kByte, kChar, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16}) {
    size_t size = DK_DISPATCH_ALL_TYPES(t, "size", [&] { return sizeof(scalar_t); });
    CHECK(size == elementSize(t));
    ScalarType back = dispatchDtype(t, "back", [](auto tag) { return cppTypeToScalarType<typename decltype(tag)::type>; });
    CHECK(back == t);
  }
  int floating_calls = 0;
  for (ScalarType t : {kHalf, kFloat, kDouble, kBFloat16})
    DK_DISPATCH_FLOATING_TYPES(t, "sqrt", [&] {
      static_assert(!std::is_integral_v<scalar_t>);
      ++floating_calls;
    });
  CHECK(floating_calls == 4);
  CHECK_THROWS_WITH(DK_DISPATCH_FLOATING_TYPES(kLong, "sqrt", [&] {}), "sqrt: unsupported dtype Long");
  CHECK_THROWS_WITH(DK_DISPATCH_FLOATING_TYPES(kBool, "sqrt", [&] {}), "sqrt: unsupported dtype Bool");
  CHECK_THROWS_WITH(DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(kBool, "neg", [&] {}), "neg: unsupported dtype Bool");
  CHECK(DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(kByte, "neg", [&] { return int(sizeof(scalar_t)); }) == 1);
  CHECK_THROWS_WITH(DK_DISPATCH_INTEGRAL_TYPES(kFloat, "bitwise_and", [&] {}),
                    "bitwise_and: unsupported dtype Float");
  CHECK_THROWS_WITH(DK_DISPATCH_ALL_TYPES(ScalarType::Undefined, "fill", [&] {}), "fill: unsupported dtype Undefined");
}

// ---------------------------------------------------------------- type promotion

TEST_CASE("tensor: promoteTypes follows PyTorch's lattice") {
  struct Case {
    ScalarType a, b, expected;
  };
  const Case cases[] = {
      {kByte, kByte, kByte},        {kByte, kChar, kInt},  // PyTorch: int16; no int16 here (documented)
      {kByte, kInt, kInt},          {kByte, kLong, kLong},        {kChar, kInt, kInt},
      {kChar, kLong, kLong},        {kInt, kLong, kLong},         {kBool, kBool, kBool},
      {kBool, kByte, kByte},        {kBool, kChar, kChar},        {kBool, kLong, kLong},
      {kBool, kHalf, kHalf},        {kBool, kBFloat16, kBFloat16}, {kBool, kDouble, kDouble},
      {kLong, kHalf, kHalf},        {kLong, kBFloat16, kBFloat16}, {kByte, kFloat, kFloat},
      {kInt, kDouble, kDouble},     {kHalf, kBFloat16, kFloat},   {kHalf, kFloat, kFloat},
      {kBFloat16, kFloat, kFloat},  {kHalf, kDouble, kDouble},    {kBFloat16, kDouble, kDouble},
      {kFloat, kDouble, kDouble},   {kHalf, kHalf, kHalf},        {kBFloat16, kBFloat16, kBFloat16},
      {kFloat, ScalarType::Undefined, ScalarType::Undefined},
  };
  for (const Case& c : cases) {
    INFO(c.a << " + " << c.b);
    CHECK(promoteTypes(c.a, c.b) == c.expected);
    CHECK(promoteTypes(c.b, c.a) == c.expected);
  }
}

TEST_CASE("tensor: result_type follows PyTorch's category rule") {
  auto dimmed = [](ScalarType t) { return detail::empty_contiguous({2}, t, kCPU); };
  auto zero_dim = [](ScalarType t) { return detail::empty_contiguous({}, t, kCPU); };
  // Dimensioned tensors.
  CHECK(result_type(dimmed(kByte), dimmed(kChar)) == kInt);  // PyTorch: int16 (our deviation)
  CHECK(result_type(dimmed(kHalf), dimmed(kBFloat16)) == kFloat);
  CHECK(result_type(dimmed(kInt), dimmed(kFloat)) == kFloat);
  CHECK(result_type(dimmed(kBool), dimmed(kBool)) == kBool);
  // Scalars: only a higher category counts; a floating Scalar is the default dtype.
  CHECK(result_type(dimmed(kInt), Scalar(2.5)) == kFloat);
  CHECK(result_type(dimmed(kLong), Scalar(2.5)) == kFloat);
  CHECK(result_type(dimmed(kInt), Scalar(5)) == kInt);
  CHECK(result_type(dimmed(kByte), Scalar(-1)) == kByte);
  CHECK(result_type(dimmed(kHalf), Scalar(2.5)) == kHalf);
  CHECK(result_type(dimmed(kBFloat16), Scalar(1)) == kBFloat16);
  CHECK(result_type(dimmed(kBool), Scalar(true)) == kBool);
  CHECK(result_type(dimmed(kBool), Scalar(3)) == kLong);
  CHECK(result_type(dimmed(kBool), Scalar(2.5)) == kFloat);
  CHECK(result_type(dimmed(kFloat), Scalar(true)) == kFloat);
  CHECK(result_type(dimmed(kInt), Scalar(true)) == kInt);
  // 0-dim tensors: below dimensioned ones, above Scalars.
  CHECK(result_type(zero_dim(kLong), dimmed(kChar)) == kChar);
  CHECK(result_type(zero_dim(kDouble), dimmed(kFloat)) == kFloat);
  CHECK(result_type(zero_dim(kFloat), dimmed(kInt)) == kFloat);
  CHECK(result_type(zero_dim(kDouble), dimmed(kInt)) == kDouble);  // a 0-dim tensor keeps its dtype
  CHECK(result_type(zero_dim(kHalf), dimmed(kLong)) == kHalf);
  CHECK(result_type(zero_dim(kInt), dimmed(kBool)) == kInt);
  CHECK(result_type(zero_dim(kLong), zero_dim(kInt)) == kLong);  // only 0-dim: plain promotion
  CHECK(result_type(zero_dim(kInt), Scalar(2.5)) == kFloat);
  CHECK(result_type(zero_dim(kDouble), Scalar(2.5)) == kDouble);
  CHECK(result_type(zero_dim(kChar), Scalar(1000)) == kChar);
  // Lists, and Scalars alone.
  CHECK(result_type({dimmed(kInt), zero_dim(kLong), dimmed(kChar)}, {Scalar(1)}) == kInt);
  CHECK(result_type({dimmed(kInt), zero_dim(kDouble), dimmed(kLong)}, {Scalar(1)}) == kDouble);
  CHECK(result_type({}, {Scalar(1), Scalar(2.5)}) == kFloat);
  CHECK(result_type({}, {Scalar(1)}) == kLong);
  CHECK(result_type({}, {Scalar(false)}) == kBool);
  CHECK(result_type({Tensor(), dimmed(kHalf)}, {}) == kHalf);  // undefined tensors are skipped
  // A wrapped number is a Scalar, whatever its dtype.
  Tensor wrapped = zero_dim(kDouble);
  wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
  CHECK(result_type(dimmed(kInt), wrapped) == kFloat);
  CHECK(result_type(zero_dim(kHalf), wrapped) == kHalf);
  // The state can be built step by step.
  ResultTypeState state;
  state = update_result_type_state(dimmed(kByte), state);
  state = update_result_type_state(Scalar(1.5), state);
  CHECK(state.dimResult == kByte);
  CHECK(state.wrappedResult == kFloat);
  CHECK(result_type(state) == kFloat);
}

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
  CHECK_THROWS_WITH(tensor({1.0}, dk::requires_grad()),
                    "tensor: requires_grad=true is not supported yet (no autograd metadata)");
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

// ---------------------------------------------------------------- printing

TEST_CASE("tensor: printing matches PyTorch's repr") {
  CHECK(str(tensor({{1.0, 2.0}, {3.0, 4.0}})) == "tensor([[1., 2.],\n        [3., 4.]])");
  CHECK(str(tensor({1, 2, 3})) == "tensor([1, 2, 3])");
  CHECK(str(tensor({true, false})) == "tensor([ True, False])");
  CHECK(str(tensor(3.5)) == "tensor(3.5000)");
  CHECK(str(tensor(3.0)) == "tensor(3.)");
  CHECK(str(tensor(-7)) == "tensor(-7)");
  CHECK(str(tensor(false)) == "tensor(False)");
  CHECK(str(tensor({0.1, 2.5}, kDouble)) == "tensor([0.1000, 2.5000], dtype=float64)");
  CHECK(str(tensor({1, 2}, kInt)) == "tensor([1, 2], dtype=int32)");
  CHECK(str(tensor({1, 255}, kByte)) == "tensor([  1, 255], dtype=uint8)");
  CHECK(str(tensor({-3, 4}, kChar)) == "tensor([-3,  4], dtype=int8)");
  CHECK(str(tensor({1.5, 2.0}, kHalf)) == "tensor([1.5000, 2.0000], dtype=float16)");
  CHECK(str(tensor({1.0, 2.0}, kBFloat16)) == "tensor([1., 2.], dtype=bfloat16)");
  CHECK(str(tensor({-1.5, 2.0})) == "tensor([-1.5000,  2.0000])");
  CHECK(str(tensor({1.0, 2.5})) == "tensor([1.0000, 2.5000])");
  CHECK(str(tensor({{1.5, 2.0}}, kDouble)) == "tensor([[1.5000, 2.0000]], dtype=float64)");
  CHECK(str(tensor({0.0, 0.0})) == "tensor([0., 0.])");
  CHECK(str(tensor({-0.0, 1.0})) == "tensor([-0., 1.])");
  CHECK(str(tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}})) ==
        "tensor([[[1, 2],\n         [3, 4]],\n\n        [[5, 6],\n         [7, 8]]])");
}

TEST_CASE("tensor: printing chooses integer, fixed or scientific style for floats") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(str(tensor({1e-5, 1.0})) == "tensor([1.0000e-05, 1.0000e+00])");  // min below 1e-4
  CHECK(str(tensor({1.0, 1e9})) == "tensor([1.0000e+00, 1.0000e+09])");   // max above 1e8
  CHECK(str(tensor({0.5, 1000.0})) == "tensor([5.0000e-01, 1.0000e+03])");  // range above 1000
  CHECK(str(tensor({0.5, 500.0})) == "tensor([  0.5000, 500.0000])");
  CHECK(str(tensor({1.0, 100000.0})) == "tensor([1.0000e+00, 1.0000e+05])");  // integers, range above 1000
  CHECK(str(tensor({1.0, 1000.0})) == "tensor([   1., 1000.])");
  CHECK(str(tensor({nan, 1.5})) == "tensor([   nan, 1.5000])");
  CHECK(str(tensor({inf, 1.0})) == "tensor([inf, 1.])");
  CHECK(str(tensor({-inf, nan})) == "tensor([-inf, nan])");
  CHECK(str(tensor({nan, 1e-6})) == "tensor([       nan, 1.0000e-06])");
  CHECK(str(tensor(1e-5)) == "tensor(1.0000e-05)");
  CHECK(str(tensor({0.1}, kFloat)) == "tensor([0.1000])");  // float32 0.1 is 0.100000001...
}

TEST_CASE("tensor: printing non-contiguous tensors uses logical order") {
  Tensor t = tensor({{1, 2, 3}, {4, 5, 6}});
  Tensor transposed = detail::make_view(t, {3, 2}, {1, 3}, 0);
  CHECK(str(transposed) == "tensor([[1, 4],\n        [2, 5],\n        [3, 6]])");
  Tensor column = detail::make_view(t, {2}, {3}, 1);
  CHECK(str(column) == "tensor([2, 5])");
  Tensor expanded = detail::make_view(tensor({7.5}), {2, 2}, {0, 0}, 0);
  CHECK(str(expanded) == "tensor([[7.5000, 7.5000],\n        [7.5000, 7.5000]])");
  Tensor element = detail::make_view(t, {}, {}, 4);
  CHECK(str(element) == "tensor(5)");
}

TEST_CASE("tensor: printing empty, meta, non-CPU and metadata-only tensors") {
  CHECK(str(detail::empty_contiguous({0}, kFloat, kCPU)) == "tensor([])");
  CHECK(str(detail::empty_contiguous({2, 0}, kFloat, kCPU)) == "tensor([], size=(2, 0))");
  CHECK(str(detail::empty_contiguous({0}, kLong, kCPU)) == "tensor([], dtype=int64)");
  CHECK(str(detail::empty_contiguous({2, 3}, kFloat, kMeta)) == "tensor(..., device='meta', size=(2, 3))");
  CHECK(str(detail::empty_contiguous({2}, kLong, kMeta)) == "tensor(..., device='meta', size=(2,), dtype=int64)");
  CHECK(str(detail::empty_contiguous({}, kFloat, kMeta)) == "tensor(..., device='meta', size=())");
  CHECK(str(make_tensor({2}, kFloat, Device(kCUDA, 0))) == "tensor(..., device='cuda:0', size=(2,))");
  CHECK(str(make_tensor({2, 3})) == "tensor(..., size=(2, 3))");
  CHECK(str(detail::empty_contiguous({1}, kDouble, kPrivateUse1)) ==
        "tensor(..., device='privateuseone', size=(1,), dtype=float64)");
}

TEST_CASE("tensor: printing wraps long rows and summarizes large tensors") {
  std::vector<int64_t> thirty(30);
  for (int64_t i = 0; i < 30; ++i) thirty[static_cast<size_t>(i)] = i;
  CHECK(str(tensor(thirty)) ==
        "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
        "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])");

  // The dtype suffix moves to its own line when the last line would pass 80 columns.
  CHECK(str(tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, kDouble)) ==
        "tensor([0.1000, 0.2000, 0.3000, 0.4000, 0.5000, 0.6000, 0.7000, 0.8000],\n"
        "       dtype=float64)");

  std::vector<int64_t> many(1001);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int64_t>(i);
  CHECK(str(tensor(many)) == "tensor([   0,    1,    2,  ...,  998,  999, 1000])");

  Tensor zeros = detail::empty_contiguous({100, 100}, kLong, kCPU);
  std::memset(zeros.data_ptr(), 0, zeros.nbytes());
  CHECK(str(zeros) ==
        "tensor([[0, 0, 0,  ..., 0, 0, 0],\n"
        "        [0, 0, 0,  ..., 0, 0, 0],\n"
        "        [0, 0, 0,  ..., 0, 0, 0],\n"
        "        ...,\n"
        "        [0, 0, 0,  ..., 0, 0, 0],\n"
        "        [0, 0, 0,  ..., 0, 0, 0],\n"
        "        [0, 0, 0,  ..., 0, 0, 0]])");

  // The style is chosen from the shown elements only: the hidden 1e9 does not force scientific.
  Tensor mostly_small = detail::empty_contiguous({2000}, kFloat, kCPU);
  float* p = mostly_small.data_ptr<float>();
  for (int i = 0; i < 2000; ++i) p[i] = 1.5f;
  p[1000] = 1e9f;
  CHECK(str(mostly_small) == "tensor([1.5000, 1.5000, 1.5000,  ..., 1.5000, 1.5000, 1.5000])");
}
