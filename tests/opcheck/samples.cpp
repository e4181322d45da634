// tests/opcheck/samples.cpp: see Note [opcheck samples] in samples.h.
#include "samples.h"

#include <functional>
#include <map>
#include <string_view>

#include "dk/dispatch/function_schema.h"
#include "dk/generated/ops/empty.h"
#include "dk/tensor/tensor.h"
#include "dk/testing/gradcheck.h"
#include "dk/util/error.h"

namespace dk::opcheck_samples {

namespace {

using Sizes = std::vector<int64_t>;

// A float64 tensor of `sizes` with distinct positive values in [0.25, 1.5] (valid for log,
// sqrt and rsqrt; no ties for max, sort and topk); `seed` varies them between arguments.
Tensor doubles(const Sizes& sizes, int seed = 0) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.25 + static_cast<double>((i * 7 + seed * 3) % 11) / 8.0;
  if (n > 11) {
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] += static_cast<double>(i) / 1024.0;
  }
  return dk::testing::double_tensor(sizes, v);
}

// Integer (Long) or boolean tensors from values.
Tensor longs(const Sizes& sizes, const std::vector<double>& values) {
  return dk::testing::double_tensor(sizes, values).to(kLong);
}
Tensor bools(const Sizes& sizes, const std::vector<double>& values) {
  return dk::testing::double_tensor(sizes, values).to(kBool);
}

// The list type inside `type` (int[], int[1]?, ...).
const Type& listType(const Type& type) { return type.kind() == TypeKind::Optional ? type.element() : type; }

IValue intList(const Type& type, const Sizes& values) {
  std::vector<IValue> elements(values.begin(), values.end());
  return IValue::makeList(listType(type).element(), std::move(elements));
}

IValue tensorList(const Type& type, std::vector<Tensor> tensors) {
  std::vector<IValue> elements;
  for (Tensor& t : tensors) elements.emplace_back(std::move(t));
  return IValue::makeList(listType(type).element(), std::move(elements));
}

TypeKind baseKind(const Type& type) {
  const Type* t = &type;
  while (!t->isBase()) t = &t->element();
  return t->kind();
}

// ---- values from the schema

// The argument's default, from its text in the schema.
IValue parseDefault(const Argument& a) {
  const std::string& text = *a.default_value;
  if (text == "None") return IValue();
  if (a.type.kind() == TypeKind::List || (a.type.kind() == TypeKind::Optional && a.type.element().kind() == TypeKind::List)) {
    Sizes values;
    if (text.front() == '[') {
      std::string inner = text.substr(1, text.size() - 2);
      size_t pos = 0;
      while (pos < inner.size()) {
        size_t comma = inner.find(',', pos);
        if (comma == std::string::npos) comma = inner.size();
        values.push_back(std::stoll(inner.substr(pos, comma - pos)));
        pos = comma + 1;
      }
    } else {
      // int[2] stride=1: the number repeated.
      values.assign(static_cast<size_t>(listType(a.type).fixedSize().value_or(1)), std::stoll(text));
    }
    return intList(a.type, values);
  }
  switch (baseKind(a.type)) {
    case TypeKind::Bool: return IValue(text == "True");
    case TypeKind::Int:
    case TypeKind::SymInt:
      if (text == "Mean") return IValue(int64_t{1});
      if (text == "Sum") return IValue(int64_t{2});
      return IValue(static_cast<int64_t>(std::stoll(text)));
    case TypeKind::Float: return IValue(std::stod(text));
    case TypeKind::Scalar:
      if (text.find_first_of(".e") != std::string::npos) return IValue(std::stod(text));
      return IValue(static_cast<int64_t>(std::stoll(text)));
    case TypeKind::Str: return IValue(text.substr(1, text.size() - 2));
    case TypeKind::MemoryFormat:
      DK_CHECK(text == "contiguous_format", "opcheck samples: unknown memory format default ", text);
      return IValue(MemoryFormat::Contiguous);
    default: break;
  }
  DK_CHECK(false, "opcheck samples: no reading of the default '", text, "' of ", a.str());
  return IValue();
}

