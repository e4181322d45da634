// Matrix products on the CPU: the impls of the structured mm, bmm and addmm families. float and
// double go to BLAS when the build has it (Note [BLAS matrix products]); every other dtype, and
// every product without BLAS, to one cache-blocked loop nest (Note [Blocked matrix product]).
// Inputs may be strided (transposed, sliced), the output is written through its own strides.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "dk/core/parallel.h"
#include "dk/generated/ops/addmm_native.h"
#include "dk/generated/ops/bmm_native.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/mm_native.h"
#include "dk/generated/ops/to_ops.h"
#include "dk/generated/ops/zero_ops.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"
#include "meta/shape_functions.h"
#include "tensor_iterator.h"

#if DK_HAVE_CBLAS
#include <cblas.h>
#endif

namespace dk::native {

namespace {

// What products are summed in: float for the 16-bit floats (and float), double for double, and
// for integers uint64_t, whose wrap-around is defined and equals the two's-complement result
// PyTorch's integer matmul gives after the final cast.
template <class T>
using AccumulateType = std::conditional_t<
    std::is_same_v<T, double>, double,
    std::conditional_t<std::is_integral_v<T>, uint64_t, float>>;

// A matrix operand: data plus row and column strides, in elements.
template <class T>
struct StridedMatrix {
  const T* data;
  int64_t row_stride;
  int64_t col_stride;
  T at(int64_t i, int64_t j) const { return data[i * row_stride + j * col_stride]; }
};

// Note [Blocked matrix product]
// acc (M x N, row-major) += A (M x K) * B (K x N). B is processed in blocks of kBlockK rows by
// kBlockN columns, each packed once into a contiguous buffer converted to the accumulation type
// (so strided or 16-bit B costs one conversion per element per block, and the block stays in
// L2 while every row panel of A streams past it). Each panel of kTileRows rows of A is packed
// too, and multiplied by the block kTileCols columns at a time into a kTileRows x kTileCols
// tile of local sums, small enough to stay in registers: each value loaded from the packed block
// serves kTileRows multiply-adds (the compiler vectorizes the fixed-size inner loop).
constexpr int64_t kBlockK = 128;
constexpr int64_t kBlockN = 256;
constexpr int64_t kTileRows = 4;
constexpr int64_t kTileCols = 16;

// acc[r * acc_stride + j] += sum over kk of a_panel[kk * kTileRows + r] * b_block[kk * b_stride + j]
// for r < rows, j < cols; the full-size tile is the fast path.
template <class Acc>
void multiplyTile(const Acc* a_panel, const Acc* b_block, int64_t b_stride, int64_t kb, int64_t rows, int64_t cols,
                  Acc* acc, int64_t acc_stride) {
  if (rows == kTileRows && cols == kTileCols) {
    Acc tile[kTileRows][kTileCols] = {};
    for (int64_t kk = 0; kk < kb; ++kk) {
      const Acc* b_row = b_block + kk * b_stride;
      const Acc* a_col = a_panel + kk * kTileRows;
      for (int64_t r = 0; r < kTileRows; ++r)
        for (int64_t j = 0; j < kTileCols; ++j) tile[r][j] += a_col[r] * b_row[j];
    }
    for (int64_t r = 0; r < kTileRows; ++r)
      for (int64_t j = 0; j < kTileCols; ++j) acc[r * acc_stride + j] += tile[r][j];
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t kk = 0; kk < kb; ++kk) {
      Acc a_rk = a_panel[kk * kTileRows + r];
      const Acc* b_row = b_block + kk * b_stride;
      for (int64_t j = 0; j < cols; ++j) acc[r * acc_stride + j] += a_rk * b_row[j];
    }
}

template <class T, class Acc>
void accumulateProduct(StridedMatrix<T> a, StridedMatrix<T> b, int64_t m, int64_t n, int64_t k, Acc* acc) {
  std::vector<Acc> b_block(static_cast<size_t>(std::min(k, kBlockK) * std::min(n, kBlockN)));
  std::vector<Acc> a_panel(static_cast<size_t>(std::min(k, kBlockK) * kTileRows));
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    int64_t nb = std::min(kBlockN, n - j0);
    for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
      int64_t kb = std::min(kBlockK, k - k0);
      for (int64_t kk = 0; kk < kb; ++kk)
        for (int64_t jj = 0; jj < nb; ++jj)
          b_block[static_cast<size_t>(kk * nb + jj)] = static_cast<Acc>(b.at(k0 + kk, j0 + jj));
      for (int64_t i0 = 0; i0 < m; i0 += kTileRows) {
        int64_t rows = std::min(kTileRows, m - i0);
        for (int64_t kk = 0; kk < kb; ++kk)
          for (int64_t r = 0; r < rows; ++r)
            a_panel[static_cast<size_t>(kk * kTileRows + r)] = static_cast<Acc>(a.at(i0 + r, k0 + kk));
        for (int64_t jt = 0; jt < nb; jt += kTileCols) {
          multiplyTile(a_panel.data(), b_block.data() + jt, nb, kb, rows, std::min(kTileCols, nb - jt),
                       acc + i0 * n + j0 + jt, n);
        }
      }
    }
  }
}

