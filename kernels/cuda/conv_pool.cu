// Device code of im2col, col2im, max_pool2d_with_indices, avg_pool2d and its backward
// (kernels/cuda/launch.h). Every tensor is contiguous, seen plane by plane (one (n, c) image).
// Forward kernels run one thread per output element; col2im and avg_pool2d_backward one thread
// per input element, summing the columns or windows that read it, so no atomics are needed.
#include "kernel_helpers.h"

namespace dk::cuda::launch {

namespace {

using namespace device;

template <class T>
__global__ void im2colKernel(T* out, const T* in, Window2d w, int64_t planes, int64_t height, int64_t width,
                             int64_t oh, int64_t ow) {
  const int64_t blocks = oh * ow;
  DK_CUDA_KERNEL_LOOP(e, planes * w.kh * w.kw * blocks) {
    const int64_t col = e % blocks, row = (e / blocks) % (w.kh * w.kw), p = e / (blocks * w.kh * w.kw);
    const int64_t ki = row / w.kw, kj = row % w.kw;
    const int64_t iy = (col / ow) * w.sh - w.ph + ki * w.dh, ix = (col % ow) * w.sw - w.pw + kj * w.dw;
    out[e] = iy >= 0 && iy < height && ix >= 0 && ix < width ? in[(p * height + iy) * width + ix] : convert<T>(0.0f);
  }
}

template <class T>
__global__ void col2imKernel(T* out, const T* in, Window2d w, int64_t planes, int64_t height, int64_t width,
                             int64_t oh, int64_t ow) {
  const int64_t blocks = oh * ow;
  DK_CUDA_KERNEL_LOOP(e, planes * height * width) {
    const int64_t x = e % width, y = (e / width) % height, p = e / (height * width);
    acc_t<T> sum = 0;
    for (int64_t ki = 0; ki < w.kh; ++ki) {
      const int64_t ty = y + w.ph - ki * w.dh;  // = oy * sh for the window reading (y, x) at row ki
      if (ty < 0 || ty % w.sh != 0 || ty / w.sh >= oh) continue;
      for (int64_t kj = 0; kj < w.kw; ++kj) {
        const int64_t tx = x + w.pw - kj * w.dw;
        if (tx < 0 || tx % w.sw != 0 || tx / w.sw >= ow) continue;
        const int64_t row = (p * w.kh + ki) * w.kw + kj;
        sum += load(in + row * blocks + (ty / w.sh) * ow + tx / w.sw);
      }
    }
    store(out + e, sum);
  }
}

template <class T>
__global__ void maxPoolKernel(T* out, int64_t* indices, const T* in, Window2d w, int64_t planes, int64_t height,
                              int64_t width, int64_t oh, int64_t ow) {
  DK_CUDA_KERNEL_LOOP(e, planes * oh * ow) {
    const int64_t ox = e % ow, oy = (e / ow) % oh, p = e / (oh * ow);
    int64_t y0 = oy * w.sh - w.ph, x0 = ox * w.sw - w.pw;
    const int64_t y1 = min(y0 + (w.kh - 1) * w.dh + 1, height), x1 = min(x0 + (w.kw - 1) * w.dw + 1, width);
    while (y0 < 0) y0 += w.dh;
    while (x0 < 0) x0 += w.dw;
    const T* image = in + p * height * width;
    int64_t best = y0 * width + x0;
    acc_t<T> best_value = -INFINITY;
    for (int64_t y = y0; y < y1; y += w.dh) {
      for (int64_t x = x0; x < x1; x += w.dw) {
        acc_t<T> v = load(image + y * width + x);
        if (v > best_value || isNan(v)) {
          best_value = v;
          best = y * width + x;
        }
      }
    }
    store(out + e, best_value);
    indices[e] = best;
  }
}

// avg_pool2d's divisor of the window starting at (y0, x0) (kernels/meta/conv_shapes.h).
__device__ int64_t avgDivisor(const Window2d& w, int64_t y0, int64_t x0, int64_t height, int64_t width,
                              bool count_include_pad, int64_t divisor_override) {
  if (divisor_override != 0) return divisor_override;
  int64_t y1 = min(y0 + w.kh, height + w.ph), x1 = min(x0 + w.kw, width + w.pw);
  if (count_include_pad) return (y1 - y0) * (x1 - x0);
  return (min(y1, height) - max(y0, int64_t{0})) * (min(x1, width) - max(x0, int64_t{0}));
}

template <class T>
__global__ void avgPoolKernel(T* out, const T* in, Window2d w, int64_t planes, int64_t height, int64_t width,
                              int64_t oh, int64_t ow, bool count_include_pad, int64_t divisor_override) {
  using Sum = std::conditional_t<kIsFloating<T>, acc_t<T>, int64_t>;
  DK_CUDA_KERNEL_LOOP(e, planes * oh * ow) {
    const int64_t ox = e % ow, oy = (e / ow) % oh, p = e / (oh * ow);
    const int64_t y0 = oy * w.sh - w.ph, x0 = ox * w.sw - w.pw;
    const int64_t y1 = min(y0 + w.kh, height), x1 = min(x0 + w.kw, width);
    const T* image = in + p * height * width;
    Sum sum = 0;
    bool any = false;
    for (int64_t y = max(y0, int64_t{0}); y < y1; ++y)
      for (int64_t x = max(x0, int64_t{0}); x < x1; ++x) {
        sum += static_cast<Sum>(load(image + y * width + x));
        any = true;
      }
    const int64_t divisor = avgDivisor(w, y0, x0, height, width, count_include_pad, divisor_override);
    store(out + e, any ? sum / static_cast<Sum>(divisor) : Sum(0));
  }
}

template <class T>
__global__ void avgPoolBackwardKernel(T* grad_input, const T* grad, Window2d w, int64_t planes, int64_t height,
                                      int64_t width, int64_t oh, int64_t ow, bool count_include_pad,
                                      int64_t divisor_override) {
  DK_CUDA_KERNEL_LOOP(e, planes * height * width) {
    const int64_t x = e % width, y = (e / width) % height, p = e / (height * width);
    const T* g = grad + p * oh * ow;
    acc_t<T> sum = 0;
    // Windows oy with oy * sh - ph <= y < oy * sh - ph + kh.
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t y0 = oy * w.sh - w.ph;
      if (y < y0 || y >= y0 + w.kh) continue;
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t x0 = ox * w.sw - w.pw;
        if (x < x0 || x >= x0 + w.kw) continue;
        sum += load(g + oy * ow + ox) /
               static_cast<acc_t<T>>(avgDivisor(w, y0, x0, height, width, count_include_pad, divisor_override));
      }
    }
    store(grad_input + e, sum);
  }
}

}  // namespace

