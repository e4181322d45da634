// dk/dispatch/boxing.h: conversions between C++ values and IValues, and the schema type of a C++ type.
//
// Note [Unboxing holders]
// Unboxing an argument may need storage that outlives the conversion: an `IntArrayRef`
// argument views a std::vector<int64_t> built from the boxed list. BoxingTraits<T>::Holder
// is that storage; it lives on the adapter's frame for the duration of the kernel call.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "dk/core/generator.h"
#include "dk/core/scalar.h"
#include "dk/dispatch/function_schema.h"
#include "dk/dispatch/ivalue.h"
#include "dk/util/array_ref.h"

namespace dk {

template <class T>
struct BoxingTraits;  // specialised for every supported argument/return type

namespace detail {
// A simple value type that IValue holds directly.
template <class T, TypeKind K>
struct DirectBoxing {
  using Holder = T;
  static Type schemaType() { return Type::base(K); }
  static IValue box(T value) { return IValue(std::move(value)); }
  static T view(Holder& h) { return std::move(h); }
};
}  // namespace detail

template <>
struct BoxingTraits<Tensor> : detail::DirectBoxing<Tensor, TypeKind::Tensor> {
  static Tensor unbox(IValue&& v) { return std::move(v).toTensor(); }
  static Tensor& view(Tensor& h) { return h; }
};
template <>
struct BoxingTraits<int64_t> : detail::DirectBoxing<int64_t, TypeKind::Int> {
  static int64_t unbox(IValue&& v) { return v.toInt(); }
};
template <>
struct BoxingTraits<double> : detail::DirectBoxing<double, TypeKind::Float> {
  static double unbox(IValue&& v) { return v.toDouble(); }
};
template <>
struct BoxingTraits<bool> : detail::DirectBoxing<bool, TypeKind::Bool> {
  static bool unbox(IValue&& v) { return v.toBool(); }
};
template <>
struct BoxingTraits<std::string> : detail::DirectBoxing<std::string, TypeKind::Str> {
  static std::string unbox(IValue&& v) { return v.toStringValue(); }
};
template <>
struct BoxingTraits<std::string_view> {
  using Holder = std::string;
  static Type schemaType() { return Type::base(TypeKind::Str); }
  static IValue box(std::string_view value) { return IValue(value); }
  static std::string unbox(IValue&& v) { return v.toStringValue(); }
  static std::string_view view(std::string& h) { return h; }
};
template <>
struct BoxingTraits<Device> : detail::DirectBoxing<Device, TypeKind::Device> {
  static Device unbox(IValue&& v) { return v.toDevice(); }
};
template <>
struct BoxingTraits<ScalarType> : detail::DirectBoxing<ScalarType, TypeKind::ScalarType> {
  static ScalarType unbox(IValue&& v) { return v.toScalarType(); }
};
template <>
struct BoxingTraits<Layout> : detail::DirectBoxing<Layout, TypeKind::Layout> {
  static Layout unbox(IValue&& v) { return v.toLayout(); }
};
template <>
struct BoxingTraits<MemoryFormat> : detail::DirectBoxing<MemoryFormat, TypeKind::MemoryFormat> {
  static MemoryFormat unbox(IValue&& v) { return v.toMemoryFormat(); }
};
// A Scalar boxes to the Int, Double or Bool kind it holds.
template <>
struct BoxingTraits<Scalar> {
  using Holder = Scalar;
  static Type schemaType() { return Type::base(TypeKind::Scalar); }
  static IValue box(const Scalar& s) {
    switch (s.kind()) {
      case Scalar::Kind::Int: return IValue(s.toLong());
      case Scalar::Kind::Double: return IValue(s.toDouble());
      case Scalar::Kind::Bool: return IValue(s.toBool());
    }
    return IValue();
  }
  static Scalar unbox(IValue&& v) {
    if (v.isInt()) return Scalar(v.toInt());
    if (v.isBool()) return Scalar(v.toBool());
    if (v.isDouble()) return Scalar(v.toDouble());
    DK_ERROR("expected an IValue of kind Int, Double or Bool (a Scalar) but got ", IValue::kindName(v.tagKind()));
  }
  static Scalar view(Scalar& h) { return h; }
};
// A Generator is an opaque object on the stack.
template <>
struct BoxingTraits<Generator> {
  using Holder = Generator;
  static Type schemaType() { return Type::base(TypeKind::Generator); }
  static IValue box(const Generator& g) { return IValue(intrusive_ptr<CustomObject>(g.impl())); }
  static Generator unbox(IValue&& v) {
    intrusive_ptr<CustomObject> obj = v.toObject();
    auto* impl = dynamic_cast<GeneratorImpl*>(obj.get());
    DK_CHECK(impl != nullptr, "expected a Generator but got an object of type ", obj->typeName());
    return Generator(intrusive_ptr<GeneratorImpl>(impl));
  }
  static Generator view(Generator& h) { return h; }
};
// A generic boxed value passes through untouched.
template <>
struct BoxingTraits<IValue> {
  using Holder = IValue;
  static Type schemaType() { return Type::base(TypeKind::Any); }
  static IValue box(IValue value) { return value; }
  static IValue unbox(IValue&& v) { return std::move(v); }
  static IValue view(IValue& h) { return std::move(h); }
};

template <class T>
struct BoxingTraits<std::optional<T>> {
  using Inner = BoxingTraits<T>;
  using Holder = std::optional<typename Inner::Holder>;
  static Type schemaType() { return Type::optional(Inner::schemaType()); }
  static IValue box(std::optional<T> value) { return value ? Inner::box(std::move(*value)) : IValue(); }
  static Holder unbox(IValue&& v) {
    if (v.isNone()) return std::nullopt;
    return Inner::unbox(std::move(v));
  }
  static std::optional<T> view(Holder& h) {
    if (!h) return std::nullopt;
    return std::optional<T>(Inner::view(*h));
  }
};

namespace detail {
template <class T>
std::vector<T> unboxListElements(IValue&& v) {
  DK_CHECK(v.isList(), "expected a list of ", BoxingTraits<T>::schemaType().str(), " but got an IValue of kind ",
           IValue::kindName(v.tagKind()));
  std::vector<T> out;
  const auto& elements = v.toListElements();
  out.reserve(elements.size());
  for (const IValue& e : elements) {
    typename BoxingTraits<T>::Holder h = BoxingTraits<T>::unbox(IValue(e));
    out.push_back(BoxingTraits<T>::view(h));
  }
  return out;
}
template <class T, class Range>
IValue boxList(const Range& values) {
  std::vector<IValue> elements;
  elements.reserve(values.size());
  for (const T& value : values) elements.push_back(BoxingTraits<T>::box(value));
  return IValue::makeList(BoxingTraits<T>::schemaType(), std::move(elements));
}
}  // namespace detail

template <class T>
struct BoxingTraits<std::vector<T>> {
  using Holder = std::vector<T>;
  static Type schemaType() { return Type::list(BoxingTraits<T>::schemaType()); }
  static IValue box(const std::vector<T>& values) { return detail::boxList<T>(values); }
  static Holder unbox(IValue&& v) { return detail::unboxListElements<T>(std::move(v)); }
  static std::vector<T> view(Holder& h) { return std::move(h); }
};

template <class T>
struct BoxingTraits<ArrayRef<T>> {
  using Holder = std::vector<T>;
  static Type schemaType() { return Type::list(BoxingTraits<T>::schemaType()); }
  static IValue box(ArrayRef<T> values) { return detail::boxList<T>(values); }
  static Holder unbox(IValue&& v) { return detail::unboxListElements<T>(std::move(v)); }
  static ArrayRef<T> view(Holder& h) { return ArrayRef<T>(h); }
};

// bool[N] (PyTorch's output masks): a list of N bools, checked for its length when unboxed.
template <size_t N>
struct BoxingTraits<std::array<bool, N>> {
  using Holder = std::array<bool, N>;
  static Type schemaType() { return Type::list(Type::base(TypeKind::Bool), static_cast<int64_t>(N)); }
  static IValue box(const std::array<bool, N>& values) { return detail::boxList<bool>(values); }
  static Holder unbox(IValue&& v) {
    std::vector<bool> elements = detail::unboxListElements<bool>(std::move(v));
    DK_CHECK(elements.size() == N, "expected a list of ", N, " bools (bool[", N, "]) but got ", elements.size(),
             " elements");
    Holder out{};
    for (size_t i = 0; i < N; ++i) out[i] = elements[i];
    return out;
  }
  static std::array<bool, N> view(Holder& h) { return h; }
};

// Strip references and cv: `const Tensor&` boxes like `Tensor`.
template <class T>
using BoxingTraitsFor = BoxingTraits<std::remove_cv_t<std::remove_reference_t<T>>>;

// ---- returns: void, one value, or a std::tuple of values ----
// pop takes a stack that holds exactly `count` values: its caller (BoxingFor::callBoxed)
// checks that first and names the operator when it does not.
template <class R>
struct ReturnTraits {
  static constexpr size_t count = 1;
  static std::vector<Type> schemaTypes() { return {BoxingTraitsFor<R>::schemaType()}; }
  static void push(Stack& stack, R&& value) { stack.push_back(BoxingTraitsFor<R>::box(std::forward<R>(value))); }
  static R pop(Stack& stack) {
    auto h = BoxingTraitsFor<R>::unbox(std::move(stack.back()));
    stack.pop_back();
    return BoxingTraitsFor<R>::view(h);
  }
};
template <>
struct ReturnTraits<void> {
  static constexpr size_t count = 0;
  static std::vector<Type> schemaTypes() { return {}; }
  static void pop(Stack&) {}
};
template <class... Ts>
struct ReturnTraits<std::tuple<Ts...>> {
  static constexpr size_t count = sizeof...(Ts);
  static std::vector<Type> schemaTypes() { return {BoxingTraitsFor<Ts>::schemaType()...}; }
  static void push(Stack& stack, std::tuple<Ts...>&& values) {
    std::apply([&](auto&&... v) { (stack.push_back(BoxingTraitsFor<Ts>::box(std::move(v))), ...); }, std::move(values));
  }
  static std::tuple<Ts...> pop(Stack& stack) {
    return popAll(stack, std::index_sequence_for<Ts...>{});
  }

 private:
  template <size_t... I>
  static std::tuple<Ts...> popAll(Stack& stack, std::index_sequence<I...>) {
    auto holders = std::make_tuple(BoxingTraitsFor<Ts>::unbox(std::move(stack[I]))...);
    stack.clear();
    return std::tuple<Ts...>(BoxingTraitsFor<Ts>::view(std::get<I>(holders))...);
  }
};

}  // namespace dk
