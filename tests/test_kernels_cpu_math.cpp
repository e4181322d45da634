// The CPU kernels' library paths (Note [Vectorized math], Note [BLAS matrix products]):
// exp, log, tanh, sigmoid, sin, cos and gelu through SLEEF's vector functions against the
// scalar functions of <cmath>, at every tail length, strided and in place; and the float and
// double matrix products through BLAS, for every operand layout BLAS reads in place and those
// it cannot, against a float64 reference. Run twice by meson: as built, and with
// DK_CPU_CAPABILITY=default (the scalar path).
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/vec_math.h"
#include "cpu/vec_math_scalar.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/addmm.h"
#include "dk/generated/ops/bmm.h"
#include "dk/generated/ops/cos.h"
#include "dk/generated/ops/exp.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/gelu.h"
#include "dk/generated/ops/log.h"
#include "dk/generated/ops/log_softmax.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mm_ops.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/sigmoid.h"
#include "dk/generated/ops/sin.h"
#include "dk/generated/ops/slice.h"
#include "dk/generated/ops/softmax.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/t.h"
#include "dk/generated/ops/tanh.h"
#include "dk/generated/ops/transpose.h"
#include "dk/tensor/tensor.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

// Distance in units in the last place between two floats of the same sign region.
template <class T>
int64_t ulpDistance(T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto ordered = [](T x) {
    Bits bits = std::bit_cast<Bits>(x);
    return bits < 0 ? static_cast<int64_t>(std::numeric_limits<Bits>::min()) - static_cast<int64_t>(bits)
                    : static_cast<int64_t>(bits);
  };
  return std::abs(ordered(a) - ordered(b));
}

// got agrees with expected: both NaN, or within max_ulp, or within abs_tol.
template <class T>
bool agrees(T got, T expected, int64_t max_ulp, double abs_tol) {
  if (std::isnan(expected) || std::isnan(got)) return std::isnan(expected) && std::isnan(got);
  if (got == expected) return true;
  if (std::isinf(expected) || std::isinf(got)) return false;
  return ulpDistance(got, expected) <= max_ulp || std::abs(static_cast<double>(got) - expected) <= abs_tol;
}

struct MathCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  double lo, hi;          // the random inputs' range
  int64_t max_ulp;
  double abs_tol;         // for values near a zero of the function (gelu's 1 + erf cancels)
};

const std::vector<MathCase>& mathCases() {
  static const std::vector<MathCase> cases = {
      {"exp", [](const Tensor& t) { return dk::exp(t); }, -90, 90, 1, 0},
      {"log", [](const Tensor& t) { return dk::log(t); }, 1e-30, 1e30, 1, 0},
      {"tanh", [](const Tensor& t) { return dk::tanh(t); }, -12, 12, 2, 0},
      {"sigmoid", [](const Tensor& t) { return dk::sigmoid(t); }, -40, 40, 2, 0},
      {"sin", [](const Tensor& t) { return dk::sin(t); }, -100, 100, 1, 0},
      {"cos", [](const Tensor& t) { return dk::cos(t); }, -100, 100, 1, 0},
      {"gelu", [](const Tensor& t) { return dk::gelu(t); }, -8, 8, 4, 1e-6},
      {"gelu_tanh", [](const Tensor& t) { return dk::gelu(t, "tanh"); }, -8, 8, 4, 1e-6},
  };
  return cases;
}

// The reference, evaluated in T (std::exp(float) for float), as the scalar path computes it.
template <class T>
T scalarRef(const std::string& name, T x) {
  if (name == "exp") return std::exp(x);
  if (name == "log") return std::log(x);
  if (name == "tanh") return std::tanh(x);
  if (name == "sigmoid") return native::vec::sigmoidValue(x);
  if (name == "sin") return std::sin(x);
  if (name == "cos") return std::cos(x);
  if (name == "gelu") return native::vec::geluValue(x);
  return native::vec::geluTanhValue(x);
}