// out[i, j] = alpha * (A @ B)[i, j] + beta * self[i, j], where `self` (already expanded to
// M x N, possibly with zero strides) is read only when beta != 0, so NaNs in it do not leak
// through beta = 0, as in BLAS. All inputs are read before `out` is written, so `out` may
// alias them.
template <class T>
void matrixProduct(StridedMatrix<T> a, StridedMatrix<T> b, int64_t m, int64_t n, int64_t k, T* out,
                   int64_t out_row_stride, int64_t out_col_stride, const StridedMatrix<T>* self, const Scalar& beta,
                   const Scalar& alpha) {
  using Acc = AccumulateType<T>;
  std::vector<Acc> acc(static_cast<size_t>(m * n), Acc(0));
  accumulateProduct(a, b, m, n, k, acc.data());
  Acc alpha_acc = std::is_integral_v<Acc> ? static_cast<Acc>(alpha.toLong()) : static_cast<Acc>(alpha.toDouble());
  Acc beta_acc = std::is_integral_v<Acc> ? static_cast<Acc>(beta.toLong()) : static_cast<Acc>(beta.toDouble());
  bool use_self = self != nullptr && beta_acc != Acc(0);
  bool scale = alpha_acc != Acc(1);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Acc value = acc[static_cast<size_t>(i * n + j)];
      if (scale) value *= alpha_acc;
      if (use_self) value += beta_acc * static_cast<Acc>(self->at(i, j));
      out[i * out_row_stride + j * out_col_stride] = static_cast<T>(value);
    }
  }
}

// Note [BLAS matrix products]
// With OpenBLAS (option blas, found by default), float and double products are one
// cblas_sgemm/dgemm per matrix, as in PyTorch: C = alpha A B + beta C in row-major terms. BLAS
// reads an operand in place when one of its strides is 1 and the other a valid leading
// dimension (a transposed matrix is read with the transpose flag); any other operand (a
// broadcast or doubly strided one) is first copied into a contiguous buffer. C is the output
// itself when it is row-major and shares no memory with A or B; otherwise a buffer, copied
// into the output at the end. addmm's self is copied into C first, unless C already is self
// (addmm_); beta = 0 passes beta = 0, so BLAS does not read C and NaNs in self do not leak.
// Sizes past BLAS's 32-bit integers, and empty sums (k = 0), take the blocked kernel. OpenBLAS
// runs as many threads as dk::get_num_threads().
#if DK_HAVE_CBLAS
// A strided matrix as BLAS reads it: row-major with leading dimension ld, or transposed.
struct BlasOperand {
  bool transposed = false;
  int64_t ld = 0;
};

