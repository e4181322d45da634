// The scalar forms of the vectorized functions (Note [Vectorized math]): the default
// implementation, and the reference the tests hold the vector forms to.
#pragma once

#include <cmath>

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

}  // namespace dk::native::vec