// Inputs: random values in [lo, hi], then the special values.
template <class T>
std::vector<T> mathInputs(const MathCase& c, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(static_cast<size_t>(n));
  const bool log_scale = c.lo > 0;
  for (T& x : v) {
    if (log_scale) x = static_cast<T>(std::exp(std::uniform_real_distribution<double>(std::log(c.lo), std::log(c.hi))(rng)));
    else x = static_cast<T>(std::uniform_real_distribution<double>(c.lo, c.hi)(rng));
  }
  const T specials[] = {T(0), T(-0.0), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::denorm_min(), T(1), T(-1),
                        std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(), T(1e-3), T(-1e-3)};
  for (size_t i = 0; i < std::size(specials) && i < v.size(); ++i) v[i * 3 % v.size()] = specials[i];
  return v;
}

template <class T>
void checkMath(const MathCase& c, const std::vector<T>& in, const Tensor& result) {
  Values got = read(result);
  REQUIRE(got.size() == in.size());
  int failures = 0;
  for (size_t i = 0; i < in.size() && failures < 5; ++i) {
    const T expected = scalarRef<T>(c.name, in[i]);
    const T value = static_cast<T>(got[i]);
    if (!agrees(value, expected, c.max_ulp, c.abs_tol)) {
      ++failures;
      FAIL_CHECK(c.name << "(" << in[i] << ") = " << value << ", <cmath> gives " << expected << " (element " << i
                        << " of " << in.size() << ")");
    }
  }
}

template <class T>
constexpr ScalarType dtypeOf() {
  return std::is_same_v<T, float> ? kFloat : kDouble;
}

template <class T>
Tensor tensorOf(const std::vector<T>& v, const Sizes& sizes) {
  return make(Values(v.begin(), v.end()), sizes, dtypeOf<T>());
}

template <class T>
void checkEveryMathCase() {
  for (const MathCase& c : mathCases()) {
    INFO(c.name << " in " << dtypeOf<T>());
    // Every length around the vector widths (4 doubles, 8 floats, 16-element blocks), and long.
    for (int64_t n : {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 1000}) {
      std::vector<T> in = mathInputs<T>(c, n, static_cast<uint32_t>(n + 1));
      checkMath(c, in, c.op(tensorOf(in, {n})));
    }
    // Strided (a transposed matrix: the blocked path) and a broadcast input.
    std::vector<T> in = mathInputs<T>(c, 13 * 7, 99);
    Tensor m = tensorOf(in, {13, 7});
    Tensor result = c.op(dk::t(m));
    std::vector<T> transposed_in(in.size());
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 13; ++j) transposed_in[static_cast<size_t>(i * 13 + j)] = in[static_cast<size_t>(j * 7 + i)];
    checkMath(c, transposed_in, result);
    // The same value for an element wherever it sits (Note [Vectorized math]): the strided
    // path's values are the contiguous path's.
    CHECK(sameValues(read(result), read(c.op(tensorOf(transposed_in, {7, 13})))));
    Tensor row = tensorOf(std::vector<T>(in.begin(), in.begin() + 7), {1, 7});
    std::vector<T> broadcast_in;
    for (int r = 0; r < 5; ++r) broadcast_in.insert(broadcast_in.end(), in.begin(), in.begin() + 7);
    checkMath(c, broadcast_in, c.op(ops::expand::call(row, {5, 7}, false)));
  }
}

}  // namespace

TEST_CASE("cpu-math: the implementation is the one the CPU and the environment ask for", "[cpu-math]") {
  const char* forced = std::getenv("DK_CPU_CAPABILITY");
  if (forced != nullptr && std::strcmp(forced, "default") == 0) {
    CHECK(native::vec::mathCapability() == "default");
  } else {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) CHECK(native::vec::mathCapability() == "default");
#endif
    INFO("capability " << native::vec::mathCapability());
    CHECK((native::vec::mathCapability() == "avx2" || native::vec::mathCapability() == "default"));
  }
}

TEST_CASE("cpu-math: exp, log, tanh, sigmoid, sin, cos and gelu agree with <cmath> (float)", "[cpu-math]") {
  checkEveryMathCase<float>();
}

TEST_CASE("cpu-math: exp, log, tanh, sigmoid, sin, cos and gelu agree with <cmath> (double)", "[cpu-math]") {
  checkEveryMathCase<double>();
}

