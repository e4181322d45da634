// The AVX2 + FMA implementations of the vectorized math functions, from SLEEF (Note [Vectorized
// math]). Compiled with -mavx2 -mfma, and called only on a CPU that has both.
#include <immintrin.h>
#include <sleef.h>

#include <cmath>
#include <cstring>

#include "vec_math.h"

namespace dk::native::vec {

const MathFunctions<float>& avx2FloatMath();
const MathFunctions<double>& avx2DoubleMath();

namespace {

// One AVX2 register of T: its type, lane count and (un)aligned loads and stores.
template <class T>
struct Avx2;
template <>
struct Avx2<float> {
  using V = __m256;
  static constexpr int64_t kLanes = 8;
  static V load(const float* p) { return _mm256_load_ps(p); }
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_store_ps(p, v); }
  static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
};
template <>
struct Avx2<double> {
  using V = __m256d;
  static constexpr int64_t kLanes = 4;
  static V load(const double* p) { return _mm256_load_pd(p); }
  static V loadu(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_store_pd(p, v); }
  static void storeu(double* p, V v) { _mm256_storeu_pd(p, v); }
};

// Whole vectors through vf; the elements left over are copied into one more vector (padded
// with zeros), so every element gets vf's value whatever its position in the array.
template <class T, class VF>
void mapVec(const T* in, T* out, int64_t n, const VF& vf) {
  using R = Avx2<T>;
  int64_t i = 0;
  for (; i + R::kLanes <= n; i += R::kLanes) R::storeu(out + i, vf(R::loadu(in + i)));
  if (i < n) {
    alignas(32) T rest[R::kLanes] = {};
    std::memcpy(rest, in + i, static_cast<size_t>(n - i) * sizeof(T));
    R::store(rest, vf(R::load(rest)));
    std::memcpy(out + i, rest, static_cast<size_t>(n - i) * sizeof(T));
  }
}

// out = a op b for an exact IEEE operation (add, mul): whole vectors, two at a time, then the
// scalar op for the last elements, which gives the same values.
template <class T, class VF, class SF>
void zipVec(const T* a, const T* b, T* out, int64_t n, const VF& vf, const SF& sf) {
  using R = Avx2<T>;
  constexpr int64_t w = R::kLanes;
  int64_t i = 0;
  for (; i + 2 * w <= n; i += 2 * w) {
    const auto r0 = vf(R::loadu(a + i), R::loadu(b + i));
    const auto r1 = vf(R::loadu(a + i + w), R::loadu(b + i + w));
    R::storeu(out + i, r0);
    R::storeu(out + i + w, r1);
  }
  for (; i < n; ++i) out[i] = sf(a[i], b[i]);
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

float expLane(float x) { return _mm256_cvtss_f32(Sleef_expf8_u10avx2(_mm256_set1_ps(x))); }
double expLane(double x) { return _mm256_cvtsd_f64(Sleef_expd4_u10avx2(_mm256_set1_pd(x))); }

// Blocks of 128 floats are summed in float (4 vectors, each lane adding 4 elements), and each
// block's 8 lanes are added into double accumulators: the double sum's accuracy within a few
// float roundings of 4-element partial sums, at the speed of a float sum (converting every
// element to double costs more shuffles than the adds themselves).
double sumFloat(const float* in, int64_t n) {
  __m256d d0 = _mm256_setzero_pd(), d1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __m256 a0 = _mm256_loadu_ps(in + i), a1 = _mm256_loadu_ps(in + i + 8), a2 = _mm256_loadu_ps(in + i + 16),
           a3 = _mm256_loadu_ps(in + i + 24);
    for (int64_t j = i + 32; j < i + 128; j += 32) {
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(in + j));
      a1 = _mm256_add_ps(a1, _mm256_loadu_ps(in + j + 8));
      a2 = _mm256_add_ps(a2, _mm256_loadu_ps(in + j + 16));
      a3 = _mm256_add_ps(a3, _mm256_loadu_ps(in + j + 24));
    }
    const __m256 block = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    d0 = _mm256_add_pd(d0, _mm256_cvtps_pd(_mm256_castps256_ps128(block)));
    d1 = _mm256_add_pd(d1, _mm256_cvtps_pd(_mm256_extractf128_ps(block, 1)));
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    d0 = _mm256_add_pd(d0, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    d1 = _mm256_add_pd(d1, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(d0, d1));
  double total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) total += static_cast<double>(in[i]);
  return total;
}

double sumDouble(const double* in, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    a0 = _mm256_add_pd(a0, _mm256_loadu_pd(in + i));
    a1 = _mm256_add_pd(a1, _mm256_loadu_pd(in + i + 4));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(a0, a1));
  double total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) total += in[i];
  return total;
}

