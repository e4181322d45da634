// kernels/cpu/tensor_iterator.h: the machinery every CPU elementwise and reduction kernel
// shares. A TensorIterator takes a kernel's output and inputs, works out the broadcast shape and
// the dtype to compute in (PyTorch's promotion), allocates or checks the output, and reduces the
// geometry to as few dims as possible; cpu_kernel then runs a scalar function over every
// element.
//
//   TensorIterator iter = TensorIteratorConfig("add")
//                             .add_output(Tensor())          // undefined: allocate the result
//                             .add_input(self)
//                             .add_input(other)
//                             .promote_inputs_to_common_dtype(true)
//                             .build();
//   DK_DISPATCH_ALL_TYPES(iter.common_dtype(), "add", [&] {
//     cpu_kernel<scalar_t, scalar_t, scalar_t>(iter, [](auto a, auto b) { return addValues(a, b); });
//   });
//   return iter.output();
//
// Note [CPU TensorIterator]
// Building runs these steps, in order:
//   1. every tensor is defined and on the cpu;
//   2. the shape is the broadcast of the inputs; an output that is also an input (in-place) or
//      may not be resized must already have it ("output with shape [3] doesn't match the
//      broadcast shape [2, 3]"); an out= tensor of another shape is resized (resizeOutput);
//   3. the common dtype is result_type of the promoted inputs (or the one the kernel gives),
//      turned into get_default_dtype() for ops that compute in float on integer inputs; the
//      result dtype is the common dtype, or the fixed output dtype of a comparison. An out=
//      or in-place tensor of another dtype must pass canCast ("result type Float can't be cast
//      to the desired output type Long"); the kernel then writes a temporary of the result
//      dtype, and finish() copies it into the out tensor;
//   4. the iteration order (Note [Iteration order]) is computed, and an output to allocate is
//      laid out in that order, so `x.t() + 1` is as transposed as x, as in PyTorch;
//   5. inputs of another dtype than the common one are cast (copied) to it, and an input that
//      shares memory with the output without being exactly the output is copied first, so
//      that writing the output cannot change what is still to be read. An output in which two
//      elements share memory (an expanded tensor) is refused;
//   6. dims are coalesced: neighbours that every operand walks as one run merge, so any
//      contiguous case ends as a single dim.
//
// Note [Iteration order]
// Dims are walked innermost first in the order of the operands' memory, not of their sizes: the
// dim with the smaller stride goes inside (the first operand whose strides differ on the two
// dims decides; broadcast dims, stride 0, decide nothing; equal strides put the smaller size
// inside). A transposed input is then read in memory order, and an output allocated by the
// iterator gets strides in the same order.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dk/core/core_types.h"
#include "dk/core/parallel.h"
#include "dk/core/scalar.h"
#include "dk/tensor/dtype_dispatch.h"
#include "dk/tensor/tensor.h"
#include "dk/util/array_ref.h"
#include "dk/util/error.h"
#include "dk/util/half.h"

