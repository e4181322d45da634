// Vectorized math for the CPU kernels: exp, log, tanh, sigmoid, sin, cos and gelu over arrays
// of float or double, their sum, softmax, layer_norm's row steps, and the add and mul of
// contiguous runs (Note [Vectorized math]).
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace dk::native::vec {

// Note [Vectorized math]
// The transcendental functions of the unary kernels come from SLEEF (Debian's libsleef), the
// library PyTorch's own CPU kernels call: its AVX2 functions of 1-ULP accuracy, 8 floats or 4
// doubles at a time, compiled in their own translation unit with -mavx2 -mfma
// (vec_math_avx2.cpp) and chosen once, at the first use, when the CPU has AVX2 and FMA. The
// elements after the last whole vector are padded into one more vector, so an element's value
// does not depend on where it sits in a run, how a tensor is laid out or how the work is split
// over threads (PyTorch sends those elements through the scalar function instead, so its values
// for them can differ in the last bit). Without SLEEF or AVX2, or with
// DK_CPU_CAPABILITY=default in the environment (read once), every element takes the scalar
// functions of <cmath> (vec_math_scalar.h), in a loop the compiler vectorizes where it can.
// Each function computes out[i] = f(in[i]) for i < n; in and out may be the same array. The
// AVX2 unit also holds add and mul over contiguous arrays (exact, so their values are those of
// the scalar forms), built with SLEEF's unit since only that unit is compiled for AVX2.
template <class T>
using ArrayFn = void (*)(const T* in, T* out, int64_t n);

// out[i] = a[i] op b[i] for i < n; out may be a or b.
template <class T>
using BinaryArrayFn = void (*)(const T* a, const T* b, T* out, int64_t n);

template <class T>
struct MathFunctions {
  ArrayFn<T> exp;
  ArrayFn<T> log;
  ArrayFn<T> tanh;
  ArrayFn<T> sigmoid;    // 1 / (1 + exp(-x))
  ArrayFn<T> sin;
  ArrayFn<T> cos;
  ArrayFn<T> gelu;       // x * Phi(x), through erf
  ArrayFn<T> gelu_tanh;  // PyTorch's tanh approximation
  // The sum of in[0, n), accumulated in double (the AVX2 float sum adds 4-element partial sums
  // in float first: vec_math_avx2.cpp).
  double (*sum)(const T* in, int64_t n);
  // Softmax of in[0, n) into out (log: log-softmax), in PyTorch's order of operations:
  // exp(x - max) * (1 / sum), or (x - max) - log(sum); in and out must not overlap.
  void (*softmax)(const T* in, T* out, int64_t n, bool log);
  // The sum of (in[i] - center)^2 over [0, n), in double (layer_norm's variance).
  double (*sum_sq_dev)(const T* in, int64_t n, double center);
  // out[i] = (in[i] * scale + shift) * weight[i] + bias[i], PyTorch's order for layer_norm;
  // weight or bias may be null (left out). in and out may be the same array.
  void (*normalize)(const T* in, T* out, int64_t n, T scale, T shift, const T* weight, const T* bias);
  // a + b and a * b: exact IEEE operations, so every form gives the same values; the vector form
  // is what a contiguous run of the add and mul kernels takes (Note [Contiguous binary runs]).
  BinaryArrayFn<T> add;
  BinaryArrayFn<T> mul;
};

const MathFunctions<float>& floatMath();
const MathFunctions<double>& doubleMath();

// floatMath() or doubleMath() by type.
template <class T>
const MathFunctions<T>& mathFor() {
  if constexpr (std::is_same_v<T, double>) return doubleMath();
  else return floatMath();
}

// Which implementation floatMath() and doubleMath() give: "avx2" or "default".
std::string_view mathCapability();

}  // namespace dk::native::vec
