// Shapes, dtypes and argument checks of the backend operators (kernels/meta/shape_functions.h).
#include "shape_functions.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "dk/tensor/allocator.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/storage.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/tensor/type_promotion.h"
#include "dk/util/error.h"

namespace dk::meta {

namespace {

bool isCpuScalar(const Tensor& t) { return t.is_cpu() && t.dim() == 0; }

ScalarType defaultFloatIfIntegral(ScalarType t) {
  return isIntegralType(t, /*includeBool=*/true) ? get_default_dtype() : t;
}

}  // namespace

// ---------------------------------------------------------------- outputs

std::vector<int64_t> OutputSpec::allocationStrides() const {
  return strides.empty() ? computeContiguousStrides(sizes) : strides;
}

namespace {

// t's strides for `shape` (aligned at the right), 0 where t is broadcast.
std::vector<int64_t> broadcastStrides(const Tensor& t, IntArrayRef shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  size_t lead = shape.size() - static_cast<size_t>(t.dim());
  for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d) {
    strides[lead + d] = t.sizes()[d] == 1 && shape[lead + d] != 1 ? 0 : t.strides()[d];
  }
  return strides;
}

// Whether t has elements and exactly the strides computeContiguousStrides gives its sizes.
bool isExactlyRowMajor(const Tensor& t) {
  IntArrayRef sizes = t.sizes();
  IntArrayRef strides = t.strides();
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 0 || strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

}  // namespace

std::vector<int64_t> pointwiseOutputStrides(IntArrayRef shape, std::initializer_list<const Tensor*> inputs) {
  // The usual case, at no allocation: inputs laid out row-major (broadcast or not) order the dims
  // row-major, as an equal stride in such a layout only pairs a dim with an inner one of size 1.
  bool rowMajor = true;
  for (const Tensor* t : inputs) rowMajor = rowMajor && isExactlyRowMajor(*t);
  if (rowMajor) return {};
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor* t : inputs) strides.push_back(broadcastStrides(*t, shape));
  const auto ndim = static_cast<int64_t>(shape.size());
  // Dims innermost first, starting from row-major order.
  std::vector<size_t> order(shape.size());
  for (int64_t i = 0; i < ndim; ++i) order[static_cast<size_t>(i)] = static_cast<size_t>(ndim - 1 - i);
  // > 0: `outer` belongs inside `inner`; < 0: it does not; 0: no input can tell.
  auto compare = [&](size_t inner, size_t outer) {
    for (const auto& s : strides) {
      if (s[inner] == 0 || s[outer] == 0) continue;
      if (s[inner] != s[outer]) return s[inner] > s[outer] ? 1 : -1;
      if (shape[inner] > shape[outer]) return 1;
    }
    return 0;
  };
  // Insertion sort moving each dim inwards past the dims it belongs inside of, skipping those
  // no input can order and stopping at the first it belongs outside of.
  for (size_t i = 1; i < order.size(); ++i) {
    size_t moving = i;
    for (size_t j = i; j-- > 0;) {
      int c = compare(order[j], order[moving]);
      if (c > 0) {
        std::swap(order[j], order[moving]);
        moving = j;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int64_t> result(shape.size(), 1);
  int64_t next = 1;
  for (size_t d : order) {
    result[d] = next;
    next *= std::max<int64_t>(shape[d], 1);
  }
  return result;
}

// ---------------------------------------------------------------- dtypes and devices

bool canCast(ScalarType from, ScalarType to) {
  if (isFloatingType(from) && isIntegralType(to, /*includeBool=*/false)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

void checkCanCastToOutput(ScalarType result, ScalarType out) {
  DK_CHECK(canCast(result, out), "result type ", result, " can't be cast to the desired output type ", out);
}

void checkDtypeIn(const char* op, ScalarType dtype, DtypeGroup group) {
  if (dtype == ScalarType::Undefined || (group & dtypeBit(dtype)) == 0) detail::throwUnsupportedDtype(op, dtype);
}

namespace {

// Tensors seen one by one must share a device, except 0-dim CPU tensors that are not written.
class DeviceAgreement {
 public:
  explicit DeviceAgreement(const char* op) : op_(op) {}

  void visit(const char* name, const Tensor& t, bool is_output) {
    if (!t.defined() || (!is_output && isCpuScalar(t))) return;
    if (!first_) {
      first_ = t.device();
      first_name_ = name;
    } else if (!(t.device() == *first_)) {
      DK_ERROR(op_, ": expected all tensors to be on the same device, but found at least two devices, ",
               first_->str(), " (argument '", first_name_, "') and ", t.device().str(), " (argument '", name, "')");
    }
  }

 private:
  const char* op_;
  std::optional<Device> first_;
  const char* first_name_ = nullptr;
};

}  // namespace

void checkDevicesAllowingCpuScalars(const char* op, std::initializer_list<NamedTensor> tensors) {
  DeviceAgreement devices(op);
  for (const NamedTensor& arg : tensors) devices.visit(arg.name, arg.tensor, arg.is_output);
}

// ---------------------------------------------------------------- pointwise

OutputSpec binaryOp(const Tensor& self, const Tensor& other, BinaryKind kind) {
  OutputSpec out;
  out.sizes = inferBroadcastShape(self.sizes(), other.sizes());
  out.strides = pointwiseOutputStrides(out.sizes, {&self, &other});
  ScalarType common = result_type(self, other);
  switch (kind) {
    case BinaryKind::Arithmetic: out.dtype = common; break;
    case BinaryKind::TrueDivide: out.dtype = defaultFloatIfIntegral(common); break;
    case BinaryKind::Comparison: out.dtype = ScalarType::Bool; break;
  }
  return out;
}

OutputSpec comparisonWithScalar(const Tensor& self, const Scalar& /*other*/) {
  return OutputSpec{self.sizes(), ScalarType::Bool, pointwiseOutputStrides(self.sizes(), {&self})};
}

OutputSpec addOrSub(const Tensor& self, const Tensor& other, const Scalar& alpha, bool is_sub) {
  if (is_sub) {
    DK_CHECK(self.dtype() != kBool || other.dtype() != kBool,
             "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
             "operator instead.");
    DK_CHECK(self.dtype() != kBool && other.dtype() != kBool,
             "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, "
             "use the `~` or `logical_not()` operator instead.");
  }
  OutputSpec out = binaryOp(self, other, BinaryKind::Arithmetic);
  DK_CHECK(!alpha.isBoolean() || out.dtype == kBool, "Boolean alpha only supported for Boolean results.");
  DK_CHECK(isFloatingType(out.dtype) || !alpha.isFloatingPoint(),
           "For integral input tensors, argument alpha must not be a floating point number.");
  return out;
}

OutputSpec powTensorScalar(const Tensor& self, const Scalar& exponent) {
  DK_CHECK(!(isIntegralType(self.dtype(), /*includeBool=*/true) && !exponent.isFloatingPoint() && exponent.toLong() < 0),
           "Integers to negative integer powers are not allowed.");
  OutputSpec out{self.sizes(), result_type(self, exponent), pointwiseOutputStrides(self.sizes(), {&self})};
  checkDtypeIn("pow", out.dtype, kAllDtypesExceptBool);
  return out;
}

OutputSpec where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  DK_CHECK(condition.dtype() == kBool || condition.dtype() == kByte,
           "where expected condition to be a boolean tensor, but got a tensor with dtype ", condition.dtype());
  if (condition.dtype() == kByte) {
    warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future "
         "version of PyTorch. Use a boolean condition instead.");
  }
  OutputSpec out;
  out.sizes = inferBroadcastShape(inferBroadcastShape(condition.sizes(), self.sizes()), other.sizes());
  out.dtype = result_type(self, other);
  out.strides = pointwiseOutputStrides(out.sizes, {&condition, &self, &other});
  return out;
}

OutputSpec unaryOp(const Tensor& self, UnaryKind kind) {
  ScalarType dtype = self.dtype();
  switch (kind) {
    case UnaryKind::Neg:
      DK_CHECK(dtype != kBool,
               "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use "
               "the `~` or `logical_not()` operator instead.");
      break;
    case UnaryKind::Abs: checkDtypeIn("abs", dtype, kAllDtypesExceptBool); break;
    case UnaryKind::Relu: DK_CHECK(dtype != kBool, "Boolean inputs not supported for relu"); break;
    case UnaryKind::Gelu: checkDtypeIn("gelu", dtype, kFloatingDtypes); break;
  }
  return OutputSpec{self.sizes(), dtype, pointwiseOutputStrides(self.sizes(), {&self})};
}

OutputSpec unaryFloatOp(const Tensor& self) {
  return OutputSpec{self.sizes(), defaultFloatIfIntegral(self.dtype()), pointwiseOutputStrides(self.sizes(), {&self})};
}

bool clampGivesNan(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  auto isNan = [](const Scalar& s) { return s.isFloatingPoint() && std::isnan(s.toDouble()); };
  return min && max && (isNan(*min) || isNan(*max));
}

GeluApproximation parseGeluApproximation(std::string_view approximate) {
  if (approximate == "none") return GeluApproximation::None;
  if (approximate == "tanh") return GeluApproximation::Tanh;
  DK_ERROR("approximate argument must be either none or tanh.");
}

OutputSpec clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  DK_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  ScalarType dtype = self.dtype();
  if (!isFloatingType(dtype)) {
    ResultTypeState state = update_result_type_state(self, ResultTypeState{});
    if (min) state = update_result_type_state(*min, state);
    if (max) state = update_result_type_state(*max, state);
    dtype = result_type(state);
  }
  return OutputSpec{self.sizes(), dtype, pointwiseOutputStrides(self.sizes(), {&self})};
}

void checkInplace(const Tensor& self, IntArrayRef sizes, ScalarType dtype) {
  DK_CHECK(IntArrayRef(self.sizes()).equals(sizes), "output with shape ", IntArrayRef(self.sizes()),
           " doesn't match the broadcast shape ", sizes);
  checkCanCastToOutput(dtype, self.dtype());
}

// ---------------------------------------------------------------- reductions

DimMask makeDimMask(std::optional<IntArrayRef> dims, int64_t ndim) {
  DK_CHECK(ndim <= 64, "PyTorch doesn't support reduction operations for dim>=64");
  DimMask mask;
  if (!dims || dims->empty()) {
    for (int64_t d = 0; d < ndim; ++d) mask.set(static_cast<size_t>(d));
    return mask;
  }
  for (int64_t d : *dims) {
    auto wrapped = static_cast<size_t>(maybe_wrap_dim(d, ndim));
    DK_CHECK(!mask.test(wrapped), "dim ", wrapped, " appears multiple times in the list of dims");
    mask.set(wrapped);
  }
  return mask;
}

std::vector<int64_t> reducedSizes(IntArrayRef sizes, const DimMask& mask, bool keepdim) {
  std::vector<int64_t> out;
  out.reserve(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!mask.test(d)) {
      out.push_back(sizes[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

ScalarType sumDtype(ScalarType self, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return isIntegralType(self, /*includeBool=*/true) ? kLong : self;
}

OutputSpec sum(const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim, std::optional<ScalarType> dtype) {
  DimMask mask = makeDimMask(dims, self.dim());
  return OutputSpec{reducedSizes(self.sizes(), mask, keepdim), sumDtype(self.dtype(), dtype)};
}

OutputSpec mean(const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim, std::optional<ScalarType> dtype) {
  ScalarType in_dtype = sumDtype(self.dtype(), dtype);
  if (!isFloatingType(in_dtype)) {
    DK_ERROR("mean(): could not infer output dtype. ", dtype ? "Optional" : "Input",
             " dtype must be either a floating point or complex dtype. Got: ", dtype ? *dtype : self.dtype());
  }
  DimMask mask = makeDimMask(dims, self.dim());
  return OutputSpec{reducedSizes(self.sizes(), mask, keepdim), dtype.value_or(self.dtype())};
}

namespace {

// PyTorch's zero_numel_check_dims for one (wrapped) dim.
void checkReductionDimNotEmpty(const Tensor& self, int64_t dim, const char* name) {
  if (self.dim() == 0) return;  // maybe_wrap_dim already limited dim to 0 or -1
  DK_CHECK(self.size(dim) != 0, name, ": Expected reduction dim ", dim, " to have non-zero size.");
}

}  // namespace

MaxDimSpec maxDim(const Tensor& self, int64_t dim, bool keepdim, const char* op) {
  int64_t wrapped = maybe_wrap_dim(dim, self.dim());
  checkReductionDimNotEmpty(self, wrapped, (std::string(op) + "()").c_str());
  DimMask mask;
  if (self.dim() > 0) mask.set(static_cast<size_t>(wrapped));
  return MaxDimSpec{wrapped, reducedSizes(self.sizes(), mask, keepdim), self.dtype()};
}

OutputSpec argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const char* op) {
  checkDtypeIn(op, self.dtype(), kAllDtypesExceptBool);
  DimMask mask;
  if (dim) {
    int64_t wrapped = maybe_wrap_dim(*dim, self.dim());
    checkReductionDimNotEmpty(self, wrapped, (std::string(op) + "()").c_str());
    if (self.dim() > 0) mask.set(static_cast<size_t>(wrapped));
  } else {
    DK_CHECK(self.numel() != 0, op, "(): Expected reduction dim to be specified for input.numel() == 0.");
    mask = makeDimMask(std::nullopt, self.dim());
  }
  return OutputSpec{reducedSizes(self.sizes(), mask, keepdim), kLong};
}

void checkFullExtremum(const Tensor& self, const char* op) {
  DK_CHECK(self.numel() != 0, op,
           "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
           "'dim' argument.");
}

// ---------------------------------------------------------------- linear algebra

const char* typeMetaName(ScalarType dtype) {
  switch (dtype) {
    case kByte: return "unsigned char";
    case kChar: return "signed char";
    case kShort: return "short int";
    case kInt: return "int";
    case kLong: return "long int";
    case kHalf: return "c10::Half";
    case kFloat: return "float";
    case kDouble: return "double";
    case kBool: return "bool";
    case kBFloat16: return "c10::BFloat16";
    case ScalarType::Undefined: break;
  }
  return "UNKNOWN_SCALAR";
}

std::string legacyTypeName(const Tensor& t) {
  std::string name = "torch.";
  if (t.device().type != DeviceType::CPU) name += std::string(toString(t.device().type)) + ".";
  return name + std::string(toString(t.dtype())) + "Tensor";
}

namespace {

void checkMatmulShapes(const Tensor& a, const Tensor& b) {
  DK_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1), " and ",
           b.size(0), "x", b.size(1), ")");
}

void checkSameMatmulDtype(const Tensor& m1, const Tensor& m2) {
  DK_CHECK(m1.dtype() == m2.dtype(), "expected m1 and m2 to have the same dtype, but got: ", typeMetaName(m1.dtype()),
           " != ", typeMetaName(m2.dtype()));
}

}  // namespace

// An empty product computes nothing, so it never meets the dtype check (as on the CPU).
void checkMatmulDtypeSupported(const char* op, const OutputSpec& out) {
  if (computeNumel(out.sizes) > 0) checkDtypeIn(op, out.dtype, kAllDtypesExceptBool);
}

OutputSpec mm(const Tensor& self, const Tensor& mat2, bool check_dtype_support) {
  DK_CHECK(self.dim() == 2, "self must be a matrix");
  DK_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  checkMatmulShapes(self, mat2);
  checkSameMatmulDtype(self, mat2);
  OutputSpec out{{self.size(0), mat2.size(1)}, self.dtype()};
  if (check_dtype_support) checkMatmulDtypeSupported("mm", out);
  return out;
}

OutputSpec bmm(const Tensor& self, const Tensor& mat2) {
  DK_CHECK(self.dim() == 3, "batch1 must be a 3D tensor");
  DK_CHECK(mat2.dim() == 3, "batch2 must be a 3D tensor");
  int64_t batch = self.size(0);
  int64_t contraction = self.size(2);
  DK_CHECK(mat2.size(0) == batch && mat2.size(1) == contraction,
           "Expected size for first two dimensions of batch2 tensor to be: [", batch, ", ", contraction, "] but got: [",
           mat2.size(0), ", ", mat2.size(1), "].");
  checkSameMatmulDtype(self, mat2);
  OutputSpec out{{batch, self.size(1), mat2.size(2)}, self.dtype()};
  checkMatmulDtypeSupported("bmm", out);
  return out;
}

OutputSpec addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                 const Scalar& alpha) {
  DK_CHECK(mat1.dim() == 2, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  DK_CHECK(mat2.dim() == 2, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  checkMatmulShapes(mat1, mat2);
  checkSameMatmulDtype(mat1, mat2);
  for (auto [name, value] : {std::pair<const char*, const Scalar*>{"alpha", &alpha}, {"beta", &beta}}) {
    DK_CHECK(isFloatingType(mat1.dtype()) || !value->isFloatingPoint(), "For integral input tensors, argument ", name,
             " must not be a floating point number.");
  }
  OutputSpec out{{mat1.size(0), mat2.size(1)}, mat1.dtype()};
  checkExpandable(self, out.sizes);
  checkMatmulDtypeSupported("addmm", out);
  return out;
}

// ---------------------------------------------------------------- shapes and broadcasting

void checkExpandable(const Tensor& t, IntArrayRef target) {
  IntArrayRef sizes = t.sizes();
  DK_CHECK(sizes.size() <= target.size(), "expand(", legacyTypeName(t), "{", sizes, "}, size=", target,
           "): the number of sizes provided (", target.size(),
           ") must be greater or equal to the number of dimensions in the tensor (", sizes.size(), ")");
  size_t lead = target.size() - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t existing = sizes[i];
    int64_t wanted = target[lead + i];
    DK_CHECK(existing == wanted || existing == 1, "The expanded size of the tensor (", wanted,
             ") must match the existing size (", existing, ") at non-singleton dimension ", lead + i,
             ".  Target sizes: ", target, ".  Tensor sizes: ", sizes);
  }
}

std::vector<int64_t> expandedStrides(const Tensor& t, IntArrayRef target) {
  checkExpandable(t, target);
  std::vector<int64_t> strides(target.size(), 0);
  size_t lead = target.size() - static_cast<size_t>(t.dim());
  for (size_t i = 0; i < static_cast<size_t>(t.dim()); ++i) {
    strides[lead + i] = t.sizes()[i] == target[lead + i] ? t.strides()[i] : 0;
  }
  return strides;
}

bool catSkipsTensor(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

CatSpec cat(ArrayRef<Tensor> tensors, int64_t dim) {
  DK_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    DK_CHECK(tensors[i].dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
  }
  size_t valid = tensors.size();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!catSkipsTensor(tensors[i])) {
      valid = i;
      break;
    }
  }
  ScalarType dtype = result_type(tensors);
  if (valid == tensors.size()) return CatSpec{OutputSpec{{0}, dtype}, dim};  // only skipped tensors

  const Tensor& reference = tensors[valid];
  int64_t wrapped = maybe_wrap_dim(dim, reference.dim());
  int64_t size_at_dim = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (catSkipsTensor(t)) continue;
    DK_CHECK(t.dim() == reference.dim(), "Tensors must have same number of dimensions: got ", reference.dim(), " and ",
             t.dim());
    for (int64_t d = 0; d < reference.dim(); ++d) {
      if (d == wrapped) continue;
      DK_CHECK(reference.size(d) == t.size(d), "Sizes of tensors must match except in dimension ", wrapped,
               ". Expected size ", reference.size(d), " but got size ", t.size(d), " for tensor number ", i,
               " in the list.");
    }
    size_at_dim += t.size(wrapped);
  }
  std::vector<int64_t> sizes = reference.sizes();
  sizes[static_cast<size_t>(wrapped)] = size_at_dim;
  return CatSpec{OutputSpec{std::move(sizes), dtype}, wrapped};
}

void checkCopy(const Tensor& self, const Tensor& src) {
  std::vector<int64_t> broadcast = inferBroadcastShape(self.sizes(), src.sizes());
  DK_CHECK(IntArrayRef(self.sizes()).equals(broadcast), "output with shape ", IntArrayRef(self.sizes()),
           " doesn't match the broadcast shape ", IntArrayRef(broadcast));
}

namespace {

// The name PyTorch's checked conversions give each dtype's C++ type.
const char* checkedTypeName(ScalarType dtype) {
  switch (dtype) {
    case kByte: return "uint8_t";
    case kChar: return "int8_t";
    case kShort: return "int16_t";
    case kInt: return "int";
    case kLong: return "int64_t";
    case kHalf: return "at::Half";
    case kBFloat16: return "at::BFloat16";
    case kBool: return "bool";
    case kFloat: return "float";
    default: return "double";
  }
}

// The lowest and largest finite values of a dtype, as doubles.
double maxOf(ScalarType dtype) {
  switch (dtype) {
    case kByte: return 255;
    case kChar: return 127;
    case kShort: return 32767;
    case kInt: return 2147483647.0;
    case kLong: return 9223372036854775807.0;
    case kHalf: return 65504.0;
    case kBFloat16: return 3.3895313892515355e38;
    case kBool: return 1;
    case kFloat: return static_cast<double>(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
  }
}
double lowestOf(ScalarType dtype) {
  if (dtype == kByte || dtype == kBool) return 0;
  if (dtype == kChar) return -128;
  if (dtype == kShort) return -32768;
  if (dtype == kInt) return -2147483648.0;
  if (dtype == kLong) return -9223372036854775808.0;
  return -maxOf(dtype);
}

}  // namespace

void checkFillValue(const Scalar& value, ScalarType dtype) {
  if (dtype == kBool) return;  // every value converts: nonzero (NaN included) is true
  bool overflows = false;
  if (value.isFloatingPoint()) {
    double d = value.toDouble();
    if (std::isnan(d) || std::isinf(d)) overflows = !isFloatingType(dtype);
    else overflows = d < lowestOf(dtype) || d > maxOf(dtype);
  } else if (value.isIntegral()) {
    int64_t v = value.toLong();
    if (dtype == kByte) {
      // Unsigned: values from below wrap as long as their magnitude fits.
      auto max = static_cast<uint64_t>(maxOf(dtype));
      uint64_t magnitude = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
      overflows = magnitude > max;
    } else if (dtype != kLong && dtype != kFloat && dtype != kDouble) {
      auto d = static_cast<double>(v);
      overflows = d < lowestOf(dtype) || d > maxOf(dtype);
    }
  }
  DK_CHECK(!overflows, "value cannot be converted to type ", checkedTypeName(dtype), " without overflow");
}

// ---------------------------------------------------------------- neural networks

SoftmaxSpec softmax(const char* op, const Tensor& self, int64_t dim, bool half_to_float) {
  int64_t wrapped = maybe_wrap_dim(dim, self.dim());
  if (half_to_float) DK_CHECK(self.dtype() == kHalf, "conversion is supported for Half type only");
  checkDtypeIn(op, self.dtype(), kFloatingDtypes);
  return SoftmaxSpec{OutputSpec{self.sizes(), half_to_float ? kFloat : self.dtype()}, wrapped};
}

LayerNormSpec layerNorm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                        const std::optional<Tensor>& bias) {
  const auto n = static_cast<int64_t>(normalized_shape.size());
  DK_CHECK(n >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
                   "but got normalized_shape = ", normalized_shape);
  const char* names[] = {"weight", "bias"};
  const std::optional<Tensor>* affine[] = {&weight, &bias};
  for (int i = 0; i < 2; ++i) {
    const std::optional<Tensor>& t = *affine[i];
    if (t && t->defined())
      DK_CHECK(t->sizes() == normalized_shape, "Expected ", names[i], " to be of same shape as normalized_shape, but got ",
               names[i], " of shape ", t->sizes(), " and normalized_shape = ", normalized_shape);
  }
  bool matches = input.dim() >= n;
  for (int64_t i = 0; matches && i < n; ++i)
    matches = input.size(input.dim() - n + i) == normalized_shape[static_cast<size_t>(i)];
  if (!matches) {
    std::string star = "*";
    for (int64_t size : normalized_shape) star += ", " + std::to_string(size);
    DK_ERROR("Given normalized_shape=", normalized_shape, ", expected input with shape [", star,
             "], but got input of size", input.sizes());
  }
  LayerNormSpec spec{1, 1, input.sizes(), {}};
  const int64_t axis = input.dim() - n;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d < axis) {
      spec.rows *= input.size(d);
    } else {
      spec.row_size *= input.size(d);
      spec.stat_sizes[static_cast<size_t>(d)] = 1;
      spec.normalized_dims.push_back(d);
    }
  }
  return spec;
}

