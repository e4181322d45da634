// Device code of the pointwise operators: binary, comparison, unary, clamp, pow, where
// (kernels/cuda/launch.h). Each operator is a functor on T's accumulate type (kernel_helpers.h),
// adapted to T's elements and run by launchMap's loops (Note [CUDA elementwise loops]).
#include "elementwise.cuh"

namespace dk::cuda::launch {

namespace {

using namespace device;

// ---------------------------------------------------------------- math on the accumulate type

template <class A>
__device__ __forceinline__ A mathExp(A x) {
  if constexpr (std::is_same_v<A, float>) return expf(x); else return exp(x);
}
template <class A>
__device__ __forceinline__ A mathLog(A x) {
  if constexpr (std::is_same_v<A, float>) return logf(x); else return log(x);
}
template <class A>
__device__ __forceinline__ A mathSqrt(A x) {
  if constexpr (std::is_same_v<A, float>) return sqrtf(x); else return sqrt(x);
}
template <class A>
__device__ __forceinline__ A mathSin(A x) {
  if constexpr (std::is_same_v<A, float>) return sinf(x); else return sin(x);
}
template <class A>
__device__ __forceinline__ A mathCos(A x) {
  if constexpr (std::is_same_v<A, float>) return cosf(x); else return cos(x);
}
template <class A>
__device__ __forceinline__ A mathTanh(A x) {
  if constexpr (std::is_same_v<A, float>) return tanhf(x); else return tanh(x);
}
template <class A>
__device__ __forceinline__ A mathErf(A x) {
  if constexpr (std::is_same_v<A, float>) return erff(x); else return erf(x);
}
template <class A>
__device__ __forceinline__ A mathPow(A x, A y) {
  if constexpr (std::is_same_v<A, float>) return powf(x, y); else return pow(x, y);
}

// ---------------------------------------------------------------- binary

template <class A>
struct AddOp {
  A alpha;
  __device__ A operator()(A a, A b) const {
    if constexpr (std::is_same_v<A, bool>) return a || (alpha && b); else return a + alpha * b;
  }
};
template <class A>
struct SubOp {
  A alpha;
  __device__ A operator()(A a, A b) const { return a - alpha * b; }
};
template <class A>
struct MulOp {
  __device__ A operator()(A a, A b) const {
    if constexpr (std::is_same_v<A, bool>) return a && b; else return a * b;
  }
};
template <class A>
struct DivOp {
  __device__ A operator()(A a, A b) const { return a / b; }
};
template <class A>
struct MaximumOp {
  __device__ A operator()(A a, A b) const {
    if (isNan(a)) return a;
    if (isNan(b)) return b;
    return a < b ? b : a;
  }
};
template <class A>
struct MinimumOp {
  __device__ A operator()(A a, A b) const {
    if (isNan(a)) return a;
    if (isNan(b)) return b;
    return b < a ? b : a;
  }
};
template <class A>
struct SquaredDiffOp {
  __device__ A operator()(A a, A b) const { return (a - b) * (a - b); }
};
template <class A>
struct EqOp {
  __device__ bool operator()(A a, A b) const { return a == b; }
};
template <class A>
struct GtOp {
  __device__ bool operator()(A a, A b) const { return a > b; }
};
template <class A>
struct LtOp {
  __device__ bool operator()(A a, A b) const { return a < b; }
};

// grad * d gelu(x) / dx: Phi(x) + x phi(x) for the erf form; the derivative of
// x/2 (1 + tanh(k (x + c x^3))) for the tanh form.
template <class A>
struct GeluBackwardErfOp {
  __device__ A operator()(A grad, A x) const {
    A cdf = A(0.5) * (A(1) + mathErf(x * A(0.70710678118654752440)));
    A pdf = A(0.39894228040143267794) * mathExp(A(-0.5) * x * x);
    return grad * (cdf + x * pdf);
  }
};
template <class A>
struct GeluBackwardTanhOp {
  __device__ A operator()(A grad, A x) const {
    const A kBeta = A(0.79788456080286535588);  // sqrt(2 / pi)
    const A kKappa = A(0.044715);
    A t = mathTanh(kBeta * (x + kKappa * x * x * x));
    A d_inner = kBeta * (A(1) + A(3) * kKappa * x * x);
    return grad * (A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * d_inner);
  }
};

// A functor on the accumulate type applied to T's elements: operands loaded through acc_t<T>,
// the result converted to Out.
template <class T, class Out, class F>
struct OnElements {
  using A = acc_t<T>;
  F f;
  __device__ __forceinline__ Out operator()(T a, T b) const { return convert<Out>(f(convert<A>(a), convert<A>(b))); }
  __device__ __forceinline__ Out operator()(T x) const { return convert<Out>(f(convert<A>(x))); }
};

template <class T, class Out, class F>
void launchBinary(const Geometry& g, void* out, Input a, Input b, F f) {
  launchMap(g, static_cast<Out*>(out), OnElements<T, Out, F>{f}, operandOf<T>(a), operandOf<T>(b));
}

// ---------------------------------------------------------------- unary

template <class A, UnaryOp Op>
struct UnaryFn {
  __device__ A operator()(A x) const {
    if constexpr (Op == UnaryOp::Neg) {
      return -x;
    } else if constexpr (Op == UnaryOp::Abs) {
      // -0.0 gives +0.0, as PyTorch's (and the CPU kernel's) abs; NaN stays NaN.
      if constexpr (std::is_unsigned_v<A>) return x; else return x < A(0) ? -x : (x == A(0) ? A(0) : x);
    } else if constexpr (Op == UnaryOp::Relu) {
      return x < A(0) ? A(0) : x;  // NaN stays NaN
    } else if constexpr (Op == UnaryOp::Exp) {
      return mathExp(x);
    } else if constexpr (Op == UnaryOp::Log) {
      return mathLog(x);
    } else if constexpr (Op == UnaryOp::Sqrt) {
      return mathSqrt(x);
    } else if constexpr (Op == UnaryOp::Rsqrt) {
      return A(1) / mathSqrt(x);
    } else if constexpr (Op == UnaryOp::Sin) {
      return mathSin(x);
    } else if constexpr (Op == UnaryOp::Cos) {
      return mathCos(x);
    } else if constexpr (Op == UnaryOp::Tanh) {
      return mathTanh(x);
    } else if constexpr (Op == UnaryOp::Sigmoid) {
      return A(1) / (A(1) + mathExp(-x));
    } else if constexpr (Op == UnaryOp::GeluErf) {
      return A(0.5) * x * (A(1) + mathErf(x * A(0.70710678118654752440)));
    } else {
      static_assert(Op == UnaryOp::GeluTanh);
      const A kBeta = A(0.79788456080286535588);  // sqrt(2 / pi)
      const A kKappa = A(0.044715);
      return A(0.5) * x * (A(1) + mathTanh(kBeta * (x + kKappa * x * x * x)));
    }
  }
};

template <class A>
struct ClampFn {
  bool has_min, has_max;
  A min, max;
  __device__ A operator()(A x) const {
    if (isNan(x)) return x;
    if (has_min && x < min) x = min;
    if (has_max && x > max) x = max;
    return x;
  }
};

template <class A>
struct PowFn {
  A exponent;
  __device__ A operator()(A x) const {
    if constexpr (std::is_integral_v<A>) {
      // Square-and-multiply in unsigned arithmetic, which wraps like T's own overflow.
      uint64_t base = static_cast<uint64_t>(x), result = 1;
      for (int64_t e = exponent; e > 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return static_cast<A>(result);
    } else {
      if (exponent == A(2)) return x * x;
      if (exponent == A(1)) return x;
      return mathPow(x, exponent);
    }
  }
};

template <class T, class F>
void launchUnary(const Geometry& g, void* out, const void* in, F f) {
  launchMap(g, static_cast<T*>(out), OnElements<T, T, F>{f}, Operand<T>{static_cast<const T*>(in), T{}});
}

template <class T, class C>
struct Select {
  __device__ __forceinline__ T operator()(C cond, T a, T b) const { return cond ? a : b; }
};

[[noreturn]] void unsupported(const char* what) {
  throwCudaError(static_cast<int>(cudaErrorInvalidValue), what, __FILE__, __LINE__);
}

}  // namespace

void binary(BinaryOp op, Dtype dtype, const Geometry& g, void* out, Input a, Input b, ScalarArg alpha) {
  if (g.numel == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    constexpr bool kFloat = kIsFloating<T>;
    constexpr bool kBool = kIsBool<T>;
    switch (op) {
      case BinaryOp::Add: launchBinary<T, T>(g, out, a, b, AddOp<A>{scalarAs<T>(alpha)}); return;
      case BinaryOp::Sub:
        if constexpr (!kBool) { launchBinary<T, T>(g, out, a, b, SubOp<A>{scalarAs<T>(alpha)}); return; }
        break;
      case BinaryOp::Mul: launchBinary<T, T>(g, out, a, b, MulOp<A>{}); return;
      case BinaryOp::Div:
        if constexpr (kFloat) { launchBinary<T, T>(g, out, a, b, DivOp<A>{}); return; }
        break;
      case BinaryOp::Maximum: launchBinary<T, T>(g, out, a, b, MaximumOp<A>{}); return;
      case BinaryOp::Minimum: launchBinary<T, T>(g, out, a, b, MinimumOp<A>{}); return;
      case BinaryOp::SquaredDiff:
        if constexpr (kFloat) { launchBinary<T, T>(g, out, a, b, SquaredDiffOp<A>{}); return; }
        break;
      case BinaryOp::Eq: launchBinary<T, bool>(g, out, a, b, EqOp<A>{}); return;
      case BinaryOp::Gt: launchBinary<T, bool>(g, out, a, b, GtOp<A>{}); return;
      case BinaryOp::Lt: launchBinary<T, bool>(g, out, a, b, LtOp<A>{}); return;
      case BinaryOp::GeluBackwardErf:
        if constexpr (kFloat) { launchBinary<T, T>(g, out, a, b, GeluBackwardErfOp<A>{}); return; }
        break;
      case BinaryOp::GeluBackwardTanh:
        if constexpr (kFloat) { launchBinary<T, T>(g, out, a, b, GeluBackwardTanhOp<A>{}); return; }
        break;
    }
    unsupported("binary: operator not defined for this dtype");
  });
  DK_CUDA_CHECK_LAUNCH("binary");
}

void unary(UnaryOp op, Dtype dtype, const Geometry& g, void* out, const void* in) {
  if (g.numel == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    if constexpr (kIsBool<T>) {
      unsupported("unary: operator not defined for Bool");
    } else {
      switch (op) {
        case UnaryOp::Neg: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Neg>{}); return;
        case UnaryOp::Abs: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Abs>{}); return;
        case UnaryOp::Relu: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Relu>{}); return;
        default: break;
      }
      if constexpr (kIsFloating<T>) {
        switch (op) {
          case UnaryOp::Exp: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Exp>{}); return;
          case UnaryOp::Log: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Log>{}); return;
          case UnaryOp::Sqrt: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Sqrt>{}); return;
          case UnaryOp::Rsqrt: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Rsqrt>{}); return;
          case UnaryOp::Sin: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Sin>{}); return;
          case UnaryOp::Cos: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Cos>{}); return;
          case UnaryOp::Tanh: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Tanh>{}); return;
          case UnaryOp::Sigmoid: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::Sigmoid>{}); return;
          case UnaryOp::GeluErf: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::GeluErf>{}); return;
          case UnaryOp::GeluTanh: launchUnary<T>(g, out, in, UnaryFn<A, UnaryOp::GeluTanh>{}); return;
          default: break;
        }
      }
      unsupported("unary: operator not defined for this dtype");
    }
  });
  DK_CUDA_CHECK_LAUNCH("unary");
}

