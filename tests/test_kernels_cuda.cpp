// The CUDA kernels (kernels/cuda/): every CUDA kernel against the CPU kernel's result (through
// the dispatcher: dk::add on CUDA tensors reaches add_cuda, on CPU tensors add_cpu), for
// several dtypes, broadcast shapes, non-contiguous and zero-size inputs, in-place and out=
// variants, plus the caching allocator, the device guard, host<->device copies and errors.
//
// A plain program, not Catch2, so that it can exit 77 (meson's "skipped") on a machine without
// a CUDA device: cudaGetDeviceCount failing or returning 0. Otherwise it runs every test,
// prints each failure, and exits 1 if any check failed.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../kernels/cuda/cuda_allocator.h"
#include "../kernels/cuda/cuda_utils.h"
#include "../kernels/cuda/device_guard.h"
#include "dk/core/generator.h"  // before Functions.h, which uses Generator without including it
#include "dk/generated/ops/_log_softmax.h"
#include "dk/generated/ops/_softmax.h"
#include "dk/generated/ops/abs.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/add_ops.h"
#include "dk/generated/ops/addmm.h"
#include "dk/generated/ops/arange.h"
#include "dk/generated/ops/argmax.h"
#include "dk/generated/ops/bmm.h"
#include "dk/generated/ops/cat.h"
#include "dk/generated/ops/clamp.h"
#include "dk/generated/ops/copy_ops.h"
#include "dk/generated/ops/cos.h"
#include "dk/generated/ops/div.h"
#include "dk/generated/ops/embedding.h"
#include "dk/generated/ops/empty.h"
#include "dk/generated/ops/eq.h"
#include "dk/generated/ops/exp.h"
#include "dk/generated/ops/fill.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/gelu.h"
#include "dk/generated/ops/gelu_backward.h"
#include "dk/generated/ops/gt.h"
#include "dk/generated/ops/item_ops.h"
#include "dk/generated/ops/log.h"
#include "dk/generated/ops/lt.h"
#include "dk/generated/ops/max.h"
#include "dk/generated/ops/max_pool2d_with_indices.h"
#include "dk/generated/ops/maximum.h"
#include "dk/generated/ops/mean.h"
#include "dk/generated/ops/min.h"
#include "dk/generated/ops/minimum.h"
#include "dk/generated/ops/mm.h"
#include "dk/generated/ops/mse_loss.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/mul_ops.h"
#include "dk/generated/ops/neg.h"
#include "dk/generated/ops/nll_loss.h"
#include "dk/generated/ops/ones.h"
#include "dk/generated/ops/pow.h"
#include "dk/generated/ops/rand.h"
#include "dk/generated/ops/randn.h"
#include "dk/generated/ops/relu.h"
#include "dk/generated/ops/rsqrt.h"
#include "dk/generated/ops/sigmoid.h"
#include "dk/generated/ops/sin.h"
#include "dk/generated/ops/sqrt.h"
#include "dk/generated/ops/sub.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/tanh.h"
#include "dk/generated/ops/where.h"
#include "dk/generated/ops/zero.h"
#include "dk/generated/ops/zeros.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

using namespace dk;

namespace {

// ---------------------------------------------------------------- a minimal test harness

struct TestCase {
  const char* name;
  void (*fn)();
};
std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}
struct Register {
  Register(const char* name, void (*fn)()) { registry().push_back({name, fn}); }
};
#define CUDA_TEST(fn)                     \
  void fn();                              \
  const Register register_##fn(#fn, &fn); \
  void fn()

int failures = 0;
int checks = 0;
const char* current_test = "";

void fail(const char* file, int line, const std::string& what) {
  ++failures;
  std::printf("FAILED %s (%s:%d): %s\n", current_test, file, line, what.c_str());
}

#define CHECK(cond)                                               \
  do {                                                            \
    ++checks;                                                     \
    if (!(cond)) fail(__FILE__, __LINE__, "CHECK(" #cond ")");    \
  } while (0)

// The expression must throw dk::Error whose what() is exactly `message`.
#define CHECK_THROWS_WITH(expr, message)                                                                      \
  do {                                                                                                        \
    ++checks;                                                                                                 \
    try {                                                                                                     \
      (void)(expr);                                                                                           \
      fail(__FILE__, __LINE__, "no exception from " #expr);                                                   \
    } catch (const Error& e) {                                                                                \
      if (std::string(e.what()) != (message))                                                                 \
        fail(__FILE__, __LINE__, std::string("message was: ") + e.what() + "\n  expected: " + (message));     \
    }                                                                                                         \
  } while (0)

// ---------------------------------------------------------------- tensors on both sides

using Sizes = std::vector<int64_t>;
const Device kCuda(DeviceType::CUDA, 0);
const Device kHost(DeviceType::CPU);
const ScalarType kEveryDtype[] = {kByte, kChar, kShort, kInt, kLong, kHalf, kFloat, kDouble, kBool, kBFloat16};
const ScalarType kFloating[] = {kHalf, kFloat, kDouble, kBFloat16};

// Deterministic CPU data: floats in [-2, 2), integers in [-5, 5) ([0, 10) for Byte), random bools.
Tensor hostData(const Sizes& sizes, ScalarType dtype, uint64_t seed = 1) {
  Tensor t = detail::empty_contiguous(sizes, dtype, kHost);
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  dispatchDtype(dtype, "hostData", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint32_t r = next();
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = (r & 1) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        p[i] = static_cast<T>(std::is_same_v<T, uint8_t> ? r % 10 : static_cast<int64_t>(r % 10) - 5);
      } else {
        p[i] = T(static_cast<float>(static_cast<double>(r) / 4294967296.0 * 4.0 - 2.0));
      }
    }
  });
  return t;
}

Tensor toCuda(const Tensor& host) {
  Tensor t = empty(host.sizes(), host.dtype(), std::nullopt, kCuda);
  ops::copy_::call(t, host, false);
  return t;
}

Tensor toHost(const Tensor& t) {
  Tensor host = detail::empty_contiguous(t.sizes(), t.dtype(), kHost);
  ops::copy_::call(host, t, false);
  return host;
}

// A transposed view of a fresh [cols, rows] tensor: sizes [rows, cols], strides [1, rows].
Tensor transposedView(const Tensor& base) {
  return detail::make_view(base, {base.size(1), base.size(0)}, {base.stride(1), base.stride(0)}, 0);
}

double elementAt(const Tensor& host, int64_t i) {
  return dispatchDtype(host.dtype(), "elementAt", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<const T*>(host.data_ptr())[i]);
  });
}

std::string describe(const Tensor& t) {
  std::ostringstream out;
  out << IntArrayRef(t.sizes()) << " " << t.dtype() << " on " << t.device();
  return out.str();
}

// The CUDA result has the CPU result's sizes and dtype, sits on the GPU, and agrees element by
// element within rtol/atol (NaNs agree with NaNs).
void expectClose(const char* file, int line, const Tensor& cuda_result, const Tensor& cpu_result, double rtol,
                 double atol) {
  ++checks;
  if (!cuda_result.is_cuda() || cuda_result.sizes() != cpu_result.sizes() || cuda_result.dtype() != cpu_result.dtype()) {
    fail(file, line, "got " + describe(cuda_result) + ", CPU gave " + describe(cpu_result));
    return;
  }
  Tensor got = toHost(cuda_result);
  Tensor want = cpu_result.is_contiguous() ? cpu_result : toHost(toCuda(cpu_result));
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = elementAt(got, i), w = elementAt(want, i);
    bool both_nan = std::isnan(g) && std::isnan(w);
    if (!both_nan && !(g == w) && !(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      std::ostringstream out;
      out << describe(cuda_result) << ": element " << i << " is " << g << ", CPU gave " << w;
      fail(file, line, out.str());
      return;
    }
  }
}
#define EXPECT_CLOSE(cuda_result, cpu_result, rtol, atol) expectClose(__FILE__, __LINE__, cuda_result, cpu_result, rtol, atol)
#define EXPECT_EQUAL(cuda_result, cpu_result) expectClose(__FILE__, __LINE__, cuda_result, cpu_result, 0, 0)

double rtolFor(ScalarType dtype) {
  switch (dtype) {
    case kHalf: return 2e-3;
    case kBFloat16: return 1e-2;
    case kFloat: return 1e-5;
    default: return 1e-12;
  }
}

// ---------------------------------------------------------------- allocator and device guard