TEST_CASE("cpu-math: in place and out=, the same values as a new result", "[cpu-math]") {
  std::vector<float> in = mathInputs<float>(mathCases()[0], 37, 5);
  Tensor x = tensorOf(in, {37});
  Values expected = read(dk::exp(x));
  Tensor y = tensorOf(in, {37});
  y.exp_();
  CHECK(sameValues(read(y), expected));
  Tensor half = make(Values(in.begin(), in.end()), {37}, kHalf);
  Values half_result = read(dk::exp(half));
  for (size_t i = 0; i < in.size(); ++i) {
    const float rounded = static_cast<float>(read(half)[i]);
    INFO("exp of half " << rounded);
    const double want = static_cast<double>(static_cast<float>(read(make({std::exp(rounded)}, {1}, kHalf))[0]));
    CHECK((half_result[i] == want || (std::isnan(half_result[i]) && std::isnan(want)) ||
           std::abs(half_result[i] - want) <= 1e-3 * std::abs(want)));
  }
}

// ---------------------------------------------------------------- BLAS layouts

namespace {

Values refProduct(const Values& a, const Values& b, int64_t m, int64_t k, int64_t n) {
  Values c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        c[static_cast<size_t>(i * n + j)] += a[static_cast<size_t>(i * k + p)] * b[static_cast<size_t>(p * n + j)];
  return c;
}

Values randomMatrix(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Values v(static_cast<size_t>(n));
  for (double& x : v) x = std::uniform_real_distribution<double>(-1, 1)(rng);
  return v;
}

// A (rows x cols) operand with the given values, in one of the layouts.
enum class Operand { Contiguous, Transposed, Sliced, Broadcast };

Tensor withLayout(const Values& v, int64_t rows, int64_t cols, Operand layout, ScalarType dtype) {
  switch (layout) {
    case Operand::Contiguous: return make(v, {rows, cols}, dtype);
    case Operand::Transposed: {
      Values tv(v.size());
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) tv[static_cast<size_t>(j * rows + i)] = v[static_cast<size_t>(i * cols + j)];
      return dk::t(make(tv, {cols, rows}, dtype));
    }
    case Operand::Sliced: {  // the first `cols` columns of a wider matrix: leading dimension > cols
      Values wide(static_cast<size_t>(rows * (cols + 3)), 7.0);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) wide[static_cast<size_t>(i * (cols + 3) + j)] = v[static_cast<size_t>(i * cols + j)];
      return dk::slice(make(wide, {rows, cols + 3}, dtype), 1, 0, cols, 1);
    }
    case Operand::Broadcast: break;
  }
  // Every row the same (stride 0): BLAS cannot read it in place.
  return ops::expand::call(make(Values(v.begin(), v.begin() + cols), {1, cols}, dtype), {rows, cols}, false);
}

Values valuesOf(const Values& v, int64_t rows, int64_t cols, Operand layout) {
  if (layout != Operand::Broadcast) return v;
  Values out;
  for (int64_t i = 0; i < rows; ++i) out.insert(out.end(), v.begin(), v.begin() + cols);
  return out;
}

void checkNear(const Values& got, const Values& expected, double tol) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(got[i] - expected[i]) <= tol * (1 + std::abs(expected[i])));
  }
}

}  // namespace

TEST_CASE("cpu-math: mm and addmm for every operand and output layout (float, double)", "[cpu-math][blas]") {
  const Operand layouts[] = {Operand::Contiguous, Operand::Transposed, Operand::Sliced, Operand::Broadcast};
  // 1 x n and n x 1 shapes have a dim whose stride does not matter.
  const int64_t shapes[][3] = {{17, 33, 9}, {1, 20, 5}, {6, 20, 1}, {5, 1, 4}};
  for (ScalarType dtype : {kFloat, kDouble}) {
    const double tol = dtype == kFloat ? 1e-5 : 1e-12;
    for (const auto& shape : shapes) {
      const int64_t m = shape[0], k = shape[1], n = shape[2];
      for (Operand la : layouts)
        for (Operand lb : layouts) {
          INFO(dtype << " " << m << "x" << k << "x" << n << " layouts " << static_cast<int>(la) << ", "
                     << static_cast<int>(lb));
          Values av = randomMatrix(m * k, 11), bv = randomMatrix(k * n, 12);
          Tensor a = withLayout(av, m, k, la, dtype), b = withLayout(bv, k, n, lb, dtype);
          Values expected = refProduct(valuesOf(av, m, k, la), valuesOf(bv, k, n, lb), m, k, n);
          checkNear(read(dk::mm(a, b)), expected, tol);
          // A transposed out= tensor: written through its strides.
          Tensor out_base = make(Values(static_cast<size_t>(m * n), 0), {n, m}, dtype);
          ops::mm_out::call(a, b, dk::t(out_base));
          checkNear(read(dk::t(out_base)), expected, tol);
          // addmm with a broadcast bias, alpha and beta.
          Values bias = randomMatrix(n, 13);
          Values with_bias(expected.size());
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
              with_bias[static_cast<size_t>(i * n + j)] =
                  0.5 * bias[static_cast<size_t>(j)] + 2 * expected[static_cast<size_t>(i * n + j)];
          checkNear(read(dk::addmm(make(bias, {n}, dtype), a, b, 0.5, 2)), with_bias, tol);
        }
    }
  }
}

