// CUDA impls of the structured matrix products (mm, bmm, addmm) through cuBLAS.
//
// Note [Row-major GEMM through cuBLAS]
// cuBLAS is column-major. A row-major C = A @ B (m x k times k x n) is, read column-major,
// C^T = B^T @ A^T: so cuBLAS computes the n x m product of B's and A's memory, in that order,
// into C with leading dimension n. A matrix whose rows are contiguous (strides [ld, 1]) reads
// column-major as its transpose, which is what that product wants (op N, leading dimension
// ld); one whose columns are contiguous (strides [1, ld]) is the matrix itself (op T). Any
// other layout is copied to a contiguous one first. Float, Double, Half and BFloat16 run
// cublasGemmEx (strided-batched for bmm) with float accumulation for the 16-bit types and
// without TF32 (the default math mode), as PyTorch does by default. cuBLAS has no integral
// GEMM: those dtypes raise "mm: unsupported dtype Long" once there is something to multiply
// (an empty product, or one over an empty inner dim, needs no GEMM), as in PyTorch.
#include <cublas_v2.h>
#include <dlfcn.h>

#include <climits>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "../meta/shape_functions.h"
#include "cuda_error.h"
#include "cuda_utils.h"
#include "device_guard.h"
#include "dk/generated/ops/addmm_native.h"
#include "dk/generated/ops/bmm_native.h"
#include "dk/generated/ops/mm_native.h"
#include "dk/util/error.h"

