// The kernel benchmark cases' shared half (issue 18): the inputs both sides fill in (the same
// values on dispatchkit and on libtorch) and the float64 reference checks each case passes
// before it is timed. Plain C++ over float arrays, so dispatchkit's kernel_cases.cpp and the c10
// side's torch/c10_kernel_cases.cpp include it alike.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kernelbench {

// The sizes of issue 18's table.
inline constexpr int64_t kElementwise = 4 << 20;             // exp, sum, add: 4M floats
inline constexpr int64_t kSoftmaxRows = 4096, kSoftmaxCols = 1024;
inline constexpr int64_t kNormRows = 4096, kNormCols = 1024;  // layer_norm over the last dim
inline constexpr int64_t kConvN = 8, kConvC = 64, kConvHW = 56, kConvK = 3;  // 64 -> 64 channels, padding 1
inline constexpr int64_t kMlpBatch = 256, kMlpWidth = 1024;
inline constexpr int kThreadCounts[] = {1, 2};

// Deterministic values in [-scale, scale]: element i of input `stream`.
inline void fill(float* p, int64_t n, int stream, float scale = 1.0f) {
  for (int64_t i = 0; i < n; ++i)
    p[i] = scale * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 1.3 * stream + 0.1));
}

inline bool near(double got, double want, double rtol, double atol = 0) {
  return std::isfinite(got) && std::abs(got - want) <= atol + rtol * std::abs(want);
}

inline std::string mismatch(const char* what, int64_t index, double got, double want) {
  return std::string(what) + "[" + std::to_string(index) + "] = " + std::to_string(got) + ", expected " +
         std::to_string(want);
}

// 97 entries of c = a @ b (row-major m x k, k x n).
inline std::string checkMm(const float* a, const float* b, const float* c, int64_t m, int64_t k, int64_t n) {
  for (int64_t s = 0; s < 97; ++s) {
    const int64_t i = s * 131 % m, j = s * 71 % n;
    double want = 0;
    for (int64_t p = 0; p < k; ++p) want += static_cast<double>(a[i * k + p]) * b[p * n + j];
    if (!near(c[i * n + j], want, 1e-4, 1e-3)) return mismatch("mm", i * n + j, c[i * n + j], want);
  }
  return "";
}

inline std::string checkExp(const float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 4099)
    if (!near(y[i], std::exp(static_cast<double>(x[i])), 1e-6)) return mismatch("exp", i, y[i], std::exp(x[i]));
  return "";
}

inline std::string checkAdd(const float* a, const float* b, const float* c, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (c[i] != a[i] + b[i]) return mismatch("add", i, c[i], static_cast<double>(a[i]) + b[i]);
  return "";
}

inline std::string checkSum(const float* x, int64_t n, float got) {
  double want = 0, magnitude = 0;
  for (int64_t i = 0; i < n; ++i) {
    want += x[i];
    magnitude += std::abs(x[i]);
  }
  return near(got, want, 0, 1e-6 * magnitude) ? "" : mismatch("sum", 0, got, want);
}

// Rows of `cols` values: softmax of each row.
inline std::string checkSoftmax(const float* x, const float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; r += 97) {
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < cols; ++j) max = std::max(max, static_cast<double>(x[r * cols + j]));
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(x[r * cols + j] - max);
    for (int64_t j = 0; j < cols; j += 7) {
      const double want = std::exp(x[r * cols + j] - max) / sum;
      if (!near(y[r * cols + j], want, 1e-5)) return mismatch("softmax", r * cols + j, y[r * cols + j], want);
    }
  }
  return "";
}

// layer_norm over rows of `cols` values, eps 1e-5, no weight or bias.
inline std::string checkLayerNorm(const float* x, const float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; r += 97) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += x[r * cols + j];
    mean /= static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) var += (x[r * cols + j] - mean) * (x[r * cols + j] - mean);
    var /= static_cast<double>(cols);
    for (int64_t j = 0; j < cols; j += 7) {
      const double want = (x[r * cols + j] - mean) / std::sqrt(var + 1e-5);
      if (!near(y[r * cols + j], want, 1e-4, 1e-4)) return mismatch("layer_norm", r * cols + j, y[r * cols + j], want);
    }
  }
  return "";
}

// conv2d, stride 1, padding 1, no bias: 61 output entries.
inline std::string checkConv2d(const float* in, const float* w, const float* out) {
  const int64_t n_ = kConvN, c_ = kConvC, hw = kConvHW, k_ = kConvK;
  for (int64_t s = 0; s < 61; ++s) {
    const int64_t b = s % n_, o = s * 7 % c_, y = s * 13 % hw, x = s * 29 % hw;
    double want = 0;
    for (int64_t c = 0; c < c_; ++c)
      for (int64_t dy = 0; dy < k_; ++dy)
        for (int64_t dx = 0; dx < k_; ++dx) {
          const int64_t iy = y + dy - 1, ix = x + dx - 1;
          if (iy < 0 || iy >= hw || ix < 0 || ix >= hw) continue;
          want += static_cast<double>(in[((b * c_ + c) * hw + iy) * hw + ix]) * w[((o * c_ + c) * k_ + dy) * k_ + dx];
        }
    const int64_t at = ((b * c_ + o) * hw + y) * hw + x;
    if (!near(out[at], want, 1e-4, 1e-3)) return mismatch("conv2d", at, out[at], want);
  }
  return "";
}

}  // namespace kernelbench
