// python/src/dlpack.cpp: Tensor.__dlpack__, Tensor.__dlpack_device__ and dispatchkit.from_dlpack
// (python_objects.h): zero-copy exchange with PyTorch and NumPy through DLPack capsules.
#include "dlpack.h"

#include <string>
#include <vector>

#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"
#include "python_objects.h"

namespace dk::python {

namespace {

// What a capsule we made owns: the tensor (keeping its storage alive) and the shape arrays.
struct Exported {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  dlpack::ManagedTensor managed{};
};

void deleteExported(dlpack::ManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); }

dlpack::DataType dlType(ScalarType t) {
  uint8_t bits = static_cast<uint8_t>(elementSize(t) * 8);
  switch (t) {
    case kBool: return {dlpack::kDLBool, 8, 1};
    case kByte: return {dlpack::kDLUInt, bits, 1};
    case kChar:
    case kShort:
    case kInt:
    case kLong: return {dlpack::kDLInt, bits, 1};
    case kHalf:
    case kFloat:
    case kDouble: return {dlpack::kDLFloat, bits, 1};
    case kBFloat16: return {dlpack::kDLBfloat, 16, 1};
    default: throw py::type_error("__dlpack__: dtype " + std::string(dtypeName(t)) + " has no DLPack type");
  }
}

ScalarType dkType(dlpack::DataType t) {
  if (t.lanes != 1) throw py::type_error("from_dlpack: vector types (lanes > 1) are not supported");
  switch (t.code) {
    case dlpack::kDLBool: return kBool;
    case dlpack::kDLUInt:
      if (t.bits == 8) return kByte;
      break;
    case dlpack::kDLInt:
      if (t.bits == 8) return kChar;
      if (t.bits == 16) return kShort;
      if (t.bits == 32) return kInt;
      if (t.bits == 64) return kLong;
      break;
    case dlpack::kDLFloat:
      if (t.bits == 16) return kHalf;
      if (t.bits == 32) return kFloat;
      if (t.bits == 64) return kDouble;
      break;
    case dlpack::kDLBfloat:
      if (t.bits == 16) return kBFloat16;
      break;
    default: break;
  }
  throw py::type_error("from_dlpack: unsupported DLPack type (code " + std::to_string(t.code) + ", " +
                       std::to_string(t.bits) + " bits)");
}

dlpack::Device dlDevice(Device d) {
  switch (d.type) {
    case DeviceType::CPU: return {dlpack::kDLCPU, 0};
    case DeviceType::CUDA: return {dlpack::kDLCUDA, d.index < 0 ? 0 : d.index};
    default: throw py::type_error("__dlpack__: a " + d.str() + " tensor has no DLPack device");
  }
}

void capsuleDestructor(PyObject* capsule) {
  // A capsule never consumed still owns its tensor; a consumed one was renamed "used_dltensor".
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (managed && managed->deleter) managed->deleter(managed);
  }
}

}  // namespace

py::object toDLPack(const Tensor& t) {
  auto* exported = new Exported();
  exported->tensor = t;
  exported->shape.assign(t.sizes().begin(), t.sizes().end());
  exported->strides.assign(t.strides().begin(), t.strides().end());
  dlpack::Tensor& dl = exported->managed.dl_tensor;
  try {
    dl.device = dlDevice(t.device());
    dl.dtype = dlType(t.dtype());
  } catch (...) {
    delete exported;
    throw;
  }
  dl.data = t.data_ptr();
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.shape = exported->shape.data();
  dl.strides = exported->strides.data();
  dl.byte_offset = 0;
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = &deleteExported;
  PyObject* capsule = PyCapsule_New(&exported->managed, "dltensor", &capsuleDestructor);
  if (!capsule) {
    delete exported;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

py::tuple dlpackDevice(const Tensor& t) {
  dlpack::Device d = dlDevice(t.device());
  return py::make_tuple(static_cast<int>(d.device_type), d.device_id);
}

py::object fromDLPack(py::object obj) {
  py::object capsule = obj;
  if (!PyCapsule_CheckExact(obj.ptr())) {
    if (!py::hasattr(obj, "__dlpack__")) {
      throw py::type_error("from_dlpack: expected an object with __dlpack__ (a torch tensor, a NumPy array) or a "
                           "DLPack capsule, got " + std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
    }
    capsule = obj.attr("__dlpack__")();
  }
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
    throw py::value_error("from_dlpack: the capsule was already consumed (a DLPack capsule can be used once)");
  }
  auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const dlpack::Tensor& dl = managed->dl_tensor;
  Device device;
  if (dl.device.device_type == dlpack::kDLCPU) device = Device(DeviceType::CPU);
  else if (dl.device.device_type == dlpack::kDLCUDA) device = Device(DeviceType::CUDA, static_cast<int8_t>(dl.device.device_id));
  else throw py::type_error("from_dlpack: unsupported DLPack device type " + std::to_string(dl.device.device_type));
  ScalarType dtype = dkType(dl.dtype);
  std::vector<int64_t> sizes(dl.shape, dl.shape + dl.ndim);
  std::vector<int64_t> strides;
  if (dl.strides) {
    strides.assign(dl.strides, dl.strides + dl.ndim);
  } else {  // compact row-major
    strides.assign(sizes.size(), 1);
    for (int64_t i = static_cast<int64_t>(sizes.size()) - 2; i >= 0; --i) {
      strides[static_cast<size_t>(i)] = strides[static_cast<size_t>(i) + 1] * std::max<int64_t>(sizes[static_cast<size_t>(i) + 1], 1);
    }
  }
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  // The tensor now owns the producer's memory: its deleter calls the producer's, under the GIL
  // (a NumPy or torch deleter is Python code's business).
  auto release = [managed](void*) {
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
    py::gil_scoped_acquire gil;
    if (managed->deleter) managed->deleter(managed);
  };
  Tensor t = from_blob(data, sizes, strides, release, TensorOptions(dtype).device(device));
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  return toPython(std::move(t));
}

}  // namespace dk::python
