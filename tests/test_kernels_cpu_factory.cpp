// The CPU factories (kernels/cpu/factory.cpp): empty, zeros, ones, full, arange, rand, randn,
// called directly and through the dispatcher (BackendSelect picks the CPU kernel), with every
// error by its exact text.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "dk/core/generator.h"  // before Functions.h, which needs Generator complete
#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/arange_native.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/empty_native.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/full_native.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/ones_native.h"
#include "dk/generated/ops/rand.h"
#include "dk/generated/ops/rand_native.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/randn_native.h"
#include "dk/generated/ops/zeros.h"
#include "dk/generated/ops/zeros_native.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

bool allInUnitInterval(const Values& v) {
  for (double x : v)
    if (!(x >= 0 && x < 1)) return false;
  return true;
}

// Mean and standard deviation of the values.
std::pair<double, double> moments(const Values& v) {
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  return {mean, std::sqrt(var / static_cast<double>(v.size()))};
}

constexpr std::nullopt_t none = std::nullopt;

}  // namespace

TEST_CASE("cpu-elementwise: empty", "[cpu-elementwise]") {
  Tensor t = native::empty_cpu({2, 3}, none, none, none, none, none);
  CHECK(t.sizes() == Sizes{2, 3});
  CHECK(t.dtype() == kFloat);
  CHECK(t.is_cpu());
  CHECK(t.is_contiguous());
  CHECK(native::empty_cpu({4}, kHalf, Layout::Strided, Device(kCPU), false, MemoryFormat::Contiguous).dtype() == kHalf);
  CHECK(native::empty_cpu({0, 5}, kLong, none, none, none, none).numel() == 0);
  Tensor cl = native::empty_cpu({2, 3, 4, 5}, none, none, none, none, MemoryFormat::ChannelsLast);
  CHECK(cl.strides() == Sizes{60, 1, 15, 3});
  Tensor viaDispatcher = dk::empty({3, 1}, kInt);
  CHECK(viaDispatcher.sizes() == Sizes{3, 1});
  CHECK(viaDispatcher.dtype() == kInt);
  CHECK_THROWS_WITH(native::empty_cpu({2, -1}, none, none, none, none, none),
                    "Trying to create tensor with negative dimension -1: [2, -1]");
  CHECK_THROWS_WITH(native::empty_cpu({2}, none, none, none, none, MemoryFormat::ChannelsLast),
                    "required rank 4 tensor to use channels_last format");
  CHECK_THROWS_WITH(native::empty_cpu({2}, none, none, none, none, MemoryFormat::Preserve),
                    "unsupported memory format Preserve");
  CHECK_THROWS_WITH(native::empty_cpu({2}, none, Layout::Sparse, none, none, none),
                    "empty: only the strided layout is supported, got Sparse");
  CHECK_THROWS_WITH(native::empty_cpu({2}, none, none, Device(kMeta), none, none),
                    "empty: the cpu kernel cannot make a tensor on meta");
  CHECK_THROWS_WITH(native::empty_cpu({2}, none, none, none, true, none), "empty: pinned memory is not supported yet");
  // An allocation that cannot succeed (4 TiB) is a dk::Error naming the byte count, as in PyTorch.
  CHECK_THROWS_WITH(dk::empty({int64_t{1} << 40}),
                    "DefaultCPUAllocator: not enough memory: you tried to allocate 4398046511104 bytes.");
}