void clamp(Dtype dtype, const Geometry& g, void* out, const void* in, const ScalarArg* min, const ScalarArg* max) {
  if (g.numel == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    if constexpr (kIsBool<T>) {
      unsupported("clamp: not defined for Bool");
    } else {
      ClampFn<A> f{min != nullptr, max != nullptr, min ? scalarAs<T>(*min) : A(0), max ? scalarAs<T>(*max) : A(0)};
      launchUnary<T>(g, out, in, f);
    }
  });
  DK_CUDA_CHECK_LAUNCH("clamp");
}

void powScalar(Dtype dtype, const Geometry& g, void* out, const void* in, ScalarArg exponent) {
  if (g.numel == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    if constexpr (kIsBool<T>) {
      unsupported("pow: not defined for Bool");
    } else {
      launchUnary<T>(g, out, in, PowFn<A>{scalarAs<T>(exponent)});
    }
  });
  DK_CUDA_CHECK_LAUNCH("pow");
}

void where(Dtype dtype, Dtype cond_dtype, const Geometry& g, void* out, Input cond, Input a, Input b) {
  if (g.numel == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (cond_dtype == Dtype::Bool) {
      launchMap(g, static_cast<T*>(out), Select<T, bool>{}, operandOf<bool>(cond), operandOf<T>(a), operandOf<T>(b));
    } else {
      launchMap(g, static_cast<T*>(out), Select<T, uint8_t>{}, operandOf<uint8_t>(cond), operandOf<T>(a),
                operandOf<T>(b));
    }
  });
  DK_CUDA_CHECK_LAUNCH("where");
}

}  // namespace dk::cuda::launch
