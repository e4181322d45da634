// Device code of nll_loss (kernels/cuda/launch.h). Without reduction one thread per sample;
// with reduction up to kLossBlocks blocks each sum a share of the weighted losses and of the
// weights, and a second launch adds the blocks' sums in a fixed order (deterministic).
#include "kernel_helpers.h"

namespace dk::cuda::launch {

namespace {

using namespace device;

template <class T>
using LossAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Most blocks a reducing nll_loss spreads its samples over.
constexpr int kLossBlocks = 1024;

// The weighted negative log-likelihood of sample i and its weight (0 and 0 when ignored).
template <class T, class Target>
__device__ __forceinline__ void sampleLoss(const T* input, const Target* target, const T* weight, int64_t i,
                                           int64_t classes, int64_t ignore_index, int64_t* error, LossAcc<T>& loss,
                                           LossAcc<T>& w) {
  using A = LossAcc<T>;
  auto t = static_cast<int64_t>(target[i]);
  loss = A(0);
  w = A(0);
  if (t == ignore_index) return;
  if (t < 0 || t >= classes) {
    reportError(error, t);
    return;
  }
  w = weight != nullptr ? convert<A>(weight[t]) : A(1);
  loss = -w * convert<A>(input[i * classes + t]);
}

template <class T, class Target>
__global__ void nllNoReductionKernel(T* out, const T* input, const Target* target, const T* weight, int64_t batch,
                                     int64_t classes, int64_t ignore_index, int64_t* error) {
  DK_CUDA_KERNEL_LOOP(i, batch) {
    LossAcc<T> loss, w;
    sampleLoss(input, target, weight, i, classes, ignore_index, error, loss, w);
    out[i] = convert<T>(loss);
  }
}

// Block b's sums of the losses and weights of its samples: partials[b] and partials[blocks + b].
template <class T, class Target>
__global__ void nllPartialSumsKernel(LossAcc<T>* partials, const T* input, const Target* target, const T* weight,
                                     int64_t batch, int64_t classes, int64_t ignore_index, int64_t* error) {
  using A = LossAcc<T>;
  __shared__ A shared[kBlockSize];
  A loss_sum = 0, weight_sum = 0;
  DK_CUDA_KERNEL_LOOP(i, batch) {
    A loss, w;
    sampleLoss(input, target, weight, i, classes, ignore_index, error, loss, w);
    loss_sum += loss;
    weight_sum += w;
  }
  auto add = [](A x, A y) { return x + y; };
  loss_sum = blockReduce(loss_sum, add, shared);
  weight_sum = blockReduce(weight_sum, add, shared);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = loss_sum;
    partials[gridDim.x + blockIdx.x] = weight_sum;
  }
}

// One block: the `blocks` partial sums added in a fixed order, then the mean or the sum.
template <class T>
__global__ void nllCombineKernel(T* out, const LossAcc<T>* partials, int blocks, bool mean) {
  using A = LossAcc<T>;
  __shared__ A shared[kBlockSize];
  A loss_sum = 0, weight_sum = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    loss_sum += partials[b];
    weight_sum += partials[blocks + b];
  }
  auto add = [](A x, A y) { return x + y; };
  loss_sum = blockReduce(loss_sum, add, shared);
  weight_sum = blockReduce(weight_sum, add, shared);
  if (threadIdx.x == 0) out[0] = convert<T>(mean ? loss_sum / weight_sum : loss_sum);
}

// Blocks of a reducing nll_loss: one per kBlockSize samples, at most kLossBlocks.
int lossBlocks(int64_t batch) {
  int64_t blocks = (batch + kBlockSize - 1) / kBlockSize;
  return static_cast<int>(blocks < 1 ? 1 : (blocks < kLossBlocks ? blocks : kLossBlocks));
}

}  // namespace

int64_t nllLossWorkspaceBytes(int64_t batch) { return 2 * 8 * static_cast<int64_t>(lossBlocks(batch)); }

void nllLoss(Dtype dtype, Dtype target_dtype, int reduction, void* out, const void* input, const void* target,
             const void* weight, int64_t batch, int64_t classes, int64_t ignore_index, int64_t* error,
             void* workspace) {
  dispatchFloating("nll_loss", dtype, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto target_tag) {
      using Target = decltype(target_tag);
      auto* out_t = static_cast<T*>(out);
      auto* input_t = static_cast<const T*>(input);
      auto* target_t = static_cast<const Target*>(target);
      auto* weight_t = static_cast<const T*>(weight);
      if (reduction == 0) {
        if (batch == 0) return;
        nllNoReductionKernel<<<blocksFor(batch), kBlockSize>>>(out_t, input_t, target_t, weight_t, batch, classes,
                                                               ignore_index, error);
      } else {
        int blocks = lossBlocks(batch);
        auto* partials = static_cast<LossAcc<T>*>(workspace);
        nllPartialSumsKernel<<<blocks, kBlockSize>>>(partials, input_t, target_t, weight_t, batch, classes,
                                                     ignore_index, error);
        DK_CUDA_CHECK_LAUNCH("nll_loss");
        nllCombineKernel<<<1, kBlockSize>>>(out_t, partials, blocks, reduction == 1);
      }
    };
    if (target_dtype == Dtype::Byte) run(uint8_t{}); else run(int64_t{});
  });
  DK_CUDA_CHECK_LAUNCH("nll_loss");
}

}  // namespace dk::cuda::launch