namespace dk::native {

namespace {

// Note [cuBLAS loaded on first use]
// Linking cuBLAS would make every process that loads dispatchkit load it too, GPU or not:
// libcublasLt alone maps about 50 MB of code and touches about 84 MB of zero-filled data at
// load, which cost each process (every test, every tool) 0.45 s and 220 MB of resident memory
// on this project's machines. The functions used here are looked up with dlopen and dlsym the
// first time a CUDA matrix product needs them (the library's RUNPATH and the loader's cache
// find the CUDA toolkit's libcublas, as a link would have).
struct CublasApi {
  decltype(&::cublasCreate_v2) create;
  decltype(&::cublasDestroy_v2) destroy;
  // The C functions (the header adds C++ overloads taking a cudaDataType compute type).
  cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                         const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                         cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  cublasStatus_t (*gemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void*, const void*, cudaDataType, int, long long, const void*,
                                         cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                         long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&::cublasGetStatusString) status_string;
};

const CublasApi& cublas() {
  static const CublasApi api = [] {
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = dlopen(("/usr/local/cuda/lib64/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    DK_CHECK(lib != nullptr, "CUDA matrix products need cuBLAS, and ", soname, " could not be loaded: ", dlerror());
    CublasApi loaded{};
    auto load = [&](auto& fn, const char* name) {
      void* found = dlsym(lib, name);
      DK_CHECK(found != nullptr, soname, " has no ", name, " (older than the cuBLAS headers dispatchkit was built with)");
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(found);
    };
    load(loaded.create, "cublasCreate_v2");
    load(loaded.destroy, "cublasDestroy_v2");
    load(loaded.gemm, "cublasGemmEx");
    load(loaded.gemm_strided_batched, "cublasGemmStridedBatchedEx");
    load(loaded.status_string, "cublasGetStatusString");
    return loaded;
  }();
  return api;
}

void checkCublas(cublasStatus_t status, const char* what) {
  DK_CHECK(status == CUBLAS_STATUS_SUCCESS, "cuBLAS error: ", cublas().status_string(status), " (", what, ")");
}

// One handle per device for each thread (handles are not meant to be shared between threads).
// They live as long as the thread.
cublasHandle_t handleForCurrentDevice() {
  struct Handles {
    std::vector<cublasHandle_t> by_device;
    ~Handles() {
      for (cublasHandle_t h : by_device)
        if (h != nullptr) (void)cublas().destroy(h);
    }
  };
  thread_local Handles handles;
  auto device = static_cast<size_t>(cuda::currentDevice());
  if (handles.by_device.size() <= device) handles.by_device.resize(device + 1, nullptr);
  if (handles.by_device[device] == nullptr) checkCublas(cublas().create(&handles.by_device[device]), "cublasCreate");
  return handles.by_device[device];
}

// How one operand's memory is handed to cuBLAS (Note [Row-major GEMM through cuBLAS]).
struct GemmOperand {
  Tensor tensor;  // the operand, or a contiguous copy of it
  cublasOperation_t op;
  int64_t ld;
};

// A [rows, cols] matrix (the last two dims of `t`; `t` may be a batch) as a cuBLAS operand.
// cuBLAS takes leading dimensions as int: a view whose row (or column) stride exceeds INT_MAX
// is copied to a contiguous matrix, whose leading dimension is its width.
GemmOperand gemmOperand(const Tensor& t) {
  int64_t rows = t.size(-2), cols = t.size(-1);
  int64_t row_stride = t.stride(-2), col_stride = t.stride(-1);
  // Whether `ld` can be the leading dimension of a matrix `width` wide.
  auto usable = [](int64_t ld, int64_t width) { return ld >= std::max<int64_t>(width, 1) && ld <= INT_MAX; };
  if ((cols == 1 || col_stride == 1) && (rows == 1 || usable(row_stride, cols))) {
    return GemmOperand{t, CUBLAS_OP_N, rows == 1 ? std::max<int64_t>(cols, 1) : row_stride};
  }
  if ((rows == 1 || row_stride == 1) && (cols == 1 || usable(col_stride, rows))) {
    return GemmOperand{t, CUBLAS_OP_T, cols == 1 ? std::max<int64_t>(rows, 1) : col_stride};
  }
  return GemmOperand{cuda::contiguousCuda(t), CUBLAS_OP_N, std::max<int64_t>(cols, 1)};
}

int asInt(int64_t value, const char* what) {
  DK_CHECK(value <= INT_MAX, "cuBLAS: ", what, " ", value, " does not fit in an int");
  return static_cast<int>(value);
}

struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

GemmTypes gemmTypes(const char* op, ScalarType dtype) {
  switch (dtype) {
    case kFloat: return {CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case kDouble: return {CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case kHalf: return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case kBFloat16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    default: detail::throwUnsupportedDtype(op, dtype);  // cuBLAS has no integral GEMM
  }
}

// result[b] = alpha * a[b] @ b[b] + beta * result[b] for `batch` matrices (batch 0: plain
// matrices); result is contiguous and, when beta != 0, already holds the addend.
void gemm(const char* op, const Tensor& result, const Tensor& a, const Tensor& b, double alpha, double beta) {
  int64_t m = result.size(-2), n = result.size(-1), k = a.size(-1);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // Nothing to multiply: the product is zero.
    if (beta == 0) {
      cuda::fillCuda(result, 0);
    } else if (beta != 1) {
      Tensor scaled = cuda::emptyCuda(result.sizes(), result.dtype(), result.device());
      Tensor factor = cuda::emptyCuda({}, result.dtype(), result.device());
      cuda::fillCuda(factor, beta);
      cuda::launch::binary(cuda::launch::BinaryOp::Mul, cuda::toLaunchDtype(result.dtype()),
                           cuda::makeGeometry(result.sizes(), {&scaled, &result, &factor}), scaled.data_ptr(),
                           result.data_ptr(), factor.data_ptr(), cuda::launch::ScalarArg{1, 1});
      cuda::copyWithinDevice(result, scaled);
    }
    return;
  }
  GemmTypes types = gemmTypes(op, result.dtype());
  GemmOperand lhs = gemmOperand(a), rhs = gemmOperand(b);
  cublasHandle_t handle = handleForCurrentDevice();
  float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_p = types.compute == CUBLAS_COMPUTE_64F ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_p = types.compute == CUBLAS_COMPUTE_64F ? static_cast<const void*>(&beta) : &beta_f;
  // C^T (n x m) = B^T (n x k) @ A^T (k x m), column-major.
  if (result.dim() == 2) {
    checkCublas(cublas().gemm(handle, rhs.op, lhs.op, asInt(n, "n"), asInt(m, "m"), asInt(k, "k"), alpha_p,
                              rhs.tensor.data_ptr(), types.data, asInt(rhs.ld, "ldb"), lhs.tensor.data_ptr(),
                              types.data, asInt(lhs.ld, "lda"), beta_p, result.data_ptr(), types.data, asInt(n, "ldc"),
                              types.compute, CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx");
    return;
  }
  int64_t batch = result.size(0);
  if (batch == 0) return;
  checkCublas(cublas().gemm_strided_batched(handle, rhs.op, lhs.op, asInt(n, "n"), asInt(m, "m"), asInt(k, "k"),
                                            alpha_p, rhs.tensor.data_ptr(), types.data, asInt(rhs.ld, "ldb"),
                                            rhs.tensor.stride(0), lhs.tensor.data_ptr(), types.data,
                                            asInt(lhs.ld, "lda"), lhs.tensor.stride(0), beta_p, result.data_ptr(),
                                            types.data, asInt(n, "ldc"), m * n, asInt(batch, "batch"), types.compute,
                                            CUBLAS_GEMM_DEFAULT),
              "cublasGemmStridedBatchedEx");
}

}  // namespace

// The structured families mm, bmm and addmm (Note [Structured kernels] in dk/tensor/structured.h):
// meta() has checked shapes, dtypes and scalars and given `out` the product's sizes and dtype.

namespace {
// An input of a product that shares memory with its output (mm(a, b, out=a)), read into a
// temporary first: cuBLAS would read elements it has already written. The same test as the
// CPU kernels (meta::mayOverlap), which read such an input whole before writing too.
Tensor readBeforeWriting(const Tensor& input, const Tensor& out) {
  if (!meta::mayOverlap(input, out)) return input;
  Tensor copy = cuda::emptyCuda(input.sizes(), input.dtype(), input.device());
  cuda::copyWithinDevice(copy, input);
  return copy;
}
}  // namespace

DK_IMPL_FUNC(mm_out_cuda)(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  Tensor a = readBeforeWriting(self, out), b = readBeforeWriting(mat2, out);
  cuda::intoContiguous(out, [&](const Tensor& result) { gemm("mm", result, a, b, 1, 0); });
}

DK_IMPL_FUNC(bmm_out_cuda)(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  Tensor a = readBeforeWriting(self, out), b = readBeforeWriting(mat2, out);
  cuda::intoContiguous(out, [&](const Tensor& result) { gemm("bmm", result, a, b, 1, 0); });
}

DK_IMPL_FUNC(addmm_out_cuda)(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                             const Scalar& alpha, const Tensor& out) {
  double beta_value = beta.toDouble();
  Tensor a = readBeforeWriting(mat1, out), b = readBeforeWriting(mat2, out);
  // In addmm_, out is self; any other self sharing out's memory is read before out is written.
  Tensor addend = self.is_same(out) ? self : readBeforeWriting(self, out);
  cuda::intoContiguous</*kReadsOut=*/true>(out, [&](const Tensor& result) {
    // With beta 0 self is not read at all (its NaNs do not reach the result), as in PyTorch. self
    // may have another dtype and broadcast: the copy converts and expands it. In addmm_, result
    // may already be self.
    if (beta_value != 0 && !result.is_same(addend)) cuda::copyWithinDevice(result, addend);
    gemm("addmm", result, a, b, alpha.toDouble(), beta_value);
  });
}

}  // namespace dk::native
