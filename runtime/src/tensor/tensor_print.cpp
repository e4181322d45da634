// Printing tensors the way PyTorch's repr does (torch/_tensor_str.py, default print options).
//
// Note [Tensor printing]
// Layout: "tensor(" + data + suffixes + ")". Data nests one "[" per dim; rows of a matrix are
// separated by ",\n" and blocks of higher dims by one more blank line per extra dim, each
// continuation indented to sit under the first element. A 1-D run wraps at 80 columns. Above
// 1000 elements only the first and last 3 entries of each dim are shown, with "..." between.
//
// Numbers: every element is printed at one common width (right-aligned). The width and the
// style come from the finite nonzero elements only:
//   - integers and bools print as themselves ("1", "True");
//   - floating tensors whose finite nonzero values are all whole numbers print in "integer
//     mode" as "1." (nan and inf stay "nan"/"inf");
//   - otherwise fixed point with 4 decimals ("0.1000");
//   - scientific with 4 decimals ("1.0000e+08") when max/min of the absolute values exceeds
//     1000 or the max exceeds 1e8, or (not in integer mode) the min is below 1e-4.
// Suffixes: device='cuda:0' for non-CPU tensors; dtype=float64 unless the dtype is float32,
// int64 or bool (PyTorch prints torch.float64; the "torch." is dropped here); for empty
// tensors size=(2, 0) unless 1-D, and the dtype unless float32.
// Tensors whose data cannot be read here print "..." for the data, then size=(...) and the
// dtype unless float32: meta tensors (as in PyTorch), tensors on other devices (printing them
// needs a copy to CPU, an operator, which this runtime core does not have), and metadata-only
// tensors without storage.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "dk/tensor/tensor.h"

namespace dk {

namespace {

constexpr int kPrecision = 4;
constexpr int64_t kSummarizeThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

// `format` is "%.*f" or "%.*e".
std::string printfFormat(const char* format, int precision, double value) {
  char buffer[400];  // "%.4f" of DBL_MAX has 309 digits before the point
  int n = std::snprintf(buffer, sizeof(buffer), format, precision, value);
  return std::string(buffer, static_cast<size_t>(std::max(n, 0)));
}

// Python's spelling of non-finite floats (printf may write "-nan").
std::string nonFiniteName(double value) {
  if (std::isnan(value)) return "nan";
  return value < 0 ? "-inf" : "inf";
}

// One element read as the widest C++ type of its category.
struct Element {
  double floating = 0;
  int64_t integral = 0;
};

class ElementReader {
 public:
  explicit ElementReader(const Tensor& t)
      : base_(static_cast<const char*>(t.data_ptr())), dtype_(t.scalar_type()), itemsize_(t.element_size()) {}

  Element read(int64_t element_offset) const {
    const char* p = base_ + element_offset * static_cast<int64_t>(itemsize_);
    return dispatchDtype(dtype_, "print", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Element e;
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        e.floating = static_cast<double>(static_cast<float>(*reinterpret_cast<const T*>(p)));
      } else if constexpr (std::is_floating_point_v<T>) {
        e.floating = static_cast<double>(*reinterpret_cast<const T*>(p));
      } else {
        e.integral = static_cast<int64_t>(*reinterpret_cast<const T*>(p));
      }
      return e;
    });
  }

 private:
  const char* base_;
  ScalarType dtype_;
  size_t itemsize_;
};

