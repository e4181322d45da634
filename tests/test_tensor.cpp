// TensorImpl and Tensor (dk/tensor/tensor.h): the handle and its key set, storage and
// allocators (dk/tensor/storage.h, allocator.h), geometry and views, the autograd slot, printing.
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

TEST_CASE("tensor: large host blocks are kept for the next tensor of the same size") {
  emptyHostCache();
  const int64_t n = 600 * 1024;  // 2.4 MB of float: above kHostCacheMinBytes
  void* first = nullptr;
  {
    Tensor t = detail::empty_contiguous({n}, kFloat, Device(kCPU));
    first = t.data_ptr();
    CHECK(reinterpret_cast<uintptr_t>(first) % kHostAlignment == 0);
    static_cast<float*>(first)[n - 1] = 1.5f;  // the whole size is usable
  }
  const size_t held = hostCacheBytes();
#if defined(__SANITIZE_ADDRESS__)
  CHECK(held == 0);  // off under AddressSanitizer (Note [Host block cache])
#else
  CHECK(held >= static_cast<size_t>(n) * sizeof(float));
  {
    Tensor same = detail::empty_contiguous({n}, kFloat, Device(kCPU));
    CHECK(same.data_ptr() == first);  // the cached block, taken back out
    CHECK(hostCacheBytes() == 0);
    Tensor other = detail::empty_contiguous({n + 1}, kFloat, Device(kCPU));  // another size: a new block
    CHECK(other.data_ptr() != first);
  }
  CHECK(hostCacheBytes() >= 2 * static_cast<size_t>(n) * sizeof(float));
  // Small tensors never go through the cache.
  { Tensor small = detail::empty_contiguous({1000}, kFloat, Device(kCPU)); }
  const size_t now = hostCacheBytes();
  CHECK(emptyHostCache() == now);
#endif
  CHECK(hostCacheBytes() == 0);
}

TEST_CASE("tensor: the allocator registry") {
  CHECK(getAllocator(kCPU) == defaultHostAllocator());
  CHECK(getAllocator(kPrivateUse1) == defaultHostAllocator());
  CHECK(getAllocator(kMeta) == metaAllocator());
  Allocator* cuda = setAllocator(kCUDA, nullptr);  // whatever a CUDA build registered
  CHECK_THROWS_WITH(getAllocator(kCUDA), "no allocator is registered for device type cuda");
  CHECK_THROWS_WITH(detail::empty_contiguous({2}, kFloat, Device(kCUDA, 0)),
                    "no allocator is registered for device type cuda");
  CHECK(deviceCount(kCUDA) == 0);  // no allocator: no device, and no error
  setAllocator(kCUDA, cuda);

  // Device counts come from the registered allocator: 1 for the host and Meta, the driver's
  // count for CUDA (0 on a machine without a GPU), whatever a backend's allocator says.
  CHECK(deviceCount(kCPU) == 1);
  CHECK(deviceCount(kMeta) == 1);
  struct TwoDevices final : Allocator {
    DataPtr allocate(size_t nbytes, Device device) override { return defaultHostAllocator()->allocate(nbytes, device); }
    int deviceCount() const override { return 2; }
  } two;
  {
    ScopedAllocator scoped(kPrivateUse1, &two);
    CHECK(deviceCount(kPrivateUse1) == 2);
  }
  CHECK(deviceCount(kPrivateUse1) == 1);

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