std::optional<BlasOperand> blasOperand(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  // A dim of size 1 has no step to respect: any stride is as good as the packed one.
  if (cols == 1) col_stride = 1;
  if (rows == 1) row_stride = std::max<int64_t>(cols, 1);
  if (col_stride == 1 && row_stride >= std::max<int64_t>(cols, 1)) return BlasOperand{false, row_stride};
  if (rows == 1 && cols > 1) row_stride = 1;
  if (row_stride == 1 && col_stride >= std::max<int64_t>(rows, 1)) return BlasOperand{true, col_stride};
  return std::nullopt;
}

// OpenBLAS's own threads follow dk::set_num_threads (Note [Intra-op parallelism]); inside a
// parallel region a product runs on its one thread. Set before a product when the count changed.
void matchBlasThreads() {
  static std::atomic<int> blas_threads{0};
  const int n = in_parallel_region() ? 1 : get_num_threads();
  if (blas_threads.exchange(n, std::memory_order_relaxed) != n) openblas_set_num_threads(n);
}

void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
              b, ldb, beta, c, ldc);
}
void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
          double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
              b, ldb, beta, c, ldc);
}

// The operand as BLAS reads it, or a packed row-major copy in `buffer`.
template <class T>
std::pair<const T*, BlasOperand> blasInput(StridedMatrix<T> x, int64_t rows, int64_t cols, std::vector<T>& buffer) {
  if (auto op = blasOperand(rows, cols, x.row_stride, x.col_stride)) return {x.data, *op};
  buffer.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) buffer[static_cast<size_t>(i * cols + j)] = x.at(i, j);
  return {buffer.data(), BlasOperand{false, cols}};
}

bool fitsBlas(int64_t v) { return v >= 0 && v <= INT_MAX; }

// out = alpha * (A @ B) + beta * self through BLAS (T is float or double); false, with nothing
// written, when the sizes do not fit BLAS's integers. `out_alias` says whether out may share
// memory with A or B, `self_is_out` whether self is exactly out.
template <class T>
bool blasProduct(StridedMatrix<T> a, StridedMatrix<T> b, int64_t m, int64_t n, int64_t k, T* out,
                 int64_t out_row_stride, int64_t out_col_stride, const StridedMatrix<T>* self, T beta, T alpha,
                 bool out_alias, bool self_is_out) {
  if (k == 0 || !fitsBlas(m) || !fitsBlas(n) || !fitsBlas(k) || !fitsBlas(m * std::max(n, k)) ||
      !fitsBlas(k * n))
    return false;
  std::vector<T> a_buffer, b_buffer, c_buffer;
  auto [a_data, a_op] = blasInput(a, m, k, a_buffer);
  auto [b_data, b_op] = blasInput(b, k, n, b_buffer);
  if (!fitsBlas(a_op.ld) || !fitsBlas(b_op.ld)) return false;
  const bool use_self = self != nullptr && beta != T(0);
  std::optional<BlasOperand> c_op = blasOperand(m, n, out_row_stride, out_col_stride);
  const bool direct = c_op && !c_op->transposed && fitsBlas(c_op->ld) && !out_alias;
  T* c = out;
  int64_t ldc = direct ? c_op->ld : n;
  if (!direct) {
    c_buffer.resize(static_cast<size_t>(m * n));
    c = c_buffer.data();
  }
  if (use_self && !(direct && self_is_out)) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = self->at(i, j);
  }
  matchBlasThreads();
  gemm(a_op.transposed, b_op.transposed, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha,
       a_data, static_cast<int>(a_op.ld), b_data, static_cast<int>(b_op.ld), use_self ? beta : T(0), c,
       static_cast<int>(ldc));
  if (!direct) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) out[i * out_row_stride + j * out_col_stride] = c[i * n + j];
  }
  return true;
}
#endif

// The product into `out`: BLAS for float and double when it can, else the blocked kernel.
template <class T>
void product(StridedMatrix<T> a, StridedMatrix<T> b, int64_t m, int64_t n, int64_t k, T* out, int64_t out_row_stride,
             int64_t out_col_stride, const StridedMatrix<T>* self, const Scalar& beta, const Scalar& alpha,
             bool out_alias, bool self_is_out) {
#if DK_HAVE_CBLAS
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (blasProduct<T>(a, b, m, n, k, out, out_row_stride, out_col_stride, self, static_cast<T>(beta.toDouble()),
                       static_cast<T>(alpha.toDouble()), out_alias, self_is_out))
      return;
  }