LossReduction parseLossReduction(const char* op, int64_t reduction) {
  DK_CHECK(reduction >= 0 && reduction <= 2, op, ": reduction must be 0 (none), 1 (mean) or 2 (sum), but got ",
           reduction);
  return static_cast<LossReduction>(reduction);
}

OutputSpec mseLoss(const Tensor& self, const Tensor& target, int64_t reduction) {
  LossReduction r = parseLossReduction("mse_loss", reduction);
  OutputSpec out = binaryOp(self, target, BinaryKind::Arithmetic);
  checkDtypeIn("mse_loss", out.dtype, kFloatingDtypes);
  out.strides.clear();  // contiguous, unlike the pointwise operators
  if (r != LossReduction::None) out.sizes.clear();
  return out;
}

OutputSpec nllLoss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                   int64_t reduction) {
  LossReduction r = parseLossReduction("nll_loss", reduction);
  DK_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  DK_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  DK_CHECK(no_batch_dim || self.size(0) == target.size(0), "size mismatch (got input: ", IntArrayRef(self.sizes()),
           ", target: ", IntArrayRef(target.sizes()), ")");
  int64_t n_classes = self.size(-1);
  bool has_weight = weight && weight->defined();
  if (has_weight) {
    DK_CHECK(weight->dim() == 1 && weight->numel() == n_classes, "weight tensor should be defined either for all ",
             n_classes, " classes or no classes but got weight tensor of shape: ", IntArrayRef(weight->sizes()));
  }
  DK_CHECK(target.dtype() == kLong || target.dtype() == kByte, "expected scalar type Long but found ",
           target.dtype());
  if (has_weight) {
    DK_CHECK(weight->dtype() == self.dtype(), "expected scalar type ", self.dtype(), " but found ", weight->dtype());
  }
  checkDtypeIn("nll_loss", self.dtype(), kFloatingDtypes);
  if (r == LossReduction::None && self.dim() == 2) return OutputSpec{{self.size(0)}, self.dtype()};
  return OutputSpec{{}, self.dtype()};
}