TEST_CASE("cpu-math: products whose output is an input, and bmm over strided batches", "[cpu-math][blas]") {
  for (ScalarType dtype : {kFloat, kDouble}) {
    INFO(dtype);
    Values av = randomMatrix(64, 21), bv = randomMatrix(64, 22);
    Values expected = refProduct(av, bv, 8, 8, 8);
    // mm(a, b, out=a): a is read whole before it is written.
    Tensor a = make(av, {8, 8}, dtype), b = make(bv, {8, 8}, dtype);
    ops::mm_out::call(a, b, a);
    checkNear(read(a), expected, 1e-5);
    // addmm_ with self as mat2, and beta = 0 with NaNs in self.
    Tensor s = make(bv, {8, 8}, dtype);
    s.addmm_(make(av, {8, 8}, dtype), s, 0, 1);
    checkNear(read(s), expected, 1e-5);
    Tensor nan_self = make(Values(64, NAN), {8, 8}, dtype);
    checkNear(read(dk::addmm(nan_self, make(av, {8, 8}, dtype), make(bv, {8, 8}, dtype), 0, 1)), expected, 1e-5);
    // bmm of transposed batches into a transposed out.
    Values batches_a = randomMatrix(3 * 4 * 5, 23), batches_b = randomMatrix(3 * 5 * 6, 24);
    Tensor ba = dk::transpose(make(batches_a, {3, 5, 4}, dtype), 1, 2);  // [3, 4, 5]
    Tensor bb = make(batches_b, {3, 5, 6}, dtype);
    Tensor r = dk::bmm(ba, bb);
    for (int64_t batch = 0; batch < 3; ++batch) {
      Values a_batch(20), b_batch(batches_b.begin() + batch * 30, batches_b.begin() + (batch + 1) * 30);
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t p = 0; p < 5; ++p)
          a_batch[static_cast<size_t>(i * 5 + p)] = batches_a[static_cast<size_t>(batch * 20 + p * 4 + i)];
      Values want = refProduct(a_batch, b_batch, 4, 5, 6);
      Values got = read(r);
      checkNear(Values(got.begin() + batch * 24, got.begin() + (batch + 1) * 24), want, 1e-5);
    }
  }
}

