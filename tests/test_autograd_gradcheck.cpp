// Gradcheck of every differentiable operator of schemas/native_functions.yaml: the gradients the
// generated autograd kernels (schemas/derivatives.yaml) compute must match central finite
// differences in float64 (dk/testing/gradcheck.h), for several shapes, with broadcasting, and with
// non-contiguous inputs (gradcheck itself repeats every check with the inputs laid out
// non-contiguously; some cases also pass a transposed leaf). Composite operators
// (CompositeImplicitAutograd: matmul, linear, softmax.int, cross_entropy_loss, reshape, ...)
// get their gradients through their decomposition, which is checked too.
//
// The first test case checks gradcheck itself on hand-written differentiable operations, so a
// broken checker cannot pass everything.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "dk/autograd/autograd.h"
#include "dk/core/generator.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/dispatch/dispatcher.h"
#include "dk/generated/ops/_log_softmax.h"
#include "dk/generated/ops/_softmax.h"
#include "dk/generated/ops/_to_copy.h"
#include "dk/generated/ops/abs.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/addmm.h"
#include "dk/generated/ops/baddbmm.h"
#include "dk/generated/ops/layer_norm.h"
#include "dk/generated/ops/triu.h"
#include "dk/generated/ops/cumsum.h"
#include "dk/generated/ops/_scaled_dot_product_attention.h"
#include "dk/generated/ops/avg_pool2d.h"
#include "dk/generated/ops/batch_norm.h"
#include "dk/generated/ops/col2im.h"
#include "dk/generated/ops/conv1d.h"
#include "dk/generated/ops/conv2d.h"
#include "dk/generated/ops/convolution.h"
#include "dk/generated/ops/im2col.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/max_pool2d.h"
#include "dk/generated/ops/gather.h"
#include "dk/generated/ops/index.h"
#include "dk/generated/ops/index_put.h"
#include "dk/generated/ops/index_select.h"
#include "dk/generated/ops/scatter_add.h"
#include "dk/generated/ops/sort.h"
#include "dk/generated/ops/topk.h"
#include "dk/generated/ops/zeros_like.h"
#include "dk/generated/ops/bmm.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/clamp.h"
#include "dk/generated/ops/clone.h"
#include "dk/generated/ops/cos.h"
#include "dk/generated/ops/cross_entropy_loss.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/dropout.h"
#include "dk/generated/ops/embedding.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/exp.h"
#include "dk/generated/ops/flatten.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/gelu.h"
#include "dk/generated/ops/linear.h"
#include "dk/generated/ops/log.h"
#include "dk/generated/ops/log_softmax.h"
#include "dk/generated/ops/matmul.h"
#include "dk/generated/ops/max.h"
#include "dk/generated/ops/min.h"
#include "dk/generated/ops/maximum.h"
#include "dk/generated/ops/mean.h"
#include "dk/generated/ops/minimum.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mse_loss.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/neg.h"
#include "dk/generated/ops/nll_loss.h"
#include "dk/generated/ops/permute.h"
#include "dk/generated/ops/pow.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/reshape.h"
#include "dk/generated/ops/rsqrt.h"
#include "dk/generated/ops/select.h"
#include "dk/generated/ops/sigmoid.h"
#include "dk/generated/ops/sin.h"
#include "dk/generated/ops/slice.h"
#include "dk/generated/ops/softmax.h"
#include "dk/generated/ops/split.h"
#include "dk/generated/ops/sqrt.h"
#include "dk/generated/ops/squeeze.h"
#include "dk/generated/ops/stack.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/t.h"
#include "dk/generated/ops/tanh.h"
#include "dk/generated/ops/transpose.h"
#include "dk/generated/ops/unbind.h"
#include "dk/generated/ops/unsqueeze.h"
#include "dk/generated/ops/where.h"
#include "dk/generated/ops/zero.h"
#include "dk/generated/ops/zeros.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/util/error.h"
#include "dk/testing/gradcheck.h"

using namespace dk;
using dk::testing::double_tensor;
using dk::testing::GradcheckOptions;
using dk::testing::to_doubles;
using Inputs = std::vector<Tensor>;

// A failed gradcheck reports its message at the caller's line and the test case goes on.
#define GRADCHECK(...)                                           \
  do {                                                           \
    auto gradcheck_result_ = ::dk::testing::gradcheck(__VA_ARGS__); \
    if (!gradcheck_result_.ok) {                                 \
      FAIL_CHECK(gradcheck_result_.message);                     \
    } else {                                                     \
      SUCCEED();                                                 \
    }                                                            \
  } while (0)

#define GRADCHECK_MULTI(...)                                           \
  do {                                                                 \
    auto gradcheck_result_ = ::dk::testing::gradcheck_multi(__VA_ARGS__); \
    if (!gradcheck_result_.ok) {                                       \
      FAIL_CHECK(gradcheck_result_.message);                           \
    } else {                                                           \
      SUCCEED();                                                       \
    }                                                                  \
  } while (0)