// Chooses one style and width for all elements (Note [Tensor printing]).
class Formatter {
 public:
  Formatter(ScalarType dtype, const std::vector<Element>& elements)
      : floating_(isFloatingType(dtype)), bool_(dtype == ScalarType::Bool) {
    if (!floating_) {
      for (const Element& e : elements) widen(formatIntegral(e.integral).size());
      return;
    }
    std::vector<double> finite_nonzero;
    for (const Element& e : elements)
      if (std::isfinite(e.floating) && e.floating != 0) finite_nonzero.push_back(e.floating);
    if (finite_nonzero.empty()) return;  // integer mode, width 1

    double min_abs = std::abs(finite_nonzero.front());
    double max_abs = min_abs;
    for (double v : finite_nonzero) {
      min_abs = std::min(min_abs, std::abs(v));
      max_abs = std::max(max_abs, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    bool wide_range = max_abs / min_abs > 1000.0 || max_abs > 1.0e8;
    sci_mode_ = int_mode_ ? wide_range : (wide_range || min_abs < 1.0e-4);
    for (double v : finite_nonzero) {
      if (sci_mode_) widen(printfFormat("%.*e", kPrecision, v).size());
      else if (int_mode_) widen(printfFormat("%.*f", 0, v).size() + 1);  // + 1 for the "."
      else widen(printfFormat("%.*f", kPrecision, v).size());
    }
  }

  size_t width() const { return width_; }

  std::string format(const Element& e) const {
    std::string text = floating_ ? formatFloating(e.floating) : formatIntegral(e.integral);
    return std::string(width_ > text.size() ? width_ - text.size() : 0, ' ') + text;
  }

 private:
  void widen(size_t w) { width_ = std::max(width_, w); }
  std::string formatIntegral(int64_t v) const {
    if (bool_) return v ? "True" : "False";
    return std::to_string(v);
  }
  std::string formatFloating(double v) const {
    if (!std::isfinite(v)) return nonFiniteName(v);
    if (sci_mode_) return printfFormat("%.*e", kPrecision, v);
    if (int_mode_) return printfFormat("%.*f", 0, v) + ".";
    return printfFormat("%.*f", kPrecision, v);
  }

  bool floating_;
  bool bool_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t width_ = 1;
};

class TensorDataPrinter {
 public:
  explicit TensorDataPrinter(const Tensor& t)
      : t_(t), reader_(t), summarize_(t.numel() > kSummarizeThreshold), formatter_(t.scalar_type(), shownElements()) {}

  std::string str(int indent) const {
    if (t_.dim() == 0) return formatter_.format(reader_.read(0));
    return subtensorStr(0, 0, indent);
  }

 private:
  // The indices of dim `d` that are shown.
  std::vector<int64_t> shownIndices(int64_t d) const {
    int64_t n = t_.size(d);
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < n; ++i)
      if (!elided(n) || i < kEdgeItems || i >= n - kEdgeItems) indices.push_back(i);
    return indices;
  }
  bool elided(int64_t size) const { return summarize_ && size > 2 * kEdgeItems; }

  // The elements the formatter looks at: the shown ones, in logical order.
  std::vector<Element> shownElements() const {
    std::vector<Element> out;
    collect(0, 0, out);
    return out;
  }
  void collect(int64_t d, int64_t offset, std::vector<Element>& out) const {
    if (d == t_.dim()) {
      out.push_back(reader_.read(offset));
      return;
    }
    for (int64_t i : shownIndices(d)) collect(d + 1, offset + i * t_.stride(d), out);
  }

  // The sub-tensor whose first index is dim `d` and whose first element is at `offset`.
  std::string subtensorStr(int64_t d, int64_t offset, int indent) const {
    int64_t n = t_.size(d);
    int64_t stride = t_.stride(d);
    bool elide = elided(n);
    if (d == t_.dim() - 1) {
      std::vector<std::string> items;
      for (int64_t i : shownIndices(d)) {
        if (elide && i == n - kEdgeItems) items.push_back(" ...");
        items.push_back(formatter_.format(reader_.read(offset + i * stride)));
      }
      auto element_length = static_cast<double>(formatter_.width() + 2);
      auto per_line = std::max<int64_t>(1, static_cast<int64_t>(std::floor((kLineWidth - indent) / element_length)));
      std::string out = "[";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += (static_cast<int64_t>(i) % per_line == 0) ? ",\n" + std::string(indent + 1, ' ') : ", ";
        out += items[i];
      }
      return out + "]";
    }
    int64_t remaining_dims = t_.dim() - d;
    std::string separator(1, ',');
    separator.append(static_cast<size_t>(remaining_dims - 1), '\n');
    separator.append(static_cast<size_t>(indent + 1), ' ');
    std::string out = "[";
    bool first = true;
    for (int64_t i : shownIndices(d)) {
      if (!first) out += separator;
      if (elide && i == n - kEdgeItems) out += "..." + separator;
      out += subtensorStr(d + 1, offset + i * stride, indent + 1);
      first = false;
    }
    return out + "]";
  }

  const Tensor& t_;
  ElementReader reader_;
  bool summarize_;
  Formatter formatter_;
};

std::string sizeTuple(const std::vector<int64_t>& sizes) {
  std::string out = "(";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + (sizes.size() == 1 ? ",)" : ")");
}

// Appends ", suffix" to the text, or ",\n<indent>suffix" when the line would pass 80 columns
// (the line-length arithmetic is PyTorch's, including its count of the text before a newline).
std::string addSuffixes(const std::string& text, const std::vector<std::string>& suffixes, int indent) {
  std::string out = text;
  size_t last_newline = text.rfind('\n');
  int64_t last_line_len = static_cast<int64_t>(text.size()) -
                          (last_newline == std::string::npos ? -1 : static_cast<int64_t>(last_newline)) + 1;
  for (const std::string& suffix : suffixes) {
    auto suffix_len = static_cast<int64_t>(suffix.size());
    if (last_line_len + suffix_len + 2 > kLineWidth) {
      out += ",\n" + std::string(static_cast<size_t>(indent), ' ') + suffix;
      last_line_len = indent + suffix_len;
    } else {
      out += ", " + suffix;
      last_line_len += suffix_len + 2;
    }
  }
  return out + ")";
}

}  // namespace

std::string formatTensor(const Tensor& t, std::string_view dtype_prefix, const std::vector<std::string>& extra_suffixes) {
  if (!t.defined()) return "Tensor(undefined)";
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  if (t.device().type != DeviceType::CPU) suffixes.push_back("device='" + t.device().str() + "'");

  ScalarType dtype = t.scalar_type();
  std::string dtype_suffix = "dtype=" + std::string(dtype_prefix) + std::string(dtypeName(dtype));
  bool readable = t.is_cpu() && t.unsafeGetTensorImpl()->has_storage() && (t.numel() == 0 || t.data_ptr() != nullptr);
  std::string data;
  if (!readable) {
    suffixes.push_back("size=" + sizeTuple(t.sizes()));
    if (dtype != get_default_dtype()) suffixes.push_back(dtype_suffix);
    data = "...";
  } else if (t.numel() == 0) {
    if (t.dim() != 1) suffixes.push_back("size=" + sizeTuple(t.sizes()));
    if (dtype != get_default_dtype()) suffixes.push_back(dtype_suffix);
    data = "[]";
  } else {
    bool default_shown = dtype == get_default_dtype() || dtype == ScalarType::Long || dtype == ScalarType::Bool;
    if (!default_shown) suffixes.push_back(dtype_suffix);
    data = TensorDataPrinter(t).str(indent);
  }
  suffixes.insert(suffixes.end(), extra_suffixes.begin(), extra_suffixes.end());
  return addSuffixes(prefix + data, suffixes, indent);
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << formatTensor(t, "", {}); }

}  // namespace dk