// The value an argument without a default takes, by its type and name.
IValue fromTypeAndName(const Argument& a, int tensor_seed) {
  const std::string& n = a.name;
  if (a.is_out()) {
    // PyTorch's max.dim_max names its indices output max_values.
    const bool index = n.find("indices") != std::string::npos || n == "max_values";
    return IValue(dk::empty({0}, index ? kLong : kDouble));
  }
  const Type& t = a.type;
  if (t.kind() == TypeKind::Optional) {
    if (n == "dim" && t.element().kind() == TypeKind::List) return intList(t, {1});
    return IValue();
  }
  if (t.kind() == TypeKind::List) {
    if (baseKind(t) == TypeKind::Tensor) return tensorList(t, {doubles({2, 3}, 0), doubles({2, 3}, 1)});
    if (baseKind(t) == TypeKind::Bool) {
      std::vector<IValue> flags(static_cast<size_t>(t.fixedSize().value_or(1)), IValue(true));
      return IValue::makeList(t.element(), std::move(flags));
    }
    if (n == "dims") return intList(t, {1, 0});
    if (n == "repeats") return intList(t, {2, 1});
    if (n == "dim") return intList(t, {1});
    if (n == "stride") return intList(t, {3, 1});
    if (n == "normalized_shape") return intList(t, {3});
    return intList(t, {2, 3});  // size, shape
  }
  switch (t.kind()) {
    case TypeKind::Tensor: return IValue(doubles({2, 3}, tensor_seed));
    case TypeKind::Int:
    case TypeKind::SymInt:
      if (n == "dim0" || n == "start") return IValue(int64_t{0});
      if (n == "k" || n == "chunks" || n == "split_size" || n == "length") return IValue(int64_t{2});
      return IValue(int64_t{1});  // dim, dim1, index
    case TypeKind::Float:
      if (n == "eps") return IValue(1e-5);
      if (n == "momentum") return IValue(0.1);
      return IValue(0.5);  // p
    case TypeKind::Bool: return IValue(n == "train" || n == "training");
    case TypeKind::Scalar:
      if (n == "end") return IValue(int64_t{5});
      return IValue(2.0);
    case TypeKind::ScalarType: return IValue(kFloat);
    case TypeKind::Str: return IValue(std::string("none"));
    default: break;
  }
  DK_CHECK(false, "opcheck samples: no sample value for ", a.str());
  return IValue();
}

// ---- families whose arguments must agree (Note [opcheck samples])

using Family = std::map<std::string, std::function<IValue(const Type&)>, std::less<>>;

std::function<IValue(const Type&)> tensor(Sizes sizes, int seed = 0) {
  return [=](const Type&) { return IValue(doubles(sizes, seed)); };
}
std::function<IValue(const Type&)> longTensor(Sizes sizes, std::vector<double> values) {
  return [=](const Type&) { return IValue(longs(sizes, values)); };
}
std::function<IValue(const Type&)> boolTensor(Sizes sizes, std::vector<double> values) {
  return [=](const Type&) { return IValue(bools(sizes, values)); };
}
std::function<IValue(const Type&)> ints(Sizes values) {
  return [=](const Type& t) { return intList(t, values); };
}
std::function<IValue(const Type&)> value(IValue v) {
  return [=](const Type&) { return v; };
}
std::function<IValue(const Type&)> indexList(Sizes sizes, std::vector<double> values) {
  return [=](const Type& t) { return tensorList(t, {longs(sizes, values)}); };
}

