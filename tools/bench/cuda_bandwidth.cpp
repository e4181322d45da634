// dk-bench-cuda: the CUDA kernels against the limits of the GPU they run on (issue 24).
// Bandwidth cases run one operator on 2^28 float32 elements and divide the bytes it must move
// (every input element read once, every output element written once) by its time; the result
// is compared with the device's peak bandwidth: 2 transfers per memory clock (DDR) x the bus
// width, both read with cudaDeviceGetAttribute (CUDA 13 dropped cudaDeviceProp::memoryClockRate).
// mm 8192^3 is compared with cuBLAS's cublasSgemm on the same device buffers, in TFLOP/s.
// Targets: >= 0.80 of peak for pointwise and copy, >= 0.70 for reductions and softmax, mm
// >= 0.95 of cuBLAS. A missed target is a result, not a failure.
//
// Each case first checks its answer against the CPU kernels on a strided sample of its elements
// (in float64 for reductions, softmax and mm) and exits 1 on a wrong one. Then 3 warm-up calls
// and --reps timed calls (default 20), each between two CUDA events; the median is reported.
// Writes CSV to --out and a table to stdout; exits 77 (meson's "skipped") without a CUDA device.
//
// Usage: dk-bench-cuda [--out FILE] [--reps N]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dk/dk.h"

namespace {

using dk::Tensor;

constexpr int64_t kElements = int64_t{1} << 28;
constexpr int64_t kSide = int64_t{1} << 14;  // [kSide, kSide] holds kElements
constexpr int64_t kMm = 8192;
constexpr int kWarmup = 3;
constexpr double kFloat = sizeof(float);
const dk::Device kGpu(dk::DeviceType::CUDA, 0);
const dk::Device kHost(dk::DeviceType::CPU);

void cudaOk(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

void cublasOk(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(status));
}

// A copy in host memory (Tensor::to takes a dtype only).
Tensor onHost(const Tensor& t) {
  Tensor host = dk::empty(t.sizes(), t.dtype(), std::nullopt, kHost);
  host.copy_(t);
  return host;
}

// Every step-th index along dim: the sample a check looks at, spread over the whole tensor so
// that a wrong tail or a wrong block shows.
Tensor every(const Tensor& t, int64_t dim, int64_t step) { return t.slice(dim, 0, std::nullopt, step); }

// "" when each element of `got` (a CUDA result) lies within atol + rtol * |want| of `want` (the
// CPU kernels' answer), else what differs.
std::string compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  std::ostringstream why;
  if (got.sizes() != want.sizes()) {
    why << "sizes " << got.sizes() << ", the CPU kernels give " << want.sizes();
    return why.str();
  }
  const Tensor g = onHost(got).to(dk::kDouble).contiguous(), w = want.to(dk::kDouble).contiguous();
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double x = g.data_ptr<double>()[i], y = w.data_ptr<double>()[i];
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) {
      why.precision(9);
      why << "sampled element " << i << " is " << x << ", the CPU kernels give " << y;
      return why.str();
    }
  }
  return "";
}

void requireRight(const std::string& name, const std::string& mismatch) {
  if (!mismatch.empty()) throw std::runtime_error("WRONG ANSWER: " + name + ": " + mismatch);
}

// Median milliseconds of one call: warm-up calls, then `reps` calls each between two events on
// the legacy default stream (where every dispatchkit kernel and the cuBLAS handle run), queued
// back to back so that the host's dispatch of a call overlaps the kernels of the one before.
double medianMs(const std::function<void()>& call, int reps) {
  for (int i = 0; i < kWarmup; ++i) call();
  cudaOk(cudaDeviceSynchronize(), "warm-up");
  std::vector<cudaEvent_t> events(2 * reps);
  for (cudaEvent_t& e : events) cudaOk(cudaEventCreate(&e), "cudaEventCreate");
  for (int i = 0; i < reps; ++i) {
    cudaOk(cudaEventRecord(events[2 * i], 0), "cudaEventRecord");
    call();
    cudaOk(cudaEventRecord(events[2 * i + 1], 0), "cudaEventRecord");
  }
  cudaOk(cudaDeviceSynchronize(), "timed calls");
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i)
    cudaOk(cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]), "cudaEventElapsedTime");
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return reps % 2 ? ms[reps / 2] : (ms[reps / 2 - 1] + ms[reps / 2]) / 2;
}

