// Matrix products on the CPU: mm, mm.out, bmm, addmm. One cache-blocked loop nest serves them
// all (Note [Blocked matrix product]); inputs may be strided (transposed, sliced), the output
// is written through its own strides.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "dk/generated/ops/addmm_native.h"
#include "dk/generated/ops/bmm_native.h"
#include "dk/generated/ops/expand_ops.h"
#include "dk/generated/ops/mm_native.h"
#include "dk/generated/ops/to_ops.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

// The name PyTorch 1.13 prints for a dtype in these messages (its TypeMeta name):
// "expected m1 and m2 to have the same dtype, but got: float != double".
const char* typeMetaName(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return "unsigned char";
    case ScalarType::Char: return "signed char";
    case ScalarType::Int: return "int";
    case ScalarType::Long: return "long int";
    case ScalarType::Half: return "c10::Half";
    case ScalarType::Float: return "float";
    case ScalarType::Double: return "double";
    case ScalarType::Bool: return "bool";
    case ScalarType::BFloat16: return "c10::BFloat16";
    case ScalarType::Undefined: break;
  }
  return "Undefined";
}

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

void checkSameDtype(const Tensor& m1, const Tensor& m2) {
  DK_CHECK(m1.dtype() == m2.dtype(), "expected m1 and m2 to have the same dtype, but got: ", typeMetaName(m1.dtype()),
           " != ", typeMetaName(m2.dtype()));
}

void checkMatmulShapes(const Tensor& mat1, const Tensor& mat2) {
  DK_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x",
           mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
}

// For integer results, alpha and beta must be integers too (PyTorch's rule for addmm).
void checkIntegralScalar(ScalarType dtype, const Scalar& value, const char* name) {
  DK_CHECK(isFloatingType(dtype) || !value.isFloatingPoint(), "For integral input tensors, argument ", name,
           " must not be a floating point number.");
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

// PyTorch's resize_output: an out= tensor of the wrong shape takes the right one (contiguous),
// with a warning when it held elements; its storage grows in place when too small, so views of
// it keep seeing its memory.
void resizeOutput(const Tensor& out, IntArrayRef sizes) {
  if (out.sizes() == sizes.vec()) return;
  if (out.numel() != 0) {
    warn(detail::concat("An output with one or more elements was resized since it had shape ",
                        IntArrayRef(out.sizes()), ", which does not match the required output shape ", sizes,
                        ". This behavior is deprecated, and in a future PyTorch release outputs will not be resized "
                        "unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, "
                        "inplace, to zero elements with t.resize_(0)."));
  }
  TensorImpl* impl = out.unsafeGetTensorImpl();
  DK_CHECK(impl->has_storage(), "resize: the out tensor has no storage");
  impl->set_sizes_contiguous(sizes.vec());
  size_t needed = static_cast<size_t>(impl->storage_offset() + computeNumel(sizes)) * impl->itemsize();
  const Storage& storage = impl->storage();
  if (storage.nbytes() >= needed) return;
  Allocator* allocator = storage.allocator();
  DK_CHECK(allocator != nullptr, "Trying to resize storage that is not resizable");
  DataPtr grown = allocator->allocate(needed, storage.device());
  if (storage.nbytes() > 0) std::memcpy(grown.get(), storage.data(), storage.nbytes());
  storage.unsafeGetStorageImpl()->set_data_ptr(std::move(grown), needed);
}

}  // namespace

Tensor mm_cpu(const Tensor& self, const Tensor& mat2) {
  DK_CHECK(self.dim() == 2, "self must be a matrix");
  DK_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  checkMatmulShapes(self, mat2);
  checkSameDtype(self, mat2);
  Tensor out = detail::empty_contiguous({self.size(0), mat2.size(1)}, self.dtype(), self.device());
  mmInto(out, self, mat2, nullptr, 0, 1, "mm");
  return out;
}

Tensor mm_out_cpu(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  DK_CHECK(self.dim() == 2, "self must be a matrix");
  DK_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  checkMatmulShapes(self, mat2);
  checkSameDtype(self, mat2);
  DK_CHECK(out.dtype() == self.dtype(), "Expected out tensor to have dtype ", typeMetaName(self.dtype()), ", but got ",
           typeMetaName(out.dtype()), " instead");
  resizeOutput(out, {self.size(0), mat2.size(1)});
  mmInto(out, self, mat2, nullptr, 0, 1, "mm");
  return out;
}

Tensor bmm_cpu(const Tensor& self, const Tensor& mat2) {
  DK_CHECK(self.dim() == 3, "batch1 must be a 3D tensor");
  DK_CHECK(mat2.dim() == 3, "batch2 must be a 3D tensor");
  int64_t batches = self.size(0), m = self.size(1), k = self.size(2), n = mat2.size(2);
  DK_CHECK(mat2.size(0) == batches && mat2.size(1) == k,
           "Expected size for first two dimensions of batch2 tensor to be: [", batches, ", ", k, "] but got: [",
           mat2.size(0), ", ", mat2.size(1), "].");
  checkSameDtype(self, mat2);
  Tensor out = detail::empty_contiguous({batches, m, n}, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  if (k == 0) {
    // Empty sums: zeros (and the empty inputs have no memory to point into).
    std::memset(out.data_ptr(), 0, static_cast<size_t>(out.numel()) * out.element_size());
    return out;
  }
  DK_DISPATCH_ALL_TYPES_EXCEPT_BOOL(self.dtype(), "bmm", [&] {
    auto* out_data = static_cast<scalar_t*>(out.data_ptr());
    for (int64_t b = 0; b < batches; ++b) {
      matrixProduct<scalar_t>(matrixOf<scalar_t>(self, 1, 2, b * self.stride(0)),
                              matrixOf<scalar_t>(mat2, 1, 2, b * mat2.stride(0)), m, n, k, out_data + b * m * n, n, 1,
                              nullptr, 0, 1);
    }
  });
  return out;
}

// beta * self + alpha * (mat1 @ mat2), self broadcast to the product's shape. As in PyTorch
// 1.13, self may have another dtype: it is converted to the matrices' dtype.
Tensor addmm_cpu(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  DK_CHECK(mat1.dim() == 2, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  DK_CHECK(mat2.dim() == 2, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  checkMatmulShapes(mat1, mat2);
  checkSameDtype(mat1, mat2);
  checkIntegralScalar(mat1.dtype(), alpha, "alpha");
  checkIntegralScalar(mat1.dtype(), beta, "beta");
  int64_t m = mat1.size(0), n = mat2.size(1);
  Tensor expanded = ops::expand::call(self, {m, n}, false);
  if (expanded.dtype() != mat1.dtype()) expanded = ops::to_dtype::call(expanded, mat1.dtype(), false, false, std::nullopt);
  Tensor out = detail::empty_contiguous({m, n}, mat1.dtype(), mat1.device());
  mmInto(out, mat1, mat2, &expanded, beta, alpha, "addmm");
  return out;
}

}  // namespace dk::native
