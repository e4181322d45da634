// Boxed values: heap kinds, checked accessors, printing, stack helpers.
#include "dk/dispatch/ivalue.h"

#include <algorithm>
#include <array>

namespace dk {

IValue::IValue(std::string s) : kind_(Kind::String) {
  payload_.as_heap = make_intrusive<StringImpl>(std::move(s)).release();
}
IValue::IValue(intrusive_ptr<ListImpl> list) : kind_(Kind::GenericList) {
  DK_CHECK(list, "cannot box a null list");
  payload_.as_heap = list.release();
}
IValue::IValue(intrusive_ptr<TupleImpl> tuple) : kind_(Kind::Tuple) {
  DK_CHECK(tuple, "cannot box a null tuple");
  payload_.as_heap = tuple.release();
}
IValue::IValue(intrusive_ptr<CustomObject> object) : kind_(Kind::Object) {
  DK_CHECK(object, "cannot box a null object");
  payload_.as_heap = object.release();
}

IValue IValue::makeList(Type element_type, std::vector<IValue> elements) {
  for (size_t i = 0; i < elements.size(); ++i) {
    DK_CHECK(elements[i].matchesType(element_type), "cannot make a list of ", element_type.str(),
             ": element ", i, " is of kind ", kindName(elements[i].tagKind()));
  }
  return IValue(make_intrusive<ListImpl>(std::move(element_type), std::move(elements)));
}

IValue IValue::makeTuple(std::vector<IValue> elements) {
  return IValue(make_intrusive<TupleImpl>(std::move(elements)));
}

std::string_view IValue::kindName(Kind k) {
  static constexpr std::array<std::string_view, 13> names = {
      "None", "Tensor", "Double", "Int", "Bool", "String", "Device", "ScalarType",
      "Layout", "MemoryFormat", "GenericList", "Tuple", "Object"};
  return names.at(static_cast<size_t>(k));
}

void IValue::throwWrongKind(Kind expected) const {
  throw Error(detail::concat("expected an IValue of kind ", kindName(expected), " but got ", kindName(kind_)));
}

const std::string& IValue::toStringRef() const {
  expect(Kind::String);
  return static_cast<const StringImpl*>(payload_.as_heap)->value;
}
const ListImpl& IValue::toListRef() const {
  expect(Kind::GenericList);
  return *static_cast<const ListImpl*>(payload_.as_heap);
}
const Type& IValue::listElementType() const { return toListRef().element_type; }
const std::vector<IValue>& IValue::toListElements() const { return toListRef().elements; }
const std::vector<IValue>& IValue::toTupleElements() const {
  expect(Kind::Tuple);
  return static_cast<const TupleImpl*>(payload_.as_heap)->elements;
}
intrusive_ptr<CustomObject> IValue::toObject() const {
  expect(Kind::Object);
  return intrusive_ptr<CustomObject>(static_cast<CustomObject*>(payload_.as_heap));
}

bool IValue::operator==(const IValue& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::None: return true;
    case Kind::Tensor: return payload_.as_tensor == o.payload_.as_tensor;
    case Kind::Double: return payload_.as_double == o.payload_.as_double;
    case Kind::Bool: return payload_.as_bool == o.payload_.as_bool;
    case Kind::Device: return toDevice() == o.toDevice();
    case Kind::Int:
    case Kind::ScalarType:
    case Kind::Layout:
    case Kind::MemoryFormat: return payload_.as_int == o.payload_.as_int;
    case Kind::String: return toStringRef() == o.toStringRef();
    case Kind::GenericList:
      return listElementType() == o.listElementType() && toListElements() == o.toListElements();
    case Kind::Tuple: return toTupleElements() == o.toTupleElements();
    case Kind::Object: return payload_.as_heap == o.payload_.as_heap;
  }
  return false;
}

bool IValue::matchesType(const Type& type) const {
  switch (type.kind()) {
    case TypeKind::Tensor: return isTensor();
    case TypeKind::Int:
    case TypeKind::SymInt: return isInt();
    case TypeKind::Float: return isDouble();
    case TypeKind::Bool: return isBool();
    case TypeKind::Str: return isString();
    case TypeKind::Scalar: return isScalar();
    case TypeKind::ScalarType: return isScalarType();
    case TypeKind::Layout: return isLayout();
    case TypeKind::Device: return isDevice();
    case TypeKind::MemoryFormat: return isMemoryFormat();
    case TypeKind::Optional: return isNone() || matchesType(type.element());
    case TypeKind::List: {
      if (!isList()) return false;
      if (type.fixedSize() && static_cast<int64_t>(toListElements().size()) != *type.fixedSize()) return false;
      for (const IValue& e : toListElements())
        if (!e.matchesType(type.element())) return false;
      return true;
    }
    case TypeKind::Any: return true;
    default: return isObject();  // Generator, Storage, Stream, ...: opaque objects
  }
}