namespace {

using Sizes = std::vector<int64_t>;

int64_t numelOf(const Sizes& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// N(0, 1) values from dk::randn with a fixed generator, so every run sees the same inputs.
std::vector<double> normal(int64_t n, uint64_t seed) {
  Generator gen(seed);
  return to_doubles(dk::randn({n}, gen, kDouble));
}

Tensor leafFrom(const Sizes& sizes, const std::vector<double>& values) {
  Tensor t = double_tensor(sizes, values);
  t.requires_grad_();
  return t;
}

// A float64 leaf that requires grad, N(0, 1) values.
Tensor leaf(const Sizes& sizes, uint64_t seed) { return leafFrom(sizes, normal(numelOf(sizes), seed)); }

// Values at least `margin` away from 0 (abs, relu, and divisors have a kink or pole there).
std::vector<double> awayFromZero(int64_t n, uint64_t seed, double margin = 0.2) {
  std::vector<double> v = normal(n, seed);
  for (double& x : v) x += x >= 0 ? margin : -margin;
  return v;
}

// Values in [0.5, inf): log, sqrt, rsqrt and fractional powers.
std::vector<double> positive(int64_t n, uint64_t seed) {
  std::vector<double> v = normal(n, seed);
  for (double& x : v) x = 0.5 + std::fabs(x);
  return v;
}

// Distinct values, at least 0.5 apart (max.dim picks a unique maximum).
std::vector<double> distinct(int64_t n, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.5 * static_cast<double>(i) - 1.0;
  std::shuffle(v.begin(), v.end(), std::mt19937(static_cast<unsigned>(seed)));
  return v;
}

// A non-contiguous leaf: a [cols, rows] tensor transposed to [rows, cols], then made to require
// grad (it is a view of a tensor that does not, so it is a leaf).
Tensor transposedLeaf(int64_t rows, int64_t cols, const std::vector<double>& values) {
  Tensor base = double_tensor({cols, rows}, values);
  Tensor t = base.t();
  t.requires_grad_();
  return t;
}
Tensor transposedLeaf(int64_t rows, int64_t cols, uint64_t seed) {
  return transposedLeaf(rows, cols, normal(rows * cols, seed));
}

Tensor longs(const Sizes& sizes, const std::vector<int64_t>& values) {
  Tensor t = dk::empty(sizes, kLong);
  REQUIRE(static_cast<size_t>(t.numel()) == values.size());
  std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
  return t;
}

std::string str(const Sizes& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

struct ShapePair {
  Sizes a, b;
};
// Same shapes, and the broadcasting cases: trailing dims, size-1 dims on both sides, 0-dim.
const std::vector<ShapePair> kBinaryShapes = {
    {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{3}, {2, 3}}, {{}, {2, 3}}, {{2, 3, 4}, {3, 1}}, {{4}, {}},
};

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

// gradcheck of fn(a, b) over kBinaryShapes and a transposed leaf; `values` makes the inputs'
// values (0: a, 1: b) from a count and a seed.
template <class Fn, class Values>
void checkBinary(Fn fn, Values values) {
  uint64_t seed = 1;
  for (const ShapePair& shapes : kBinaryShapes) {
    INFO("shapes " << str(shapes.a) << " and " << str(shapes.b));
    Tensor a = leafFrom(shapes.a, values(0, numelOf(shapes.a), seed++));
    Tensor b = leafFrom(shapes.b, values(1, numelOf(shapes.b), seed++));
    GRADCHECK([&](const Inputs& in) { return fn(in[0], in[1]); }, {a, b});
  }
  {
    INFO("a transposed [3, 2] leaf and a [3, 2] leaf");
    Tensor a = transposedLeaf(3, 2, values(0, 6, seed++));
    Tensor b = leafFrom({3, 2}, values(1, 6, seed++));
    GRADCHECK([&](const Inputs& in) { return fn(in[0], in[1]); }, {a, b});
  }
  {
    INFO("only the first input requires grad");
    Tensor a = leafFrom({2, 3}, values(0, 6, seed++));
    Tensor b = double_tensor({3}, values(1, 3, seed++));
    GRADCHECK([&](const Inputs& in) { return fn(in[0], in[1]); }, {a, b});
  }
  {
    INFO("only the second input requires grad");
    Tensor a = double_tensor({2, 3}, values(0, 6, seed++));
    Tensor b = leafFrom({3}, values(1, 3, seed++));
    GRADCHECK([&](const Inputs& in) { return fn(in[0], in[1]); }, {a, b});
  }
}

auto normalValues = [](int, int64_t n, uint64_t seed) { return normal(n, seed); };

// gradcheck of a unary fn over several shapes (0-dim included) and a transposed leaf.
template <class Fn>
void checkUnary(Fn fn, std::vector<double> (*values)(int64_t, uint64_t)) {
  uint64_t seed = 100;
  for (const Sizes& sizes : std::vector<Sizes>{{2, 3}, {5}, {}, {2, 3, 2}}) {
    INFO("shape " << str(sizes));
    GRADCHECK([&](const Inputs& in) { return fn(in[0]); }, {leafFrom(sizes, values(numelOf(sizes), seed++))});
  }
  INFO("a transposed [3, 4] leaf");
  GRADCHECK([&](const Inputs& in) { return fn(in[0]); }, {transposedLeaf(3, 4, values(12, seed++))});
}

std::vector<double> normalSeq(int64_t n, uint64_t seed) { return normal(n, seed); }
std::vector<double> awayFromZeroSeq(int64_t n, uint64_t seed) { return awayFromZero(n, seed); }
std::vector<double> positiveSeq(int64_t n, uint64_t seed) { return positive(n, seed); }

// ---- hand-written differentiable operations for checking gradcheck itself (they compute
// their forward below autograd and record their own node, as the engine tests do).

class ScaleBackward final : public autograd::Node {
 public:
  explicit ScaleBackward(double factor) : factor_(factor) {}
  autograd::variable_list apply(autograd::variable_list grads) override {
    const Tensor& g = grads.at(0);
    AutoDispatchBelowADInplaceOrView below;
    return {dk::mul(g, dk::full(g.sizes(), factor_, g.dtype()))};
  }

 private:
  double factor_;
};

// y = 3 x, whose backward multiplies by `backward_factor` (3 is right, anything else wrong).
// With `ignore_strides` the forward reads x's memory as if it were contiguous (a layout bug).
Tensor tripled(const Tensor& x, double backward_factor, bool ignore_strides = false) {
  Tensor out;
  if (ignore_strides) {
    std::vector<double> v(static_cast<size_t>(x.numel()));
    const double* data = x.data_ptr<double>();
    for (size_t k = 0; k < v.size(); ++k) v[k] = 3 * data[k];
    out = double_tensor(x.sizes(), v);
  } else {
    AutoDispatchBelowADInplaceOrView below;
    out = dk::mul(x, dk::full(x.sizes(), 3.0, x.dtype()));
  }
  if (autograd::compute_requires_grad(x)) {
    auto node = std::make_shared<ScaleBackward>(backward_factor);
    node->set_next_edges(autograd::collect_next_edges(x));
    autograd::set_history(out, node);
  }
  return out;
}

OperatorHandle op(const char* name, const char* overload) {
  return Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

}  // namespace

// ===================================================================== gradcheck itself

TEST_CASE("gradcheck passes a correct derivative and reports a wrong one with both values") {
  Tensor x = leaf({2, 3}, 7);
  auto right = dk::testing::gradcheck([](const Inputs& in) { return tripled(in[0], 3.0); }, {x});
  INFO(right.message);
  CHECK(right.ok);

  auto wrong = dk::testing::gradcheck([](const Inputs& in) { return tripled(in[0], 2.0); }, {x});
  CHECK_FALSE(wrong.ok);
  CHECK_THAT(wrong.message, Catch::Contains("Jacobian mismatch: 6 entries differ"));
  CHECK_THAT(wrong.message,
             Catch::Contains("input 0 (Double [2, 3]) element [0, 0], output 0 (Double [2, 3]) element [0, 0]: "
                             "analytical 2, numerical 3"));
  CHECK_THAT(wrong.message, Catch::Contains("element [1, 2]"));  // the last entry, not only the first

  // Elements off the diagonal of the Jacobian are compared too: a node that returns the right
  // values at the wrong places fails.
  auto transposed_grad = dk::testing::gradcheck(
      [](const Inputs& in) {
        Tensor out;
        {
          AutoDispatchBelowADInplaceOrView below;
          out = dk::mul(in[0], dk::full(in[0].sizes(), 3.0, kDouble));
        }
        struct FlipBackward final : autograd::Node {
          autograd::variable_list apply(autograd::variable_list grads) override {
            std::vector<double> g = to_doubles(grads.at(0));
            std::reverse(g.begin(), g.end());
            for (double& v : g) v *= 3;
            return {double_tensor(grads.at(0).sizes(), g)};
          }
        };
        auto node = std::make_shared<FlipBackward>();
        node->set_next_edges(autograd::collect_next_edges(in[0]));
        autograd::set_history(out, node);
        return out;
      },
      {leaf({3}, 8)});
  CHECK_FALSE(transposed_grad.ok);
  CHECK_THAT(transposed_grad.message, Catch::Contains("analytical 0, numerical 3"));
}

TEST_CASE("gradcheck reports an output without gradient history") {
  auto r = dk::testing::gradcheck([](const Inputs& in) { return double_tensor(in[0].sizes(), to_doubles(in[0])); },
                               {leaf({2}, 9)});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Catch::Contains("does not require grad although an input does"));
}

TEST_CASE("gradcheck catches a forward that ignores strides, through its non-contiguous run") {
  Tensor x = leaf({2, 3}, 10);
  auto r = dk::testing::gradcheck([](const Inputs& in) { return tripled(in[0], 3.0, /*ignore_strides=*/true); }, {x});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Catch::Contains("with non-contiguous inputs"));
  // The same function passes when the layout check is off: the failure came from the layout.
  GradcheckOptions contiguous_only;
  contiguous_only.check_noncontiguous = false;
  auto r2 = dk::testing::gradcheck([](const Inputs& in) { return tripled(in[0], 3.0, true); }, {x}, contiguous_only);
  INFO(r2.message);
  CHECK(r2.ok);
}

TEST_CASE("gradcheck refuses inputs it cannot perturb or that lack precision") {
  Tensor f = dk::randn({2}, kFloat);
  f.requires_grad_();
  auto r = dk::testing::gradcheck([](const Inputs& in) { return in[0]; }, {f});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Catch::Contains("is not float64"));

  Tensor expanded = double_tensor({3, 1}, {1, 2, 3}).expand({3, 4});
  auto r2 = dk::testing::gradcheck([](const Inputs& in) { return in[0]; }, {expanded});
  CHECK_FALSE(r2.ok);
  CHECK_THAT(r2.message, Catch::Contains("overlapping memory"));
}

TEST_CASE("gradcheck helpers: strided reads and non-contiguous copies") {
  Tensor base = double_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(to_doubles(base.t()) == std::vector<double>{1, 4, 2, 5, 3, 6});
  Tensor nc = dk::testing::noncontiguous_copy(base);
  CHECK_FALSE(nc.is_contiguous());
  CHECK(nc.sizes() == base.sizes());
  CHECK(to_doubles(nc) == to_doubles(base));
  CHECK(dk::testing::index_string({2, 3, 4}, 23) == "[1, 2, 3]");
}

TEST_CASE("gradgradcheck: second derivatives of backward's own graph") {
  SECTION("correct second derivatives pass, for inputs and grad_outputs") {
    for (auto fn : {+[](const Inputs& in) { return dk::tanh(in[0]); },
                    +[](const Inputs& in) { return dk::mul(in[0], in[1]); },
                    +[](const Inputs& in) { return dk::mm(in[0], in[1]); }}) {
      auto r = dk::testing::gradgradcheck(fn, {leaf({2, 2}, 21), leaf({2, 2}, 22)});
      INFO(r.message);
      CHECK(r.ok);
      CHECK(r.message.empty());
    }
  }
  SECTION("a piecewise-linear gradient passes") {
    // relu's gradient is grad * (x > 0): linear in grad, whose graph is checked against
    // grad_output; d/dx is zero away from 0.
    auto r = dk::testing::gradgradcheck([](const Inputs& in) { return dk::relu(in[0]); },
                                        {leafFrom({4}, {-1.5, -0.5, 0.5, 1.5})});
    INFO(r.message);
    CHECK(r.ok);
  }
  SECTION("a backward computed out of autograd's sight fails") {
    // tripled's backward multiplies below autograd: right first derivatives, but the gradient
    // records no graph although it changes with grad_output.
    Tensor x = leaf({3}, 23);
    REQUIRE(dk::testing::gradcheck([](const Inputs& in) { return tripled(in[0], 3.0); }, {x}).ok);
    auto r = dk::testing::gradgradcheck([](const Inputs& in) { return tripled(in[0], 3.0); }, {x});
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.message, Catch::Matchers::StartsWith(
                              "double backward: the gradient of input 0 (Double [3]) does not require grad, so backward "
                              "recorded no graph for it, but element [0] changes with grad_output 0 element [0] "
                              "(numerical derivative 3"));
  }
  SECTION("a wrong second derivative is reported with both values") {
    // d/dx (x^2) = 2x computed as 2 * x.detach(): d2/dx2 is 0 instead of 2.
    struct SquareBackward final : autograd::Node {
      Tensor x;
      autograd::variable_list apply(autograd::variable_list grads) override {
        return {dk::mul(grads.at(0), dk::mul(x.detach(), 2.0))};
      }
    };
    auto square = [](const Inputs& in) {
      Tensor out;
      {
        AutoDispatchBelowADInplaceOrView below;
        out = dk::mul(in[0], in[0]);
      }
      auto node = std::make_shared<SquareBackward>();
      node->x = in[0];
      node->set_next_edges(autograd::collect_next_edges(in[0]));
      autograd::set_history(out, node);
      return out;
    };
    Tensor x = leafFrom({2}, {0.5, -1.0});
    REQUIRE(dk::testing::gradcheck(square, {x}).ok);
    auto r = dk::testing::gradgradcheck(square, {x});
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.message, Catch::Matchers::StartsWith("double backward: Jacobian mismatch: 2 entries differ\n  input 0 "
                                                      "(Double [2]) element [0], output 0 (Double [2]) element [0]: "
                                                      "analytical 0, numerical "));
  }
}