OutputSpec embedding(const Tensor& weight, const Tensor& indices) {
  DK_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  DK_CHECK(indices.dtype() == kLong || indices.dtype() == kInt,
           "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
           "torch.",
           indices.dtype(), "Tensor instead (while checking arguments for embedding)");
  std::vector<int64_t> sizes = indices.sizes();
  sizes.push_back(weight.size(1));
  return OutputSpec{std::move(sizes), weight.dtype()};
}

// ---------------------------------------------------------------- factories

void checkFactoryOptions(const char* op, std::optional<Layout> layout, std::optional<bool> pin_memory,
                         Device device) {
  DK_CHECK(layout.value_or(Layout::Strided) == Layout::Strided, op, ": only the strided layout is supported, got ",
           *layout);
  if (pin_memory.value_or(false)) {
    DK_CHECK(device.type == DeviceType::CPU, op, ": only dense CPU tensors can be pinned");
    DK_ERROR(op, ": pinned memory is not supported yet");
  }
}

std::vector<int64_t> stridesForMemoryFormat(IntArrayRef sizes, std::optional<MemoryFormat> memory_format) {
  switch (memory_format.value_or(MemoryFormat::Contiguous)) {
    case MemoryFormat::Contiguous: return computeContiguousStrides(sizes);
    case MemoryFormat::ChannelsLast: {
      DK_CHECK(sizes.size() == 4, "required rank 4 tensor to use channels_last format");
      auto at_least_one = [](int64_t s) { return s > 1 ? s : int64_t{1}; };
      std::vector<int64_t> strides(4);
      strides[1] = 1;
      strides[3] = at_least_one(sizes[1]);
      strides[2] = strides[3] * at_least_one(sizes[3]);
      strides[0] = strides[2] * at_least_one(sizes[2]);
      return strides;
    }
    case MemoryFormat::Preserve: break;
  }
  DK_ERROR("unsupported memory format ", *memory_format);
}