TEST_CASE("cpu-elementwise: zeros, ones, full", "[cpu-elementwise]") {
  for (ScalarType dtype : {kByte, kChar, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16}) {
    Tensor z = native::zeros_cpu({2, 3}, dtype, none, none, none);
    CHECK(z.dtype() == dtype);
    CHECK(read(z) == Values(6, 0.0));
    Tensor o = native::ones_cpu({3}, dtype, none, none, none);
    CHECK(o.dtype() == dtype);
    CHECK(read(o) == Values(3, 1.0));
  }
  CHECK(native::zeros_cpu({2}, none, none, none, none).dtype() == kFloat);
  CHECK(native::ones_cpu({}, none, none, none, none).dim() == 0);
  CHECK(native::zeros_cpu({0}, none, none, none, none).numel() == 0);
  CHECK(read(dk::zeros({2, 2}, kDouble)) == Values(4, 0.0));
  CHECK(read(dk::ones({2}, kLong)) == Values{1, 1});
  // full: without a dtype, the fill value decides.
  Tensor fi = native::full_cpu({2}, 7, none, none, none, none);
  CHECK(fi.dtype() == kLong);
  CHECK(read(fi) == Values{7, 7});
  Tensor ff = native::full_cpu({2}, 2.5, none, none, none, none);
  CHECK(ff.dtype() == kFloat);
  CHECK(read(ff) == Values{2.5, 2.5});
  Tensor fb = native::full_cpu({1}, true, none, none, none, none);
  CHECK(fb.dtype() == kBool);
  CHECK(read(fb) == Values{1});
  Tensor fh = native::full_cpu({2, 1}, 0.5, kHalf, none, none, none);
  CHECK(fh.dtype() == kHalf);
  CHECK(read(fh) == Values{0.5, 0.5});
  CHECK(read(dk::full({3}, -1, kInt)) == Values{-1, -1, -1});
  CHECK_THROWS_WITH(native::full_cpu({1}, 300, kByte, none, none, none),
                    "value cannot be converted to type uint8_t without overflow");
  CHECK_THROWS_WITH(native::zeros_cpu({1}, none, none, Device(kMeta), none),
                    "zeros: the cpu kernel cannot make a tensor on meta");
  CHECK_THROWS_WITH(native::ones_cpu({-2}, none, none, none, none),
                    "Trying to create tensor with negative dimension -2: [-2]");
}

TEST_CASE("cpu-elementwise: arange", "[cpu-elementwise]") {
  Tensor i = native::arange_cpu(0, 5, 1, none, none, none, none);
  CHECK(i.dtype() == kLong);
  CHECK(read(i) == Values{0, 1, 2, 3, 4});
  CHECK(read(native::arange_cpu(0, 5, 2, none, none, none, none)) == Values{0, 2, 4});
  CHECK(read(native::arange_cpu(5, 0, -2, none, none, none, none)) == Values{5, 3, 1});
  CHECK(native::arange_cpu(3, 3, 1, none, none, none, none).numel() == 0);
  Tensor f = native::arange_cpu(0, 1, 0.25, none, none, none, none);
  CHECK(f.dtype() == kFloat);
  CHECK(read(f) == Values{0, 0.25, 0.5, 0.75});
  CHECK(native::arange_cpu(0.5, 3, 1, none, none, none, none).dtype() == kFloat);
  Tensor d = native::arange_cpu(1, 2, 0.1, kDouble, none, none, none);
  REQUIRE(d.numel() == 10);
  for (int64_t k = 0; k < 10; ++k) CHECK(read(d)[static_cast<size_t>(k)] == 1 + 0.1 * static_cast<double>(k));
  CHECK(read(native::arange_cpu(0, 4, 1, kHalf, none, none, none)) == Values{0, 1, 2, 3});
  // Integer dtypes: the scalars become integers, but the size comes from the double difference
  // (PyTorch's rule) except for int64.
  CHECK(read(native::arange_cpu(0, 5.5, 1, kLong, none, none, none)) == Values{0, 1, 2, 3, 4});
  CHECK(read(native::arange_cpu(0, 5.5, 1, kInt, none, none, none)) == Values{0, 1, 2, 3, 4, 5});
  CHECK(read(dk::arange(2, 6, 2)) == Values{2, 4});
  CHECK_THROWS_WITH(native::arange_cpu(0, 5, 0, none, none, none, none), "step must be nonzero");
  CHECK_THROWS_WITH(native::arange_cpu(0, 5, -1, none, none, none, none),
                    "upper bound and larger bound inconsistent with step sign");
  CHECK_THROWS_WITH(native::arange_cpu(0, std::numeric_limits<double>::infinity(), 1, none, none, none, none),
                    "unsupported range: 0 -> inf");
  CHECK_THROWS_WITH(native::arange_cpu(0, 2, 1, kBool, none, none, none), "arange: unsupported dtype Bool");
}