// ===================================================================== binary arithmetic

TEST_CASE("gradcheck: add.Tensor and sub.Tensor, alpha != 1, with broadcasting") {
  checkBinary([](const Tensor& a, const Tensor& b) { return dk::add(a, b); }, normalValues);
  checkBinary([](const Tensor& a, const Tensor& b) { return dk::add(a, b, 2.5); }, normalValues);
  checkBinary([](const Tensor& a, const Tensor& b) { return dk::sub(a, b); }, normalValues);
  checkBinary([](const Tensor& a, const Tensor& b) { return dk::sub(a, b, -0.5); }, normalValues);
}

TEST_CASE("gradcheck: mul.Tensor and div.Tensor with broadcasting") {
  checkBinary([](const Tensor& a, const Tensor& b) { return dk::mul(a, b); }, normalValues);
  checkBinary([](const Tensor& a, const Tensor& b) { return dk::div(a, b); },
              [](int which, int64_t n, uint64_t seed) { return which == 1 ? positive(n, seed) : normal(n, seed); });
  // A negative divisor too (the formula's sign).
  checkBinary(
      [](const Tensor& a, const Tensor& b) { return dk::div(a, b); },
      [](int which, int64_t n, uint64_t seed) { return which == 1 ? awayFromZero(n, seed, 0.5) : normal(n, seed); });
  // The same tensor on both sides: both gradients arrive at one leaf and add up.
  GRADCHECK([](const Inputs& in) { return dk::mul(in[0], in[0]); }, {leaf({2, 3}, 11)});
}

TEST_CASE("gradcheck: add/sub/mul/div with a Scalar") {
  checkUnary([](const Tensor& x) { return dk::add(x, Scalar(2.5)); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::add(x, Scalar(2.5), Scalar(-3.0)); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::sub(x, Scalar(1.5)); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::sub(x, Scalar(1.5), Scalar(2.0)); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::mul(x, Scalar(-1.75)); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::div(x, Scalar(0.4)); }, normalSeq);
}

TEST_CASE("gradcheck: pow.Tensor_Scalar") {
  checkUnary([](const Tensor& x) { return dk::pow(x, Scalar(2.0)); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::pow(x, Scalar(int64_t{3})); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::pow(x, Scalar(0.5)); }, positiveSeq);
  checkUnary([](const Tensor& x) { return dk::pow(x, Scalar(-1.5)); }, positiveSeq);
  checkUnary([](const Tensor& x) { return dk::pow(x, Scalar(0.0)); }, normalSeq);  // gradient 0
}

TEST_CASE("gradcheck: maximum and minimum, no ties") {
  // a = integer + 0.3 (+-0.1), b = integer - 0.3 (+-0.1): |a - b| >= 0.2 for every pair, so
  // no broadcast combination ties and the finite differences never cross the kink.
  auto values = [](int which, int64_t n, uint64_t seed) {
    std::vector<double> v = normal(n, seed);
    std::vector<double> noise = normal(n, seed + 1000);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = std::round(2 * v[i]) + (which == 0 ? 0.3 : -0.3) + 0.1 * std::tanh(noise[i]);
    return v;
  };
  checkBinary([](const Tensor& a, const Tensor& b) { return dk::maximum(a, b); }, values);
  checkBinary([](const Tensor& a, const Tensor& b) { return dk::minimum(a, b); }, values);
}

TEST_CASE("gradcheck: where.self") {
  Tensor cond = dk::tensor({{true, false, true}, {false, false, true}});
  GRADCHECK([&](const Inputs& in) { return dk::where(cond, in[0], in[1]); }, {leaf({2, 3}, 12), leaf({2, 3}, 13)});
  // Broadcasting of both values against the condition.
  GRADCHECK([&](const Inputs& in) { return dk::where(cond, in[0], in[1]); }, {leaf({3}, 14), leaf({2, 1}, 15)});
  // A 0-dim value, and the condition as an input (passed through, never perturbed).
  GRADCHECK([](const Inputs& in) { return dk::where(in[0], in[1], in[2]); }, {cond, leaf({}, 16), leaf({2, 3}, 17)});
  // Only `other` requires grad.
  GRADCHECK([&](const Inputs& in) { return dk::where(cond, in[0], in[1]); },
            {double_tensor({2, 3}, normal(6, 18)), leaf({2, 3}, 19)});
}

// ===================================================================== unary

TEST_CASE("gradcheck: neg, abs, exp, log, sqrt, rsqrt") {
  checkUnary([](const Tensor& x) { return dk::neg(x); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::abs(x); }, awayFromZeroSeq);
  checkUnary([](const Tensor& x) { return dk::exp(x); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::log(x); }, positiveSeq);
  checkUnary([](const Tensor& x) { return dk::sqrt(x); }, positiveSeq);
  checkUnary([](const Tensor& x) { return dk::rsqrt(x); }, positiveSeq);
}

TEST_CASE("gradcheck: sin, cos, tanh, sigmoid") {
  checkUnary([](const Tensor& x) { return dk::sin(x); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::cos(x); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::tanh(x); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::sigmoid(x); }, normalSeq);
}

TEST_CASE("gradcheck: relu and gelu (none and tanh)") {
  checkUnary([](const Tensor& x) { return dk::relu(x); }, awayFromZeroSeq);
  checkUnary([](const Tensor& x) { return dk::gelu(x); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::gelu(x, "none"); }, normalSeq);
  checkUnary([](const Tensor& x) { return dk::gelu(x, "tanh"); }, normalSeq);
}

TEST_CASE("gradcheck: clamp with min, max and both, values away from the bounds") {
  // Values in [-2, 2] at least 0.1 from the bounds -0.5 and 0.5: some inside, some clamped.
  auto values = [](int64_t n, uint64_t seed) {
    std::vector<double> v = normal(n, seed);
    for (double& x : v) {
      x = 2 * std::tanh(x);
      for (double bound : {-0.5, 0.5}) {
        if (std::fabs(x - bound) < 0.1) x = bound + (x >= bound ? 0.1 : -0.1);
      }
    }
    return v;
  };
  checkUnary([](const Tensor& x) { return dk::clamp(x, Scalar(-0.5), Scalar(0.5)); }, +values);
  checkUnary([](const Tensor& x) { return dk::clamp(x, Scalar(-0.5)); }, +values);
  checkUnary([](const Tensor& x) { return dk::clamp(x, std::nullopt, Scalar(0.5)); }, +values);
  // Inputs that straddle the bounds really do get a zero gradient where clamped.
  Tensor x = leafFrom({4}, {-1.0, -0.2, 0.3, 1.5});
  dk::clamp(x, Scalar(-0.5), Scalar(0.5)).sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(to_doubles(x.grad()) == std::vector<double>{0, 1, 1, 0});
}

// ===================================================================== reductions

TEST_CASE("gradcheck: sum, sum.dim_IntList (keepdim both ways), mean.dim") {
  for (const Sizes& sizes : std::vector<Sizes>{{2, 3}, {2, 3, 4}, {5}, {}}) {
    INFO("shape " << str(sizes));
    GRADCHECK([](const Inputs& in) { return dk::sum(in[0]); }, {leaf(sizes, 20)});
  }
  GRADCHECK([](const Inputs& in) { return dk::sum(in[0]); }, {transposedLeaf(3, 2, 21)});
  for (bool keepdim : {false, true}) {
    INFO("keepdim " << keepdim);
    GRADCHECK([&](const Inputs& in) { return dk::sum(in[0], {1}, keepdim); }, {leaf({2, 3, 4}, 22)});
    GRADCHECK([&](const Inputs& in) { return dk::sum(in[0], {0, 2}, keepdim); }, {leaf({2, 3, 4}, 23)});
    GRADCHECK([&](const Inputs& in) { return dk::sum(in[0], {-1}, keepdim); }, {transposedLeaf(3, 4, 24)});
    GRADCHECK([&](const Inputs& in) { return dk::mean(in[0], {1}, keepdim); }, {leaf({2, 3, 4}, 25)});
    GRADCHECK([&](const Inputs& in) { return dk::mean(in[0], {0, 2}, keepdim); }, {leaf({2, 3, 4}, 26)});
    GRADCHECK([&](const Inputs& in) { return dk::mean(in[0], {0}, keepdim); }, {transposedLeaf(3, 4, 27)});
  }
}

TEST_CASE("gradcheck: max.dim values (indices are not differentiable)") {
  for (bool keepdim : {false, true}) {
    for (int64_t dim : {0, 1, -1}) {
      INFO("dim " << dim << " keepdim " << keepdim);
      // Both outputs: the values are checked, the Long indices skipped.
      GRADCHECK_MULTI(
          [&](const Inputs& in) {
            auto [values, indices] = dk::max(in[0], dim, keepdim);
            return std::vector<Tensor>{values, indices};
          },
          {leafFrom({3, 4}, distinct(12, 30 + static_cast<uint64_t>(dim)))});
      GRADCHECK([&](const Inputs& in) { return std::get<0>(dk::max(in[0], dim, keepdim)); },
                {transposedLeaf(3, 4, distinct(12, 40))});
    }
  }
  GRADCHECK([](const Inputs& in) { return std::get<0>(dk::max(in[0], 1)); }, {leafFrom({2, 3, 2}, distinct(12, 50))});
}