TEST_CASE("cpu-math: softmax and sum by the vectorized line functions", "[cpu-math]") {
  for (ScalarType dtype : {kFloat, kDouble}) {
    INFO(dtype);
    for (int64_t cols : {1, 3, 8, 13, 64, 1027}) {
      INFO("row length " << cols);
      Values v = randomMatrix(5 * cols, static_cast<uint32_t>(cols));
      for (double& x : v) x *= 30;
      if (cols > 3) v[2] = NAN;  // a NaN in row 0: every output of that row is NaN
      Tensor rows = make(v, {5, cols}, dtype);
      // Over the last dim (lines read in place) and over dim 0 of the transpose (copied
      // lines): the same values.
      Tensor direct = dk::softmax(rows, 1);
      Tensor copied = dk::t(dk::softmax(dk::t(rows).contiguous(), 0));
      CHECK(sameValues(read(direct), read(copied)));
      CHECK(sameValues(read(dk::log_softmax(rows, 1)), read(dk::t(dk::log_softmax(dk::t(rows).contiguous(), 0)))));
      Values got = read(direct);
      for (int64_t r = 0; r < 5; ++r) {
        double max = -INFINITY, sum = 0;
        bool nan = false;
        for (int64_t j = 0; j < cols; ++j) {
          nan |= std::isnan(v[static_cast<size_t>(r * cols + j)]);
          max = std::max(max, v[static_cast<size_t>(r * cols + j)]);
        }
        for (int64_t j = 0; j < cols; ++j) sum += std::exp(v[static_cast<size_t>(r * cols + j)] - max);
        for (int64_t j = 0; j < cols; ++j) {
          const double want = nan ? NAN : std::exp(v[static_cast<size_t>(r * cols + j)] - max) / sum;
          const double g = got[static_cast<size_t>(r * cols + j)];
          INFO("row " << r << " column " << j);
          if (nan) CHECK(std::isnan(g));
          else CHECK(std::abs(g - want) <= 1e-5 * (want + 1e-30) + 1e-7);
        }
      }
    }
    // Full sums: every tail length, whole and partial blocks of 128, accumulated in double.
    for (int64_t n : {0, 1, 7, 15, 16, 17, 33, 127, 128, 129, 1000, 4099, 40001}) {
      Values v = randomMatrix(n, static_cast<uint32_t>(n + 3));
      double want = 0;
      for (double x : v) want += static_cast<double>(dtype == kFloat ? static_cast<float>(x) : x);
      const double got = read(dk::sum(make(v, {n}, dtype)))[0];
      INFO("n " << n);
      CHECK(std::abs(got - want) <= (dtype == kFloat ? 1e-4 : 1e-10) * (1 + std::abs(want)));
    }
  }
}

TEST_CASE("cpu-math: add and mul of contiguous runs, strided, broadcast and in place give exact values",
          "[cpu-math]") {
  // Contiguous float and double runs go whole to the vector forms (Note [Contiguous binary
  // runs]), other runs through the blocked loop; a + b and a * b are exact, so both give the
  // value computed in the dtype, at every tail length and across the threads' split.
  for (ScalarType dtype : {kFloat, kDouble}) {
    INFO(dtype);
    auto rounded = [&](double x) { return dtype == kFloat ? static_cast<double>(static_cast<float>(x)) : x; };
    for (int64_t n : {1, 7, 15, 16, 17, 33, 1000, 4099, 200003}) {
      INFO("n " << n);
      Values va = randomMatrix(n, static_cast<uint32_t>(n)), vb = randomMatrix(n, static_cast<uint32_t>(n + 1));
      Values want_add(va.size()), want_mul(va.size());
      for (size_t i = 0; i < va.size(); ++i) {
        want_add[i] = rounded(rounded(va[i]) + rounded(vb[i]));
        want_mul[i] = rounded(rounded(va[i]) * rounded(vb[i]));
      }
      Tensor a = make(va, {n}, dtype), b = make(vb, {n}, dtype);
      CHECK(read(dk::add(a, b)) == want_add);
      CHECK(read(dk::mul(a, b)) == want_mul);
      // Strided: every other element of a tensor twice as long.
      Values spread_a(static_cast<size_t>(2 * n)), spread_b(static_cast<size_t>(2 * n));
      for (size_t i = 0; i < va.size(); ++i) {
        spread_a[2 * i] = va[i];
        spread_b[2 * i] = vb[i];
      }
      Tensor sa = dk::slice(make(spread_a, {2 * n}, dtype), 0, 0, std::nullopt, 2);
      Tensor sb = dk::slice(make(spread_b, {2 * n}, dtype), 0, 0, std::nullopt, 2);
      CHECK(read(dk::add(sa, sb)) == want_add);
      CHECK(read(dk::mul(sa, b)) == want_mul);
      // In place: the output is the first input.
      Tensor inplace = make(va, {n}, dtype);
      dk::add_out(inplace, inplace, b);
      CHECK(read(inplace) == want_add);
      // Broadcast: a one-element second operand (stride 0).
      Tensor two = make({2.0}, {1}, dtype);
      Values doubled(va.size());
      for (size_t i = 0; i < va.size(); ++i) doubled[i] = rounded(rounded(va[i]) * 2);
      CHECK(read(dk::mul(a, two)) == doubled);
    }
  }
}