ScalarType fullDtype(const Scalar& fill_value, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  if (fill_value.isBoolean()) return kBool;
  if (fill_value.isIntegral()) return kLong;
  return get_default_dtype();
}

ScalarType arangeDtype(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  bool integral = !start.isFloatingPoint() && !end.isFloatingPoint() && !step.isFloatingPoint();
  return integral ? kLong : get_default_dtype();
}

namespace {

// The bounds checks and length of arange in the accumulate type Acc of the output dtype.
template <class Acc>
int64_t arangeLengthIn(const Scalar& start, const Scalar& end, const Scalar& step, bool exact_int64) {
  if constexpr (std::is_integral_v<Acc>) {
    // Converting a non-finite double to an integer is undefined: refuse it first.
    DK_CHECK(std::isfinite(start.toDouble()) && std::isfinite(end.toDouble()), "unsupported range: ",
             start.toDouble(), " -> ", end.toDouble());
  }
  auto xstart = start.to<Acc>();
  auto xend = end.to<Acc>();
  auto xstep = step.to<Acc>();
  DK_CHECK(xstep > 0 || xstep < 0, "step must be nonzero");
  DK_CHECK(std::isfinite(static_cast<double>(xstart)) && std::isfinite(static_cast<double>(xend)),
           "unsupported range: ", xstart, " -> ", xend);
  DK_CHECK((xstep > 0 && xend >= xstart) || (xstep < 0 && xend <= xstart),
           "upper bound and larger bound inconsistent with step sign");
  double size_d = 0;
  if constexpr (std::is_integral_v<Acc>) {
    if (exact_int64) {
      // int64 holds more digits than a double: subtract exactly, divide in double.
      Acc span = 0;
      DK_CHECK(!__builtin_sub_overflow(xend, xstart, &span), "invalid size, possible overflow?");
      size_d = std::ceil(static_cast<double>(span) / static_cast<double>(xstep));
    }
  }
  if (!exact_int64) size_d = std::ceil((end.toDouble() - start.toDouble()) / step.toDouble());
  DK_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()),
           "invalid size, possible overflow?");
  return static_cast<int64_t>(size_d);
}

}  // namespace