double sumSqDevFloat(const float* in, int64_t n, double center) {
  const __m256d c = _mm256_set1_pd(center);
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    const __m256d lo = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(x)), c);
    const __m256d hi = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)), c);
    a0 = _mm256_fmadd_pd(lo, lo, a0);
    a1 = _mm256_fmadd_pd(hi, hi, a1);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(a0, a1));
  double total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) {
    const double d = static_cast<double>(in[i]) - center;
    total += d * d;
  }
  return total;
}

double sumSqDevDouble(const double* in, int64_t n, double center) {
  const __m256d c = _mm256_set1_pd(center);
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d x = _mm256_sub_pd(_mm256_loadu_pd(in + i), c), y = _mm256_sub_pd(_mm256_loadu_pd(in + i + 4), c);
    a0 = _mm256_fmadd_pd(x, x, a0);
    a1 = _mm256_fmadd_pd(y, y, a1);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(a0, a1));
  double total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) total += (in[i] - center) * (in[i] - center);
  return total;
}

// (x * scale + shift) * weight + bias, whole vectors, then the tail element by element with the
// same operations (multiplies and adds are exact per element, so the tail matches the vectors).
template <class T, class V, class Load, class Store, class Mul, class Add>
void normalizeWith(const T* in, T* out, int64_t n, T scale, T shift, const T* weight, const T* bias, V vscale,
                   V vshift, const Load& load, const Store& store, const Mul& mul, const Add& add) {
  constexpr int64_t kWidth = sizeof(V) / sizeof(T);
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    V y = add(mul(load(in + i), vscale), vshift);
    if (weight != nullptr) y = mul(y, load(weight + i));
    if (bias != nullptr) y = add(y, load(bias + i));
    store(out + i, y);
  }
  for (; i < n; ++i) {
    T y = in[i] * scale + shift;
    if (weight != nullptr) y *= weight[i];
    if (bias != nullptr) y += bias[i];
    out[i] = y;
  }
}

void normalizeFloat(const float* in, float* out, int64_t n, float scale, float shift, const float* weight,
                    const float* bias) {
  normalizeWith(
      in, out, n, scale, shift, weight, bias, _mm256_set1_ps(scale), _mm256_set1_ps(shift),
      [](const float* p) { return _mm256_loadu_ps(p); }, [](float* p, __m256 v) { _mm256_storeu_ps(p, v); },
      [](__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }, [](__m256 a, __m256 b) { return _mm256_add_ps(a, b); });
}

void normalizeDouble(const double* in, double* out, int64_t n, double scale, double shift, const double* weight,
                     const double* bias) {
  normalizeWith(
      in, out, n, scale, shift, weight, bias, _mm256_set1_pd(scale), _mm256_set1_pd(shift),
      [](const double* p) { return _mm256_loadu_pd(p); }, [](double* p, __m256d v) { _mm256_storeu_pd(p, v); },
      [](__m256d a, __m256d b) { return _mm256_mul_pd(a, b); },
      [](__m256d a, __m256d b) { return _mm256_add_pd(a, b); });
}

// Softmax of one contiguous line, 8 floats at a time; the tail element by element with the
// vector exp's value (expLane), so values do not depend on the position.
void softmaxFloat(const float* in, float* out, int64_t n, bool log) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(_mm256_loadu_ps(in + i), vmax);  // a NaN input keeps vmax
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  float max = -INFINITY;
  for (float v : lanes) max = v > max ? v : max;
  for (; i < n; ++i) max = in[i] > max ? in[i] : max;
  const __m256 bmax = _mm256_set1_ps(max);
  __m256 vsum = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(in + i), bmax));
    _mm256_storeu_ps(out + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  _mm256_store_ps(lanes, vsum);
  float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; i < n; ++i) {
    out[i] = expLane(in[i] - max);
    sum += out[i];
  }
  if (log) {
    const float log_sum = std::log(sum);
    const __m256 blog = _mm256_set1_ps(log_sum);
    for (i = 0; i + 8 <= n; i += 8)
      _mm256_storeu_ps(out + i, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(in + i), bmax), blog));
    for (; i < n; ++i) out[i] = (in[i] - max) - log_sum;
  } else {
    const float scale = 1.0f / sum;
    const __m256 bscale = _mm256_set1_ps(scale);
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(out + i), bscale));
    for (; i < n; ++i) out[i] *= scale;
  }
}

