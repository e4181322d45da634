// Allocating and wrapping constructors (dk/empty_tensor.h).
#include "dk/empty_tensor.h"

#include "dk/error.h"
#include "dk/local_dispatch_key_set.h"
#include "dk/tensor_geometry.h"

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
  DK_CHECK(!options.requires_grad(), what, ": requires_grad=true is not supported yet (no autograd metadata)");
  DK_CHECK(!options.pinned_memory(), what, ": pinned memory is not supported yet");
}

size_t storageBytes(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype) {
  int64_t elements = storageElementsFor(sizes, strides, 0);
  int64_t bytes = 0;
  DK_CHECK(!__builtin_mul_overflow(elements, static_cast<int64_t>(elementSize(dtype)), &bytes),
           "the storage for sizes ", sizes, " of dtype ", dtype, " overflows int64");
  return static_cast<size_t>(bytes);
}

Tensor tensorOver(Storage storage, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  return Tensor(make_intrusive<TensorImpl>(std::move(storage),
                                           computeTensorKeySet(device, InferenceMode::is_enabled()), dtype,
                                           device, sizes.vec(), strides.vec(), 0));
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
  checkSizesAndStrides("empty_strided", sizes, strides);
  DK_CHECK(dtype != ScalarType::Undefined, "empty_strided: the dtype is Undefined");
  Allocator* allocator = getAllocator(device.type);
  size_t nbytes = storageBytes(sizes, strides, dtype);
  return tensorOver(Storage::allocate(nbytes, device, allocator), sizes, strides, dtype, device);
}

Tensor empty_contiguous(IntArrayRef sizes, ScalarType dtype, Device device) {
  for (int64_t s : sizes) DK_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
  std::vector<int64_t> strides = computeContiguousStrides(sizes);
  return empty_strided(sizes, strides, dtype, device);
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
  return tensorOver(Storage::wrap(std::move(data_ptr), nbytes), sizes, strides, dtype, device);
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
