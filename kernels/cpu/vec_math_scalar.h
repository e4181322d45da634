// The scalar forms of the vectorized functions (Note [Vectorized math]): the default
// implementation, and the reference the tests hold the vector forms to.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace dk::native::vec {

template <class M>
inline M sigmoidValue(M x) {
  return M(1) / (M(1) + std::exp(-x));
}

// approximate="none": x * Phi(x), the normal CDF through erf.
template <class M>
inline M geluValue(M x) {
  constexpr M kInvSqrt2 = M(0.70710678118654752440);
  return x * M(0.5) * (M(1) + std::erf(x * kInvSqrt2));
}

// approximate="tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <class M>
inline M geluTanhValue(M x) {
  constexpr M kSqrt2OverPi = M(0.79788456080286535588);
  constexpr M kKappa = M(0.044715);
  M inner = kSqrt2OverPi * (x + kKappa * x * x * x);
  return M(0.5) * x * (M(1) + std::tanh(inner));
}

// out[i] = f(in[i]) for i in [begin, n).
template <class T, class F>
inline void mapScalar(const T* in, T* out, int64_t begin, int64_t n, const F& f) {
  for (int64_t i = begin; i < n; ++i) out[i] = f(in[i]);
}

// out[i] = f(a[i], b[i]) for i in [begin, n).
template <class T, class F>
inline void zipScalar(const T* a, const T* b, T* out, int64_t begin, int64_t n, const F& f) {
  for (int64_t i = begin; i < n; ++i) out[i] = f(a[i], b[i]);
}

// The sum of in[0, n) in double, in 16 partial sums (which the compiler may keep in vectors).
template <class T>
double sumScalar(const T* in, int64_t n) {
  constexpr int64_t kLanes = 16;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] += static_cast<double>(in[i + j]);
  double total = 0;
  for (int64_t j = 0; j < kLanes; ++j) total += lanes[j];
  for (; i < n; ++i) total += static_cast<double>(in[i]);
  return total;
}

// The sum of (in[i] - center)^2 over [0, n) in double, in 16 partial sums.
template <class T>
double sumSquaredDeviationScalar(const T* in, int64_t n, double center) {
  constexpr int64_t kLanes = 16;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) {
      const double d = static_cast<double>(in[i + j]) - center;
      lanes[j] += d * d;
    }
  double total = 0;
  for (int64_t j = 0; j < kLanes; ++j) total += lanes[j];
  for (; i < n; ++i) {
    const double d = static_cast<double>(in[i]) - center;
    total += d * d;
  }
  return total;
}

// out[i] = (in[i] * scale + shift) * weight[i] + bias[i]; weight or bias may be null.
template <class T>
void normalizeScalar(const T* in, T* out, int64_t n, T scale, T shift, const T* weight, const T* bias) {
  for (int64_t i = 0; i < n; ++i) {
    T y = in[i] * scale + shift;
    if (weight != nullptr) y *= weight[i];
    if (bias != nullptr) y += bias[i];
    out[i] = y;
  }
}

// Softmax (log: log-softmax) of in[0, n) into out, with the exponentials from `exp` (an array
// function): exp(x - max) * (1 / sum), or (x - max) - log(sum). A NaN stays out of the max and
// reaches every output through the sum.
template <class T, class Exp>
void softmaxScalar(const T* in, T* out, int64_t n, bool log, const Exp& exp) {
  T max = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i) max = in[i] > max ? in[i] : max;
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] - max;
  exp(out, out, n);
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += out[i];
  if (log) {
    const T log_sum = std::log(sum);
    for (int64_t i = 0; i < n; ++i) out[i] = (in[i] - max) - log_sum;
  } else {
    const T scale = T(1) / sum;
    for (int64_t i = 0; i < n; ++i) out[i] *= scale;
  }
}

}  // namespace dk::native::vec