int64_t arangeLength(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype) {
  checkDtypeIn("arange", dtype, kAllDtypesExceptBool);
  switch (dtype) {
    case kHalf:
    case kBFloat16:
    case kFloat:
    case kDouble: return arangeLengthIn<double>(start, end, step, false);
    case kLong: return arangeLengthIn<int64_t>(start, end, step, true);
    default: return arangeLengthIn<int64_t>(start, end, step, false);
  }
}

void checkRandomDtype(const char* op, ScalarType dtype) { checkDtypeIn(op, dtype, kFloatingDtypes); }

// ---------------------------------------------------------------- out= arguments

bool resizeOutput(const Tensor& out, IntArrayRef sizes) {
  if (IntArrayRef(out.sizes()).equals(sizes)) return false;
  if (out.numel() != 0) {
    warn(detail::concat(
        "An output with one or more elements was resized since it had shape ", IntArrayRef(out.sizes()),
        ", which does not match the required output shape ", sizes,
        ". This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they have "
        "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
        "t.resize_(0)."));
  }
  TensorImpl* impl = out.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(sizes.vec());
  size_t needed = impl->numel() == 0 ? 0 : static_cast<size_t>(impl->storage_offset() + impl->numel()) * impl->itemsize();
  if (needed <= impl->storage().nbytes()) return true;
  Device device = out.device();
  if (!impl->has_storage()) {
    impl->set_storage(Storage::allocate(needed, device, getAllocator(device.type)));
    return true;
  }
  StorageImpl* storage = impl->storage().unsafeGetStorageImpl();
  DK_CHECK(storage->allocator() != nullptr, "Trying to resize storage that is not resizable");
  storage->set_data_ptr(storage->allocator()->allocate(needed, device), needed);
  return true;
}