CUDA_TEST(allocator_caches_blocks) {
  if (cuda::cachingDisabled()) {  // DK_CUDA_NO_CACHING=1 (tools/gpu-check's memcheck run)
    cuda::CachingAllocatorStats before = cuda::cachingAllocatorStats();
    {
      Tensor t = empty({1000}, kFloat, std::nullopt, kCuda);
      CHECK(cuda::cachingAllocatorStats().allocated_bytes == before.allocated_bytes + 4000);  // exact size
    }
    CHECK(cuda::cachingAllocatorStats().allocated_bytes == before.allocated_bytes);
    CHECK(cuda::cachingAllocatorStats().cached_bytes == 0);
    return;
  }
  cuda::emptyCache();
  cuda::CachingAllocatorStats before = cuda::cachingAllocatorStats();
  void* first = nullptr;
  {
    Tensor t = empty({1000}, kFloat, std::nullopt, kCuda);
    first = t.data_ptr();
    CHECK(first != nullptr);
    CHECK(cuda::cachingAllocatorStats().allocated_bytes == before.allocated_bytes + 4096);
  }
  CHECK(cuda::cachingAllocatorStats().cached_bytes == 4096);
  Tensor again = empty({1024}, kFloat, std::nullopt, kCuda);  // the same size class
  CHECK(again.data_ptr() == first);
  CHECK(cuda::cachingAllocatorStats().cache_hits == before.cache_hits + 1);
  CHECK(again.device() == kCuda);  // "cuda" resolves to the current device
  Tensor none = empty({0}, kFloat, std::nullopt, kCuda);
  CHECK(none.data_ptr() == nullptr);
  cuda::emptyCache();
  CHECK(cuda::cachingAllocatorStats().cached_bytes == 0);
}

CUDA_TEST(device_guard_sets_and_restores) {
  int count = cuda::deviceCount();
  CHECK(count >= 1);
  CHECK(cuda::currentDevice() == 0);
  {
    cuda::DeviceGuard guard(Device(DeviceType::CUDA, 0));
    CHECK(guard.original_device() == -1);  // already current: nothing switched
    cuda::DeviceGuard none(std::nullopt);
    cuda::DeviceGuard cpu(kHost);
    CHECK(cuda::currentDevice() == 0);
  }
  if (count >= 2) {
    {
      cuda::DeviceGuard guard(Device(DeviceType::CUDA, 1));
      CHECK(cuda::currentDevice() == 1);
      CHECK(guard.original_device() == 0);
      Tensor t = empty({4}, kFloat, std::nullopt, Device(DeviceType::CUDA));
      CHECK(t.device() == Device(DeviceType::CUDA, 1));
    }
    CHECK(cuda::currentDevice() == 0);
    Tensor on1 = toCuda(hostData({3, 4}, kFloat));
    Tensor dst = empty({3, 4}, kDouble, std::nullopt, Device(DeviceType::CUDA, 1));
    ops::copy_::call(dst, on1, false);  // across devices, converted
    Tensor expected = detail::empty_contiguous({3, 4}, kDouble, kHost);
    ops::copy_::call(expected, hostData({3, 4}, kFloat), false);
    EXPECT_EQUAL(dst, expected);
  }
}

// ---------------------------------------------------------------- copies

CUDA_TEST(copy_round_trips_every_dtype_pair) {
  for (ScalarType from : kEveryDtype) {
    Tensor host = hostData({3, 5}, from, 7);
    Tensor device = toCuda(host);
    EXPECT_EQUAL(device, host);
    for (ScalarType to : kEveryDtype) {
      Tensor converted = empty({3, 5}, to, std::nullopt, kCuda);
      ops::copy_::call(converted, device, false);
      Tensor expected = detail::empty_contiguous({3, 5}, to, kHost);
      ops::copy_::call(expected, host, false);  // the CPU kernel's conversion
      EXPECT_EQUAL(converted, expected);
    }
  }
}

CUDA_TEST(copy_broadcasts_and_handles_strides) {
  Tensor host_row = hostData({1, 4}, kFloat);
  Tensor dst = empty({3, 4}, kFloat, std::nullopt, kCuda);
  ops::copy_::call(dst, host_row, false);  // host -> device with broadcast
  Tensor expected = detail::empty_contiguous({3, 4}, kFloat, kHost);
  ops::copy_::call(expected, host_row, false);
  EXPECT_EQUAL(dst, expected);

  // Non-contiguous on both sides, device -> host.
  Tensor src = transposedView(toCuda(hostData({5, 3}, kDouble)));
  Tensor host_base = detail::empty_contiguous({5, 3}, kHalf, kHost);
  Tensor host_dst = transposedView(host_base);
  ops::copy_::call(host_dst, src, false);
  Tensor cpu_reference = detail::empty_contiguous({3, 5}, kHalf, kHost);
  ops::copy_::call(cpu_reference, transposedView(hostData({5, 3}, kDouble)), false);
  Tensor host_dst_contiguous = detail::empty_contiguous({3, 5}, kHalf, kHost);
  ops::copy_::call(host_dst_contiguous, host_dst, false);
  EXPECT_EQUAL(toCuda(host_dst_contiguous), cpu_reference);

  // Non-contiguous host source.
  Tensor strided_host = transposedView(hostData({4, 2}, kInt));
  EXPECT_EQUAL(toCuda(strided_host), strided_host);

  CHECK_THROWS_WITH(ops::copy_::call(dst, hostData({5}, kFloat), false),
                    "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1 "
                    "(shapes [3, 4] and [5])");
  // Zero-size copies do nothing.
  Tensor empty_dst = empty({0, 3}, kFloat, std::nullopt, kCuda);
  CHECK(ops::copy_::call(empty_dst, hostData({0, 3}, kFloat), false).is_same(empty_dst));
}

CUDA_TEST(item_fill_zero) {
  Tensor t = toCuda(hostData({}, kDouble));
  CHECK(ops::item::call(t).toDouble() == elementAt(hostData({}, kDouble), 0));
  CHECK(ops::item::call(full({1, 1}, 7, kLong, std::nullopt, kCuda)).toLong() == 7);
  CHECK(ops::item::call(full({1}, true, std::nullopt, std::nullopt, kCuda)).isBoolean());
  CHECK(ops::item::call(full({}, 2.5, kHalf, std::nullopt, kCuda)).toDouble() == 2.5);
  CHECK_THROWS_WITH(ops::item::call(empty({2, 3}, kFloat, std::nullopt, kCuda)),
                    "a Tensor with 6 elements cannot be converted to Scalar");
  for (ScalarType dtype : kEveryDtype) {
    Tensor base = toCuda(hostData({4, 3}, dtype));
    Tensor view = transposedView(base);
    fill_(view, 3);
    Tensor expected_base = hostData({4, 3}, dtype);
    fill_(transposedView(expected_base), 3);
    EXPECT_EQUAL(base, expected_base);
    zero_(base);
    EXPECT_EQUAL(base, zeros({4, 3}, dtype, std::nullopt, kHost));
  }
}

// ---------------------------------------------------------------- factories

CUDA_TEST(factories_match_cpu) {
  for (ScalarType dtype : kEveryDtype) {
    EXPECT_EQUAL(zeros({2, 3}, dtype, std::nullopt, kCuda), zeros({2, 3}, dtype, std::nullopt, kHost));
    EXPECT_EQUAL(ones({4}, dtype, std::nullopt, kCuda), ones({4}, dtype, std::nullopt, kHost));
    EXPECT_EQUAL(full({2, 2}, 5, dtype, std::nullopt, kCuda), full({2, 2}, 5, dtype, std::nullopt, kHost));
  }
  EXPECT_EQUAL(full({3}, 1.5, std::nullopt, std::nullopt, kCuda), full({3}, 1.5, std::nullopt, std::nullopt, kHost));
  EXPECT_EQUAL(full({3}, 7, std::nullopt, std::nullopt, kCuda), full({3}, 7, std::nullopt, std::nullopt, kHost));
  EXPECT_EQUAL(zeros({0, 5}, std::nullopt, std::nullopt, kCuda), zeros({0, 5}, std::nullopt, std::nullopt, kHost));
  Tensor channels_last = empty({2, 3, 4, 5}, kFloat, std::nullopt, kCuda, std::nullopt, MemoryFormat::ChannelsLast);
  CHECK(channels_last.strides() == Sizes({60, 1, 15, 3}));

  auto arangeOn = [](Device device, const Scalar& start, const Scalar& end, const Scalar& step,
                     std::optional<ScalarType> dtype = std::nullopt) {
    return arange(start, end, step, dtype, std::nullopt, device);
  };
  EXPECT_EQUAL(arangeOn(kCuda, 0, 10, 3), arangeOn(kHost, 0, 10, 3));
  EXPECT_EQUAL(arangeOn(kCuda, 10, -5, -2), arangeOn(kHost, 10, -5, -2));
  EXPECT_EQUAL(arangeOn(kCuda, 0, 1, 0.1), arangeOn(kHost, 0, 1, 0.1));
  EXPECT_EQUAL(arangeOn(kCuda, 0, 1, 0.1, kDouble), arangeOn(kHost, 0, 1, 0.1, kDouble));
  EXPECT_EQUAL(arangeOn(kCuda, 0, 4, 0.25, kHalf), arangeOn(kHost, 0, 4, 0.25, kHalf));
  EXPECT_EQUAL(arangeOn(kCuda, 0, 2.5, 1, kInt), arangeOn(kHost, 0, 2.5, 1, kInt));
  EXPECT_EQUAL(arangeOn(kCuda, 1, 300, 7, kByte), arangeOn(kHost, 1, 300, 7, kByte));
  Tensor hand = toHost(arangeOn(kCuda, 2, 11, 3));
  CHECK(hand.numel() == 3 && elementAt(hand, 0) == 2 && elementAt(hand, 1) == 5 && elementAt(hand, 2) == 8);
  CHECK_THROWS_WITH(arangeOn(kCuda, 0, 10, 0), "step must be nonzero");
}