TEST_CASE("gradcheck: the composites narrow, chunk, repeat, masked_fill, var, std, baddbmm") {
  GRADCHECK([](const Inputs& in) { return in[0].narrow(1, 1, 2); }, {leaf({3, 4}, 100)});
  GRADCHECK([](const Inputs& in) { return in[0].chunk(3, 1)[1]; }, {transposedLeaf(3, 5, 101)});
  GRADCHECK([](const Inputs& in) { return in[0].repeat({2, 1, 3}); }, {leaf({2, 2}, 102)});
  GRADCHECK([](const Inputs& in) { return in[0].masked_fill(in[1].gt(dk::zeros_like(in[1])).detach(), 0.5); },
            {leaf({3, 4}, 103), leaf({4}, 104)});
  GRADCHECK([](const Inputs& in) { return in[0].var(); }, {leaf({3, 4}, 105)});
  GRADCHECK([](const Inputs& in) { return in[0].var({1}, false, true); }, {transposedLeaf(3, 4, 106)});
  GRADCHECK([](const Inputs& in) { return in[0].std({0}); }, {leaf({3, 4}, 107)});
  GRADCHECK([](const Inputs& in) { return dk::baddbmm(in[0], in[1], in[2], 0.5, 2); },
            {leaf({2, 3, 2}, 108), leaf({2, 3, 4}, 109), leaf({2, 4, 2}, 110)});
  GRADCHECK([](const Inputs& in) { return in[0].tril(1); }, {leaf({3, 4}, 111)});
  GRADCHECK([](const Inputs& in) { return dk::triu(in[0], -1); }, {transposedLeaf(3, 4, 112)});
  GRADCHECK([](const Inputs& in) { return dk::layer_norm(in[0], {4}, in[1], in[2]); },
            {leaf({3, 4}, 113), leaf({4}, 114), leaf({4}, 115)});
  GRADCHECK([](const Inputs& in) { return dk::layer_norm(in[0], {2, 2}); }, {leaf({3, 2, 2}, 116)});
  // Only some of input, weight and bias require grad: the fused backward computes what is asked.
  GRADCHECK([](const Inputs& in) { return dk::layer_norm(in[0], {4}, in[1], in[2]); },
            {double_tensor({3, 4}, normal(12, 117)), leaf({4}, 118), double_tensor({4}, normal(4, 119))});
  GRADCHECK([](const Inputs& in) { return dk::layer_norm(in[0], {4}, in[1], in[2]); },
            {leaf({2, 3, 4}, 120), double_tensor({4}, normal(4, 121)), leaf({4}, 122)});
}

TEST_CASE("gradcheck: min.dim values, and the full max() and min()") {
  for (bool keepdim : {false, true}) {
    for (int64_t dim : {0, 1, -1}) {
      INFO("dim " << dim << " keepdim " << keepdim);
      GRADCHECK([&](const Inputs& in) { return std::get<0>(dk::min(in[0], dim, keepdim)); },
                {leafFrom({3, 4}, distinct(12, 70 + static_cast<uint64_t>(dim)))});
      GRADCHECK([&](const Inputs& in) { return std::get<0>(dk::min(in[0], dim, keepdim)); },
                {transposedLeaf(3, 4, distinct(12, 80))});
    }
  }
  GRADCHECK([](const Inputs& in) { return dk::max(in[0]); }, {leafFrom({3, 4}, distinct(12, 90))});
  GRADCHECK([](const Inputs& in) { return dk::min(in[0]); }, {transposedLeaf(3, 4, distinct(12, 91))});
  GRADCHECK([](const Inputs& in) { return in[0].max(); }, {leafFrom({5}, distinct(5, 92))});
}

// ===================================================================== indexing, scans, sorting

TEST_CASE("gradcheck: index_select, gather, scatter_add and cumsum") {
  // Repeated indices: their gradients add up.
  GRADCHECK([](const Inputs& in) { return dk::index_select(in[0], 0, longs({4}, {2, 0, 2, 1})); }, {leaf({3, 4}, 400)});
  GRADCHECK([](const Inputs& in) { return in[0].index_select(1, longs({2}, {3, 3})); }, {transposedLeaf(3, 4, 401)});
  GRADCHECK([](const Inputs& in) { return dk::gather(in[0], 1, longs({3, 2}, {0, 0, 3, 1, 2, 2})); },
            {leaf({3, 4}, 402)});
  GRADCHECK([](const Inputs& in) { return dk::gather(in[0], 0, longs({2, 3}, {2, 0, 1, 2, 2, 2})); },
            {transposedLeaf(3, 4, 403)});
  // Both self and src get gradients; the index picks where src's lands.
  GRADCHECK([](const Inputs& in) { return dk::scatter_add(in[0], 1, longs({2, 3}, {0, 0, 3, 2, 1, 2}), in[1]); },
            {leaf({2, 4}, 404), leaf({2, 3}, 405)});
  GRADCHECK([](const Inputs& in) { return dk::scatter_add(in[0], 0, longs({2, 3}, {2, 0, 1, 1, 2, 2}), in[1]); },
            {leaf({3, 3}, 406), transposedLeaf(2, 3, 407)});
  {
    // As in PyTorch, src's gradient has the index's shape, so a src larger than the index
    // cannot take it.
    Tensor self = leaf({3, 2}, 4060), src = leaf({2, 3}, 4061);
    Tensor r = dk::scatter_add(self, 0, longs({1, 2}, {2, 0}), src);
    CHECK_THROWS_WITH(dk::sum(r).backward(), "Function ScatterAddBackward0 returned an invalid gradient at index 1 - "
                                             "got [1, 2] but expected shape compatible with [2, 3]");
  }
  for (int64_t dim : {0, 1, -1}) {
    INFO("dim " << dim);
    GRADCHECK([&](const Inputs& in) { return dk::cumsum(in[0], dim); }, {leaf({3, 4}, 408)});
    GRADCHECK([&](const Inputs& in) { return in[0].cumsum(dim); }, {transposedLeaf(3, 4, 409)});
  }
  GRADCHECK([](const Inputs& in) { return dk::cumsum(in[0], 0); }, {leaf({}, 410)});
}

TEST_CASE("gradcheck: advanced indexing (index.Tensor, index_put)") {
  GRADCHECK([](const Inputs& in) { return dk::index(in[0], {longs({3}, {2, 0, 2}), std::nullopt, longs({1}, {1})}); },
            {leaf({3, 2, 4}, 450)});
  GRADCHECK([](const Inputs& in) { return dk::index(in[0], {std::nullopt, longs({2, 1}, {1, 0})}); },
            {transposedLeaf(3, 4, 451)});
  // Both self (where not overwritten) and values get gradients; accumulate keeps all of self's.
  GRADCHECK([](const Inputs& in) { return dk::index_put(in[0], {longs({2}, {2, 0})}, in[1]); },
            {leaf({3, 4}, 452), leaf({2, 4}, 453)});
  GRADCHECK([](const Inputs& in) { return dk::index_put(in[0], {longs({2}, {1, 1}), longs({2}, {0, 3})}, in[1], true); },
            {leaf({3, 4}, 454), leaf({2}, 455)});
}

TEST_CASE("gradcheck: sort and topk values") {
  for (bool descending : {false, true}) {
    for (int64_t dim : {0, 1}) {
      INFO("dim " << dim << " descending " << descending);
      GRADCHECK([&](const Inputs& in) { return std::get<0>(dk::sort(in[0], dim, descending)); },
                {leafFrom({3, 4}, distinct(12, 411))});
      GRADCHECK([&](const Inputs& in) { return std::get<0>(dk::topk(in[0], 2, dim, !descending)); },
                {transposedLeaf(3, 4, distinct(12, 412))});
    }
  }
}

// ===================================================================== CNN and transformer layers

TEST_CASE("gradcheck: im2col, col2im and convolutions") {
  GRADCHECK([](const Inputs& in) { return dk::im2col(in[0], {2, 3}, {1, 2}, {1, 0}, {2, 1}); }, {leaf({2, 2, 4, 5}, 420)});
  GRADCHECK([](const Inputs& in) { return dk::col2im(in[0], {4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}); },
            {leaf({1, 8, 9}, 421)});
  // Strided, padded, dilated and grouped, with a bias.
  GRADCHECK([](const Inputs& in) { return dk::conv2d(in[0], in[1], in[2], {2, 1}, {1, 2}, {1, 2}, 2); },
            {leaf({2, 4, 5, 6}, 422), leaf({6, 2, 3, 3}, 423), leaf({6}, 424)});
  GRADCHECK([](const Inputs& in) { return dk::conv1d(in[0], in[1], std::nullopt, {2}, {1}); },
            {leaf({2, 3, 7}, 425), leaf({4, 3, 2}, 426)});
  GRADCHECK([](const Inputs& in) {
              return dk::convolution(in[0], in[1], in[2], {2, 2}, {1, 1}, {1, 1}, true, {1, 1}, 1);
            },
            {leaf({1, 4, 3, 3}, 427), leaf({4, 3, 3, 2}, 428), leaf({3}, 429)});
}

