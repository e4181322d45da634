// Allocating and wrapping constructors (dk/tensor/empty_tensor.h).
#include "dk/tensor/empty_tensor.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/allocator.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk {

namespace {

void checkSizesAndStrides(const char* what, IntArrayRef sizes, IntArrayRef strides) {
  for (int64_t s : sizes) DK_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
  DK_CHECK(sizes.size() == strides.size(), what, ": ", sizes.size(), " sizes but ", strides.size(), " strides");
  for (int64_t s : strides) DK_CHECK(s >= 0, what, ": negative stride ", s, " in ", strides);
}

// Options a factory here cannot honour yet are refused rather than dropped.
void checkSupportedOptions(const char* what, const TensorOptions& options) {
  DK_CHECK(options.layout() == Layout::Strided, what, ": only the strided layout is supported, got ",
           options.layout());
  DK_CHECK(!options.pinned_memory(), what, ": pinned memory is not supported yet");
}

size_t storageBytes(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype) {
  int64_t elements = storageElementsFor(sizes, strides, 0);
  int64_t bytes = 0;
  DK_CHECK(!__builtin_mul_overflow(elements, static_cast<int64_t>(elementSize(dtype)), &bytes),
           "the storage for sizes ", sizes, " of dtype ", dtype, " overflows int64");
  return static_cast<size_t>(bytes);
}

// checkSizesAndStrides and storageElementsFor (offset 0) in one pass for the usual geometry,
// without building a message: false when a check would fail or the count overflows.
bool validStorageElements(IntArrayRef sizes, IntArrayRef strides, int64_t* elements) {
  if (sizes.size() != strides.size()) return false;
  int64_t extent = 1;
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t size = sizes[i], stride = strides[i];
    if (size < 0 || stride < 0) return false;
    if (size == 0) {
      empty = true;
      continue;
    }
    int64_t step = 0;
    if (__builtin_mul_overflow(size - 1, stride, &step) || __builtin_add_overflow(extent, step, &extent)) return false;
  }
  *elements = empty ? 0 : extent;
  return true;
}

Tensor tensorOver(Storage storage, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  return Tensor(make_intrusive<TensorImpl>(std::move(storage),
                                           computeTensorKeySet(device, InferenceMode::is_enabled()), dtype,
                                           device, sizes.vec(), strides.vec(), 0));
}

// Note [One block per new tensor]
// A new tensor needs a TensorImpl, a VersionCounter and a StorageImpl, and, when its bytes are
// few and come from the default host allocator, those bytes: empty_strided puts them all in one
// malloc block. Each object keeps its own refcount and lifetime (a view keeps the storage and
// the counter after the tensor goes); the block counts the objects still alive and is freed
// with the last. Fast: one malloc/free pair instead of four. Inline bytes are freed only with
// the block (a resize gives the storage new memory and leaves them unused until then), so only
// small ones are inline. Other allocators, and more bytes, go through the allocator as before.
constexpr size_t kMaxInlineBytes = 4096;

struct TensorBlock;

// The three objects of a block. Each is made only by placement new into its slot; deleting one
// (the last reference going) gives its slot back to the block instead of freeing memory.
class BlockTensorImpl final : public TensorImpl {
 public:
  using TensorImpl::TensorImpl;
  static void* operator new(size_t, void* slot) noexcept { return slot; }
  static void operator delete(void*, void*) noexcept {}  // a throwing constructor: the maker cleans up
  static void operator delete(void* object) noexcept;
};

class BlockVersionCounter final : public VersionCounter {
 public:
  static void* operator new(size_t, void* slot) noexcept { return slot; }
  static void operator delete(void*, void*) noexcept {}
  static void operator delete(void* object) noexcept;
};

class BlockStorageImpl final : public StorageImpl {
 public:
  using StorageImpl::StorageImpl;
  static void* operator new(size_t, void* slot) noexcept { return slot; }
  static void operator delete(void*, void*) noexcept {}
  static void operator delete(void* object) noexcept;
};

struct TensorBlock {
  std::atomic<int> live{3};  // objects not yet deleted
  alignas(BlockTensorImpl) unsigned char tensor[sizeof(BlockTensorImpl)];
  alignas(BlockVersionCounter) unsigned char counter[sizeof(BlockVersionCounter)];
  alignas(BlockStorageImpl) unsigned char storage[sizeof(BlockStorageImpl)];
  // Inline bytes follow, at the next multiple of kHostAlignment.

  static constexpr size_t kInlinePadding = kHostAlignment - 1;

  void release() noexcept {
    if (live.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      this->~TensorBlock();
      std::free(this);
    }
  }
  template <size_t SlotOffset>
  static void releaseSlot(void* object) noexcept {
    reinterpret_cast<TensorBlock*>(static_cast<char*>(object) - SlotOffset)->release();
  }
};

void BlockTensorImpl::operator delete(void* object) noexcept {
  TensorBlock::releaseSlot<offsetof(TensorBlock, tensor)>(object);
}
void BlockVersionCounter::operator delete(void* object) noexcept {
  TensorBlock::releaseSlot<offsetof(TensorBlock, counter)>(object);
}
void BlockStorageImpl::operator delete(void* object) noexcept {
  TensorBlock::releaseSlot<offsetof(TensorBlock, storage)>(object);
}