#else
  (void)out_alias;
  (void)self_is_out;
#endif
  matrixProduct<T>(a, b, m, n, k, out, out_row_stride, out_col_stride, self, beta, alpha);
}

template <class T>
StridedMatrix<T> matrixOf(const Tensor& t, int64_t row_dim, int64_t col_dim, int64_t offset = 0) {
  return {static_cast<const T*>(t.data_ptr()) + offset, t.stride(row_dim), t.stride(col_dim)};
}

// Writes mat1 @ mat2 (times alpha, plus beta * self when self is given) into `out` (M x N).
void mmInto(const Tensor& out, const Tensor& mat1, const Tensor& mat2, const Tensor* self, const Scalar& beta,
            const Scalar& alpha, const char* op) {
  int64_t m = mat1.size(0), k = mat1.size(1), n = mat2.size(1);
  if (m == 0 || n == 0) return;
  const bool out_alias = meta::mayOverlap(out, mat1) || meta::mayOverlap(out, mat2);
  const bool self_is_out = self != nullptr && aliasesExactly(*self, out);
  DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(out.dtype(), op, [&] {
    StridedMatrix<scalar_t> self_matrix{};
    if (self != nullptr) self_matrix = matrixOf<scalar_t>(*self, 0, 1);
    product<scalar_t>(matrixOf<scalar_t>(mat1, 0, 1), matrixOf<scalar_t>(mat2, 0, 1), m, n, k,
                      static_cast<scalar_t*>(out.data_ptr()), out.stride(0), out.stride(1),
                      self != nullptr ? &self_matrix : nullptr, beta, alpha, out_alias, self_is_out);
  });
}

}  // namespace

// The structured families mm, bmm and addmm (Note [Structured kernels] in dk/tensor/structured.h):
// meta() in kernels/meta/linalg_structured.cpp has checked shapes, dtypes and scalars and given
// `out` the product's sizes and dtype; out may be strided (an out= tensor of the right sizes).

DK_IMPL_FUNC(mm_out_cpu)(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  mmInto(out, self, mat2, nullptr, 0, 1, "mm");
}

DK_IMPL_FUNC(bmm_out_cpu)(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  int64_t batches = self.size(0), m = self.size(1), k = self.size(2), n = mat2.size(2);
  if (out.numel() == 0) return;
  if (k == 0) {
    // Empty sums: zeros (and the empty inputs have no memory to point into).
    ops::zero_::call(out);
    return;
  }
  DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(self.dtype(), "bmm", [&] {
    auto* out_data = static_cast<scalar_t*>(out.data_ptr());
    const bool out_alias = meta::mayOverlap(out, self) || meta::mayOverlap(out, mat2);
    for (int64_t b = 0; b < batches; ++b) {
      product<scalar_t>(matrixOf<scalar_t>(self, 1, 2, b * self.stride(0)),
                        matrixOf<scalar_t>(mat2, 1, 2, b * mat2.stride(0)), m, n, k, out_data + b * out.stride(0),
                        out.stride(1), out.stride(2), nullptr, 0, 1, out_alias, false);
    }
  });
}

// beta * self + alpha * (mat1 @ mat2), self broadcast to the product's shape. As in PyTorch
// 1.13, self may have another dtype: it is converted to the matrices' dtype. In addmm_, out is
// self: each element of self is read just before the same element is written.
DK_IMPL_FUNC(addmm_out_cpu)(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                            const Scalar& alpha, const Tensor& out) {
  Tensor expanded = ops::expand::call(self, {mat1.size(0), mat2.size(1)}, false);
  if (expanded.dtype() != mat1.dtype()) expanded = ops::to_dtype::call(expanded, mat1.dtype(), false, false, std::nullopt);
  mmInto(out, mat1, mat2, &expanded, beta, alpha, "addmm");
}

}  // namespace dk::native
