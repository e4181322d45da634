// Chooses the vectorized math functions once (Note [Vectorized math]); the default ones.
#include "vec_math.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "vec_math_scalar.h"

namespace dk::native::vec {

#if DK_HAVE_SLEEF_AVX2
// vec_math_avx2.cpp, compiled with -mavx2 -mfma.
const MathFunctions<float>& avx2FloatMath();
const MathFunctions<double>& avx2DoubleMath();
#endif

namespace {

template <class T>
const MathFunctions<T>& defaultMath() {
  static const MathFunctions<T> functions{
      [](const T* in, T* out, int64_t n) { mapScalar(in, out, 0, n, [](T x) { return std::exp(x); }); },
      [](const T* in, T* out, int64_t n) { mapScalar(in, out, 0, n, [](T x) { return std::log(x); }); },
      [](const T* in, T* out, int64_t n) { mapScalar(in, out, 0, n, [](T x) { return std::tanh(x); }); },
      [](const T* in, T* out, int64_t n) { mapScalar(in, out, 0, n, [](T x) { return sigmoidValue(x); }); },
      [](const T* in, T* out, int64_t n) { mapScalar(in, out, 0, n, [](T x) { return std::sin(x); }); },
      [](const T* in, T* out, int64_t n) { mapScalar(in, out, 0, n, [](T x) { return std::cos(x); }); },
      [](const T* in, T* out, int64_t n) { mapScalar(in, out, 0, n, [](T x) { return geluValue(x); }); },
      [](const T* in, T* out, int64_t n) { mapScalar(in, out, 0, n, [](T x) { return geluTanhValue(x); }); },
      [](const T* in, int64_t n) { return sumScalar(in, n); },
      [](const T* in, T* out, int64_t n, bool log) {
        softmaxScalar(in, out, n, log, [](const T* a, T* b, int64_t m) {
          mapScalar(a, b, 0, m, [](T x) { return std::exp(x); });
        });
      },
      sumSquaredDeviationScalar<T>,
      normalizeScalar<T>,
      [](const T* a, const T* b, T* out, int64_t n) { zipScalar(a, b, out, 0, n, [](T x, T y) { return x + y; }); },
      [](const T* a, const T* b, T* out, int64_t n) { zipScalar(a, b, out, 0, n, [](T x, T y) { return x * y; }); },
  };
  return functions;
}

bool useAvx2() {
#if DK_HAVE_SLEEF_AVX2
  static const bool use = [] {
    const char* forced = std::getenv("DK_CPU_CAPABILITY");
    if (forced != nullptr && std::strcmp(forced, "default") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return use;
#else
  return false;
#endif
}

}  // namespace

const MathFunctions<float>& floatMath() {
#if DK_HAVE_SLEEF_AVX2
  if (useAvx2()) return avx2FloatMath();
#endif
  return defaultMath<float>();
}

const MathFunctions<double>& doubleMath() {
#if DK_HAVE_SLEEF_AVX2
  if (useAvx2()) return avx2DoubleMath();
#endif
  return defaultMath<double>();
}

std::string_view mathCapability() { return useAvx2() ? "avx2" : "default"; }

}  // namespace dk::native::vec