namespace dk::native {

// ---- values ----

// The type a kernel computes in for elements of type T: float for the 16-bit floats (Note
// [16-bit float arithmetic]), T itself otherwise.
template <class T>
struct OpMathType {
  using type = T;
};
template <>
struct OpMathType<Half> {
  using type = float;
};
template <>
struct OpMathType<BFloat16> {
  using type = float;
};
template <class T>
using opmath_t = typename OpMathType<T>::type;

template <class T>
inline constexpr bool is16BitFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// `value` as a To, the way PyTorch's casts behave on x86, without C++'s undefined cases:
// integers wrap modulo 2^n; a floating value becomes an integer by truncation, and one out of
// range (or NaN) becomes the most negative value of int32 (for types up to 32 bits, then
// narrowed) or int64, as the x86 conversion instructions give; anything nonzero (NaN included)
// becomes true; the 16-bit floats convert through float.
template <class To, class From>
inline To convertValue(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (is16BitFloat<From>) {
    return convertValue<To>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_integral_v<To>) {
    if constexpr (std::is_integral_v<From>) {
      return static_cast<To>(value);
    } else if constexpr (sizeof(To) <= 4) {
      auto d = static_cast<double>(value);
      int32_t i = d > -2147483649.0 && d < 2147483648.0 ? static_cast<int32_t>(d) : INT32_MIN;
      return static_cast<To>(i);
    } else {
      auto d = static_cast<double>(value);
      int64_t i = d >= -9223372036854775808.0 && d < 9223372036854775808.0 ? static_cast<int64_t>(d) : INT64_MIN;
      return static_cast<To>(i);
    }
  } else if constexpr (is16BitFloat<To>) {
    return To(static_cast<float>(value));
  } else {
    return static_cast<To>(value);
  }
}

// A Scalar converted to T, like convertValue, except that a floating Scalar going to an integer
// type passes through Scalar::toLong, which refuses values int64 cannot hold (a plain cast of
// those is undefined behaviour).
template <class T>
inline T scalarTo(const Scalar& s) {
  if (s.isFloatingPoint()) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return convertValue<T>(s.toLong());
    else return convertValue<T>(s.toDouble());
  }
  if (s.isBoolean()) return convertValue<T>(s.toBool());
  return convertValue<T>(s.toLong());
}

// Integer arithmetic wraps modulo 2^n as in PyTorch (done in an unsigned type, where C++
// defines it: T's own, or unsigned int for types narrower than int, which would otherwise be
// promoted to int and overflow it: int16 65535 * 65534); bool + is or, bool * is and; floating
// types compute as usual.
template <class T>
using WrappingType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T>
inline T addValues(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<WrappingType<T>>(a) + static_cast<WrappingType<T>>(b));
  else return a + b;
}
template <class T>
inline T subValues(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<WrappingType<T>>(a) - static_cast<WrappingType<T>>(b));
  else return a - b;
}
template <class T>
inline T mulValues(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a && b;
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<WrappingType<T>>(a) * static_cast<WrappingType<T>>(b));
  else return a * b;
}

// PyTorch's canCast: whether a result of dtype `from` may be written to a tensor of dtype `to`
// (no floating -> integral, nothing but bool -> bool).
bool canCast(ScalarType from, ScalarType to);

// ---- checks shared by the CPU kernels ----

[[noreturn]] void throwNotOnCpu(const char* op, const Tensor& t);  // checkOnCpu's error

// "<op>: expected all tensors to be on the same device, but found at least two devices, cpu and
// cuda:0" when `t` is defined and not on the cpu. Inline: two compares when it passes.
inline void checkOnCpu(const char* op, const Tensor& t) {
  if (__builtin_expect(t.defined() && !t.is_cpu(), 0)) throwNotOnCpu(op, t);
}

// "unsupported operation: more than one element of the written-to tensor refers to a single
// memory location. Please clone() the tensor before performing the operation." when `t` has a
// dim of size > 1 and stride 0.
void assertNoInternalOverlap(const Tensor& t);

// The same elements at the same addresses: data pointer, dtype, sizes and strides all equal.
bool aliasesExactly(const Tensor& a, const Tensor& b);

// Gives out= tensor `out` the sizes `shape` (contiguous), growing its storage when it is too
// small (keeping the bytes it had). A tensor that had elements and another shape is resized
// with PyTorch's deprecation warning. Returns whether anything changed. Errors:
//   "Trying to resize storage that is not resizable" (memory from from_blob)
bool resizeOutput(const Tensor& out, IntArrayRef shape);

// A new contiguous tensor holding src's values as `dtype`.
Tensor castToDtype(const Tensor& src, ScalarType dtype);
// t itself when it is contiguous, else a contiguous copy.
inline Tensor contiguousCpu(const Tensor& t) { return t.is_contiguous() ? t : castToDtype(t, t.dtype()); }

// ---- the iterator ----

