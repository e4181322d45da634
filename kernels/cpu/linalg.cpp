// Matrix products on the CPU: the impls of the structured mm, bmm and addmm families. One
// cache-blocked loop nest serves them all (Note [Blocked matrix product]); inputs may be strided
// (transposed, sliced), the output is written through its own strides.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "dk/generated/ops/addmm_native.h"
#include "dk/generated/ops/bmm_native.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/mm_native.h"
#include "dk/generated/ops/to_ops.h"
#include "dk/generated/ops/zero_ops.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"

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

template <class T>
StridedMatrix<T> matrixOf(const Tensor& t, int64_t row_dim, int64_t col_dim, int64_t offset = 0) {
  return {static_cast<const T*>(t.data_ptr()) + offset, t.stride(row_dim), t.stride(col_dim)};
}

// Writes mat1 @ mat2 (times alpha, plus beta * self when self is given) into `out` (M x N).
void mmInto(const Tensor& out, const Tensor& mat1, const Tensor& mat2, const Tensor* self, const Scalar& beta,
            const Scalar& alpha, const char* op) {
  int64_t m = mat1.size(0), k = mat1.size(1), n = mat2.size(1);
  if (m == 0 || n == 0) return;
  DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(out.dtype(), op, [&] {
    StridedMatrix<scalar_t> self_matrix{};
    if (self != nullptr) self_matrix = matrixOf<scalar_t>(*self, 0, 1);
    matrixProduct<scalar_t>(matrixOf<scalar_t>(mat1, 0, 1), matrixOf<scalar_t>(mat2, 0, 1), m, n, k,
                            static_cast<scalar_t*>(out.data_ptr()), out.stride(0), out.stride(1),
                            self != nullptr ? &self_matrix : nullptr, beta, alpha);
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
    for (int64_t b = 0; b < batches; ++b) {
      matrixProduct<scalar_t>(matrixOf<scalar_t>(self, 1, 2, b * self.stride(0)),
                              matrixOf<scalar_t>(mat2, 1, 2, b * mat2.stride(0)), m, n, k,
                              out_data + b * out.stride(0), out.stride(1), out.stride(2), nullptr, 0, 1);
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