CUDA_TEST(random_factories) {
  for (ScalarType dtype : kFloating) {
    Tensor u = toHost(rand({100000}, Generator(42), dtype, std::nullopt, kCuda));
    double sum = 0, min = 1, max = 0;
    for (int64_t i = 0; i < u.numel(); ++i) {
      double v = elementAt(u, i);
      sum += v;
      min = std::min(min, v);
      max = std::max(max, v);
    }
    CHECK(min >= 0 && max < 1);
    CHECK(std::fabs(sum / u.numel() - 0.5) < 0.01);
    Tensor n = toHost(randn({100001}, Generator(42), dtype, std::nullopt, kCuda));
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n.numel(); ++i) {
      double v = elementAt(n, i);
      s1 += v;
      s2 += v * v;
    }
    double mean = s1 / n.numel(), var = s2 / n.numel() - mean * mean;
    CHECK(std::fabs(mean) < 0.02);
    CHECK(std::fabs(var - 1) < 0.03);
  }
  // The same generator state gives the same numbers; the next call different ones.
  Generator g1(7), g2(7);
  Tensor a = rand({64}, g1, kFloat, std::nullopt, kCuda);
  Tensor b = rand({64}, g2, kFloat, std::nullopt, kCuda);
  EXPECT_EQUAL(a, toHost(b));
  Tensor c = toHost(rand({64}, g1, kFloat, std::nullopt, kCuda));
  CHECK(elementAt(c, 0) != elementAt(toHost(a), 0) || elementAt(c, 1) != elementAt(toHost(a), 1));
  manual_seed(3);
  Tensor d = rand({8}, kDouble, std::nullopt, kCuda);
  manual_seed(3);
  EXPECT_EQUAL(rand({8}, kDouble, std::nullopt, kCuda), toHost(d));
  CHECK_THROWS_WITH(rand({2}, kLong, std::nullopt, kCuda), "rand: unsupported dtype Long");
  CHECK(randn({0}, std::nullopt, std::nullopt, kCuda).numel() == 0);
}

// ---------------------------------------------------------------- pointwise

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

// op on CUDA copies of (a, b) against op on the CPU tensors.
void checkBinary(const char* file, int line, const BinaryFn& op, const Tensor& a, const Tensor& b, double rtol) {
  Tensor expected = op(a, b);
  Tensor got = op(a.is_cpu() && a.dim() == 0 ? a : toCuda(a), b.is_cpu() && b.dim() == 0 ? b : toCuda(b));
  expectClose(file, line, got, expected, rtol, rtol);
}
#define CHECK_BINARY(op, a, b, rtol) checkBinary(__FILE__, __LINE__, op, a, b, rtol)

CUDA_TEST(binary_operators_match_cpu) {
  const std::pair<const char*, BinaryFn> arithmetic[] = {
      {"add", [](const Tensor& x, const Tensor& y) { return add(x, y, 2); }},
      {"mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); }},
      {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); }},
      {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x, y); }},
      {"eq", [](const Tensor& x, const Tensor& y) { return eq(x, y); }},
      {"gt", [](const Tensor& x, const Tensor& y) { return gt(x, y); }},
      {"lt", [](const Tensor& x, const Tensor& y) { return lt(x, y); }},
  };
  for (const auto& [name, op] : arithmetic) {
    for (ScalarType dtype : kEveryDtype) {
      CHECK_BINARY(op, hostData({3, 4}, dtype, 1), hostData({3, 4}, dtype, 2), rtolFor(dtype));
    }
    CHECK_BINARY(op, hostData({2, 1, 4}, kFloat), hostData({3, 1}, kDouble), 1e-12);        // broadcast, promote
    CHECK_BINARY(op, hostData({5, 3}, kInt), hostData({}, kLong), 0);                        // 0-dim operand
    CHECK_BINARY(op, hostData({5, 3}, kHalf), hostData({}, kFloat, 3), 2e-3);                // 0-dim CPU scalar
    CHECK_BINARY(op, transposedView(hostData({4, 3}, kFloat)), hostData({3, 4}, kFloat), 1e-6);
    CHECK_BINARY(op, hostData({0, 3}, kFloat), hostData({3}, kFloat), 0);
  }
  for (ScalarType dtype : {kByte, kChar, kInt, kLong, kHalf, kFloat, kDouble, kBFloat16}) {
    CHECK_BINARY([](const Tensor& x, const Tensor& y) { return sub(x, y, 3); }, hostData({6}, dtype, 4),
                 hostData({2, 6}, dtype, 5), rtolFor(dtype));
    CHECK_BINARY([](const Tensor& x, const Tensor& y) { return div(x, y); }, hostData({6}, dtype, 4),
                 hostData({2, 6}, kFloat, 5), 1e-5);
  }
  CHECK_BINARY([](const Tensor& x, const Tensor& y) { return div(x, y); }, hostData({7}, kLong, 4),
               hostData({7}, kInt, 6), 1e-6);  // integers divide in float
  // NaN propagates through maximum and minimum.
  Tensor with_nan = full({3}, std::numeric_limits<double>::quiet_NaN(), kFloat, std::nullopt, kHost);
  CHECK_BINARY([](const Tensor& x, const Tensor& y) { return maximum(x, y); }, with_nan, hostData({3}, kFloat), 0);
  CHECK_BINARY([](const Tensor& x, const Tensor& y) { return minimum(x, y); }, hostData({3}, kFloat), with_nan, 0);
  // eq with a Scalar.
  Tensor ints = hostData({10}, kInt);
  EXPECT_EQUAL(eq(toCuda(ints), Scalar(2)), eq(ints, Scalar(2)));
  EXPECT_EQUAL(eq(toCuda(ints), Scalar(2.5)), eq(ints, Scalar(2.5)));

  Tensor cpu_vector = hostData({4}, kFloat);
  CHECK_THROWS_WITH(add(toCuda(hostData({4}, kFloat)), cpu_vector),
                    "dk::add: expected all tensors to be on the same device, but found at least two devices, cuda:0 "
                    "(argument 'self') and cpu (argument 'other')");
  CHECK_THROWS_WITH(sub(toCuda(hostData({2}, kBool)), toCuda(hostData({2}, kBool))),
                    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                    "`logical_xor()` operator instead.");
}

CUDA_TEST(inplace_and_out_variants) {
  for (ScalarType dtype : {kInt, kLong, kHalf, kFloat, kDouble, kBFloat16}) {
    Tensor self_host = hostData({3, 4}, dtype, 1);
    Tensor self = toCuda(self_host);
    Tensor returned = ops::add__Tensor::call(self, toCuda(hostData({4}, dtype, 2)), 2);
    CHECK(returned.is_same(self));
    ops::add__Tensor::call(self_host, hostData({4}, dtype, 2), 2);
    EXPECT_CLOSE(self, self_host, rtolFor(dtype), rtolFor(dtype));
    ops::mul__Tensor::call(self, toCuda(hostData({3, 1}, dtype, 3)));
    ops::mul__Tensor::call(self_host, hostData({3, 1}, dtype, 3));
    EXPECT_CLOSE(self, self_host, rtolFor(dtype), rtolFor(dtype));
  }
  // In place into a non-contiguous self, with an operand of a wider dtype.
  Tensor base_host = hostData({4, 3}, kFloat);
  Tensor base = toCuda(base_host);
  ops::add__Tensor::call(transposedView(base), toCuda(hostData({3, 4}, kDouble, 9)), 1);
  ops::add__Tensor::call(transposedView(base_host), hostData({3, 4}, kDouble, 9), 1);
  EXPECT_CLOSE(base, base_host, 1e-6, 1e-6);
  Tensor relu_self = toCuda(hostData({5}, kFloat));
  relu_(relu_self);
  EXPECT_EQUAL(relu_self, relu(hostData({5}, kFloat)));
  CHECK_THROWS_WITH(ops::add__Tensor::call(toCuda(hostData({3}, kLong)), toCuda(hostData({3}, kFloat)), 1),
                    "result type Float can't be cast to the desired output type Long");

  // out=: resized when empty, converted when wider, strided when given so.
  Tensor out = empty({0}, kDouble, std::nullopt, kCuda);
  add(toCuda(hostData({2, 3}, kFloat)), toCuda(hostData({3}, kFloat, 2)), 1, out);
  Tensor out_host = detail::empty_contiguous({0}, kDouble, kHost);
  add(hostData({2, 3}, kFloat), hostData({3}, kFloat, 2), 1, out_host);
  EXPECT_EQUAL(out, out_host);
  Tensor strided_out = transposedView(empty({3, 2}, kFloat, std::nullopt, kCuda));
  add(toCuda(hostData({2, 3}, kFloat)), toCuda(hostData({2, 3}, kFloat, 2)), 1, strided_out);
  CHECK(strided_out.strides() == Sizes({1, 2}));
  EXPECT_CLOSE(strided_out, add(hostData({2, 3}, kFloat), hostData({2, 3}, kFloat, 2)), 1e-6, 1e-6);
}