// int64 values (sizes, strides, dim orders) held inline up to N, on the heap beyond: the
// geometry of an iterator over tensors of few dims costs no allocation.
template <size_t N>
class SmallInt64Vector {
 public:
  SmallInt64Vector() = default;
  SmallInt64Vector(const SmallInt64Vector& o) { assign(o.data(), o.size()); }
  SmallInt64Vector& operator=(const SmallInt64Vector& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  // The moved-from vector is left empty.
  SmallInt64Vector(SmallInt64Vector&& o) noexcept { take(o); }
  SmallInt64Vector& operator=(SmallInt64Vector&& o) noexcept {
    if (this != &o) take(o);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return size_ <= N ? inline_.data() : heap_.data(); }
  const int64_t* data() const { return size_ <= N ? inline_.data() : heap_.data(); }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& back() { return data()[size_ - 1]; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  operator IntArrayRef() const { return IntArrayRef(data(), size_); }  // NOLINT: like std::vector

  // New elements are `value`.
  void resize(size_t n, int64_t value = 0) {
    if (n > N) {
      if (size_ <= N) heap_.assign(inline_.begin(), inline_.begin() + static_cast<std::ptrdiff_t>(size_));
      heap_.resize(n, value);
    } else if (size_ > N) {
      std::copy(heap_.begin(), heap_.begin() + static_cast<std::ptrdiff_t>(n), inline_.begin());
      heap_.clear();
    } else {
      for (size_t i = size_; i < n; ++i) inline_[i] = value;
    }
    size_ = n;
  }
  void push_back(int64_t value) { resize(size_ + 1, value); }
  void clear() { resize(0); }
  void assign(const int64_t* values, size_t n) {
    resize(0);
    resize(n);
    std::copy(values, values + n, data());
  }

 private:
  void take(SmallInt64Vector& o) noexcept {
    if (o.size_ <= N) std::copy(o.data(), o.data() + o.size_, inline_.data());
    heap_ = std::move(o.heap_);  // empty unless o.size_ > N
    size_ = o.size_;
    o.heap_.clear();
    o.size_ = 0;
  }

  // Only the first size_ are ever read (and only while size_ <= N): left uninitialized, so
  // that making an iterator does not clear them.
  std::array<int64_t, N> inline_;
  std::vector<int64_t> heap_;  // holds the values when size_ > N
  size_t size_ = 0;
};

class TensorIterator;

// What a kernel asks of its TensorIterator (Note [CPU TensorIterator]). Setters chain; they are
// inline, as every elementwise call runs them.
class TensorIteratorConfig {
 public:
  // `op_name` starts every error message; it must outlive the iterator.
  explicit TensorIteratorConfig(const char* op_name) : op_name_(op_name) {}

  // The tensor written: an undefined one to have the iterator allocate the result.
  TensorIteratorConfig& add_output(const Tensor& out) {
    output_ = out;
    return *this;
  }
  TensorIteratorConfig& add_input(const Tensor& in) { return addInput(in, false); }
  // An input that keeps its dtype and takes no part in promotion (where's condition).
  TensorIteratorConfig& add_input_keeping_dtype(const Tensor& in) { return addInput(in, true); }

  // Compute in the common dtype: result_type of the inputs, cast to it.
  TensorIteratorConfig& promote_inputs_to_common_dtype(bool on) {
    promote_inputs_ = on;
    return *this;
  }
  // With promotion, an integral or bool common dtype becomes get_default_dtype() (div, exp).
  TensorIteratorConfig& promote_integer_inputs_to_float(bool on) {
    promote_integer_inputs_to_float_ = on;
    return *this;
  }
  // Compute in `dtype` instead of the promoted dtype (kernels with Scalar operands work it
  // out themselves); inputs are cast to it.
  TensorIteratorConfig& common_dtype(ScalarType dtype) {
    common_dtype_ = dtype;
    return *this;
  }
  // The result has this dtype whatever the common one is (comparisons: Bool).
  TensorIteratorConfig& output_dtype(ScalarType dtype) {
    output_dtype_ = dtype;
    return *this;
  }
  // Whether an out= tensor of another shape may be resized (an in-place output never is).
  TensorIteratorConfig& resize_outputs(bool on) {
    resize_outputs_ = on;
    return *this;
  }

  TensorIterator build() const;

 private:
  friend class TensorIterator;
  struct Input {
    Tensor tensor;
    bool keeps_dtype = false;
  };
  static constexpr size_t kMaxInputs = 3;  // TensorIterator::kMaxOperands less the output
  bool buildTrivial(TensorIterator& it) const;
  TensorIteratorConfig& addInput(const Tensor& in, bool keeps_dtype) {
    if (ninputs_ < kMaxInputs) inputs_[ninputs_] = {in, keeps_dtype};
    ++ninputs_;
    return *this;
  }

  const char* op_name_;
  Tensor output_;
  // Inline: a config costs no allocation. ninputs_ counts every add_input, even past
  // kMaxInputs, so that build() can refuse the excess.
  std::array<Input, kMaxInputs> inputs_;
  size_t ninputs_ = 0;
  bool promote_inputs_ = false;
  bool promote_integer_inputs_to_float_ = false;
  std::optional<ScalarType> common_dtype_;
  std::optional<ScalarType> output_dtype_;
  bool resize_outputs_ = true;
};

class TensorIterator {
 public:
  static constexpr int kMaxOperands = 4;

  // Operands used as they are, for kernels that manage dtypes and outputs themselves (copy_,
  // fill_, reductions): operands[0] gives the shape, the others broadcast to it ("output with
  // shape [2] doesn't match the broadcast shape [3]"). No casting, allocation or overlap checks.
  static TensorIterator overOperands(const char* op_name, std::vector<Tensor> operands);

  // The tensor the kernel returns: the allocated result, or the out= / in-place tensor.
  const Tensor& output() const { return result_; }
  ScalarType common_dtype() const { return common_dtype_; }
  // Operand 0 is the output; inputs follow in the order they were added.
  int noperands() const { return nops_; }
  const Tensor& operand(int i) const { return operands_[static_cast<size_t>(i)]; }
  ScalarType dtype(int i) const { return operand(i).dtype(); }
  int64_t numel() const { return numel_; }
  // After coalescing, innermost first.
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  IntArrayRef shape() const { return shape_; }
  int64_t strideBytes(int op, int64_t dim) const { return strides_[static_cast<size_t>(op * ndim() + dim)]; }

  // Calls loop(data, strides, n) once per run of the innermost dim: data[k] points at operand
  // k's first element of the run, strides[k] is its step in bytes, n the run's length. The
  // all-contiguous case is one call over every element.
  template <class Loop>
  void forEachRun(Loop&& loop) const;
  // The same over the elements [begin, end) of the iteration order (a chunk of parallel_for).
  template <class Loop>
  void forEachRunIn(int64_t begin, int64_t end, Loop&& loop) const;

  // Copies a temporary output into the out= tensor it stands for (Note [CPU TensorIterator],
  // step 3). cpu_kernel calls it; kernels looping with forEachRun themselves must too.
  void finish();

 private:
  friend class TensorIteratorConfig;
  // Dims held inline; more spill to the heap.
  static constexpr size_t kInlineDims = 6;
  using DimVector = SmallInt64Vector<kInlineDims>;
  using StrideVector = SmallInt64Vector<kInlineDims * kMaxOperands>;

  TensorIterator() = default;
  // One step of the dims past the innermost (an odometer over counter[1..]): pointers move by
  // one stride and rewind a whole dim when it wraps. False once every dim has wrapped.
  bool stepOuterDims(std::array<char*, kMaxOperands>& ptrs, DimVector& counter) const {
    const int nops = noperands();
    const int64_t nd = ndim();
    for (int64_t d = 1; d < nd; ++d) {
      for (int k = 0; k < nops; ++k) ptrs[static_cast<size_t>(k)] += strideBytes(k, d);
      if (++counter[static_cast<size_t>(d)] < shape_[static_cast<size_t>(d)]) return true;
      for (int k = 0; k < nops; ++k) ptrs[static_cast<size_t>(k)] -= strideBytes(k, d) * shape_[static_cast<size_t>(d)];
      counter[static_cast<size_t>(d)] = 0;
    }
    return false;
  }
  void addOperand(Tensor t) { operands_[static_cast<size_t>(nops_++)] = std::move(t); }
  // Steps 4 and 6: strides per operand in iteration order, then coalescing.
  void computeGeometry(IntArrayRef shape, IntArrayRef order);

  const char* op_name_ = "";
  std::array<Tensor, kMaxOperands> operands_;  // the first nops_ are used
  int nops_ = 0;
  Tensor result_;
  bool copy_back_ = false;
  ScalarType common_dtype_ = ScalarType::Undefined;
  int64_t numel_ = 0;
  DimVector shape_;
  StrideVector strides_;  // operand-major: strides_[op * ndim + dim], in bytes
  std::array<char*, kMaxOperands> data_{};
};

template <class Loop>
void TensorIterator::forEachRun(Loop&& loop) const {
  if (numel_ == 0) return;
  const int nops = noperands();
  const int64_t nd = ndim();
  std::array<char*, kMaxOperands> ptrs = data_;
  std::array<int64_t, kMaxOperands> inner{};
  for (int k = 0; k < nops; ++k) inner[static_cast<size_t>(k)] = nd == 0 ? 0 : strideBytes(k, 0);
  if (nd <= 1) {
    loop(ptrs.data(), inner.data(), nd == 0 ? int64_t{1} : shape_[0]);
    return;
  }
  // Per-dim counters over the outer dims; pointers move by one stride per step and rewind a
  // whole dim when it wraps.
  DimVector counter;
  counter.resize(static_cast<size_t>(nd));
  while (true) {
    loop(ptrs.data(), inner.data(), shape_[0]);
    if (!stepOuterDims(ptrs, counter)) return;
  }
}

template <class Loop>
void TensorIterator::forEachRunIn(int64_t begin, int64_t end, Loop&& loop) const {
  if (begin >= end) return;
  const int nops = noperands();
  const int64_t nd = ndim();
  std::array<char*, kMaxOperands> ptrs = data_;
  std::array<int64_t, kMaxOperands> inner{};
  for (int k = 0; k < nops; ++k) inner[static_cast<size_t>(k)] = nd == 0 ? 0 : strideBytes(k, 0);
  if (nd <= 1) {
    for (int k = 0; k < nops; ++k) ptrs[static_cast<size_t>(k)] += begin * inner[static_cast<size_t>(k)];
    loop(ptrs.data(), inner.data(), end - begin);
    return;
  }
  // Per-dim counters over the dims, set from `begin`; pointers move by one stride per step and
  // rewind a whole dim when it wraps.
  DimVector counter;
  counter.resize(static_cast<size_t>(nd));
  for (int64_t d = 0, rest = begin; d < nd; ++d) {
    counter[static_cast<size_t>(d)] = rest % shape_[static_cast<size_t>(d)];
    rest /= shape_[static_cast<size_t>(d)];
    for (int k = 0; k < nops; ++k) ptrs[static_cast<size_t>(k)] += counter[static_cast<size_t>(d)] * strideBytes(k, d);
  }
  int64_t left = end - begin;
  while (true) {
    const int64_t run = std::min(left, shape_[0] - counter[0]);
    loop(ptrs.data(), inner.data(), run);
    left -= run;
    if (left == 0) return;
    // The run ended at the end of dim 0: rewind it and carry into the outer dims.
    for (int k = 0; k < nops; ++k) ptrs[static_cast<size_t>(k)] -= strideBytes(k, 0) * counter[0];
    counter[0] = 0;
    if (!stepOuterDims(ptrs, counter)) return;
  }
}

// ---- the elementwise loop ----

namespace loop_detail {

// Note [Blocked elementwise loop]
// Each run is processed in blocks of kBlockSize elements: every input block is loaded into a
// local array (a contiguous input by a plain copy, a broadcast one by repeating its single
// value, a strided one element by element), converted to its opmath type; then one loop computes
// and stores the block. The loops have a constant trip count, which GCC vectorizes even at -O2
// (whose cost model refuses loops that need a scalar epilogue), and since every load of a
// block happens before its stores, an output that is exactly an input (in-place) is safe
// without alias checks. The last partial block runs the same code with a runtime count.
inline constexpr int64_t kBlockSize = 16;

template <bool Full, class T>
inline void loadBlock(opmath_t<T>* dst, const char* base, int64_t stride, int64_t begin, int64_t count) {
  const int64_t m = Full ? kBlockSize : count;
  if (stride == static_cast<int64_t>(sizeof(T))) {
    const T* p = reinterpret_cast<const T*>(base) + begin;
    for (int64_t j = 0; j < m; ++j) dst[j] = static_cast<opmath_t<T>>(p[j]);
  } else if (stride == 0) {
    const auto v = static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(base));
    for (int64_t j = 0; j < m; ++j) dst[j] = v;
  } else {
    const char* p = base + begin * stride;
    for (int64_t j = 0; j < m; ++j) dst[j] = static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(p + j * stride));
  }
}

template <bool Full, class Out, class Compute>
inline void storeBlock(char* base, int64_t stride, int64_t begin, int64_t count, const Compute& compute) {
  const int64_t m = Full ? kBlockSize : count;
  if (stride == static_cast<int64_t>(sizeof(Out))) {
    Out* p = reinterpret_cast<Out*>(base) + begin;
    for (int64_t j = 0; j < m; ++j) p[j] = static_cast<Out>(compute(j));
  } else {
    char* p = base + begin * stride;
    for (int64_t j = 0; j < m; ++j) *reinterpret_cast<Out*>(p + j * stride) = static_cast<Out>(compute(j));
  }
}

template <class Out, class... In, class Op, size_t... I>
inline void runElementwise(char* const* data, const int64_t* strides, int64_t n, const Op& op,
                           std::index_sequence<I...>) {
  if (n == 1) {
    // One element (the 0-dim iteration): the same conversions and op, without the block loops.
    *reinterpret_cast<Out*>(data[0]) =
        static_cast<Out>(op(static_cast<opmath_t<In>>(*reinterpret_cast<const In*>(data[I + 1]))...));
    return;
  }
  std::tuple<std::array<opmath_t<In>, kBlockSize>...> blocks;
  int64_t i = 0;
  for (; i + kBlockSize <= n; i += kBlockSize) {
    (loadBlock<true, In>(std::get<I>(blocks).data(), data[I + 1], strides[I + 1], i, kBlockSize), ...);
    storeBlock<true, Out>(data[0], strides[0], i, kBlockSize,
                          [&](int64_t j) { return op(std::get<I>(blocks)[static_cast<size_t>(j)]...); });
  }
  if (i < n) {
    const int64_t rest = n - i;
    (loadBlock<false, In>(std::get<I>(blocks).data(), data[I + 1], strides[I + 1], i, rest), ...);
    storeBlock<false, Out>(data[0], strides[0], i, rest,
                           [&](int64_t j) { return op(std::get<I>(blocks)[static_cast<size_t>(j)]...); });
  }
}

// Calls run(data, strides, n) for every run of `iter`: large iterations split over the threads
// (Note [Intra-op parallelism]), each element computed once, by one thread, whatever the split;
// small ones on the caller's thread, unchunked.
template <class Run>
void forEachRunParallel(TensorIterator& iter, const Run& run) {
  if (iter.numel() <= kGrainSize) iter.forEachRun(run);
  else parallel_for(0, iter.numel(), kGrainSize, [&](int64_t begin, int64_t end) { iter.forEachRunIn(begin, end, run); });
}

}  // namespace loop_detail