// A tensor of the given geometry over `nbytes` fresh bytes from `allocator`, in one block
// (Note [One block per new tensor]).
Tensor tensorInBlock(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device, Allocator* allocator,
                     size_t nbytes) {
  const bool inlineBytes = nbytes > 0 && nbytes <= kMaxInlineBytes && allocator == defaultHostAllocator();
  // From the allocator first: if it throws, there is no block yet.
  DataPtr data = inlineBytes ? DataPtr() : allocator->allocate(nbytes, device);
  void* raw = std::malloc(sizeof(TensorBlock) + (inlineBytes ? TensorBlock::kInlinePadding + nbytes : 0));
  if (raw == nullptr) throw std::bad_alloc();
  auto* block = new (raw) TensorBlock;  // default-initialized: the slots are left as they are
  if (inlineBytes) {
    auto end = reinterpret_cast<uintptr_t>(block + 1);
    auto aligned = (end + TensorBlock::kInlinePadding) & ~uintptr_t{kHostAlignment - 1};
    data = DataPtr(reinterpret_cast<void*>(aligned), device);  // not owned: freed with the block
  }
  Storage storage(
      intrusive_ptr<StorageImpl>(new (block->storage) BlockStorageImpl(std::move(data), nbytes, allocator)));
  intrusive_ptr<VersionCounter> counter(new (block->counter) BlockVersionCounter());
  TensorImpl* impl = nullptr;
  try {
    impl = new (block->tensor) BlockTensorImpl(std::move(storage), std::move(counter),
                                               computeTensorKeySet(device, InferenceMode::is_enabled()), dtype,
                                               device, sizes.vec(), strides.vec(), 0);
  } catch (...) {
    block->release();  // the tensor's slot; the storage and counter give theirs back with their handles
    throw;
  }
  return Tensor(intrusive_ptr<TensorImpl>(impl));
}

// Owns the std::function deleter for a from_blob DataPtr.
struct BlobContext {
  void* data;
  std::function<void(void*)> deleter;
  static void free(void* context) {
    auto* self = static_cast<BlobContext*>(context);
    self->deleter(self->data);
    delete self;
  }
};

}  // namespace

namespace detail {

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  // The checks in their order (geometry, dtype, allocator, size), each message built only when
  // its check fails; the usual geometry is checked and counted in one pass.
  int64_t elements = 0;
  const bool counted = validStorageElements(sizes, strides, &elements);
  if (!counted) checkSizesAndStrides("empty_strided", sizes, strides);
  DK_CHECK(dtype != ScalarType::Undefined, "empty_strided: the dtype is Undefined");
  Allocator* allocator = getAllocator(device.type);
  int64_t bytes = 0;
  size_t nbytes = counted && !__builtin_mul_overflow(elements, static_cast<int64_t>(elementSize(dtype)), &bytes)
                      ? static_cast<size_t>(bytes)
                      : storageBytes(sizes, strides, dtype);
  return tensorInBlock(sizes, strides, dtype, device, allocator, nbytes);
}

Tensor empty_contiguous(IntArrayRef sizes, ScalarType dtype, Device device) {
  for (int64_t s : sizes) DK_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
  // The strides of the usual few dims on the stack: a new contiguous tensor costs one allocation.
  constexpr size_t kInlineDims = 8;
  if (sizes.size() <= kInlineDims) {
    int64_t strides[kInlineDims];
    computeContiguousStridesInto(sizes, strides);
    return empty_strided(sizes, IntArrayRef(strides, sizes.size()), dtype, device);
  }
  std::vector<int64_t> strides = computeContiguousStrides(sizes);
  return empty_strided(sizes, strides, dtype, device);
}

Tensor applyRequiresGrad(Tensor made, const TensorOptions& options) {
  if (options.requires_grad()) {
    DK_CHECK(isFloatingType(made.scalar_type()), "Only Tensors of floating point and complex dtype can require gradients");
    made.requires_grad_(true);
  }
  return made;
}

}  // namespace detail

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, std::function<void(void*)> deleter,
                 const TensorOptions& options) {
  checkSizesAndStrides("from_blob", sizes, strides);
  checkSupportedOptions("from_blob", options);
  ScalarType dtype = options.dtype();
  Device device = options.device();
  size_t nbytes = storageBytes(sizes, strides, dtype);
  DK_CHECK(data != nullptr || nbytes == 0 || device.type == DeviceType::Meta,
           "from_blob: null data for a tensor of ", nbytes, " bytes");
  DataPtr data_ptr = deleter ? DataPtr(data, new BlobContext{data, std::move(deleter)}, &BlobContext::free, device)
                             : DataPtr(data, device);
  return detail::applyRequiresGrad(tensorOver(Storage::wrap(std::move(data_ptr), nbytes), sizes, strides, dtype, device),
                                   options);
}

Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, const TensorOptions& options) {
  std::vector<int64_t> strides = computeContiguousStrides(sizes);
  return from_blob(data, sizes, strides, std::move(deleter), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
  return from_blob(data, sizes, strides, std::function<void(void*)>(), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options) {
  std::vector<int64_t> strides = computeContiguousStrides(sizes);
  return from_blob(data, sizes, strides, std::function<void(void*)>(), options);
}

}  // namespace dk