TEST_CASE("gradcheck: pooling, batch_norm and attention") {
  // Distinct values, so that no window has a tie for its maximum.
  GRADCHECK([](const Inputs& in) { return dk::max_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, {1, 1}, true); },
            {leafFrom({1, 2, 6, 6}, distinct(72, 430))});
  GRADCHECK([](const Inputs& in) { return dk::max_pool2d(in[0], {2, 2}, {1, 1}); },
            {leafFrom({2, 5, 5}, distinct(50, 431))});
  for (bool ceil_mode : {false, true}) {
    for (bool count_include_pad : {false, true}) {
      INFO("ceil_mode " << ceil_mode << " count_include_pad " << count_include_pad);
      GRADCHECK([&](const Inputs& in) {
                  return dk::avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, ceil_mode, count_include_pad);
                },
                {leaf({1, 2, 6, 5}, 432)});
    }
  }
  GRADCHECK([](const Inputs& in) { return dk::avg_pool2d(in[0], {2, 2}, {}, {0}, false, true, 3); },
            {leaf({2, 4, 4}, 433)});
  GRADCHECK([](const Inputs& in) {
              return dk::batch_norm(in[0], in[1], in[2], std::nullopt, std::nullopt, true, 0.1, 1e-5, false);
            },
            {leaf({4, 3, 2, 2}, 434), leaf({3}, 435), leaf({3}, 436)});
  GRADCHECK([](const Inputs& in) {
              return dk::batch_norm(in[0], std::nullopt, std::nullopt, dk::zeros({3}, kDouble), dk::ones({3}, kDouble),
                                    false, 0.1, 1e-5, false);
            },
            {leaf({4, 3}, 437)});
  GRADCHECK([](const Inputs& in) {
              return std::get<0>(dk::_scaled_dot_product_attention(in[0], in[1], in[2], std::nullopt, 0.0, false, true));
            },
            {leaf({2, 3, 4}, 438), leaf({2, 3, 4}, 439), leaf({2, 3, 5}, 440)});
}

// ===================================================================== linear algebra

TEST_CASE("gradcheck: mm and bmm") {
  GRADCHECK([](const Inputs& in) { return dk::mm(in[0], in[1]); }, {leaf({3, 4}, 60), leaf({4, 2}, 61)});
  GRADCHECK([](const Inputs& in) { return dk::mm(in[0], in[1]); },
            {transposedLeaf(3, 4, 62), transposedLeaf(4, 2, 63)});
  GRADCHECK([](const Inputs& in) { return dk::mm(in[0], in[1]); }, {leaf({1, 3}, 64), leaf({3, 1}, 65)});
  GRADCHECK([](const Inputs& in) { return dk::mm(in[0], in[1]); },
            {double_tensor({2, 3}, normal(6, 66)), leaf({3, 2}, 67)});
  GRADCHECK([](const Inputs& in) { return dk::bmm(in[0], in[1]); }, {leaf({2, 3, 4}, 68), leaf({2, 4, 2}, 69)});
  GRADCHECK([](const Inputs& in) { return dk::bmm(in[0], in[1]); }, {leaf({1, 2, 2}, 70), leaf({1, 2, 3}, 71)});
}

TEST_CASE("gradcheck: addmm with beta and alpha != 1, broadcast self") {
  GRADCHECK([](const Inputs& in) { return dk::addmm(in[0], in[1], in[2]); },
            {leaf({3, 2}, 72), leaf({3, 4}, 73), leaf({4, 2}, 74)});
  GRADCHECK([](const Inputs& in) { return dk::addmm(in[0], in[1], in[2], 0.5, 2.0); },
            {leaf({3, 2}, 75), leaf({3, 4}, 76), leaf({4, 2}, 77)});
  GRADCHECK([](const Inputs& in) { return dk::addmm(in[0], in[1], in[2], -1.5, 0.25); },
            {leaf({2}, 78), transposedLeaf(3, 4, 79), leaf({4, 2}, 80)});
  GRADCHECK([](const Inputs& in) { return dk::addmm(in[0], in[1], in[2], 2.0, 3.0); },
            {leaf({}, 81), leaf({3, 4}, 82), leaf({4, 2}, 83)});
}

TEST_CASE("gradcheck: matmul, 1-D, 2-D and batched (through its decomposition)") {
  struct Case {
    Sizes a, b;
  };
  std::vector<Case> cases = {
      {{4}, {4}},          {{3, 4}, {4}},    {{4}, {4, 2}},          {{3, 4}, {4, 2}},       {{2, 3, 4}, {4, 2}},
      {{2, 3, 4}, {4}},    {{4}, {2, 4, 3}}, {{2, 3, 4}, {2, 4, 2}}, {{1, 3, 4}, {2, 4, 2}}, {{2, 1, 3, 4}, {3, 4, 2}},
      {{3, 4}, {2, 4, 2}},
  };
  uint64_t seed = 90;
  for (const Case& c : cases) {
    INFO("matmul of " << str(c.a) << " and " << str(c.b));
    GRADCHECK([](const Inputs& in) { return dk::matmul(in[0], in[1]); }, {leaf(c.a, seed), leaf(c.b, seed + 1)});
    seed += 2;
  }
  GRADCHECK([](const Inputs& in) { return dk::matmul(in[0], in[1]); }, {transposedLeaf(3, 4, 120), leaf({4, 2}, 121)});
}

TEST_CASE("gradcheck: linear with and without bias (through its decomposition)") {
  GRADCHECK([](const Inputs& in) { return dk::linear(in[0], in[1], in[2]); },
            {leaf({3, 4}, 130), leaf({2, 4}, 131), leaf({2}, 132)});
  GRADCHECK([](const Inputs& in) { return dk::linear(in[0], in[1]); }, {leaf({3, 4}, 133), leaf({2, 4}, 134)});
  GRADCHECK([](const Inputs& in) { return dk::linear(in[0], in[1]); }, {leaf({4}, 135), leaf({2, 4}, 136)});
  // 3-D input: the contiguous run takes the view + addmm path, the non-contiguous one matmul
  // followed by an in-place add_ of the bias.
  GRADCHECK([](const Inputs& in) { return dk::linear(in[0], in[1], in[2]); },
            {leaf({2, 3, 4}, 137), leaf({2, 4}, 138), leaf({2}, 139)});
  GRADCHECK([](const Inputs& in) { return dk::linear(in[0], in[1], in[2]); },
            {leaf({4}, 140), leaf({2, 4}, 141), leaf({2}, 142)});
  // A weight that does not require grad (frozen layer).
  GRADCHECK([](const Inputs& in) { return dk::linear(in[0], in[1], in[2]); },
            {leaf({3, 4}, 143), double_tensor({2, 4}, normal(8, 144)), leaf({2}, 145)});
}

// ===================================================================== views and shapes

TEST_CASE("gradcheck: view and reshape") {
  GradcheckOptions contiguous_only;  // view of a non-contiguous tensor is an error, by design
  contiguous_only.check_noncontiguous = false;
  GRADCHECK([](const Inputs& in) { return in[0].view({3, 4}); }, {leaf({2, 6}, 150)}, contiguous_only);
  GRADCHECK([](const Inputs& in) { return in[0].view({12}); }, {leaf({2, 3, 2}, 151)}, contiguous_only);
  GRADCHECK([](const Inputs& in) { return in[0].view({2, 1, 3}); }, {leaf({6}, 152)}, contiguous_only);
  GRADCHECK([](const Inputs& in) { return in[0].view({1}); }, {leaf({}, 153)}, contiguous_only);
  // reshape is a view when it can be and a copy otherwise (the non-contiguous run).
  GRADCHECK([](const Inputs& in) { return dk::reshape(in[0], {3, 4}); }, {leaf({2, 6}, 154)});
  GRADCHECK([](const Inputs& in) { return dk::reshape(in[0], {-1}); }, {leaf({2, 3, 2}, 155)});
  GRADCHECK([](const Inputs& in) { return dk::reshape(in[0], {6}); }, {transposedLeaf(2, 3, 156)});
}

TEST_CASE("gradcheck: transpose.int, t, permute") {
  GRADCHECK([](const Inputs& in) { return dk::transpose(in[0], 0, 1); }, {leaf({2, 3}, 160)});
  GRADCHECK([](const Inputs& in) { return dk::transpose(in[0], -1, 0); }, {leaf({2, 3, 4}, 161)});
  GRADCHECK([](const Inputs& in) { return dk::t(in[0]); }, {leaf({2, 3}, 162)});
  GRADCHECK([](const Inputs& in) { return dk::t(in[0]); }, {leaf({3}, 163)});
  GRADCHECK([](const Inputs& in) { return dk::t(in[0]); }, {transposedLeaf(2, 3, 164)});
  GRADCHECK([](const Inputs& in) { return dk::permute(in[0], {2, 0, 1}); }, {leaf({2, 3, 4}, 165)});
  GRADCHECK([](const Inputs& in) { return dk::permute(in[0], {1, 0}); }, {transposedLeaf(3, 2, 166)});
}

TEST_CASE("gradcheck: expand") {
  GRADCHECK([](const Inputs& in) { return in[0].expand({3, 4}); }, {leaf({3, 1}, 170)});
  GRADCHECK([](const Inputs& in) { return in[0].expand({2, 3}); }, {leaf({3}, 171)});
  GRADCHECK([](const Inputs& in) { return in[0].expand({2, 2, 3}); }, {leaf({1, 3}, 172)});
  GRADCHECK([](const Inputs& in) { return in[0].expand({2, 3}); }, {leaf({}, 173)});
  GRADCHECK([](const Inputs& in) { return in[0].expand({-1, 3}); }, {leaf({2, 1}, 174)});
}