void softmaxDouble(const double* in, double* out, int64_t n, bool log) {
  __m256d vmax = _mm256_set1_pd(-INFINITY);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vmax = _mm256_max_pd(_mm256_loadu_pd(in + i), vmax);
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, vmax);
  double max = -INFINITY;
  for (double v : lanes) max = v > max ? v : max;
  for (; i < n; ++i) max = in[i] > max ? in[i] : max;
  const __m256d bmax = _mm256_set1_pd(max);
  __m256d vsum = _mm256_setzero_pd();
  for (i = 0; i + 4 <= n; i += 4) {
    const __m256d e = Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_loadu_pd(in + i), bmax));
    _mm256_storeu_pd(out + i, e);
    vsum = _mm256_add_pd(vsum, e);
  }
  _mm256_store_pd(lanes, vsum);
  double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) {
    out[i] = expLane(in[i] - max);
    sum += out[i];
  }
  if (log) {
    const double log_sum = std::log(sum);
    for (i = 0; i < n; ++i) out[i] = (in[i] - max) - log_sum;
  } else {
    const double scale = 1.0 / sum;
    for (i = 0; i < n; ++i) out[i] *= scale;
  }
}

}  // namespace

const MathFunctions<float>& avx2FloatMath() {
  using F = float;
  static const MathFunctions<float> functions{
      [](const F* in, F* out, int64_t n) {
        mapVec(in, out, n, [](__m256 v) { return Sleef_expf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapVec(in, out, n, [](__m256 v) { return Sleef_logf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapVec(in, out, n, [](__m256 v) { return Sleef_tanhf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapVec(in, out, n, [](__m256 v) { return sigmoidVec(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapVec(in, out, n, [](__m256 v) { return Sleef_sinf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapVec(in, out, n, [](__m256 v) { return Sleef_cosf8_u10avx2(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapVec(in, out, n, [](__m256 v) { return geluVec(v); });
      },
      [](const F* in, F* out, int64_t n) {
        mapVec(in, out, n, [](__m256 v) { return geluTanhVec(v); });
      },
      sumFloat,
      softmaxFloat,
      sumSqDevFloat,
      normalizeFloat,
      [](const F* a, const F* b, F* out, int64_t n) {
        zipVec(a, b, out, n, [](__m256 x, __m256 y) { return _mm256_add_ps(x, y); }, [](F x, F y) { return x + y; });
      },
      [](const F* a, const F* b, F* out, int64_t n) {
        zipVec(a, b, out, n, [](__m256 x, __m256 y) { return _mm256_mul_ps(x, y); }, [](F x, F y) { return x * y; });
      },
  };
  return functions;
}

const MathFunctions<double>& avx2DoubleMath() {
  using D = double;
  static const MathFunctions<double> functions{
      [](const D* in, D* out, int64_t n) {
        mapVec(in, out, n, [](__m256d v) { return Sleef_expd4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapVec(in, out, n, [](__m256d v) { return Sleef_logd4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapVec(in, out, n, [](__m256d v) { return Sleef_tanhd4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapVec(in, out, n, [](__m256d v) { return sigmoidVec(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapVec(in, out, n, [](__m256d v) { return Sleef_sind4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapVec(in, out, n, [](__m256d v) { return Sleef_cosd4_u10avx2(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapVec(in, out, n, [](__m256d v) { return geluVec(v); });
      },
      [](const D* in, D* out, int64_t n) {
        mapVec(in, out, n, [](__m256d v) { return geluTanhVec(v); });
      },
      sumDouble,
      softmaxDouble,
      sumSqDevDouble,
      normalizeDouble,
      [](const D* a, const D* b, D* out, int64_t n) {
        zipVec(a, b, out, n, [](__m256d x, __m256d y) { return _mm256_add_pd(x, y); }, [](D x, D y) { return x + y; });
      },
      [](const D* a, const D* b, D* out, int64_t n) {
        zipVec(a, b, out, n, [](__m256d x, __m256d y) { return _mm256_mul_pd(x, y); }, [](D x, D y) { return x * y; });
      },
  };
  return functions;
}

}  // namespace dk::native::vec
