// Boxed values: heap kinds, checked accessors, printing, stack helpers.
#include "dk/ivalue.h"

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

std::ostream& operator<<(std::ostream& out, const IValue& v) {
  switch (v.tagKind()) {
    case IValue::Kind::None: return out << "None";
    case IValue::Kind::Tensor: return out << v.toTensor();
    case IValue::Kind::Double: return out << v.toDouble();
    case IValue::Kind::Int: return out << v.toInt();
    case IValue::Kind::Bool: return out << (v.toBool() ? "True" : "False");
    case IValue::Kind::String: return out << '"' << v.toStringRef() << '"';
    case IValue::Kind::Device: return out << v.toDevice();
    case IValue::Kind::ScalarType: return out << v.toScalarType();
    case IValue::Kind::Layout: return out << v.toLayout();
    case IValue::Kind::MemoryFormat: return out << v.toMemoryFormat();
    case IValue::Kind::GenericList: {
      out << "[";
      const auto& elements = v.toListElements();
      for (size_t i = 0; i < elements.size(); ++i) out << (i ? ", " : "") << elements[i];
      return out << "]";
    }
    case IValue::Kind::Tuple: {
      out << "(";
      const auto& elements = v.toTupleElements();
      for (size_t i = 0; i < elements.size(); ++i) out << (i ? ", " : "") << elements[i];
      return out << (elements.size() == 1 ? ",)" : ")");
    }
    case IValue::Kind::Object: return out << "Object(" << v.toObject()->typeName() << ")";
  }
  return out;
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
