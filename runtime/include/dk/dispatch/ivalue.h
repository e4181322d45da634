// dk/dispatch/ivalue.h: the boxed value (a 16-byte tagged union) and the Stack of boxed calls.
//
// Note [IValue layout]
// 8 bytes of payload (an int64, a double, a bool, a small enum, a packed Device, or a pointer
// to a refcounted heap object) and a 1-byte tag. Tensors store their TensorImpl* and own one
// reference; strings, lists, tuples and objects live in intrusive_ptr_target subclasses.
// Accessors check the tag: asking an Int for a Tensor throws a dk::Error naming both kinds.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dk/core/core_types.h"
#include "dk/core/custom_object.h"
#include "dk/dispatch/function_schema.h"
#include "dk/tensor/tensor.h"
#include "dk/util/error.h"
#include "dk/util/intrusive_ptr.h"

namespace dk {

class IValue;
using Stack = std::vector<IValue>;

struct StringImpl;
struct ListImpl;
struct TupleImpl;


class IValue {
 public:
  enum class Kind : uint8_t {
    None,
    Tensor,
    Double,
    Int,
    Bool,
    String,
    Device,
    ScalarType,
    Layout,
    MemoryFormat,
    GenericList,
    Tuple,
    Object,
  };

  IValue() : kind_(Kind::None) { payload_.as_int = 0; }
  IValue(std::nullopt_t) : IValue() {}  // NOLINT: implicit
  IValue(Tensor t) : kind_(Kind::Tensor) { payload_.as_tensor = t.release_impl(); }  // NOLINT
  IValue(double d) : kind_(Kind::Double) { payload_.as_double = d; }                   // NOLINT
  IValue(int64_t i) : kind_(Kind::Int) { payload_.as_int = i; }                        // NOLINT
  IValue(int i) : IValue(static_cast<int64_t>(i)) {}                                   // NOLINT
  IValue(bool b) : kind_(Kind::Bool) { payload_.as_int = 0; payload_.as_bool = b; }   // NOLINT
  IValue(std::string s);                                                               // NOLINT
  IValue(std::string_view s) : IValue(std::string(s)) {}                               // NOLINT
  IValue(const char* s) : IValue(std::string(s)) {}                                    // NOLINT
  IValue(Device d) : kind_(Kind::Device) {                                             // NOLINT
    payload_.as_int = 0;
    payload_.as_device = {static_cast<int8_t>(d.type), d.index};
  }
  IValue(ScalarType t) : kind_(Kind::ScalarType) { payload_.as_int = static_cast<int64_t>(t); }      // NOLINT
  IValue(Layout l) : kind_(Kind::Layout) { payload_.as_int = static_cast<int64_t>(l); }              // NOLINT
  IValue(MemoryFormat m) : kind_(Kind::MemoryFormat) { payload_.as_int = static_cast<int64_t>(m); }  // NOLINT
  IValue(intrusive_ptr<ListImpl> list);                                                // NOLINT
  IValue(intrusive_ptr<TupleImpl> tuple);                                              // NOLINT
  IValue(intrusive_ptr<CustomObject> object);                                          // NOLINT
  template <class T>
  IValue(std::optional<T> v) : IValue() {  // NOLINT: None or the value
    if (v) *this = IValue(std::move(*v));
  }

  // Lists with an element type; the type is checked against the elements.
  static IValue makeList(Type element_type, std::vector<IValue> elements);
  static IValue makeTuple(std::vector<IValue> elements);

  IValue(const IValue& o) : payload_(o.payload_), kind_(o.kind_) { retain(); }
  IValue(IValue&& o) noexcept : payload_(o.payload_), kind_(o.kind_) {
    o.kind_ = Kind::None;
    o.payload_.as_int = 0;
  }
  IValue& operator=(const IValue& o) {
    IValue copy(o);
    swap(copy);
    return *this;
  }
  IValue& operator=(IValue&& o) noexcept {
    IValue moved(std::move(o));
    swap(moved);
    return *this;
  }
  ~IValue() { release(); }
  void swap(IValue& o) noexcept {
    std::swap(payload_, o.payload_);
    std::swap(kind_, o.kind_);
  }

  Kind tagKind() const { return kind_; }
  static std::string_view kindName(Kind k);

  // Note [Deep IValue nesting]
  // Destroys `elements` (a list's or tuple's) without recursion: the lists and tuples only it
  // holds are emptied into a worklist first, so a million-deep nested list is freed in a loop
  // instead of a million nested destructor calls. Printing stops at a depth limit ("[...]").
  static void destroyElements(std::vector<IValue>& elements) noexcept;