TEST_CASE("gradcheck: contiguous, clone, _to_copy, to.dtype") {
  GRADCHECK([](const Inputs& in) { return in[0].contiguous(); }, {transposedLeaf(3, 2, 180)});
  GRADCHECK([](const Inputs& in) { return in[0].contiguous(); }, {leaf({2, 3}, 181)});  // returns its input
  GRADCHECK([](const Inputs& in) { return dk::clone(in[0]); }, {leaf({2, 3}, 182)});
  GRADCHECK([](const Inputs& in) { return dk::clone(in[0]); }, {transposedLeaf(3, 2, 183)});
  GRADCHECK([](const Inputs& in) { return dk::clone(in[0], MemoryFormat::Contiguous); }, {transposedLeaf(3, 2, 184)});
  GRADCHECK([](const Inputs& in) { return dk::_to_copy(in[0], kDouble); }, {leaf({2, 3}, 185)});
  GRADCHECK([](const Inputs& in) { return dk::_to_copy(in[0]); }, {transposedLeaf(3, 2, 186)});
  GRADCHECK([](const Inputs& in) { return in[0].to(kDouble, false, /*copy=*/true); }, {leaf({2, 3}, 187)});
  GRADCHECK([](const Inputs& in) { return in[0].to(kDouble); }, {leaf({2, 3}, 188)});  // returns its input
}

TEST_CASE("gradcheck: unsqueeze and squeeze.dim") {
  GRADCHECK([](const Inputs& in) { return dk::unsqueeze(in[0], 0); }, {leaf({2, 3}, 190)});
  GRADCHECK([](const Inputs& in) { return dk::unsqueeze(in[0], -1); }, {leaf({2, 3}, 191)});
  GRADCHECK([](const Inputs& in) { return dk::unsqueeze(in[0], 1); }, {transposedLeaf(2, 3, 192)});
  GRADCHECK([](const Inputs& in) { return dk::unsqueeze(in[0], 0); }, {leaf({}, 193)});
  GRADCHECK([](const Inputs& in) { return dk::squeeze(in[0], 1); }, {leaf({2, 1, 3}, 194)});
  GRADCHECK([](const Inputs& in) { return dk::squeeze(in[0], -1); }, {leaf({3, 1}, 195)});
  GRADCHECK([](const Inputs& in) { return dk::squeeze(in[0], 0); }, {leaf({2, 3}, 196)});  // size 2: unchanged
}

TEST_CASE("gradcheck: select.int and slice.Tensor (with step)") {
  GRADCHECK([](const Inputs& in) { return dk::select(in[0], 0, 1); }, {leaf({3, 4}, 200)});
  GRADCHECK([](const Inputs& in) { return dk::select(in[0], 1, -1); }, {leaf({3, 4}, 201)});
  GRADCHECK([](const Inputs& in) { return dk::select(in[0], 1, 2); }, {leaf({2, 3, 4}, 202)});
  GRADCHECK([](const Inputs& in) { return dk::select(in[0], 0, 0); }, {leaf({4}, 203)});
  GRADCHECK([](const Inputs& in) { return dk::select(in[0], 0, 2); }, {transposedLeaf(3, 2, 204)});
  GRADCHECK([](const Inputs& in) { return dk::slice(in[0], 1, 0, 5, 2); }, {leaf({3, 5}, 205)});
  GRADCHECK([](const Inputs& in) { return dk::slice(in[0], 0, 1); }, {leaf({3, 5}, 206)});
  GRADCHECK([](const Inputs& in) { return dk::slice(in[0], -1, 1, 5, 3); }, {leaf({2, 6}, 207)});
  GRADCHECK([](const Inputs& in) { return dk::slice(in[0], 0, std::nullopt, std::nullopt, 2); },
            {transposedLeaf(5, 2, 208)});
  GRADCHECK([](const Inputs& in) { return dk::slice(in[0], 0, 1, 3); }, {leaf({6}, 209)});
}

TEST_CASE("gradcheck: flatten.using_ints (through reshape)") {
  GRADCHECK([](const Inputs& in) { return dk::flatten(in[0]); }, {leaf({2, 3, 4}, 210)});
  GRADCHECK([](const Inputs& in) { return dk::flatten(in[0], 1); }, {leaf({2, 3, 4}, 211)});
  GRADCHECK([](const Inputs& in) { return dk::flatten(in[0], 0, 1); }, {leaf({2, 3, 4}, 212)});
  GRADCHECK([](const Inputs& in) { return dk::flatten(in[0]); }, {transposedLeaf(3, 2, 213)});
  GRADCHECK([](const Inputs& in) { return dk::flatten(in[0]); }, {leaf({}, 214)});
}

TEST_CASE("gradcheck: cat and stack") {
  GRADCHECK(
      [](const Inputs& in) {
        return dk::cat(std::vector<Tensor>{in[0], in[1], in[2]}, 0);
      },
      {leaf({2, 3}, 220), leaf({1, 3}, 221), leaf({3, 3}, 222)});
  GRADCHECK(
      [](const Inputs& in) {
        return dk::cat(std::vector<Tensor>{in[0], in[1]}, 1);
      },
      {leaf({2, 1}, 223), transposedLeaf(2, 3, 224)});
  GRADCHECK(
      [](const Inputs& in) {
        return dk::cat(std::vector<Tensor>{in[0], in[1]}, -1);
      },
      {leaf({4}, 225), leaf({2}, 226)});
  // The middle input does not require grad: it gets no gradient, the others do.
  GRADCHECK(
      [](const Inputs& in) {
        return dk::cat(std::vector<Tensor>{in[0], in[1], in[2]}, 0);
      },
      {leaf({2, 2}, 227), double_tensor({1, 2}, normal(2, 228)), leaf({1, 2}, 229)});
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("stack dim " << dim);
    GRADCHECK(
        [&](const Inputs& in) {
          return dk::stack(std::vector<Tensor>{in[0], in[1], in[2]}, dim);
        },
        {leaf({2, 3}, 230), leaf({2, 3}, 231), transposedLeaf(2, 3, 232)});
  }
}

TEST_CASE("gradcheck: split.Tensor and unbind.int (several outputs)") {
  GRADCHECK_MULTI([](const Inputs& in) { return dk::split(in[0], 2, 0); }, {leaf({5, 3}, 240)});
  GRADCHECK_MULTI([](const Inputs& in) { return dk::split(in[0], 2, 1); }, {leaf({2, 5}, 241)});
  GRADCHECK_MULTI([](const Inputs& in) { return dk::split(in[0], 3, -1); }, {transposedLeaf(2, 6, 242)});
  GRADCHECK_MULTI([](const Inputs& in) { return dk::unbind(in[0], 0); }, {leaf({3, 2}, 243)});
  GRADCHECK_MULTI([](const Inputs& in) { return dk::unbind(in[0], 1); }, {leaf({3, 2}, 244)});
  GRADCHECK_MULTI([](const Inputs& in) { return dk::unbind(in[0], -1); }, {transposedLeaf(2, 3, 245)});
  // Only some outputs used: the unused pieces get no gradient, and their rows stay zero.
  GRADCHECK([](const Inputs& in) { return dk::split(in[0], 2, 0)[1]; }, {leaf({5, 3}, 246)});
  GRADCHECK([](const Inputs& in) { return dk::unbind(in[0], 0)[2]; }, {leaf({3, 2}, 247)});
}

// ===================================================================== softmax and losses

TEST_CASE("gradcheck: _softmax, softmax.int, log_softmax.int, _log_softmax") {
  struct Case {
    Sizes sizes;
    int64_t dim;
  };
  for (const Case& c : std::vector<Case>{{{2, 3}, 1}, {{2, 3}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, -1}, {{4}, 0}}) {
    INFO("shape " << str(c.sizes) << " dim " << c.dim);
    int64_t dim = c.dim;
    GRADCHECK([&](const Inputs& in) { return dk::_softmax(in[0], dim, false); }, {leaf(c.sizes, 250)});
    GRADCHECK([&](const Inputs& in) { return dk::softmax(in[0], dim); }, {leaf(c.sizes, 251)});
    GRADCHECK([&](const Inputs& in) { return dk::softmax(in[0], dim, kDouble); }, {leaf(c.sizes, 252)});
    GRADCHECK([&](const Inputs& in) { return dk::log_softmax(in[0], dim); }, {leaf(c.sizes, 253)});
    GRADCHECK([&](const Inputs& in) { return dk::_log_softmax(in[0], dim, false); }, {leaf(c.sizes, 254)});
  }
  GRADCHECK([](const Inputs& in) { return dk::softmax(in[0], 1); }, {transposedLeaf(2, 3, 255)});
  GRADCHECK([](const Inputs& in) { return dk::log_softmax(in[0], 0); }, {transposedLeaf(2, 3, 256)});
}

TEST_CASE("gradcheck: mse_loss, reductions none, mean, sum") {
  for (int64_t reduction : {0, 1, 2}) {
    INFO("reduction " << reduction);
    GRADCHECK([&](const Inputs& in) { return dk::mse_loss(in[0], in[1], reduction); },
              {leaf({2, 3}, 260), leaf({2, 3}, 261)});
    GRADCHECK([&](const Inputs& in) { return dk::mse_loss(in[0], in[1], reduction); },
              {transposedLeaf(2, 3, 262), double_tensor({2, 3}, normal(6, 263))});
    GRADCHECK([&](const Inputs& in) { return dk::mse_loss(in[0], in[1], reduction); },
              {leaf({4}, 264), leaf({4}, 265)});
  }
}

