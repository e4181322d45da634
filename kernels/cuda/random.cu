// Device code of rand and randn: Philox-4x32-10 counter-based random numbers
// (kernels/cuda/launch.h). Each thread turns one counter into four 32-bit words and writes the
// elements they make, so a value depends only on the seed and its index.
#include "kernel_helpers.h"

namespace dk::cuda::launch {

namespace {

using namespace device;

struct Words {
  uint32_t w[4];
};

// Philox-4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
__device__ __forceinline__ Words philox(uint64_t counter, uint64_t seed) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0 = __umulhi(kMul0, c0), lo0 = kMul0 * c0;
    uint32_t hi1 = __umulhi(kMul1, c2), lo1 = kMul1 * c2;
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return Words{{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with as many random bits as T's significand holds, so that rounding to T
// never reaches 1.
template <class T>
__device__ __forceinline__ float uniformFloat(uint32_t x) {
  if constexpr (std::is_same_v<T, half>) {
    return static_cast<float>(x >> 21) * 0x1p-11f;
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return static_cast<float>(x >> 24) * 0x1p-8f;
  } else {
    return static_cast<float>(x >> 8) * 0x1p-24f;
  }
}

__device__ __forceinline__ double uniformDouble(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(bits) * 0x1p-53;
}

// Elements per counter: four for 32-bit-or-narrower dtypes, two for Double.
template <class T>
inline constexpr int64_t kPerCounter = std::is_same_v<T, double> ? 2 : 4;

template <class T>
__global__ void uniformKernel(T* out, int64_t n, uint64_t seed) {
  constexpr int64_t per = kPerCounter<T>;
  DK_CUDA_KERNEL_LOOP(c, (n + per - 1) / per) {
    Words r = philox(static_cast<uint64_t>(c), seed);
    for (int64_t k = 0; k < per && c * per + k < n; ++k) {
      if constexpr (std::is_same_v<T, double>) {
        out[c * per + k] = uniformDouble(r.w[2 * k], r.w[2 * k + 1]);
      } else {
        store(out + c * per + k, uniformFloat<T>(r.w[k]));
      }
    }
  }
}

// Box-Muller: each pair of uniforms gives two normals.
template <class T>
__global__ void normalKernel(T* out, int64_t n, uint64_t seed) {
  constexpr int64_t per = kPerCounter<T>;
  DK_CUDA_KERNEL_LOOP(c, (n + per - 1) / per) {
    Words r = philox(static_cast<uint64_t>(c), seed);
    if constexpr (std::is_same_v<T, double>) {
      double u1 = 1.0 - uniformDouble(r.w[0], r.w[1]);  // (0, 1]: log stays finite
      double u2 = uniformDouble(r.w[2], r.w[3]);
      double radius = sqrt(-2.0 * log(u1));
      double values[2] = {radius * cospi(2.0 * u2), radius * sinpi(2.0 * u2)};
      for (int64_t k = 0; k < 2 && c * 2 + k < n; ++k) out[c * 2 + k] = values[k];
    } else {
      float values[4];
      for (int pair = 0; pair < 2; ++pair) {
        float u1 = 1.0f - static_cast<float>(r.w[2 * pair] >> 8) * 0x1p-24f;
        float u2 = static_cast<float>(r.w[2 * pair + 1] >> 8) * 0x1p-24f;
        float radius = sqrtf(-2.0f * logf(u1));
        values[2 * pair] = radius * cospif(2.0f * u2);
        values[2 * pair + 1] = radius * sinpif(2.0f * u2);
      }
      for (int64_t k = 0; k < 4 && c * 4 + k < n; ++k) store(out + c * 4 + k, values[k]);
    }
  }
}

}  // namespace

void uniform(Dtype dtype, void* out, int64_t n, uint64_t seed) {
  if (n == 0) return;
  dispatchFloating("rand", dtype, [&](auto tag) {
    using T = decltype(tag);
    uniformKernel<T><<<blocksFor((n + 3) / 4), kBlockSize>>>(static_cast<T*>(out), n, seed);
  });
  DK_CUDA_CHECK_LAUNCH("uniform");
}

void normal(Dtype dtype, void* out, int64_t n, uint64_t seed) {
  if (n == 0) return;
  dispatchFloating("randn", dtype, [&](auto tag) {
    using T = decltype(tag);
    normalKernel<T><<<blocksFor((n + 3) / 4), kBlockSize>>>(static_cast<T*>(out), n, seed);
  });
  DK_CUDA_CHECK_LAUNCH("normal");
}

}  // namespace dk::cuda::launch