struct Peak {
  std::optional<double> gb_per_s;
  std::string how;  // the figures it came from, or why there is none
};

Peak peakBandwidth(int device) {
  int clock_khz = 0, bus_bits = 0;
  const cudaError_t clock = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device);
  const cudaError_t bus = cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  auto shown = [](cudaError_t status, int value, const char* unit) {
    return status != cudaSuccess ? std::string(cudaGetErrorString(status)) : std::to_string(value) + unit;
  };
  if (clock != cudaSuccess || bus != cudaSuccess || clock_khz <= 0 || bus_bits <= 0) {
    cudaGetLastError();  // a failed attribute query must not surface as a later call's error
    return {std::nullopt, "unavailable (cudaDevAttrMemoryClockRate: " + shown(clock, clock_khz, " kHz") +
                              ", cudaDevAttrGlobalMemoryBusWidth: " + shown(bus, bus_bits, " bits") +
                              "): GB/s only, no fraction of peak"};
  }
  char how[96];
  std::snprintf(how, sizeof how, "2 x %d MHz x %d bits / 8", clock_khz / 1000, bus_bits);
  return {2.0 * clock_khz * 1e3 * bus_bits / 8 / 1e9, how};
}

// One row of the results. Bandwidth cases fill gb_per_s and fraction_of_peak; mm fills the
// TFLOP/s columns, and its target applies to ratio_to_cublas.
struct Row {
  std::string name;
  int64_t elements = 0;
  double bytes = 0;
  double median_ms = 0;
  std::optional<double> gb_per_s, fraction_of_peak;
  double target = 0;
  std::string met;  // yes, no, or n/a (no peak to compare with)
  std::optional<double> tflops, cublas_tflops, ratio_to_cublas;
};

struct BandwidthCase {
  std::string name;
  double bytes;   // the minimum traffic: inputs read once, outputs written once
  double target;  // fraction of peak
  std::function<Tensor()> run;
  std::function<std::string(const Tensor&)> check;  // "" when run()'s result is right
};

// u: rand, [2^28] (positive: the sums' relative tolerance means something); g: randn,
// [2^14, 2^14] (negative values for relu, a spread for softmax); dst: [2^28] for copy_.
std::vector<BandwidthCase> bandwidthCases(const Tensor& u, const Tensor& g, const Tensor& dst) {
  const double n = kElements;
  const Tensor square = u.view({kSide, kSide}), narrow = u.view({kElements / 8, 8}), gt = g.t(),
               g_flat = g.view({kElements});
  // A reduction's sample: every step-th output against the float64 sum of its inputs. Float
  // accumulation may drift by ~1e-5 of a sum of 16384 elements where an indexing bug moves it
  // by 1e-3 or more, hence rtol 1e-4 for reductions and softmax alike.
  auto sumCase = [](std::string name, const Tensor& x, int64_t dim, int64_t step) {
    const int64_t kept = dim == 0 ? 1 : 0;
    return BandwidthCase{std::move(name), (static_cast<double>(x.numel()) + x.size(kept)) * kFloat, 0.70,
                         [=] { return dk::sum(x, {dim}); },
                         [=](const Tensor& r) {
                           return compare(every(r, 0, step),
                                          dk::sum(onHost(every(x, kept, step)), {dim}, false, dk::kDouble), 1e-4, 0);
                         }};
  };
  auto softmaxCase = [](std::string name, const Tensor& x, int64_t dim) {
    const int64_t kept = dim == 0 ? 1 : 0;
    return BandwidthCase{
        std::move(name), 2 * static_cast<double>(x.numel()) * kFloat, 0.70, [=] { return dk::softmax(x, dim); },
        [=](const Tensor& r) {
          return compare(every(r, kept, 257), dk::softmax(onHost(every(x, kept, 257)).to(dk::kDouble), dim), 1e-4, 0);
        }};
  };
  return {
      {"add", 3 * n * kFloat, 0.80, [=] { return dk::add(u, g_flat); },
       [=](const Tensor& r) {
         return compare(every(r, 0, 4099), dk::add(onHost(every(u, 0, 4099)), onHost(every(g_flat, 0, 4099))), 0, 0);
       }},
      {"relu_transposed_16384x16384", 2 * n * kFloat, 0.80, [=] { return dk::relu(gt); },
       [=](const Tensor& r) { return compare(every(r, 0, 257), dk::relu(onHost(every(gt, 0, 257))), 0, 0); }},
      {"copy_", 2 * n * kFloat, 0.80, [=] { return dst.copy_(u); },
       [=](const Tensor& r) { return compare(every(r, 0, 4099), onHost(every(u, 0, 4099)), 0, 0); }},
      {"sum", (n + 1) * kFloat, 0.70, [=] { return dk::sum(u); },
       [=](const Tensor& r) { return compare(r, dk::sum(onHost(u), dk::kDouble), 1e-4, 0); }},
      sumCase("sum_dim0_16384x16384", square, 0, 131),
      sumCase("sum_dim-1_16384x16384", square, -1, 131),
      sumCase("sum_dim-1_33554432x8", narrow, -1, 4099),
      softmaxCase("softmax_dim-1_16384x16384", g, -1),
      softmaxCase("softmax_dim0_16384x16384", g, 0),
  };
}