// Runs out = op(in...) over every element of `iter`, whose operand 0 holds Out and whose
// inputs hold In... in order; op takes opmath_t<In>... (Note [Blocked elementwise loop]). Then
// finishes the iterator.
template <class Out, class... In, class Op>
void cpu_kernel(TensorIterator& iter, const Op& op) {
  DK_CHECK(iter.noperands() == static_cast<int>(sizeof...(In)) + 1, "cpu_kernel: the iterator has ",
           iter.noperands(), " operands, the loop takes ", sizeof...(In) + 1);
  loop_detail::forEachRunParallel(iter, [&](char* const* data, const int64_t* strides, int64_t n) {
    loop_detail::runElementwise<Out, In...>(data, strides, n, op, std::index_sequence_for<In...>{});
  });
  iter.finish();
}

// Note [Contiguous binary runs]
// Runs out = op(a, b) like cpu_kernel<T, T, T>, except that a run where the output and both
// inputs are contiguous goes whole to `fn`, an array function computing the same exact IEEE
// operation (vec::MathFunctions::add, mul: AVX2 when the CPU has it). The blocked loop is built
// for any stride and dtype; a memory-bound 4M-element add spends a quarter more time in it than
// in whole vectors. Then finishes the iterator.
template <class T, class Op>
void cpu_binary_kernel(TensorIterator& iter, const Op& op, void (*fn)(const T*, const T*, T*, int64_t)) {
  DK_CHECK(iter.noperands() == 3, "cpu_binary_kernel: the iterator has ", iter.noperands(), " operands, not 3");
  constexpr auto kSize = static_cast<int64_t>(sizeof(T));
  loop_detail::forEachRunParallel(iter, [&](char* const* data, const int64_t* strides, int64_t n) {
    if (strides[0] == kSize && strides[1] == kSize && strides[2] == kSize) {
      fn(reinterpret_cast<const T*>(data[1]), reinterpret_cast<const T*>(data[2]), reinterpret_cast<T*>(data[0]), n);
    } else {
      loop_detail::runElementwise<T, T, T>(data, strides, n, op, std::index_sequence_for<T, T>{});
    }
  });
  iter.finish();
}