void im2col(Dtype dtype, void* out, const void* in, const Window2d& w, int64_t planes, int64_t height, int64_t width,
            int64_t oh, int64_t ow) {
  const int64_t n = planes * w.kh * w.kw * oh * ow;
  if (n == 0) return;
  dispatchFloating("im2col", dtype, [&](auto tag) {
    using T = decltype(tag);
    im2colKernel<<<blocksFor(n), kBlockSize>>>(static_cast<T*>(out), static_cast<const T*>(in), w, planes, height,
                                               width, oh, ow);
  });
  DK_CUDA_CHECK_LAUNCH("im2col");
}

void col2im(Dtype dtype, void* out, const void* in, const Window2d& w, int64_t planes, int64_t height, int64_t width,
            int64_t oh, int64_t ow) {
  const int64_t n = planes * height * width;
  if (n == 0) return;
  dispatchFloating("col2im", dtype, [&](auto tag) {
    using T = decltype(tag);
    col2imKernel<<<blocksFor(n), kBlockSize>>>(static_cast<T*>(out), static_cast<const T*>(in), w, planes, height,
                                               width, oh, ow);
  });
  DK_CUDA_CHECK_LAUNCH("col2im");
}

void maxPool2d(Dtype dtype, void* out, int64_t* indices, const void* in, const Window2d& w, int64_t planes,
               int64_t height, int64_t width, int64_t oh, int64_t ow) {
  const int64_t n = planes * oh * ow;
  if (n == 0) return;
  dispatchFloating("max_pool2d", dtype, [&](auto tag) {
    using T = decltype(tag);
    maxPoolKernel<<<blocksFor(n), kBlockSize>>>(static_cast<T*>(out), indices, static_cast<const T*>(in), w, planes,
                                                height, width, oh, ow);
  });
  DK_CUDA_CHECK_LAUNCH("max_pool2d");
}

void avgPool2d(Dtype dtype, void* out, const void* in, const Window2d& w, int64_t planes, int64_t height,
               int64_t width, int64_t oh, int64_t ow, bool count_include_pad, int64_t divisor_override) {
  const int64_t n = planes * oh * ow;
  if (n == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!kIsBool<T>)
      avgPoolKernel<<<blocksFor(n), kBlockSize>>>(static_cast<T*>(out), static_cast<const T*>(in), w, planes, height,
                                                  width, oh, ow, count_include_pad, divisor_override);
  });
  DK_CUDA_CHECK_LAUNCH("avg_pool2d");
}

void avgPool2dBackward(Dtype dtype, void* grad_input, const void* grad, const Window2d& w, int64_t planes,
                       int64_t height, int64_t width, int64_t oh, int64_t ow, bool count_include_pad,
                       int64_t divisor_override) {
  const int64_t n = planes * height * width;
  if (n == 0) return;
  dispatchFloating("avg_pool2d_backward", dtype, [&](auto tag) {
    using T = decltype(tag);
    avgPoolBackwardKernel<<<blocksFor(n), kBlockSize>>>(static_cast<T*>(grad_input), static_cast<const T*>(grad), w,
                                                        planes, height, width, oh, ow, count_include_pad,
                                                        divisor_override);
  });
  DK_CUDA_CHECK_LAUNCH("avg_pool2d_backward");
}

}  // namespace dk::cuda::launch
