// The AVX2 + FMA implementations of the vectorized math functions, from SLEEF (Note [Vectorized
// math]). Compiled with -mavx2 -mfma, and called only on a CPU that has both.
#include <immintrin.h>
#include <sleef.h>

#include <cstring>

#include "vec_math.h"

namespace dk::native::vec {

const MathFunctions<float>& avx2FloatMath();
const MathFunctions<double>& avx2DoubleMath();

namespace {

// Whole vectors through vf; the elements left over are copied into one more vector (padded
// with zeros), so every element gets vf's value whatever its position in the array.
template <class VF>
void mapFloat(const float* in, float* out, int64_t n, const VF& vf) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, vf(_mm256_loadu_ps(in + i)));
  if (i < n) {
    alignas(32) float rest[8] = {};
    std::memcpy(rest, in + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm256_store_ps(rest, vf(_mm256_load_ps(rest)));
    std::memcpy(out + i, rest, static_cast<size_t>(n - i) * sizeof(float));
  }
}

template <class VF>
void mapDouble(const double* in, double* out, int64_t n, const VF& vf) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(out + i, vf(_mm256_loadu_pd(in + i)));
  if (i < n) {
    alignas(32) double rest[4] = {};
    std::memcpy(rest, in + i, static_cast<size_t>(n - i) * sizeof(double));
    _mm256_store_pd(rest, vf(_mm256_load_pd(rest)));
    std::memcpy(out + i, rest, static_cast<size_t>(n - i) * sizeof(double));
  }
}

// sigmoid as PyTorch's vector form computes it: 1 / (1 + exp(-x)).
__m256 sigmoidVec(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(one, _mm256_add_ps(one, e));
}
__m256d sigmoidVec(__m256d x) {
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d e = Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_setzero_pd(), x));
  return _mm256_div_pd(one, _mm256_add_pd(one, e));
}

__m256 geluVec(__m256 x) {
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256 e = Sleef_erff8_u10avx2(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752440f)));
  return _mm256_mul_ps(_mm256_mul_ps(x, half), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}
__m256d geluVec(__m256d x) {
  const __m256d half = _mm256_set1_pd(0.5);
  const __m256d e = Sleef_erfd4_u10avx2(_mm256_mul_pd(x, _mm256_set1_pd(0.70710678118654752440)));
  return _mm256_mul_pd(_mm256_mul_pd(x, half), _mm256_add_pd(_mm256_set1_pd(1.0), e));
}

__m256 geluTanhVec(__m256 x) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 inner = _mm256_mul_ps(_mm256_set1_ps(0.79788456080286535588f),
                                     _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(0.044715f), x3)));
  const __m256 t = Sleef_tanhf8_u10avx2(inner);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), t));
}
__m256d geluTanhVec(__m256d x) {
  const __m256d x3 = _mm256_mul_pd(_mm256_mul_pd(x, x), x);
  const __m256d inner = _mm256_mul_pd(_mm256_set1_pd(0.79788456080286535588),
                                      _mm256_add_pd(x, _mm256_mul_pd(_mm256_set1_pd(0.044715), x3)));
  const __m256d t = Sleef_tanhd4_u10avx2(inner);
  return _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(0.5), x), _mm256_add_pd(_mm256_set1_pd(1.0), t));
}

}  // namespace

const MathFunctions<float>& avx2FloatMath() {
  using F = float;
  static const MathFunctions<float> functions{
      [](const F* in, F* out, int64_t n) {
        mapFloat(in, out, n, [](__m256 v) { return Sleef_expf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapFloat(in, out, n, [](__m256 v) { return Sleef_logf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapFloat(in, out, n, [](__m256 v) { return Sleef_tanhf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapFloat(in, out, n, [](__m256 v) { return sigmoidVec(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapFloat(in, out, n, [](__m256 v) { return Sleef_sinf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapFloat(in, out, n, [](__m256 v) { return Sleef_cosf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapFloat(in, out, n, [](__m256 v) { return geluVec(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapFloat(in, out, n, [](__m256 v) { return geluTanhVec(v); });
      },
  };
  return functions;
}

const MathFunctions<double>& avx2DoubleMath() {
  using D = double;
  static const MathFunctions<double> functions{
      [](const D* in, D* out, int64_t n) {
        mapDouble(in, out, n, [](__m256d v) { return Sleef_expd4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapDouble(in, out, n, [](__m256d v) { return Sleef_logd4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapDouble(in, out, n, [](__m256d v) { return Sleef_tanhd4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapDouble(in, out, n, [](__m256d v) { return sigmoidVec(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapDouble(in, out, n, [](__m256d v) { return Sleef_sind4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapDouble(in, out, n, [](__m256d v) { return Sleef_cosd4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapDouble(in, out, n, [](__m256d v) { return geluVec(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapDouble(in, out, n, [](__m256d v) { return geluTanhVec(v); });
      },
  };
  return functions;
}

}  // namespace dk::native::vec