// Runs out = f(in) over `iter` (one output, one input, both holding T) with an array function
// of opmath_t<T> (Note [Vectorized math]): a run where both are contiguous and T is its own
// opmath type goes to fn whole; any other run in blocks of kBlockSize, converted to the opmath
// type, as cpu_kernel does. Then finishes the iterator.
template <class T>
void cpu_array_kernel(TensorIterator& iter, void (*fn)(const opmath_t<T>*, opmath_t<T>*, int64_t)) {
  using M = opmath_t<T>;
  DK_CHECK(iter.noperands() == 2, "cpu_array_kernel: the iterator has ", iter.noperands(), " operands, not 2");
  constexpr auto kSize = static_cast<int64_t>(sizeof(T));
  constexpr int64_t kBlock = loop_detail::kBlockSize;
  const auto run = [&](char* const* data, const int64_t* strides, int64_t n) {
    if constexpr (std::is_same_v<T, M>) {
      if (strides[0] == kSize && strides[1] == kSize) {
        fn(reinterpret_cast<const T*>(data[1]), reinterpret_cast<T*>(data[0]), n);
        return;
      }
    }
    std::array<M, kBlock> block;
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t m = std::min(kBlock, n - i);
      loop_detail::loadBlock<false, T>(block.data(), data[1], strides[1], i, m);
      fn(block.data(), block.data(), m);
      loop_detail::storeBlock<false, T>(data[0], strides[0], i, m,
                                        [&](int64_t j) { return block[static_cast<size_t>(j)]; });
    }
  };
  loop_detail::forEachRunParallel(iter, run);
  iter.finish();
}

}  // namespace dk::native