Row runBandwidth(const BandwidthCase& c, const Peak& peak, int reps) {
  requireRight(c.name, c.check(c.run()));
  Row row;
  row.name = c.name;
  row.elements = kElements;
  row.bytes = c.bytes;
  row.median_ms = medianMs([&] { c.run(); }, reps);
  row.gb_per_s = c.bytes / (row.median_ms * 1e-3) / 1e9;
  row.target = c.target;
  row.met = "n/a";
  if (peak.gb_per_s) {
    row.fraction_of_peak = *row.gb_per_s / *peak.gb_per_s;
    row.met = *row.fraction_of_peak >= c.target ? "yes" : "no";
  }
  return row;
}

// dk::mm into c against cublasSgemm into the same c, from the same a and b. Both use cuBLAS's
// default math mode (no TF32), as the library does.
Row runMm(int reps) {
  const int64_t n = kMm;
  const auto gpu = dk::TensorOptions().device(kGpu);
  const Tensor a = dk::randn({n, n}, gpu), b = dk::randn({n, n}, gpu), c = dk::empty({n, n}, gpu);
  cublasHandle_t handle = nullptr;
  cublasOk(cublasCreate(&handle), "cublasCreate");
  const float one = 1, zero = 0;
  const int m = static_cast<int>(n);
  // Row-major c = a b is column-major c^T = b^T a^T: cuBLAS takes b first.
  auto cublas = [&] {
    cublasOk(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, b.data_ptr<float>(), m, a.data_ptr<float>(),
                         m, &zero, c.data_ptr<float>(), m),
             "cublasSgemm");
  };
  auto ours = [&] { dk::mm_out(c, a, b); };
  // Every 521st row of c against the CPU kernel in float64; cuBLAS is checked too, so that its
  // figure is for the same product. Entries of c have a standard deviation of sqrt(8192) ~ 90
  // and float accumulation drifts by ~3e-4, so atol 1e-2; a layout bug is off by ~100.
  const Tensor want = dk::mm(onHost(every(a, 0, 521)).to(dk::kDouble), onHost(b).to(dk::kDouble));
  const std::string name = "mm_8192x8192x8192";
  ours();
  requireRight(name, compare(every(c, 0, 521), want, 1e-4, 1e-2));
  cublas();
  requireRight(name + " (cuBLAS)", compare(every(c, 0, 521), want, 1e-4, 1e-2));
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  Row row;
  row.name = name;
  row.elements = n * n;
  row.bytes = 3 * static_cast<double>(n * n) * kFloat;
  row.median_ms = medianMs(ours, reps);
  const double cublas_ms = medianMs(cublas, reps);
  cublasOk(cublasDestroy(handle), "cublasDestroy");
  row.tflops = flops / (row.median_ms * 1e-3) / 1e12;
  row.cublas_tflops = flops / (cublas_ms * 1e-3) / 1e12;
  row.ratio_to_cublas = *row.tflops / *row.cublas_tflops;
  row.target = 0.95;
  row.met = *row.ratio_to_cublas >= row.target ? "yes" : "no";
  return row;
}

