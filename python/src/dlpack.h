// python/src/dlpack.h: the DLPack exchange structs (https://dmlc.github.io/dlpack/, ABI of
// version 0.6, the one PyTorch 1.13 and NumPy 1.24 speak), written out here: a tensor crosses
// to and from torch and NumPy as a "dltensor" capsule, without a copy.
#pragma once

#include <cstdint>

namespace dk::python::dlpack {

enum DeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
enum TypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };

struct Device {
  DeviceType device_type;
  int32_t device_id;
};

struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means compact row-major
  uint64_t byte_offset;
};

struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

}  // namespace dk::python::dlpack