TEST_CASE("gradcheck: nll_loss with weight, ignore_index and every reduction") {
  Tensor target = longs({4}, {0, 2, 1, 2});
  Tensor weight = double_tensor({3}, {0.5, 1.0, 2.0});
  for (int64_t reduction : {0, 1, 2}) {
    INFO("reduction " << reduction);
    GRADCHECK([&](const Inputs& in) { return dk::nll_loss(in[0], target, std::nullopt, reduction); },
              {leaf({4, 3}, 270)});
    GRADCHECK([&](const Inputs& in) { return dk::nll_loss(in[0], target, in[1], reduction); },
              {leaf({4, 3}, 271), weight});
    // Targets equal to ignore_index contribute nothing (and do not count in the mean).
    GRADCHECK([&](const Inputs& in) { return dk::nll_loss(in[0], target, std::nullopt, reduction, 2); },
              {leaf({4, 3}, 272)});
    GRADCHECK([&](const Inputs& in) { return dk::nll_loss(in[0], target, in[1], reduction, 1); },
              {leaf({4, 3}, 273), weight});
    GRADCHECK([&](const Inputs& in) { return dk::nll_loss(in[0], in[1], std::nullopt, reduction); },
              {transposedLeaf(4, 3, 274), target});
    // One sample: a (C) input and a 0-dim target.
    GRADCHECK([&](const Inputs& in) { return dk::nll_loss(in[0], longs({}, {1}), std::nullopt, reduction); },
              {leaf({3}, 275)});
  }
}

TEST_CASE("gradcheck: cross_entropy_loss (through log_softmax and nll_loss)") {
  Tensor target = longs({4}, {0, 2, 1, 2});
  Tensor weight = double_tensor({3}, {0.5, 1.0, 2.0});
  for (int64_t reduction : {0, 1, 2}) {
    INFO("reduction " << reduction);
    GRADCHECK([&](const Inputs& in) { return dk::cross_entropy_loss(in[0], target, std::nullopt, reduction); },
              {leaf({4, 3}, 280)});
    GRADCHECK([&](const Inputs& in) { return dk::cross_entropy_loss(in[0], target, weight, reduction); },
              {leaf({4, 3}, 281)});
    GRADCHECK([&](const Inputs& in) { return dk::cross_entropy_loss(in[0], target, weight, reduction, 1); },
              {leaf({4, 3}, 282)});
    GRADCHECK(
        [&](const Inputs& in) { return dk::cross_entropy_loss(in[0], target, std::nullopt, reduction, -100, 0.2); },
        {leaf({4, 3}, 283)});
    GRADCHECK([&](const Inputs& in) { return dk::cross_entropy_loss(in[0], target, weight, reduction, 2, 0.1); },
              {leaf({4, 3}, 284)});
    // Class-probability targets; the target requires grad too.
    GRADCHECK(
        [&](const Inputs& in) { return dk::cross_entropy_loss(in[0], dk::softmax(in[1], 1), std::nullopt, reduction); },
        {leaf({4, 3}, 285), leaf({4, 3}, 286)});
    // (N, C, d) input with (N, d) targets.
    GRADCHECK(
        [&](const Inputs& in) {
          return dk::cross_entropy_loss(in[0], longs({2, 4}, {0, 1, 2, 1, 2, 2, 0, 1}), std::nullopt, reduction);
        },
        {leaf({2, 3, 4}, 287)});
    GRADCHECK([&](const Inputs& in) { return dk::cross_entropy_loss(in[0], target, std::nullopt, reduction); },
              {transposedLeaf(4, 3, 288)});
  }
}

TEST_CASE("gradcheck: dropout in eval mode and with p = 0") {
  GRADCHECK([](const Inputs& in) { return dk::dropout(in[0], 0.5, false); }, {leaf({2, 3}, 290)});
  GRADCHECK([](const Inputs& in) { return dk::dropout(in[0], 0.0, true); }, {leaf({2, 3}, 291)});
  GRADCHECK([](const Inputs& in) { return dk::dropout(dk::mul(in[0], in[0]), 0.0, true); }, {leaf({2, 3}, 292)});
}

TEST_CASE("gradcheck: embedding (weight gradient, padding_idx)") {
  Tensor indices = longs({2, 3}, {0, 2, 4, 2, 2, 1});
  GRADCHECK([&](const Inputs& in) { return dk::embedding(in[0], indices); }, {leaf({5, 3}, 300)});
  GRADCHECK(
      [&](const Inputs& in) {
        return dk::embedding(in[0], longs({4}, {3, 3, 0, 1}));
      },
      {transposedLeaf(5, 2, 301)});
  // padding_idx 3 with indices that do not use row 3: no effect on the gradient.
  GRADCHECK([&](const Inputs& in) { return dk::embedding(in[0], indices, 3); }, {leaf({5, 3}, 302)});

  // Rows looked up at padding_idx get no gradient (finite differences would say otherwise: the
  // forward still reads the row, so this is checked directly). Row 2 is used three times.
  Tensor weight = leaf({5, 3}, 303);
  dk::embedding(weight, indices, 2).sum().backward();
  REQUIRE(weight.grad().defined());
  std::vector<double> expected = {1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1};
  CHECK(to_doubles(weight.grad()) == expected);
}

// ===================================================================== in-place

TEST_CASE("gradcheck: add_.Tensor, mul_.Tensor, relu_ on a non-leaf") {
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(1.0);
        y.add_(in[1], 2.0);
        return y;
      },
      {leaf({2, 3}, 310), leaf({3}, 311)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].clone();
        y.add_(in[1]);
        return y;
      },
      {transposedLeaf(2, 3, 312), leaf({2, 3}, 313)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(1.0);
        y.mul_(in[1]);
        return y;
      },
      {leaf({2, 3}, 314), leaf({3}, 315)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].clone();
        y.mul_(in[0]);  // the in-place result depends on the old value of y and on in[0]
        return y;
      },
      {leaf({2, 3}, 316)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].clone();
        y.relu_();
        return y;
      },
      {leafFrom({2, 3}, awayFromZero(6, 317))});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = dk::relu_(in[0].mul(2.0));
        return y.mul(in[1]);
      },
      {leafFrom({2, 3}, awayFromZero(6, 318)), leaf({2, 3}, 319)});
  // Only the argument that is not modified requires grad.
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = dk::full({2, 3}, 1.5, kDouble);
        y.mul_(in[0]);
        return y;
      },
      {leaf({2, 3}, 320)});
}

TEST_CASE("gradcheck: sub_.Tensor and div_.Tensor (structured in-place forms) on a non-leaf") {
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(1.0);
        y.sub_(in[1], 3.0);
        return y;
      },
      {leaf({2, 3}, 330), leaf({3}, 331)});
  // div_'s gradient for other reads self's value before the division.
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(1.0);
        y.div_(in[1]);
        return y;
      },
      {leaf({2, 3}, 332), leafFrom({3}, awayFromZero(3, 333))});
  // The unary in-place forms take the functional formulas: exp_ reads its result, log_ the old self.
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(1.0);
        dk::exp_(y);
        return y;
      },
      {leaf({2, 3}, 334)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(in[0]).add(1.0);  // positive; nothing saved it
        dk::log_(y);
        return y.mul(in[0]);
      },
      {leaf({2, 3}, 335)});
  // pow_.Scalar finds pow.Tensor_Scalar's formula by signature (the overload names differ); it
  // reads the old self, as clamp_ does.
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(1.0);
        y.pow_(3);
        return y;
      },
      {leaf({2, 3}, 336)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(2.0);
        dk::clamp_(y, -1.0, 1.0);
        return y;
      },
      {leaf({2, 3}, 337)});
}

TEST_CASE("gradcheck: copy_, fill_.Scalar, zero_ on non-leaves") {
  // copy_: self's old value is overwritten (zero gradient), src's gradient passes through.
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(1.0);
        y.copy_(in[1]);
        return y.mul(in[0]);  // in[0] still matters through the multiplication
      },
      {leaf({2, 3}, 321), leaf({2, 3}, 322)});
  // A broadcast src: its gradient is summed over the broadcast dim.
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].clone();
        y.copy_(in[1]);
        return y;
      },
      {leaf({2, 3}, 323), leaf({3}, 324)});
  // A src that requires grad copied into a tensor that does not.
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = dk::zeros({2, 3}, kDouble);
        y.copy_(in[0]);
        return y;
      },
      {transposedLeaf(2, 3, 325)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].clone();
        y.fill_(2.5);
        return dk::add(y, in[0]);
      },
      {leaf({2, 3}, 326)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(2.0);
        dk::zero_(y);
        return dk::add(y, in[0].mul(in[0]));
      },
      {leaf({2, 3}, 327)});
}

TEST_CASE("gradcheck: in-place ops on views of a non-leaf (CopySlices)") {
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].clone();
        y.select(0, 1).mul_(in[1]);
        return y;
      },
      {leaf({2, 3}, 330), leaf({3}, 331)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(1.0);
        y.slice(1, 0, 3, 2).add_(in[1], -2.0);
        return y;
      },
      {leaf({2, 3}, 332), leaf({2, 2}, 333)});
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].clone();
        y.t().select(0, 0).relu_();
        return dk::sum(y, {0});
      },
      {leafFrom({2, 3}, awayFromZero(6, 334))});
  // copy_ into a row of a non-leaf: the row's old values get no gradient, src gets it.
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].mul(3.0);
        y.select(0, 0).copy_(in[1]);
        return y;
      },
      {leaf({2, 3}, 335), leaf({3}, 336)});
  // fill_ on a strided slice.
  GRADCHECK(
      [](const Inputs& in) {
        Tensor y = in[0].clone();
        y.slice(1, 1, 3, 1).fill_(-1.0);
        return y.mul(y);
      },
      {leaf({3, 3}, 337)});
}