std::string fmt(std::optional<double> x, const char* format = "%.6g") {
  if (!x) return "";
  char text[32];
  std::snprintf(text, sizeof text, format, *x);
  return text;
}

void writeCsv(const char* path, const std::vector<Row>& rows, std::string device) {
  std::replace(device.begin(), device.end(), ',', ' ');
  FILE* out = std::fopen(path, "w");
  if (out == nullptr) throw std::runtime_error(std::string("cannot write ") + path);
  std::fprintf(out,
               "case,elements,bytes,median_ms,gb_per_s,fraction_of_peak,target,met,tflops,cublas_tflops,"
               "ratio_to_cublas,device\n");
  for (const Row& r : rows) {
    std::fprintf(out, "%s,%lld,%.0f,%s,%s,%s,%.2f,%s,%s,%s,%s,%s\n", r.name.c_str(), static_cast<long long>(r.elements),
                 r.bytes, fmt(r.median_ms).c_str(), fmt(r.gb_per_s).c_str(), fmt(r.fraction_of_peak).c_str(), r.target,
                 r.met.c_str(), fmt(r.tflops).c_str(), fmt(r.cublas_tflops).c_str(), fmt(r.ratio_to_cublas).c_str(),
                 device.c_str());
  }
  std::fclose(out);
}

void printRow(const Row& r) {
  if (r.tflops) {
    std::printf("%-28s %9.3f ms  %7.1f TFLOP/s, cuBLAS %.1f: %.2f of cuBLAS (target %.2f) %s\n", r.name.c_str(),
                r.median_ms, *r.tflops, *r.cublas_tflops, *r.ratio_to_cublas, r.target, r.met.c_str());
  } else {
    std::printf("%-28s %9.3f ms  %7.1f GB/s  %5s of peak (target %.2f) %s\n", r.name.c_str(), r.median_ms, *r.gb_per_s,
                r.fraction_of_peak ? fmt(r.fraction_of_peak, "%.2f").c_str() : "n/a", r.target, r.met.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const char* out = nullptr;
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc) {
      out = argv[++i];
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: dk-bench-cuda [--out FILE] [--reps N]\n");
      return 2;
    }
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("no CUDA device: skipped (%s)\n", status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
    return 77;
  }
  try {
    cudaDeviceProp prop{};
    cudaOk(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    const Peak peak = peakBandwidth(0);
    std::printf("device 0: %s (compute capability %d.%d), peak bandwidth %s%s\n", prop.name, prop.major, prop.minor,
                peak.gb_per_s ? (fmt(peak.gb_per_s, "%.1f") + " GB/s = ").c_str() : "", peak.how.c_str());
    std::vector<Row> rows;
    {
      const auto gpu = dk::TensorOptions().device(kGpu);
      const Tensor u = dk::rand({kElements}, gpu), g = dk::randn({kSide, kSide}, gpu),
                   dst = dk::empty({kElements}, gpu);
      for (const BandwidthCase& c : bandwidthCases(u, g, dst)) {
        rows.push_back(runBandwidth(c, peak, reps));
        printRow(rows.back());
      }
    }  // the 3 GiB of inputs go back to the cache before mm allocates
    rows.push_back(runMm(reps));
    printRow(rows.back());
    if (out != nullptr) writeCsv(out, rows, prop.name);
    const auto met = std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.met == "yes"; });
    std::printf("%lld of %zu targets met\n", static_cast<long long>(met), rows.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dk-bench-cuda: %s\n", e.what());
    return 1;
  }
  return 0;
}