using UnaryFn = std::function<Tensor(const Tensor&)>;

CUDA_TEST(unary_operators_match_cpu) {
  const std::pair<const char*, UnaryFn> floating_ops[] = {
      {"exp", [](const Tensor& x) { return dk::exp(x); }},
      {"log", [](const Tensor& x) { return dk::log(dk::abs(x)); }},
      {"sqrt", [](const Tensor& x) { return dk::sqrt(dk::abs(x)); }},
      {"rsqrt", [](const Tensor& x) { return dk::rsqrt(dk::abs(x)); }},
      {"sin", [](const Tensor& x) { return dk::sin(x); }},
      {"cos", [](const Tensor& x) { return dk::cos(x); }},
      {"tanh", [](const Tensor& x) { return dk::tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return dk::sigmoid(x); }},
      {"gelu", [](const Tensor& x) { return dk::gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return dk::gelu(x, "tanh"); }},
  };
  for (const auto& [name, op] : floating_ops) {
    for (ScalarType dtype : kFloating) {
      Tensor x = hostData({4, 5}, dtype);
      EXPECT_CLOSE(op(toCuda(x)), op(x), std::max(rtolFor(dtype), 1e-5), std::max(rtolFor(dtype), 1e-6));
      Tensor xt = transposedView(hostData({5, 4}, dtype));
      EXPECT_CLOSE(op(transposedView(toCuda(hostData({5, 4}, dtype)))), op(xt), std::max(rtolFor(dtype), 1e-5),
                   std::max(rtolFor(dtype), 1e-6));
    }
  }
  // Integral inputs become Float.
  Tensor ints = hostData({6}, kInt);
  EXPECT_CLOSE(dk::exp(toCuda(ints)), dk::exp(ints), 1e-5, 1e-6);
  EXPECT_CLOSE(dk::sigmoid(toCuda(hostData({6}, kBool))), dk::sigmoid(hostData({6}, kBool)), 1e-6, 1e-6);
  for (ScalarType dtype : {kByte, kChar, kInt, kLong, kHalf, kFloat, kDouble, kBFloat16}) {
    Tensor x = hostData({3, 3}, dtype);
    EXPECT_EQUAL(neg(toCuda(x)), neg(x));
    EXPECT_EQUAL(dk::abs(toCuda(x)), dk::abs(x));
    EXPECT_EQUAL(relu(toCuda(x)), relu(x));
    EXPECT_EQUAL(clamp(toCuda(x), -1, 1), clamp(x, -1, 1));
    EXPECT_EQUAL(clamp(toCuda(x), std::nullopt, 0), clamp(x, std::nullopt, 0));
    EXPECT_CLOSE(dk::pow(toCuda(x), 2), dk::pow(x, 2), rtolFor(dtype), rtolFor(dtype));
    EXPECT_CLOSE(dk::pow(toCuda(x), 3), dk::pow(x, 3), rtolFor(dtype), rtolFor(dtype));
  }
  EXPECT_CLOSE(clamp(toCuda(hostData({8}, kInt)), 0.5, std::nullopt), clamp(hostData({8}, kInt), 0.5, std::nullopt),
               0, 0);
  Tensor positive = dk::abs(hostData({10}, kFloat));
  EXPECT_CLOSE(dk::pow(toCuda(positive), 0.5), dk::pow(positive, 0.5), 1e-6, 1e-6);
  EXPECT_CLOSE(dk::pow(toCuda(positive), -1.5), dk::pow(positive, -1.5), 1e-5, 1e-6);
  EXPECT_CLOSE(dk::pow(toCuda(hostData({10}, kInt)), 2.5), dk::pow(hostData({10}, kInt), 2.5), 1e-5, 1e-6);
  CHECK_THROWS_WITH(neg(toCuda(hostData({2}, kBool))),
                    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                    "mask, use the `~` or `logical_not()` operator instead.");
}

// gelu's derivative kernel, and autograd through CUDA tensors: the generated Autograd kernels
// redispatch to the CUDA kernels and the formulas run there.
CUDA_TEST(gelu_backward_and_autograd_match_cpu) {
  for (ScalarType dtype : kFloating) {
    for (const char* approximate : {"none", "tanh"}) {
      Tensor g = hostData({4, 5}, dtype, 2), x = hostData({4, 5}, dtype, 3);
      EXPECT_CLOSE(gelu_backward(toCuda(g), toCuda(x), approximate), gelu_backward(g, x, approximate),
                   std::max(rtolFor(dtype), 1e-5), std::max(rtolFor(dtype), 1e-6));
    }
  }
  Tensor x_host = hostData({3, 4}, kDouble, 4);
  Tensor w_host = hostData({4, 2}, kDouble, 5);
  auto loss_of = [](const Tensor& x, const Tensor& w) { return dk::sum(dk::gelu(dk::mm(x, w))); };
  Tensor x = toCuda(x_host), w = toCuda(w_host);
  w.requires_grad_();
  w_host.requires_grad_();
  loss_of(x, w).backward();
  loss_of(x_host, w_host).backward();
  CHECK(w.grad().device().type == DeviceType::CUDA);
  EXPECT_CLOSE(w.grad(), w_host.grad(), 1e-9, 1e-9);
}

CUDA_TEST(where_matches_cpu) {
  for (ScalarType dtype : kEveryDtype) {
    Tensor cond = hostData({3, 1}, kBool), a = hostData({3, 4}, dtype, 2), b = hostData({4}, dtype, 3);
    EXPECT_EQUAL(where(toCuda(cond), toCuda(a), toCuda(b)), where(cond, a, b));
  }
  Tensor cond = hostData({5}, kBool);
  EXPECT_EQUAL(where(toCuda(cond), toCuda(hostData({5}, kInt)), hostData({}, kDouble)),
               where(cond, hostData({5}, kInt), hostData({}, kDouble)));
}

// ---------------------------------------------------------------- reductions