std::ostream& operator<<(std::ostream& out, IValue::Kind k) { return out << IValue::kindName(k); }

namespace {
// Deeper lists and tuples print as "[...]" and "(...)" (Note [Deep IValue nesting]).
constexpr int kMaxPrintDepth = 64;

void print(std::ostream& out, const IValue& v, int depth) {
  switch (v.tagKind()) {
    case IValue::Kind::None: out << "None"; return;
    case IValue::Kind::Tensor: out << v.toTensor(); return;
    case IValue::Kind::Double: out << v.toDouble(); return;
    case IValue::Kind::Int: out << v.toInt(); return;
    case IValue::Kind::Bool: out << (v.toBool() ? "True" : "False"); return;
    case IValue::Kind::String: out << '"' << v.toStringRef() << '"'; return;
    case IValue::Kind::Device: out << v.toDevice(); return;
    case IValue::Kind::ScalarType: out << v.toScalarType(); return;
    case IValue::Kind::Layout: out << v.toLayout(); return;
    case IValue::Kind::MemoryFormat: out << v.toMemoryFormat(); return;
    case IValue::Kind::GenericList:
    case IValue::Kind::Tuple: {
      const bool list = v.tagKind() == IValue::Kind::GenericList;
      const auto& elements = list ? v.toListElements() : v.toTupleElements();
      out << (list ? "[" : "(");
      if (depth >= kMaxPrintDepth && !elements.empty()) {
        out << "...";
      } else {
        for (size_t i = 0; i < elements.size(); ++i) {
          if (i) out << ", ";
          print(out, elements[i], depth + 1);
        }
      }
      out << (list ? "]" : elements.size() == 1 ? ",)" : ")");
      return;
    }
    case IValue::Kind::Object: out << "Object(" << v.toObject()->typeName() << ")"; return;
  }
}
}  // namespace

std::ostream& operator<<(std::ostream& out, const IValue& v) {
  print(out, v, 0);
  return out;
}

void IValue::destroyElements(std::vector<IValue>& elements) noexcept {
  auto nested = [](const IValue& e) {
    return (e.kind_ == Kind::GenericList || e.kind_ == Kind::Tuple) && e.payload_.as_heap->use_count() == 1;
  };
  // The usual case, nothing nested that this list alone owns: the vector's own destructor.
  if (std::none_of(elements.begin(), elements.end(), nested)) return;
  std::vector<IValue> work = std::move(elements);
  while (!work.empty()) {
    IValue e = std::move(work.back());
    work.pop_back();
    if (!nested(e)) continue;  // released here: a leaf, or shared (someone else frees it)
    // The only reference: take its elements, so its destructor below has nothing to recurse into.
    std::vector<IValue>& inner = e.kind_ == Kind::GenericList ? static_cast<ListImpl*>(e.payload_.as_heap)->elements
                                                              : static_cast<TupleImpl*>(e.payload_.as_heap)->elements;
    for (IValue& x : inner) work.push_back(std::move(x));
    inner.clear();
  }
}

IValue pop(Stack& stack) {
  DK_CHECK(!stack.empty(), "cannot pop from an empty stack");
  IValue v = std::move(stack.back());
  stack.pop_back();
  return v;
}

std::vector<IValue> pop(Stack& stack, size_t n) {
  DK_CHECK(stack.size() >= n, "cannot pop ", n, " values from a stack of ", stack.size());
  std::vector<IValue> values(std::make_move_iterator(stack.end() - static_cast<ptrdiff_t>(n)),
                             std::make_move_iterator(stack.end()));
  stack.resize(stack.size() - n);
  return values;
}

const IValue& peek(const Stack& stack, size_t i, size_t n) {
  DK_CHECK(i < n && n <= stack.size(), "cannot peek at value ", i, " of the top ", n, " of a stack of ",
           stack.size());
  return stack[stack.size() - n + i];
}

void drop(Stack& stack, size_t n) {
  DK_CHECK(stack.size() >= n, "cannot drop ", n, " values from a stack of ", stack.size());
  stack.resize(stack.size() - n);
}

}  // namespace dk