// ===================================================================== second order

namespace {

// The gradient of sum(fn(inputs) * v) (v fixed, not all ones, so every output element weighs
// differently) with respect to the inputs that require grad, computed with create_graph so that
// it is itself differentiable: gradcheck of this function checks the second derivatives, i.e.
// that the derivative formulas are differentiable dk operators. Grad mode is forced on inside,
// since gradcheck evaluates it under NoGradGuard for the finite differences.
dk::testing::GradcheckMultiFn firstGradient(dk::testing::GradcheckFn fn) {
  return [fn](const Inputs& in) {
    autograd::AutoGradMode grad_mode(true);
    Tensor out = fn(in);
    std::vector<double> v(static_cast<size_t>(out.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5 + 0.25 * static_cast<double>(i % 5);
    Tensor weighted = dk::sum(dk::mul(out, double_tensor(out.sizes(), v)));
    std::vector<Tensor> wrt;
    for (const Tensor& t : in) {
      if (t.defined() && t.requires_grad()) wrt.push_back(t);
    }
    return autograd::grad({weighted}, wrt, {}, std::nullopt, /*create_graph=*/true, /*allow_unused=*/true);
  };
}

}  // namespace

TEST_CASE("gradcheck of first derivatives (create_graph): the formulas are differentiable") {
  // Operators with a non-zero second derivative (piecewise-linear ones, whose first derivative
  // does not depend on the input, are left out). Additive terms (a bias) do not require grad here: their
  // gradient is a constant, which gradcheck would report as an output without history.
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::mul(in[0], in[1]); }),
                  {leaf({2, 3}, 400), leaf({3}, 401)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::div(in[0], in[1]); }),
                  {leaf({2, 3}, 402), leafFrom({3}, positive(3, 403))});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::exp(in[0]); }), {leaf({2, 3}, 404)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::log(in[0]); }), {leafFrom({2, 3}, positive(6, 405))});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::sqrt(in[0]); }),
                  {leafFrom({2, 3}, positive(6, 406))});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::rsqrt(in[0]); }),
                  {leafFrom({2, 3}, positive(6, 407))});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::sin(in[0]); }), {leaf({2, 3}, 408)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::cos(in[0]); }), {leaf({2, 3}, 409)});
  // gelu's formula calls gelu_backward, whose own formula (GeluBackwardBackward0) this checks.
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::gelu(in[0]); }), {leaf({2, 3}, 440)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::gelu(in[0], "tanh"); }), {leaf({2, 3}, 441)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::tanh(in[0]); }), {leaf({2, 3}, 410)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::sigmoid(in[0]); }), {leaf({2, 3}, 411)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::pow(in[0], Scalar(3.0)); }), {leaf({2, 3}, 412)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::pow(in[0], Scalar(-0.5)); }),
                  {leafFrom({2, 3}, positive(6, 413))});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::mm(in[0], in[1]); }),
                  {leaf({2, 3}, 414), leaf({3, 2}, 415)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::bmm(in[0], in[1]); }),
                  {leaf({2, 2, 3}, 416), leaf({2, 3, 2}, 417)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::addmm(in[0], in[1], in[2], 0.5, 2.0); }),
                  {double_tensor({2}, normal(2, 418)), leaf({3, 2}, 419), leaf({2, 2}, 420)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::mul(dk::sum(in[0], {1}), dk::mean(in[0], {1})); }),
                  {leaf({2, 3}, 421)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::softmax(in[0], 1); }), {leaf({2, 3}, 422)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::log_softmax(in[0], 1); }), {leaf({2, 3}, 423)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::mse_loss(in[0], in[1]); }),
                  {leaf({2, 3}, 424), leaf({2, 3}, 425)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) {
                    return dk::cross_entropy_loss(in[0], longs({3}, {0, 2, 1}));
                  }),
                  {leaf({3, 3}, 426)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::linear(dk::tanh(in[0]), in[1], in[2]); }),
                  {leaf({3, 4}, 427), leaf({2, 4}, 428), double_tensor({2}, normal(2, 429))});
  // layer_norm's backward under create_graph is the composite, itself differentiable.
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::layer_norm(in[0], {4}, in[1], in[2]); }),
                  {leaf({3, 4}, 433), leaf({4}, 434), double_tensor({4}, normal(4, 435))});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) { return dk::layer_norm(in[0], {2, 2}); }),
                  {leaf({3, 2, 2}, 436)});
  // Views and shape operators inside a non-linear function.
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) {
                    Tensor x = in[0];
                    return dk::mul(dk::select(x, 0, 1), dk::t(x).slice(0, 0, 3, 1).sum({1}));
                  }),
                  {leaf({3, 3}, 430)});
  GRADCHECK_MULTI(firstGradient([](const Inputs& in) {
                    return dk::mul(dk::cat(std::vector<Tensor>{in[0], in[1]}, 0),
                                   dk::stack(std::vector<Tensor>{in[1], in[0]}, 0).view({4, 3}));
                  }),
                  {leaf({2, 3}, 431), leaf({2, 3}, 432)});
}

// ===================================================================== composites

TEST_CASE("composite operators differentiate through their decomposition") {
  // No autograd kernel of their own: the Autograd slots of matmul & co. hold the composite
  // (math) kernel, while mm has a generated autograd kernel.
  for (auto [name, overload] : std::vector<std::pair<const char*, const char*>>{{"dk::matmul", ""},
                                                                                {"dk::linear", ""},
                                                                                {"dk::softmax", "int"},
                                                                                {"dk::log_softmax", "int"},
                                                                                {"dk::cross_entropy_loss", ""},
                                                                                {"dk::reshape", ""},
                                                                                {"dk::flatten", "using_ints"}}) {
    INFO(name << "." << overload);
    OperatorHandle h = op(name, overload);
    CHECK_FALSE(h.hasKernelForDispatchKey(DispatchKey::Autograd));
    CHECK_FALSE(h.hasKernelForDispatchKey(DispatchKey::AutogradCPU));
    CHECK(h.hasKernelForDispatchKey(DispatchKey::CompositeImplicitAutograd));
  }
  CHECK(op("dk::mm", "").hasKernelForDispatchKey(DispatchKey::Autograd));
  CHECK(op("dk::_softmax", "").hasKernelForDispatchKey(DispatchKey::Autograd));

  // The grad_fn of a composite's result is the node of the last operator it called.
  auto name_of = [](const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : std::string("(no grad_fn)"); };
  Tensor a = leaf({3, 4}, 340), b = leaf({4, 2}, 341), bias = leaf({2}, 342), w = leaf({2, 4}, 343);
  CHECK(name_of(dk::matmul(a, b)) == "MmBackward0");
  CHECK(name_of(dk::matmul(leaf({4}, 344), leaf({4}, 345))) == "ViewBackward0");              // reshape of mm to 0-dim
  CHECK(name_of(dk::matmul(leaf({2, 3, 4}, 346), leaf({2, 4, 2}, 347))) == "ViewBackward0");  // reshape of bmm
  CHECK(name_of(dk::linear(a, w, bias)) == "AddmmBackward0");
  CHECK(name_of(dk::linear(a, w)) == "MmBackward0");
  CHECK(name_of(dk::softmax(a, 1)) == "SoftmaxBackward0");         // _softmax
  CHECK(name_of(dk::log_softmax(a, 1)) == "LogSoftmaxBackward0");  // _log_softmax
  CHECK(name_of(dk::cross_entropy_loss(a, longs({3}, {0, 3, 1}))) == "NllLossBackward0");
  CHECK(name_of(dk::reshape(a, {12})) == "ViewBackward0");
  CHECK(name_of(dk::flatten(leaf({2, 3, 4}, 348), 1)) == "ViewBackward0");
  // reshape of a non-contiguous tensor: a view of a clone.
  Tensor r = dk::reshape(transposedLeaf(3, 4, 349), {12});
  REQUIRE(r.grad_fn());
  CHECK(r.grad_fn()->name() == "ViewBackward0");
  REQUIRE(r.grad_fn()->num_outputs() == 1);
  REQUIRE(r.grad_fn()->next_edge(0).is_valid());
  CHECK(r.grad_fn()->next_edge(0).function->name() == "CloneBackward0");
  // The decomposition's nodes chain back to the leaves: matmul of a 1-D pair goes
  // View <- Mm <- (Unsqueeze, Unsqueeze) <- AccumulateGrad.
  Tensor u = leaf({4}, 350);
  Tensor dot = dk::matmul(u, leaf({4}, 351));
  REQUIRE(dot.grad_fn());
  REQUIRE(dot.grad_fn()->next_edge(0).is_valid());
  auto mm_node = dot.grad_fn()->next_edge(0).function;
  CHECK(mm_node->name() == "MmBackward0");
  REQUIRE(mm_node->num_outputs() == 2);
  REQUIRE(mm_node->next_edge(0).is_valid());
  CHECK(mm_node->next_edge(0).function->name() == "UnsqueezeBackward0");
}