CUDA_TEST(reductions_match_cpu) {
  for (ScalarType dtype : kEveryDtype) {
    Tensor x = hostData({4, 5, 6}, dtype);
    Tensor xc = toCuda(x);
    // The CPU accumulates in double, the GPU in float for the float dtypes (as PyTorch's).
    double tol = dtype == kHalf || dtype == kBFloat16 ? 2e-2 : dtype == kFloat ? 1e-4 : 1e-9;
    EXPECT_CLOSE(sum(xc), sum(x), tol, tol);
    EXPECT_CLOSE(sum(xc, {1}), sum(x, {1}), tol, tol);
    EXPECT_CLOSE(sum(xc, {0, -1}, true), sum(x, {0, -1}, true), tol, tol);
    EXPECT_CLOSE(sum(xc, {2}, false, kDouble), sum(x, {2}, false, kDouble), 1e-12, 1e-12);
    auto [values, indices] = dk::max(xc, 1);
    auto [cpu_values, cpu_indices] = dk::max(x, 1);
    EXPECT_EQUAL(values, cpu_values);
    EXPECT_EQUAL(indices, cpu_indices);
    auto [kept_values, kept_indices] = dk::max(xc, -1, true);
    auto [cpu_kept_values, cpu_kept_indices] = dk::max(x, -1, true);
    EXPECT_EQUAL(kept_values, cpu_kept_values);
    EXPECT_EQUAL(kept_indices, cpu_kept_indices);
    if (dtype != kBool) {
      EXPECT_EQUAL(argmax(xc), argmax(x));
      EXPECT_EQUAL(argmax(xc, 2), argmax(x, 2));
      EXPECT_EQUAL(argmax(xc, 0, true), argmax(x, 0, true));
    }
  }
  for (ScalarType dtype : kFloating) {
    Tensor x = hostData({3, 7}, dtype);
    double tol = dtype == kHalf || dtype == kBFloat16 ? 2e-2 : 1e-5;
    EXPECT_CLOSE(mean(toCuda(x), {1}), mean(x, {1}), tol, tol);
    EXPECT_CLOSE(mean(toCuda(x), {}, true), mean(x, {}, true), tol, tol);
  }
  EXPECT_CLOSE(mean(toCuda(hostData({3, 7}, kInt)), {0}, false, kDouble),
               mean(hostData({3, 7}, kInt), {0}, false, kDouble), 1e-12, 1e-12);
  // Non-contiguous input, a large reduction, empty reductions.
  Tensor xt = transposedView(hostData({50, 40}, kFloat));
  EXPECT_CLOSE(sum(transposedView(toCuda(hostData({50, 40}, kFloat))), {1}), sum(xt, {1}), 1e-5, 1e-5);
  Tensor big = hostData({1 << 20}, kFloat);
  EXPECT_CLOSE(sum(toCuda(big)), sum(big), 1e-4, 1e-2);
  EXPECT_EQUAL(sum(zeros({0, 3}, std::nullopt, std::nullopt, kCuda), {0}), sum(zeros({0, 3}, std::nullopt, std::nullopt, kHost), {0}));
  EXPECT_CLOSE(mean(zeros({0, 3}, std::nullopt, std::nullopt, kCuda), {0}), mean(zeros({0, 3}, std::nullopt, std::nullopt, kHost), {0}), 0, 0);
  // Ties go to the first index; NaN wins.
  Tensor ties = full({2, 5}, 1.0, kFloat, std::nullopt, kHost);
  EXPECT_EQUAL(argmax(toCuda(ties), 1), argmax(ties, 1));
  Tensor with_nan = hostData({6}, kFloat);
  static_cast<float*>(with_nan.data_ptr())[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQUAL(argmax(toCuda(with_nan)), argmax(with_nan));
  auto [nan_value, nan_index] = dk::max(toCuda(with_nan), 0);
  CHECK(std::isnan(ops::item::call(nan_value).toDouble()) && ops::item::call(nan_index).toLong() == 3);
  CHECK_THROWS_WITH(dk::max(empty({2, 0}, kFloat, std::nullopt, kCuda), 1),
                    "max(): Expected reduction dim 1 to have non-zero size.");
}

// Each kind of plan of Note [CUDA reduction plans] (lanes on the reduction or on the outputs,
// vector loads, split across blocks with a second pass) against the CPU, and issue 24's cases.
CUDA_TEST(reduction_plans_match_cpu) {
  struct Case {
    Sizes sizes;
    std::vector<int64_t> dims;
  };
  const Case cases[] = {
      {{4096, 256}, {0}},     // lanes on the outputs, split
      {{100000, 8}, {1}},     // many short rows: a thread per row, vector loads
      {{3000000}, {0}},       // one long output: split across blocks
      {{3, 700000}, {1}},     // few long rows: split
      {{2000, 3}, {0}},       // three outputs, lanes on the outputs, split
      {{64, 33, 17}, {0, 2}}, // two reduced dims that do not merge
  };
  for (const Case& c : cases) {
    for (ScalarType dtype : {kFloat, kHalf, kDouble, kLong}) {
      Tensor x = hostData(c.sizes, dtype, 7);
      Tensor xc = toCuda(x);
      double tol = dtype == kHalf ? 2e-2 : dtype == kFloat ? 1e-4 : 1e-9;
      EXPECT_CLOSE(sum(xc, c.dims), sum(x, c.dims), tol, tol);
      if (dtype != kLong) EXPECT_CLOSE(mean(xc, c.dims), mean(x, c.dims), tol, tol);
      if (c.dims.size() == 1) {
        // Integers in [-5, 5): ties everywhere, so the lowest index must win in every split.
        auto [values, indices] = dk::min(xc, c.dims[0]);
        auto [cpu_values, cpu_indices] = dk::min(x, c.dims[0]);
        EXPECT_EQUAL(values, cpu_values);
        EXPECT_EQUAL(indices, cpu_indices);
        EXPECT_EQUAL(argmax(xc, c.dims[0]), argmax(x, c.dims[0]));
      }
    }
  }
  // A transposed input reduced along both dims, and along its memory's slow dim.
  Tensor base = hostData({3000, 700}, kFloat, 3);
  Tensor xt = transposedView(base), xtc = transposedView(toCuda(base));
  EXPECT_CLOSE(sum(xtc), sum(xt), 1e-4, 1e-2);
  EXPECT_CLOSE(sum(xtc, {0}), sum(xt, {0}), 1e-4, 1e-4);
  EXPECT_EQUAL(argmax(xtc), argmax(xt));
  // Issue 24, item 2: 5e9 ones (one element expanded: no memory) sum to 5e9, not to 2^32 where
  // a serial float sum per thread would stop counting.
  Tensor one = ones({1}, kFloat, std::nullopt, kCuda);
  Tensor many = detail::make_view(one, {5'000'000'000}, {0}, 0);
  double total = ops::item::call(sum(many)).toDouble();
  CHECK(std::fabs(total - 5e9) <= 5e9 * 1e-6);
  CHECK(std::fabs(ops::item::call(mean(many)).toDouble() - 1.0) <= 1e-6);
}

// ---------------------------------------------------------------- linear algebra

CUDA_TEST(matrix_products_match_cpu) {
  for (ScalarType dtype : kFloating) {
    double tol = dtype == kHalf ? 1e-2 : dtype == kBFloat16 ? 5e-2 : dtype == kFloat ? 1e-5 : 1e-12;
    Tensor a = hostData({5, 7}, dtype, 1), b = hostData({7, 3}, dtype, 2);
    EXPECT_CLOSE(mm(toCuda(a), toCuda(b)), mm(a, b), tol, tol);
    // Every combination of row- and column-major operands.
    Tensor at = transposedView(hostData({7, 5}, dtype, 3)), bt = transposedView(hostData({3, 7}, dtype, 4));
    Tensor atc = transposedView(toCuda(hostData({7, 5}, dtype, 3))), btc = transposedView(toCuda(hostData({3, 7}, dtype, 4)));
    EXPECT_CLOSE(mm(atc, toCuda(b)), mm(at, b), tol, tol);
    EXPECT_CLOSE(mm(toCuda(a), btc), mm(a, bt), tol, tol);
    EXPECT_CLOSE(mm(atc, btc), mm(at, bt), tol, tol);
    // Vectors and empty inner dims.
    EXPECT_CLOSE(mm(toCuda(hostData({1, 7}, dtype)), toCuda(hostData({7, 1}, dtype))),
                 mm(hostData({1, 7}, dtype), hostData({7, 1}, dtype)), tol, tol);
    EXPECT_EQUAL(mm(toCuda(hostData({3, 0}, dtype)), toCuda(hostData({0, 4}, dtype))),
                 mm(hostData({3, 0}, dtype), hostData({0, 4}, dtype)));
    Tensor x = hostData({4, 2, 6}, dtype, 5), y = hostData({4, 6, 3}, dtype, 6);
    EXPECT_CLOSE(bmm(toCuda(x), toCuda(y)), bmm(x, y), tol, tol);
    Tensor bias = hostData({3}, dtype, 7);
    EXPECT_CLOSE(addmm(toCuda(bias), toCuda(a), toCuda(b)), addmm(bias, a, b), tol, tol);
    EXPECT_CLOSE(addmm(toCuda(bias), toCuda(a), toCuda(b), 0.5, 2), addmm(bias, a, b, 0.5, 2), tol, tol);
    EXPECT_CLOSE(addmm(toCuda(hostData({5, 1}, dtype)), atc, toCuda(b), 1, -1),
                 addmm(hostData({5, 1}, dtype), at, b, 1, -1), tol, tol);
    EXPECT_CLOSE(addmm(toCuda(bias), toCuda(hostData({5, 0}, dtype)), toCuda(hostData({0, 3}, dtype)), 2, 1),
                 addmm(bias, hostData({5, 0}, dtype), hostData({0, 3}, dtype), 2, 1), tol, tol);
  }
  // beta = 0 ignores self, NaNs included.
  Tensor nan_bias = full({3}, std::numeric_limits<double>::quiet_NaN(), kFloat, std::nullopt, kHost);
  Tensor a = hostData({2, 4}, kFloat), b = hostData({4, 3}, kFloat);
  EXPECT_CLOSE(addmm(toCuda(nan_bias), toCuda(a), toCuda(b), 0, 1), mm(a, b), 1e-5, 1e-5);
  // mm.out into an empty out and into a strided one.
  Tensor out = empty({0}, kFloat, std::nullopt, kCuda);
  mm(toCuda(a), toCuda(b), out);
  EXPECT_CLOSE(out, mm(a, b), 1e-5, 1e-5);
  Tensor strided_out = transposedView(empty({3, 2}, kFloat, std::nullopt, kCuda));
  mm(toCuda(a), toCuda(b), strided_out);
  EXPECT_CLOSE(strided_out, mm(a, b), 1e-5, 1e-5);
  CHECK_THROWS_WITH(mm(toCuda(hostData({2, 2}, kLong)), toCuda(hostData({2, 2}, kLong))), "mm: unsupported dtype Long");
  CHECK_THROWS_WITH(mm(toCuda(hostData({2, 3}, kFloat)), toCuda(hostData({2, 3}, kFloat))),
                    "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
}

// ---------------------------------------------------------------- cat

CUDA_TEST(cat_matches_cpu) {
  Tensor a = hostData({2, 3}, kFloat, 1), b = hostData({4, 3}, kDouble, 2), c = hostData({0}, kInt, 3);
  EXPECT_EQUAL(cat({toCuda(a), toCuda(b), toCuda(c)}), cat({a, b, c}));
  Tensor d = transposedView(hostData({5, 2}, kLong, 4));
  EXPECT_EQUAL(cat({toCuda(a), transposedView(toCuda(hostData({5, 2}, kLong, 4)))}, 1), cat({a, d}, 1));
  EXPECT_EQUAL(cat({toCuda(hostData({0}, kHalf)), toCuda(hostData({0}, kHalf))}), cat({hostData({0}, kHalf), hostData({0}, kHalf)}));
  EXPECT_EQUAL(cat({toCuda(hostData({2, 0}, kBool)), toCuda(hostData({2, 2}, kBool))}, -1),
               cat({hostData({2, 0}, kBool), hostData({2, 2}, kBool)}, -1));
}

// ---------------------------------------------------------------- neural networks

CUDA_TEST(softmax_matches_cpu) {
  for (ScalarType dtype : {kFloat, kDouble, kBFloat16}) {
    double tol = dtype == kBFloat16 ? 2e-2 : 1e-5;
    for (int64_t dim : {0, 1, -1}) {
      Tensor x = hostData({4, 5, 6}, dtype);
      EXPECT_CLOSE(_softmax(toCuda(x), dim, false), _softmax(x, dim, false), tol, tol);
      EXPECT_CLOSE(_log_softmax(toCuda(x), dim, false), _log_softmax(x, dim, false), tol, tol);
    }
    Tensor xt = transposedView(hostData({7, 3}, dtype));
    EXPECT_CLOSE(_log_softmax(transposedView(toCuda(hostData({7, 3}, dtype))), 1, false), _log_softmax(xt, 1, false),
                 tol, tol);
    EXPECT_CLOSE(_softmax(toCuda(hostData({}, dtype)), 0, false), _softmax(hostData({}, dtype), 0, false), tol, tol);
  }
  // half_to_float on CUDA: Half in, Float out, against the Float computation on the CPU.
  Tensor h = hostData({3, 8}, kHalf);
  Tensor as_float = detail::empty_contiguous({3, 8}, kFloat, kHost);
  ops::copy_::call(as_float, h, false);
  EXPECT_CLOSE(_softmax(toCuda(h), 1, true), _softmax(as_float, 1, false), 1e-5, 1e-6);
  EXPECT_CLOSE(_log_softmax(toCuda(h), 1, true), _log_softmax(as_float, 1, false), 1e-5, 1e-6);
}

// One shape per layout of Note [CUDA softmax plans], against the CPU.
CUDA_TEST(softmax_plans_match_cpu) {
  struct Case {
    Sizes sizes;
    int64_t dim;
  };
  const Case cases[] = {
      {{1000, 10}, 1},     // lane groups of 16 per row
      {{13, 1024}, 1},     // a warp per row, 32 values per lane
      {{300, 1025}, 1},    // a block per row, scalar loads
      {{64, 4096}, 1},     // a block per row, vector loads
      {{2, 100000}, 1},    // rows split across blocks
      {{1, 100001}, 1},    // split, scalar loads
      {{4096, 64}, 0},     // columns, y threads splitting the dim
      {{2, 5000, 40}, 1},  // columns split into chunks
  };
  for (const Case& c : cases) {
    for (ScalarType dtype : {kFloat, kDouble}) {
      Tensor x = hostData(c.sizes, dtype, 13);
      double tol = dtype == kFloat ? 1e-5 : 1e-12;
      EXPECT_CLOSE(_softmax(toCuda(x), c.dim, false), _softmax(x, c.dim, false), tol, tol);
      EXPECT_CLOSE(_log_softmax(toCuda(x), c.dim, false), _log_softmax(x, c.dim, false), tol, tol);
    }
  }
  // Half rows into Float (half_to_float), and rows holding NaN, +inf and nothing but -inf.
  Tensor h = hostData({4, 8192}, kHalf, 14);
  Tensor h_float = detail::empty_contiguous({4, 8192}, kFloat, kHost);
  ops::copy_::call(h_float, h, false);
  EXPECT_CLOSE(_softmax(toCuda(h), 1, true), _softmax(h_float, 1, false), 1e-5, 1e-7);
  for (int64_t width : {10, 3000, 200000}) {
    Tensor special = hostData({3, width}, kFloat, 15);
    float* p = special.data_ptr<float>();
    p[1] = std::numeric_limits<float>::quiet_NaN();
    p[width + 2] = std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < width; ++j) p[2 * width + j] = -std::numeric_limits<float>::infinity();
    EXPECT_CLOSE(_softmax(toCuda(special), 1, false), _softmax(special, 1, false), 1e-5, 1e-7);
    EXPECT_CLOSE(_log_softmax(toCuda(special), 1, false), _log_softmax(special, 1, false), 1e-5, 1e-7);
  }
}

CUDA_TEST(losses_and_embedding_match_cpu) {
  for (ScalarType dtype : {kFloat, kDouble}) {
    Tensor x = hostData({6, 4}, dtype, 1), y = hostData({6, 4}, dtype, 2);
    for (int64_t reduction : {0, 1, 2}) {
      EXPECT_CLOSE(mse_loss(toCuda(x), toCuda(y), reduction), mse_loss(x, y, reduction), 1e-5, 1e-5);
      EXPECT_CLOSE(mse_loss(toCuda(x), toCuda(hostData({4}, dtype, 3)), reduction),
                   mse_loss(x, hostData({4}, dtype, 3), reduction), 1e-5, 1e-5);
    }
    Tensor log_probs = _log_softmax(hostData({5, 3}, dtype), 1, false);
    Tensor target = detail::empty_contiguous({5}, kLong, kHost);
    int64_t labels[] = {0, 2, 1, 2, 0};
    for (int i = 0; i < 5; ++i) target.data_ptr<int64_t>()[i] = labels[i];
    Tensor weight = dk::abs(hostData({3}, dtype, 8));
    for (int64_t reduction : {0, 1, 2}) {
      EXPECT_CLOSE(nll_loss(toCuda(log_probs), toCuda(target), std::nullopt, reduction),
                   nll_loss(log_probs, target, std::nullopt, reduction), 1e-5, 1e-6);
      EXPECT_CLOSE(nll_loss(toCuda(log_probs), toCuda(target), toCuda(weight), reduction),
                   nll_loss(log_probs, target, weight, reduction), 1e-5, 1e-6);
      EXPECT_CLOSE(nll_loss(toCuda(log_probs), toCuda(target), std::nullopt, reduction, 2),
                   nll_loss(log_probs, target, std::nullopt, reduction, 2), 1e-5, 1e-6);
    }
    // 300000 samples: the reducing kernel spreads them over many blocks, then combines.
    Tensor many = _log_softmax(hostData({300000, 3}, dtype, 4), 1, false);
    Tensor many_targets = detail::empty_contiguous({300000}, kLong, kHost);
    for (int64_t i = 0; i < 300000; ++i) many_targets.data_ptr<int64_t>()[i] = (i * 7) % 3;
    for (int64_t reduction : {1, 2}) {
      EXPECT_CLOSE(nll_loss(toCuda(many), toCuda(many_targets), toCuda(weight), reduction),
                   nll_loss(many, many_targets, weight, reduction), 1e-4, 1e-4);
    }
    Tensor one = _log_softmax(hostData({3}, dtype), 0, false);
    Tensor label = full({}, 1, kLong, std::nullopt, kHost);
    EXPECT_CLOSE(nll_loss(toCuda(one), toCuda(label)), nll_loss(one, label), 1e-6, 1e-6);
  }
  Tensor bad_target = full({2}, 7, kLong, std::nullopt, kHost);
  CHECK_THROWS_WITH(nll_loss(toCuda(hostData({2, 3}, kFloat)), toCuda(bad_target)), "Target 7 is out of bounds.");

  for (ScalarType dtype : kEveryDtype) {
    Tensor weight = hostData({10, 4}, dtype);
    Tensor indices = dk::abs(hostData({2, 3}, kLong));  // 0..5
    EXPECT_EQUAL(embedding(toCuda(weight), toCuda(indices)), embedding(weight, indices));
  }
  Tensor weight_t = transposedView(hostData({4, 10}, kFloat));
  Tensor int_indices = dk::abs(hostData({7}, kInt));
  EXPECT_EQUAL(embedding(transposedView(toCuda(hostData({4, 10}, kFloat))), toCuda(int_indices)),
               embedding(weight_t, int_indices));
  CHECK_THROWS_WITH(embedding(toCuda(hostData({3, 2}, kFloat)), toCuda(full({1}, 3, kLong, std::nullopt, kHost))),
                    "index out of range in self");
}

// Findings of the review in issue 24: overlap handled as on CPU, abs(-0.0), more than 16 dims,
// an empty embedding still checks its indices.
// The same view of a CPU tensor and of its CUDA copy: (sizes, strides, offset) over a fresh
// contiguous base of `base_numel` elements.
struct LayoutCase {
  const char* name;
  Sizes sizes, strides;
  int64_t offset;
  int64_t base_numel;
};
const LayoutCase kLayouts[] = {
    {"contiguous", {4, 6}, {6, 1}, 0, 24},
    {"transposed", {4, 6}, {1, 4}, 0, 24},
    {"sliced", {4, 3}, {12, 2}, 1, 48},  // every other column of every other row, one element in
    {"expanded", {4, 6}, {0, 1}, 0, 6},
    {"zero-size", {0, 6}, {6, 1}, 0, 0},
    {"0-dim", {}, {}, 2, 3},
};

// f(cpu view, cuda view, name) for each layout of kLayouts, data of `dtype`.
template <class F>
void forEachLayout(ScalarType dtype, uint64_t seed, F f) {
  for (const LayoutCase& layout : kLayouts) {
    Tensor base = hostData({layout.base_numel}, dtype, seed);
    Tensor base_cuda = toCuda(base);
    f(detail::make_view(base, layout.sizes, layout.strides, layout.offset),
      detail::make_view(base_cuda, layout.sizes, layout.strides, layout.offset), layout.name);
  }
}

// Every pointwise operator, reduction and softmax on each layout of kLayouts and every dtype it
// takes, against the CPU kernel on the same view.
CUDA_TEST(every_layout_matches_cpu) {
  const std::pair<const char*, UnaryFn> unary_ops[] = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"abs", [](const Tensor& x) { return dk::abs(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -1, 1); }},
      {"pow", [](const Tensor& x) { return dk::pow(x, 2); }},
      {"exp", [](const Tensor& x) { return dk::exp(x); }},
      {"sigmoid", [](const Tensor& x) { return dk::sigmoid(x); }},
      {"add", [](const Tensor& x) { return add(x, x, 2); }},
      {"mul", [](const Tensor& x) { return mul(x, x); }},
      {"maximum", [](const Tensor& x) { return maximum(x, neg(x)); }},
      {"gt", [](const Tensor& x) { return gt(x, neg(x)); }},
      {"where", [](const Tensor& x) { return where(gt(x, neg(x)), x, neg(x)); }},
      {"sum", [](const Tensor& x) { return sum(x); }},
      {"argmax", [](const Tensor& x) { return argmax(x); }},
  };
  for (ScalarType dtype : {kByte, kChar, kInt, kLong, kHalf, kFloat, kDouble, kBFloat16}) {
    const bool floating = dtype == kHalf || dtype == kFloat || dtype == kDouble || dtype == kBFloat16;
    const double tol = dtype == kHalf || dtype == kBFloat16 ? 2e-2 : 1e-5;
    forEachLayout(dtype, 21, [&](const Tensor& x, const Tensor& xc, const char* layout) {
      for (const auto& [name, op] : unary_ops) {
        if (std::string(name) == "argmax" && x.numel() == 0) continue;  // an error, on both
        int before = failures;
        EXPECT_CLOSE(op(xc), op(x), tol, tol);
        if (failures != before) std::printf("  (%s of a %s %s view)\n", name, layout, std::string(toString(dtype)).c_str());
      }
      if (floating && x.dim() > 0) {
        EXPECT_CLOSE(sum(xc, {0}), sum(x, {0}), tol, tol);
        EXPECT_CLOSE(_softmax(xc, -1, false), _softmax(x, -1, false), tol, tol);
        EXPECT_CLOSE(_log_softmax(xc, 0, false), _log_softmax(x, 0, false), tol, tol);
      }
      Tensor copied = empty(x.sizes(), dtype, std::nullopt, kCuda);
      ops::copy_::call(copied, xc, false);  // device to device from the view
      EXPECT_EQUAL(copied, x);
      ops::copy_::call(copied, x, false);  // host view to device
      EXPECT_EQUAL(copied, x);
    });
  }
}

// Note [CUDA elementwise loops]: contiguous loops (aligned, misaligned, with a tail), loops
// reordered to the output's memory order, 32-bit strided loops, copies by the copy engine.
CUDA_TEST(elementwise_loops_match_cpu) {
  for (ScalarType dtype : {kByte, kBool, kHalf, kFloat, kDouble, kLong}) {
    // 1027 elements: no multiple of any vector width, so every loop has a tail.
    Tensor a = hostData({1027}, dtype, 1), b = hostData({1027}, dtype, 2);
    Tensor ac = toCuda(a), bc = toCuda(b);
    EXPECT_CLOSE(maximum(ac, bc), maximum(a, b), 0, 0);
    // Views one element in: every pointer off its 16-byte boundary.
    Tensor a1 = detail::make_view(a, {1026}, {1}, 1), b1 = detail::make_view(b, {1026}, {1}, 1);
    Tensor ac1 = detail::make_view(ac, {1026}, {1}, 1), bc1 = detail::make_view(bc, {1026}, {1}, 1);
    EXPECT_CLOSE(maximum(ac1, bc1), maximum(a1, b1), 0, 0);
    Tensor copied = empty({1026}, dtype, std::nullopt, kCuda);
    ops::copy_::call(copied, ac1, false);
    EXPECT_EQUAL(copied, a1);
  }
  // relu of a transposed input: the output keeps the layout, and the loop walks memory in order.
  Tensor x = hostData({300, 200}, kFloat, 3);
  Tensor xt = transposedView(x), xtc = transposedView(toCuda(x));
  Tensor r = relu(xtc);
  CHECK(r.strides() == xtc.strides());
  EXPECT_EQUAL(r, relu(xt));
  // A bias broadcast into a transposed output, and a 4-dim permuted input.
  Tensor bias = hostData({300}, kFloat, 4);
  EXPECT_CLOSE(add(xtc, toCuda(bias)), add(xt, bias), 1e-6, 1e-6);
  Tensor y = hostData({4, 5, 6, 7}, kDouble, 5);
  Tensor yc = toCuda(y);
  Tensor yp = detail::make_view(y, {7, 4, 6, 5}, {1, 210, 7, 42}, 0);
  Tensor ypc = detail::make_view(yc, {7, 4, 6, 5}, {1, 210, 7, 42}, 0);
  EXPECT_CLOSE(mul(ypc, ypc), mul(yp, yp), 1e-12, 1e-12);
  // Same-dtype copies of one dense run (cudaMemcpyAsync) into a transposed tensor of the same layout.
  Tensor into = transposedView(empty({200, 300}, kFloat, std::nullopt, kCuda));
  ops::copy_::call(into, xtc, false);
  EXPECT_EQUAL(into, xt);
  // An expanded CPU tensor uploads its one row, broadcast on the device (issue 24, item 5).
  Tensor row = hostData({1, 5}, kFloat, 6);
  Tensor expanded = detail::make_view(row, {4, 5}, {0, 1}, 0);
  Tensor landed = empty({4, 5}, kFloat, std::nullopt, kCuda);
  ops::copy_::call(landed, expanded, false);
  EXPECT_EQUAL(landed, add(expanded, zeros({4, 5}, kFloat, std::nullopt, kHost)));
}

namespace {

// Holds the default stream on a host function until released (or 10 s pass): while held, an
// operation that waited for the device could not return.
struct StreamHold {
  std::atomic<bool> released{false};
  static void CUDART_CB wait(void* self) {
    auto* hold = static_cast<StreamHold*>(self);
    for (int i = 0; i < 10000 && !hold->released.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

}  // namespace

// Issue 24, item 9: a CPU 0-dim operand rides with the launch, reductions and softmax take their
// workspace from the caching allocator: none of them waits for the device.
CUDA_TEST(no_hidden_synchronization) {
  if (cuda::cachingDisabled()) return;  // every free is a cudaFree, which waits for the device
  Tensor x_host = hostData({64, 4096}, kFloat, 7);
  Tensor x = toCuda(x_host);
  Tensor two = full({}, 2.0, kFloat, std::nullopt, kHost);
  auto work = [&] {
    return std::vector<Tensor>{mul(x, two), add(two, x), sum(x, {0}), sum(x), _softmax(x, 0, false),
                               where(gt(x, two), x, two)};
  };
  work();  // freed at once: the allocator's cache now holds a block of every size work() takes
  StreamHold hold;
  CHECK(cudaLaunchHostFunc(nullptr, &StreamHold::wait, &hold) == cudaSuccess);
  std::vector<Tensor> results = work();
  CHECK(cudaStreamQuery(nullptr) == cudaErrorNotReady);  // still held: nothing waited
  hold.released = true;
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  Tensor host_two_result = mul(x_host, two);
  EXPECT_EQUAL(results[0], host_two_result);
  EXPECT_EQUAL(results[1], host_two_result);
  EXPECT_CLOSE(results[2], sum(x_host, {0}), 1e-4, 1e-4);
  EXPECT_CLOSE(results[3], sum(x_host), 1e-4, 1e-2);
  EXPECT_CLOSE(results[4], _softmax(x_host, 0, false), 1e-5, 1e-6);
  EXPECT_EQUAL(results[5], where(gt(x_host, two), x_host, two));
}

CUDA_TEST(review_findings_match_cpu) {
  // A row stride past INT_MAX (cuBLAS's int leading dimension): copied to contiguous first.
  {
    const int64_t far = (int64_t{1} << 31) + 16;
    Tensor storage = empty({far + 2}, kFloat, std::nullopt, kCuda);  // 8 GiB
    Tensor wide = detail::make_view(storage, {2, 2}, {far, 1}, 0);
    Tensor wide_host = hostData({2, 2}, kFloat, 11);
    ops::copy_::call(wide, wide_host, false);
    Tensor rhs_host = hostData({2, 3}, kFloat, 12);
    EXPECT_CLOSE(mm(wide, toCuda(rhs_host)), mm(wide_host, rhs_host), 1e-6, 1e-6);
  }
  // mm(a, b, out=a): a is read into a temporary before cuBLAS writes it.
  Tensor a_host = hostData({4, 4}, kFloat, 1), b_host = hostData({4, 4}, kFloat, 2);
  Tensor expected = mm(a_host, b_host);
  Tensor a = toCuda(a_host);
  mm(a, toCuda(b_host), a);
  EXPECT_CLOSE(a, expected, 1e-5, 1e-5);
  Tensor addend = toCuda(hostData({4, 4}, kFloat, 3));
  Tensor addend_host = toHost(addend);
  addmm(addend, transposedView(addend), toCuda(b_host), 1, 1, addend);
  addmm(addend_host, transposedView(hostData({4, 4}, kFloat, 3)), b_host, 1, 1, addend_host);
  EXPECT_CLOSE(addend, addend_host, 1e-5, 1e-5);

  // Partial overlap of an input and the written tensor: PyTorch's error, as on CPU.
  const char* overlap = "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
                        "a single memory location. Please clone() the tensor before performing the operation.";
  Tensor square = toCuda(hostData({64, 64}, kFloat));
  CHECK_THROWS_WITH(ops::add__Tensor::call(square, transposedView(square), 1), overlap);
  Tensor line = toCuda(hostData({5}, kFloat));
  CHECK_THROWS_WITH(line.narrow(0, 1, 4).copy_(line.narrow(0, 0, 4)), overlap);

  // abs(-0.0) is +0.0.
  Tensor negative_zero = full({3}, -0.0, kFloat, std::nullopt, kCuda);
  Tensor absolute = toHost(dk::abs(negative_zero));
  for (int64_t i = 0; i < 3; ++i) CHECK(!std::signbit(elementAt(absolute, i)));

  // 17 dims that cannot merge (reversed strides): the reduction runs, as on CPU.
  Sizes dims(17, 2), reversed;
  for (int64_t d = 16; d >= 0; --d) reversed.push_back(d);
  Tensor deep_host = hostData(dims, kFloat).permute(reversed);
  Tensor deep = toCuda(hostData(dims, kFloat)).permute(reversed);
  EXPECT_CLOSE(sum(deep, {0}), sum(deep_host, {0}), 1e-5, 1e-5);
  EXPECT_CLOSE(dk::abs(deep), dk::abs(deep_host), 0, 0);

  // An embedding with 0-wide rows has no output elements but still checks its indices.
  Tensor bad_index = full({3}, 100, kLong, std::nullopt, kHost);
  CHECK_THROWS_WITH(embedding(empty({10, 0}, kFloat, std::nullopt, kCuda), toCuda(bad_index)),
                    "index out of range in self");
  CHECK_THROWS_WITH(embedding(detail::empty_contiguous({10, 0}, kFloat, kHost), bad_index),
                    "index out of range in self");
  CHECK(embedding(empty({10, 0}, kFloat, std::nullopt, kCuda), toCuda(full({3}, 9, kLong, std::nullopt, kHost)))
            .sizes() == Sizes({3, 0}));

  // A dtype an operator does not support: the CPU kernel's error, naming the operator.
  for (auto run : {+[](const Tensor& x) { (void)max_pool2d_with_indices(x, {2, 2}); },
                   +[](const Tensor& x) { (void)_softmax(x.reshape({16}), 0, false); }}) {
    Tensor longs = hostData({1, 1, 4, 4}, kLong);
    std::string cpu_message = "(the CPU call did not raise)";
    try {
      run(longs);
    } catch (const Error& e) {
      cpu_message = e.what();
    }
    CHECK_THROWS_WITH(run(toCuda(longs)), cpu_message);
  }
}

CUDA_TEST(mlp_forward_matches_cpu) {
  Tensor x = hostData({16, 32}, kFloat, 1);
  Tensor w1 = hostData({32, 24}, kFloat, 2), b1 = hostData({24}, kFloat, 3);
  Tensor w2 = hostData({24, 10}, kFloat, 4), b2 = hostData({10}, kFloat, 5);
  Tensor target = dk::abs(hostData({16}, kLong, 6));  // 0..5
  auto forward = [&](const Tensor& in, const Tensor& l1w, const Tensor& l1b, const Tensor& l2w, const Tensor& l2b,
                     const Tensor& t) {
    Tensor h = relu(addmm(l1b, in, l1w));
    Tensor logits = add(mm(h, l2w), l2b);
    return nll_loss(_log_softmax(logits, 1, false), t);
  };
  Tensor expected = forward(x, w1, b1, w2, b2, target);
  Tensor got = forward(toCuda(x), toCuda(w1), toCuda(b1), toCuda(w2), toCuda(b2), toCuda(target));
  EXPECT_CLOSE(got, expected, 1e-4, 1e-5);
}

}  // namespace

int main() {
  // Host-only checks first: they need no device.
  CHECK(cuda::roundToSizeClass(1) == 512);
  CHECK(cuda::roundToSizeClass(512) == 512);
  CHECK(cuda::roundToSizeClass(513) == 1024);
  CHECK(cuda::roundToSizeClass(size_t{1} << 20) == size_t{1} << 20);
  CHECK(cuda::roundToSizeClass((size_t{1} << 20) + 1) == (size_t{1} << 20) + (size_t{1} << 17));
  CHECK(cuda::roundToSizeClass((size_t{3} << 30) - 7) == size_t{3} << 30);
  // A 0-dim CPU operand becomes a value of the launch, converted to the compute dtype: nothing to
  // upload (issue 24, item 9).
  cuda::PointwiseInput two = cuda::pointwiseInput(full({}, 2.5, kDouble, std::nullopt, kHost), kHalf);
  CHECK(two.input.data == nullptr);
  CHECK(two.input.bits == 0x4100);  // 2.5 in IEEE half
  CHECK(two.tensor.is_cpu() && two.tensor.dim() == 0);
  // Loops follow the output's memory: a transposed relu is one dense run; a broadcast operand
  // keeps stride 0 (Note [CUDA elementwise loops]).
  Tensor base = hostData({6, 4}, kFloat);
  Tensor t = transposedView(base);
  cuda::launch::Geometry g = cuda::makeGeometry(t.sizes(), {&t, &t});
  CHECK(g.ndim == 1 && g.numel == 24 && g.strides[0][0] == 1 && g.strides[1][0] == 1);
  Tensor row = hostData({6}, kFloat);
  cuda::launch::Geometry bias = cuda::makeGeometry(t.sizes(), {&t, &row});
  CHECK(bias.ndim == 2 && bias.strides[0][1] == 1 && bias.strides[1][1] == 0);
  if (failures != 0) return 1;

  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("test_kernels_cuda: no CUDA device (%s): skipped\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
    return 77;
  }
  for (const TestCase& test : registry()) {
    current_test = test.name;
    int before = failures;
    try {
      test.fn();
    } catch (const std::exception& e) {
      fail(__FILE__, __LINE__, std::string("unexpected exception: ") + e.what());
    }
    std::printf("%s %s\n", failures == before ? "ok    " : "FAILED", test.name);
  }
  std::printf("%zu tests, %d checks, %d failures\n", registry().size(), checks, failures);
  return failures == 0 ? 0 : 1;
}