const std::map<std::string, Family, std::less<>>& families() {
  static const std::map<std::string, Family, std::less<>> table = {
      // matrix products
      {"mm", {{"self", tensor({2, 3})}, {"mat2", tensor({3, 4}, 1)}}},
      {"bmm", {{"self", tensor({2, 2, 3})}, {"mat2", tensor({2, 3, 4}, 1)}}},
      {"addmm", {{"self", tensor({2, 4})}, {"mat1", tensor({2, 3}, 1)}, {"mat2", tensor({3, 4}, 2)}}},
      {"baddbmm", {{"self", tensor({2, 2, 4})}, {"batch1", tensor({2, 2, 3}, 1)}, {"batch2", tensor({2, 3, 4}, 2)}}},
      {"matmul", {{"self", tensor({2, 3})}, {"other", tensor({3, 4}, 1)}}},
      {"linear", {{"input", tensor({2, 3})}, {"weight", tensor({4, 3}, 1)}, {"bias", tensor({4}, 2)}}},
      // convolution and pooling
      {"conv1d", {{"input", tensor({1, 2, 5})}, {"weight", tensor({3, 2, 2}, 1)}, {"bias", tensor({3}, 2)}}},
      {"conv2d", {{"input", tensor({1, 2, 4, 4})}, {"weight", tensor({3, 2, 2, 2}, 1)}, {"bias", tensor({3}, 2)}}},
      {"convolution",
       {{"input", tensor({1, 2, 4, 4})}, {"weight", tensor({3, 2, 2, 2}, 1)}, {"stride", ints({1, 1})},
        {"padding", ints({0, 0})}, {"dilation", ints({1, 1})}, {"output_padding", ints({0, 0})},
        {"transposed", value(false)}, {"groups", value(int64_t{1})}}},
      {"im2col",
       {{"self", tensor({1, 2, 4, 4})}, {"kernel_size", ints({2, 2})}, {"dilation", ints({1, 1})},
        {"padding", ints({0, 0})}, {"stride", ints({1, 1})}}},
      {"col2im",
       {{"self", tensor({1, 8, 9})}, {"output_size", ints({4, 4})}, {"kernel_size", ints({2, 2})},
        {"dilation", ints({1, 1})}, {"padding", ints({0, 0})}, {"stride", ints({1, 1})}}},
      {"max_pool2d", {{"self", tensor({1, 2, 4, 4})}, {"kernel_size", ints({2, 2})}}},
      {"max_pool2d_with_indices", {{"self", tensor({1, 2, 4, 4})}, {"kernel_size", ints({2, 2})}}},
      {"avg_pool2d", {{"self", tensor({1, 2, 4, 4})}, {"kernel_size", ints({2, 2})}}},
      {"avg_pool2d_backward",
       {{"grad_output", tensor({1, 2, 2, 2}, 1)}, {"self", tensor({1, 2, 4, 4})}, {"kernel_size", ints({2, 2})},
        {"stride", ints({2, 2})}, {"padding", ints({0, 0})}, {"ceil_mode", value(false)},
        {"count_include_pad", value(true)}}},
      // indexing
      {"embedding", {{"weight", tensor({5, 3})}, {"indices", longTensor({2, 2}, {0, 2, 4, 1})}}},
      {"index", {{"self", tensor({3, 4})}, {"indices", indexList({2}, {0, 2})}}},
      {"index_put", {{"self", tensor({3, 4})}, {"indices", indexList({2}, {0, 2})}, {"values", tensor({2, 4}, 1)}}},
      {"index_select", {{"self", tensor({3, 4})}, {"dim", value(int64_t{0})}, {"index", longTensor({2}, {2, 0})}}},
      {"gather", {{"self", tensor({2, 3})}, {"index", longTensor({2, 2}, {0, 2, 1, 1})}}},
      {"scatter_add",
       {{"self", tensor({2, 3})}, {"index", longTensor({2, 2}, {0, 2, 1, 1})}, {"src", tensor({2, 2}, 1)}}},
      {"masked_fill",
       {{"mask", boolTensor({2, 3}, {1, 0, 1, 0, 0, 1})},
        {"value", [](const Type& t) { return t.kind() == TypeKind::Tensor ? IValue(doubles({}, 4)) : IValue(0.5); }}}},
      {"where", {{"condition", boolTensor({2, 3}, {1, 0, 1, 0, 0, 1})}, {"other", tensor({2, 3}, 1)}}},
      {"select_scatter", {{"src", tensor({2}, 1)}}},
      {"slice_scatter",
       {{"src", tensor({2, 2}, 1)}, {"dim", value(int64_t{1})}, {"start", value(int64_t{0})},
        {"end", value(int64_t{2})}}},
      // losses
      {"nll_loss", {{"self", tensor({3, 4})}, {"target", longTensor({3}, {0, 3, 1})}}},
      {"cross_entropy_loss", {{"self", tensor({3, 4})}, {"target", longTensor({3}, {0, 3, 1})}}},
      // normalization and attention
      {"layer_norm", {{"weight", tensor({3}, 1)}, {"bias", tensor({3}, 2)}}},
      {"native_layer_norm", {{"weight", tensor({3}, 1)}, {"bias", tensor({3}, 2)}}},
      {"native_layer_norm_backward",
       {{"grad_out", tensor({2, 3}, 1)}, {"mean", tensor({2, 1}, 2)}, {"rstd", tensor({2, 1}, 3)},
        {"weight", tensor({3}, 4)}, {"bias", tensor({3}, 5)}}},
      {"batch_norm",
       {{"input", tensor({3, 2})}, {"weight", tensor({2}, 1)}, {"bias", tensor({2}, 2)},
        {"running_mean", tensor({2}, 3)}, {"running_var", tensor({2}, 4)}}},
      {"_scaled_dot_product_attention",
       {{"query", tensor({2, 3, 4})}, {"key", tensor({2, 5, 4}, 1)}, {"value", tensor({2, 5, 3}, 2)}}},
      // shapes
      {"expand", {{"self", tensor({1, 3})}}},
      {"expand_copy", {{"self", tensor({1, 3})}}},
      {"view", {{"size", ints({3, 2})}}},
      {"view_copy", {{"size", ints({3, 2})}}},
      {"reshape", {{"shape", ints({3, 2})}}},
      {"squeeze", {{"self", tensor({2, 1, 3})}}},
      {"squeeze_copy", {{"self", tensor({2, 1, 3})}}},
      {"item", {{"self", tensor({})}}},
      // Bounds between the samples' values (1/8 apart), where clamp is differentiable.
      {"clamp", {{"min", value(0.45)}, {"max", value(1.05)}}},
      {"argmax", {{"out", [](const Type&) { return IValue(dk::empty({0}, kLong)); }}}},
      {"argmin", {{"out", [](const Type&) { return IValue(dk::empty({0}, kLong)); }}}},
      {"arange", {{"start", value(int64_t{0})}}},
      {"copy", {{"src", tensor({2, 3}, 1)}}},
  };
  return table;
}