void checkNoInternalOverlap(const Tensor& out) {
  if (out.numel() == 0) return;  // nothing is written (PyTorch: an empty tensor is dense)
  for (int64_t d = 0; d < out.dim(); ++d) {
    DK_CHECK(out.sizes()[static_cast<size_t>(d)] <= 1 || out.strides()[static_cast<size_t>(d)] != 0,
             "unsupported operation: more than one element of the written-to tensor refers to a single memory "
             "location. Please clone() the tensor before performing the operation.");
  }
}

namespace {

// No gaps and no element twice, in some order of the dims (PyTorch's
// is_non_overlapping_and_dense).
bool isNonOverlappingAndDense(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims of size > 1
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t size = t.sizes()[static_cast<size_t>(d)];
    if (size != 1) dims.emplace_back(t.strides()[static_cast<size_t>(d)], size);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

}  // namespace

MemOverlap overlapStatus(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return MemOverlap::Full;
  if (a.numel() == 0 || b.numel() == 0) return MemOverlap::No;
  if (!a.has_storage() || !b.has_storage() || !a.storage().is_same(b.storage())) return MemOverlap::No;
  if (!isNonOverlappingAndDense(a) || !isNonOverlappingAndDense(b)) return MemOverlap::TooHard;
  // Dense: the elements fill [offset, offset + numel) of the storage, in elements of their size.
  const int64_t a_begin = a.storage_offset() * static_cast<int64_t>(a.element_size());
  const int64_t a_end = a_begin + a.numel() * static_cast<int64_t>(a.element_size());
  const int64_t b_begin = b.storage_offset() * static_cast<int64_t>(b.element_size());
  const int64_t b_end = b_begin + b.numel() * static_cast<int64_t>(b.element_size());
  if (a_begin == b_begin && a_end == b_end) return a.strides() == b.strides() ? MemOverlap::Full : MemOverlap::Partial;
  return a_begin < b_end && b_begin < a_end ? MemOverlap::Partial : MemOverlap::No;
}

namespace {
// [first, last) byte addresses a tensor's elements occupy; empty for a tensor with none.
std::pair<uintptr_t, uintptr_t> byteRange(const Tensor& t) {
  if (t.numel() == 0 || t.data_ptr() == nullptr) return {0, 0};
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    last += (t.sizes()[static_cast<size_t>(d)] - 1) * t.strides()[static_cast<size_t>(d)];
  auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  return {begin, begin + static_cast<uintptr_t>((last + 1) * static_cast<int64_t>(t.element_size()))};
}
}  // namespace

bool mayOverlap(const Tensor& a, const Tensor& b) {
  if (!a.has_storage() || !b.has_storage() || !a.storage().is_same(b.storage())) return false;
  auto [a0, a1] = byteRange(a);
  auto [b0, b1] = byteRange(b);
  return a0 < b1 && b0 < a1;
}

void checkNoPartialOverlap(const Tensor& written, const Tensor& input) {
  if (!written.defined() || !input.defined()) return;
  DK_CHECK(overlapStatus(written, input) != MemOverlap::Partial,
           "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.");
}

void checkOutDtypeExact(const Tensor& out, ScalarType dtype) {
  DK_CHECK(out.dtype() == dtype, "Expected out tensor to have dtype ", typeMetaName(dtype), ", but got ",
           typeMetaName(out.dtype()), " instead");
}

// ---------------------------------------------------------------- meta functions of structured kernels

Device pointwiseDevice(std::initializer_list<const Tensor*> inputs) {
  const Tensor* first = nullptr;
  for (const Tensor* t : inputs) {
    if (!t->defined()) continue;
    if (!isCpuScalar(*t)) return t->device();
    if (first == nullptr) first = t;
  }
  DK_CHECK(first != nullptr, "pointwiseDevice: no defined input");
  return first->device();
}

void checkPointwiseOperands(MetaBase& m, std::initializer_list<NamedTensor> inputs, int64_t outputs) {
  DeviceAgreement devices(m.op_name());
  for (const NamedTensor& input : inputs) {
    bool given = false;
    for (int64_t i = 0; i < outputs; ++i) given = given || input.tensor.is_same(m.maybe_get_output(i));
    devices.visit(input.name, input.tensor, input.is_output || given);
  }
  for (int64_t i = 0; i < outputs; ++i) devices.visit(m.output_name(i), m.maybe_get_output(i), /*is_output=*/true);
  // Before set_output: maybe_get_output is still the given tensor (undefined when functional).
  for (int64_t i = 0; i < outputs; ++i) {
    const Tensor& written = m.maybe_get_output(i);
    if (!written.defined()) continue;
    for (const NamedTensor& input : inputs) checkNoPartialOverlap(written, input.tensor);
  }
}

void setOutput(MetaBase& m, int64_t index, const OutputSpec& spec, Device device) {
  m.set_output_raw_strided(index, spec.sizes, spec.strides, spec.dtype, device);
}

}  // namespace dk::meta