TEST_CASE("cpu-elementwise: rand is uniform in [0, 1) and seeded", "[cpu-elementwise]") {
  Generator gen(42);
  Tensor r = native::rand_cpu({10000}, gen, none, none, none, none);
  CHECK(r.dtype() == kFloat);
  Values v = read(r);
  CHECK(allInUnitInterval(v));
  auto [mean, sd] = moments(v);
  CHECK(std::fabs(mean - 0.5) < 0.02);
  CHECK(std::fabs(sd - std::sqrt(1.0 / 12)) < 0.02);
  // The same seed gives the same values; a generator advances between calls.
  Generator again(42);
  CHECK(read(native::rand_cpu({10000}, again, none, none, none, none)) == v);
  Values next = read(native::rand_cpu({4}, gen, none, none, none, none));
  CHECK(read(native::rand_cpu({4}, gen, none, none, none, none)) != next);
  // Each dtype: in range, and dtype-exact.
  for (ScalarType dtype : {kDouble, kHalf, kBFloat16}) {
    Tensor t = native::rand_cpu({1000}, gen, dtype, none, none, none);
    CHECK(t.dtype() == dtype);
    CHECK(allInUnitInterval(read(t)));
  }
  // Without a generator: the default one, which manual_seed resets.
  manual_seed(7);
  Values first = read(native::rand_cpu({5}, none, none, none, none));
  manual_seed(7);
  CHECK(read(dk::rand({5})) == first);
  manual_seed(7);
  CHECK(read(native::rand_cpu({5}, std::optional<Generator>(), none, none, none, none)) == first);
  CHECK(native::rand_cpu({0, 3}, none, none, none, none).numel() == 0);
  CHECK_THROWS_WITH(native::rand_cpu({2}, kLong, none, none, none), "rand: unsupported dtype Long");
}

TEST_CASE("cpu-elementwise: randn is standard normal and seeded", "[cpu-elementwise]") {
  Generator gen(1234);
  Tensor r = native::randn_cpu({20001}, gen, kDouble, none, none, none);  // odd: the last pair is half used
  CHECK(r.dtype() == kDouble);
  Values v = read(r);
  auto [mean, sd] = moments(v);
  CHECK(std::fabs(mean) < 0.03);
  CHECK(std::fabs(sd - 1) < 0.03);
  double within1 = 0;
  for (double x : v) within1 += std::fabs(x) < 1 ? 1 : 0;
  CHECK(std::fabs(within1 / static_cast<double>(v.size()) - 0.6827) < 0.02);
  Generator again(1234);
  CHECK(read(native::randn_cpu({20001}, again, kDouble, none, none, none)) == v);
  CHECK(native::randn_cpu({3}, none, none, none, none).dtype() == kFloat);
  CHECK(native::randn_cpu({3}, gen, kHalf, none, none, none).dtype() == kHalf);
  manual_seed(3);
  Values first = read(native::randn_cpu({6}, none, none, none, none));
  manual_seed(3);
  CHECK(read(dk::randn({6})) == first);
  CHECK_THROWS_WITH(native::randn_cpu({2}, kInt, none, none, none), "randn: unsupported dtype Int");
}

// Found by the boxed-calls fuzz target (tools/fuzz): a floating Scalar beyond int64 given to an
// integer computation is an error, not an undefined cast.
TEST_CASE("cpu-factory: arange and full refuse floating bounds int64 cannot hold for integer dtypes") {
  CHECK_THROWS_WITH(dk::arange(0, 9.3e18, 1, ScalarType::Long),
                    Catch::Contains("value cannot be converted to type int64_t without overflow"));
  CHECK_THROWS_WITH(dk::full({2}, 1e300, ScalarType::Int),
                    Catch::Contains("value cannot be converted to type int without overflow"));
  CHECK(dk::full({1}, 2.7, ScalarType::Long).item().toLong() == 2);
}
