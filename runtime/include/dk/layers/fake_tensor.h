// dk/layers/fake_tensor.h: fake tensors and FakeTensorMode, a model's shapes, dtypes, devices
// and memory without its data (Note [Fake tensors]).
//
//   auto fake = std::make_shared<dk::FakeTensorMode>();
//   dk::DispatchModeGuard guard(fake);
//   dk::Tensor w = dk::randn({4096, 4096}, dk::TensorOptions().device(dk::Device(dk::DeviceType::CUDA, 0)));
//   dk::Tensor y = dk::matmul(w, w);   // y: [4096, 4096] on cuda:0, no memory, no GPU needed
//   fake->bytes();                      // what the real program would have allocated
#pragma once

#include <cstdint>
#include <mutex>

#include "dk/dispatch/dispatch_mode.h"
#include "dk/tensor/tensor.h"

namespace dk {

// Note [Fake tensors]
// A FakeTensorImpl stands for a tensor on some device (cpu, cuda:0, ...) that has no data: it
// holds a meta tensor with its sizes, strides and dtype, reports the device it pretends to be
// on, and has no storage. Its key set is that device's tensor key set plus the Python key, so
// under FakeTensorMode every operator on it reaches the mode: the mode calls the operator on the
// meta tensors (their Meta kernels compute shapes and dtypes, and allocate nothing), with a
// factory's device replaced by Meta, and wraps each result as a fake tensor on the device the
// real program would have put it on (the factory's device, else the first fake input's). An
// in-place or out= result is the fake tensor that was written. Autograd runs above the mode, so
// a fake program records its backward graph as a real one would.
//
// Reading data is an error: an operator on a fake tensor that returns no tensor (item), and
// data_ptr() of a fake tensor, raise dk::Error; so does an operator given a real tensor under the
// mode (make it fake with fromTensor), and an operator on a fake tensor outside any mode.
class FakeTensorImpl : public TensorImpl {
 public:
  FakeTensorImpl(Tensor meta, Device device);
  const Tensor& meta() const { return meta_; }
  intrusive_ptr<TensorImpl> shallow_copy_without_history() const override;

 protected:
  void* data_when_absent() const override;

 private:
  Tensor meta_;
};

// The fake impl of `t`, or null when it is not a fake tensor.
const FakeTensorImpl* maybeFake(const Tensor& t);

class FakeTensorMode : public DispatchMode {
 public:
  void dispatch(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) override;

  // A fake tensor with t's sizes, strides and dtype on t's device (or on `device`).
  static Tensor fromTensor(const Tensor& t);
  static Tensor fromTensor(const Tensor& t, Device device);

  // The bytes of the fake tensors the mode's operators made (outputs that are not views or
  // written inputs): what the real program would have allocated, with nothing freed.
  int64_t bytes() const;

 private:
  mutable std::mutex mutex_;
  int64_t bytes_ = 0;
};

}  // namespace dk