// The family of an overload: its base name without the in-place '_' ("add_" -> "add").
std::string_view familyName(const OperatorName& name) {
  std::string_view base = name.name;
  if (auto colons = base.find("::"); colons != std::string_view::npos) base.remove_prefix(colons + 2);
  if (base.size() > 1 && base.back() == '_' && base[base.size() - 2] != '_') base.remove_suffix(1);
  return base;
}

}  // namespace

std::optional<std::vector<Stack>> samplesFor(const OperatorHandle& op, std::string* why) {
  const OperatorName& name = op.operator_name();
  if (name.name.rfind("c10d::", 0) == 0) {
    *why = "a collective: it needs a process group (tests/distributed runs every collective on 2 and 4 ranks)";
    return std::nullopt;
  }
  const auto& all = families();
  auto family = all.find(familyName(name));
  Stack stack;
  int seed = 0;
  for (const Argument& a : op.schema().arguments()) {
    if (family != all.end()) {
      auto rule = family->second.find(a.name);
      if (rule != family->second.end()) {
        IValue v = rule->second(a.type);
        if (v.matchesType(a.type)) {
          stack.push_back(std::move(v));
          ++seed;
          continue;
        }
      }
    }
    stack.push_back(a.default_value && !a.is_out() ? parseDefault(a) : fromTypeAndName(a, seed));
    ++seed;
  }
  return std::vector<Stack>{std::move(stack)};
}

}  // namespace dk::opcheck_samples