  bool isNone() const { return kind_ == Kind::None; }
  bool isTensor() const { return kind_ == Kind::Tensor; }
  bool isDouble() const { return kind_ == Kind::Double; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isString() const { return kind_ == Kind::String; }
  bool isDevice() const { return kind_ == Kind::Device; }
  bool isScalarType() const { return kind_ == Kind::ScalarType; }
  bool isLayout() const { return kind_ == Kind::Layout; }
  bool isMemoryFormat() const { return kind_ == Kind::MemoryFormat; }
  bool isList() const { return kind_ == Kind::GenericList; }
  bool isTuple() const { return kind_ == Kind::Tuple; }
  bool isObject() const { return kind_ == Kind::Object; }
  // Int, Double or Bool: the kinds a Scalar boxes to.
  bool isScalar() const { return kind_ == Kind::Int || kind_ == Kind::Double || kind_ == Kind::Bool; }

  Tensor toTensor() const& {
    expect(Kind::Tensor);
    if (payload_.as_tensor != TensorImpl::undefined()) payload_.as_tensor->incref();
    return Tensor::reclaim(payload_.as_tensor);
  }
  Tensor toTensor() && {
    expect(Kind::Tensor);
    kind_ = Kind::None;
    return Tensor::reclaim(std::exchange(payload_.as_tensor, nullptr));
  }
  // The key set of a Tensor value without touching its refcount (used by dispatch).
  DispatchKeySet tensorKeySetUnchecked() const { return payload_.as_tensor->key_set(); }
  double toDouble() const { expect(Kind::Double); return payload_.as_double; }
  int64_t toInt() const { expect(Kind::Int); return payload_.as_int; }
  bool toBool() const { expect(Kind::Bool); return payload_.as_bool; }
  const std::string& toStringRef() const;
  std::string toStringValue() const { return toStringRef(); }
  Device toDevice() const {
    expect(Kind::Device);
    return Device(static_cast<DeviceType>(payload_.as_device.type), payload_.as_device.index);
  }
  ScalarType toScalarType() const { expect(Kind::ScalarType); return static_cast<ScalarType>(payload_.as_int); }
  Layout toLayout() const { expect(Kind::Layout); return static_cast<Layout>(payload_.as_int); }
  MemoryFormat toMemoryFormat() const { expect(Kind::MemoryFormat); return static_cast<MemoryFormat>(payload_.as_int); }
  const ListImpl& toListRef() const;
  const Type& listElementType() const;
  const std::vector<IValue>& toListElements() const;
  const std::vector<IValue>& toTupleElements() const;
  intrusive_ptr<CustomObject> toObject() const;

  // Structural equality for value kinds; identity for tensors and objects.
  bool operator==(const IValue& o) const;
  // Deep check that this value fits a schema type (Tensor, int?, int[], Tensor?[], ...).
  bool matchesType(const Type& type) const;

 private:
  union Payload {
    int64_t as_int;
    double as_double;
    bool as_bool;
    TensorImpl* as_tensor;
    intrusive_ptr_target* as_heap;
    struct {
      int8_t type;
      int8_t index;
    } as_device;
  };

  bool isHeap() const {
    return kind_ == Kind::String || kind_ == Kind::GenericList || kind_ == Kind::Tuple || kind_ == Kind::Object;
  }
  void retain() const {
    if (kind_ == Kind::Tensor) {
      if (payload_.as_tensor != TensorImpl::undefined()) payload_.as_tensor->incref();
    } else if (isHeap()) {
      payload_.as_heap->incref();
    }
  }
  void release() {
    if (kind_ == Kind::Tensor) {
      if (payload_.as_tensor && payload_.as_tensor != TensorImpl::undefined()) payload_.as_tensor->decref();
    } else if (isHeap()) {
      payload_.as_heap->decref();
    }
  }
  void expect(Kind k) const {
    if (__builtin_expect(kind_ != k, 0)) throwWrongKind(k);
  }
  [[noreturn]] void throwWrongKind(Kind expected) const;

  Payload payload_;
  Kind kind_;
};
static_assert(sizeof(IValue) == 16, "Note [IValue layout]: an IValue is 16 bytes");

std::ostream& operator<<(std::ostream& out, const IValue& v);
std::ostream& operator<<(std::ostream& out, IValue::Kind k);

struct StringImpl : intrusive_ptr_target {
  explicit StringImpl(std::string s) : value(std::move(s)) {}
  std::string value;
};

struct ListImpl : intrusive_ptr_target {
  ListImpl(Type element_type, std::vector<IValue> elements)
      : element_type(std::move(element_type)), elements(std::move(elements)) {}
  ~ListImpl() override { IValue::destroyElements(elements); }
  Type element_type;
  std::vector<IValue> elements;
};

struct TupleImpl : intrusive_ptr_target {
  explicit TupleImpl(std::vector<IValue> elements) : elements(std::move(elements)) {}
  ~TupleImpl() override { IValue::destroyElements(elements); }
  std::vector<IValue> elements;
};

// ---- Stack helpers: arguments pushed left to right; kernels pop arguments, push returns ----
inline void push(Stack&) {}
template <class T, class... Rest>
void push(Stack& stack, T&& value, Rest&&... rest) {
  stack.emplace_back(std::forward<T>(value));
  push(stack, std::forward<Rest>(rest)...);
}
IValue pop(Stack& stack);                              // throws on an empty stack
std::vector<IValue> pop(Stack& stack, size_t n);       // the top n, in push order
const IValue& peek(const Stack& stack, size_t i, size_t n);  // i-th of the top n
void drop(Stack& stack, size_t n);

// Replaces `v` by fn(v) when it is a tensor, and each tensor of it when it is a tensor list (a new
// list): how a boxed layer rewrites the tensors it passes on or returns.
template <class F>
void mapTensors(IValue& v, const F& fn) {
  if (v.isTensor()) {
    v = IValue(fn(v.toTensor()));
  } else if (v.isList() && !v.toListElements().empty() && v.toListElements()[0].isTensor()) {
    std::vector<IValue> elements;
    elements.reserve(v.toListElements().size());
    for (const IValue& e : v.toListElements()) elements.push_back(e.isTensor() ? IValue(fn(e.toTensor())) : e);
    v = IValue::makeList(v.listElementType(), std::move(elements));
  }
}

}  // namespace dk
