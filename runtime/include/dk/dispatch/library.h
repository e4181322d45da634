// dk/dispatch/library.h: the registration API: Library, CppFunction and the DK_LIBRARY macros.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/schema_data.h"

namespace dk {

// A kernel on its way to registration: the KernelFunction plus what it says about its
// signature (inferred from C++ types; checked against the def'd schema).
class CppFunction {
 public:
  // A function pointer known at run time. Schema inferred from its type.
  template <class F, std::enable_if_t<std::is_function_v<F>, int> = 0>
  explicit CppFunction(F* fn)
      : kernel_(KernelFunction::makeFromUnboxedRuntimeFunction(fn)),
        cpp_signature_(CppSignature::make<typename detail::function_traits<F>::dispatcher_signature>()),
        infer_schema_(&detail::SchemaInferrer<typename detail::function_traits<F>::dispatcher_signature>::infer) {}

  // A lambda or other functor, stateless or stateful.
  template <class Lambda, std::enable_if_t<std::is_class_v<std::decay_t<Lambda>> &&
                                               !std::is_same_v<std::decay_t<Lambda>, CppFunction>,
                                           int> = 0>
  explicit CppFunction(Lambda&& lambda)
      : kernel_(KernelFunction::makeFromUnboxedFunctor<detail::LambdaFunctor<std::decay_t<Lambda>>,
                                                       detail::functor_traits<std::decay_t<Lambda>>>(
            std::make_unique<detail::LambdaFunctor<std::decay_t<Lambda>>>(std::forward<Lambda>(lambda)))),
        cpp_signature_(CppSignature::make<typename detail::functor_traits<std::decay_t<Lambda>>::dispatcher_signature>()),
        infer_schema_(
            &detail::SchemaInferrer<typename detail::functor_traits<std::decay_t<Lambda>>::dispatcher_signature>::infer) {}

  // A function known at compile time (see DK_FN): called directly from the adapter.
  template <auto* fn>
  static CppFunction makeFromFunction() {
    using Sig = typename detail::function_traits<std::remove_pointer_t<decltype(fn)>>::dispatcher_signature;
    return CppFunction(KernelFunction::makeFromUnboxedFunction<fn>(), CppSignature::make<Sig>(),
                       &detail::SchemaInferrer<Sig>::infer);
  }
  // Never called: calls skip its key and go on below it (Note [Fallthrough mask]).
  static CppFunction makeFallthrough() { return CppFunction(KernelFunction::makeFallthrough(), std::nullopt, nullptr); }
  // boxed_fn: void(const OperatorHandle&, Stack*) or void(const OperatorHandle&, DispatchKeySet, Stack*).
  template <auto* boxed_fn>
  static CppFunction makeFromBoxedFunction() {
    return CppFunction(KernelFunction::makeFromBoxedFunction<boxed_fn>(), std::nullopt, nullptr);
  }
  // A kernel built elsewhere (the generator attaches its own adapters this way); `infer`
  // gives the schema its C++ signature implies (null: nothing to check).
  static CppFunction makeFromKernelFunction(KernelFunction kernel, std::optional<CppSignature> sig,
                                            SchemaInferenceFn infer) {
    return CppFunction(std::move(kernel), sig, infer);
  }

  // The name shown in dumps and errors instead of "registered at file:line".
  CppFunction&& debug(std::string name) && {
    debug_ = std::move(name);
    return std::move(*this);
  }

 private:
  friend class Library;
  CppFunction(KernelFunction kernel, std::optional<CppSignature> sig, SchemaInferenceFn infer)
      : kernel_(std::move(kernel)), cpp_signature_(sig), infer_schema_(infer) {}

  KernelFunction kernel_;
  std::optional<CppSignature> cpp_signature_;
  SchemaInferenceFn infer_schema_ = nullptr;
  std::optional<std::string> debug_;
};

// The dispatch-argument bitmap of a schema, as the generator writes it (Note
// [Dispatch-argument bitmap] in dk/generated/Operators.h): bit n-1-i is set when argument i
// of n is a Tensor, Tensor?, Tensor[] or Tensor?[].
struct DispatchArgumentBitmap {
  uint64_t bits;
};

namespace detail {
// The generated kernel fn of operator struct Op (dk::ops::X), ready for Library::impl: fn's
// type must be Op's C++ signature, and the registration checks the schema that signature
// implies against the def'd one.
template <class Op, auto* fn>
CppFunction kernelFor(const char* debug) {
  static_assert(std::is_same_v<std::remove_pointer_t<decltype(fn)>, typename Op::signature>,
                "a generated kernel has its operator's C++ signature");
  return CppFunction::makeFromFunction<fn>().debug(debug);
}
}  // namespace detail

// DK_FN(f): a compile-time function kernel, e.g. m.impl("add.Tensor", DK_FN(add_cpu)).
#define DK_FN(func) (::dk::CppFunction::makeFromFunction<&func>())

class Library {
 public:
  enum Kind { DEF, IMPL, FRAGMENT };

  // Run-time registration: everything registered through this object is undone when it is
  // destroyed (in reverse order).
  Library(Kind kind, std::string ns, std::optional<DispatchKey> key = std::nullopt, const char* file = "",
          uint32_t line = 0);
  ~Library();
  Library(Library&&) = default;
  Library& operator=(Library&&) = default;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // def("foo(Tensor x) -> Tensor") or def("ns::foo.overload(...) -> ..."). A schema without a
  // namespace gets the library's.
  Library& def(std::string_view schema) &;
  // def with the dispatch-argument bitmap the generator computed (ops::X::dispatch_bitmap):
  // checked once against the parsed schema's, so generator and runtime cannot disagree.
  Library& def(std::string_view schema, DispatchArgumentBitmap bitmap) &;
  // def from the generator's constant schema data, bitmap included: nothing is parsed
  // (Note [Pre-built schemas]). The name is unqualified; the library's namespace is added.
  // The data must outlive the library (the generator's is static).
  Library& def(const schema_data::SchemaData& schema) &;
  // Many defs at once, as the generated RegisterSchema files make them: one registration,
  // all or nothing (a refused def refuses the call), entries made on first use (Note
  // [Entries made on first use]).
  Library& def(std::span<const schema_data::SchemaData> schemas) &;
  // def + impl at CompositeImplicitAutograd (or the library's key).
  // Each impl, def-with-kernel and fallback records where it was called (`where`, filled in by
  // the compiler), so dk::explain names the line of the registration itself.
  Library& def(std::string_view schema, CppFunction fn, RegistrationSite where = RegistrationSite::current()) &;
  template <class Func>
  Library& def(std::string_view schema, Func&& fn, RegistrationSite where = RegistrationSite::current()) & {
    return def(schema, toCppFunction(std::forward<Func>(fn)), where);
  }

  // impl("foo" or "foo.overload", kernel) at the library's key (CompositeImplicitAutograd
  // for a DEF or FRAGMENT library without one).
  Library& impl(std::string_view name, CppFunction fn, RegistrationSite where = RegistrationSite::current()) &;
  Library& impl(std::string_view name, DispatchKey key, CppFunction fn,
                RegistrationSite where = RegistrationSite::current()) &;
  template <class Func>
  Library& impl(std::string_view name, Func&& fn, RegistrationSite where = RegistrationSite::current()) & {
    return impl(name, toCppFunction(std::forward<Func>(fn)), where);
  }
  template <class Func>
  Library& impl(std::string_view name, DispatchKey key, Func&& fn,
                RegistrationSite where = RegistrationSite::current()) & {
    return impl(name, key, toCppFunction(std::forward<Func>(fn)), where);
  }

  // A backend fallback for the library's key; only in DK_LIBRARY_IMPL(_, Key, m).
  Library& fallback(CppFunction fn, RegistrationSite where = RegistrationSite::current()) &;

  const std::string& ns() const { return ns_; }
  Kind kind() const { return kind_; }

 private:
  template <class Func>
  static CppFunction toCppFunction(Func&& fn) {
    if constexpr (std::is_same_v<std::decay_t<Func>, CppFunction>) {
      return std::forward<Func>(fn);
    } else {
      return CppFunction(std::forward<Func>(fn));
    }
  }
  const std::string& site() const { return *site_; }  // "registered at FILE:LINE", made once
  OperatorName qualify(std::string_view name, const char* what) const;
  OperatorName qualify(OperatorName op, const char* what) const;
  Library& implAt(std::string_view name, std::optional<DispatchKey> key, CppFunction fn, RegistrationSite where);
  // Parses once; returns the qualified name.
  OperatorName defSchema(std::string_view schema_text, std::optional<uint64_t> bitmap = std::nullopt);
  void checkMayDefine() const;

  Kind kind_;
  std::string ns_;
  std::optional<DispatchKey> key_;
  std::string file_;
  uint32_t line_;
  std::shared_ptr<const std::string> site_;  // shared by the schemas of def(SchemaData)
  std::vector<RegistrationHandleRAII> registrations_;
};

namespace detail {
// Runs a DK_LIBRARY block at static-initialization time and keeps its Library alive.
class LibraryInitializer {
 public:
  LibraryInitializer(Library::Kind kind, void (*init)(Library&), const char* ns, std::optional<DispatchKey> key,
                     const char* file, uint32_t line)
      : lib_(kind, ns, key, file, line) {
    init(lib_);
  }

 private:
  Library lib_;
};
}  // namespace detail

}  // namespace dk

#define DK_CONCAT_INNER(a, b) a##b
#define DK_CONCAT(a, b) DK_CONCAT_INNER(a, b)
#define DK_UID(prefix) DK_CONCAT(prefix, __COUNTER__)

// DK_LIBRARY(ns, m) { m.def(...); } : the one place that defines operators of namespace ns.
#define DK_LIBRARY(ns, m)                                                                              \
  static void DK_LIBRARY_init_##ns(::dk::Library&);                                                    \
  static const ::dk::detail::LibraryInitializer DK_LIBRARY_static_init_##ns(                          \
      ::dk::Library::DEF, &DK_LIBRARY_init_##ns, #ns, std::nullopt, __FILE__, __LINE__);              \
  void DK_LIBRARY_init_##ns(::dk::Library& m)

// DK_LIBRARY_FRAGMENT(ns, m) { m.def(...); } : more definitions for ns; may repeat.
#define DK_LIBRARY_FRAGMENT(ns, m) DK_LIBRARY_FRAGMENT_UID(ns, m, DK_UID(DK_LIBRARY_FRAGMENT_uid_))
#define DK_LIBRARY_FRAGMENT_UID(ns, m, uid)                                                            \
  static void DK_CONCAT(DK_LIBRARY_FRAGMENT_init_##ns##_, uid)(::dk::Library&);                        \
  static const ::dk::detail::LibraryInitializer DK_CONCAT(DK_LIBRARY_FRAGMENT_static_init_##ns##_, uid)( \
      ::dk::Library::FRAGMENT, &DK_CONCAT(DK_LIBRARY_FRAGMENT_init_##ns##_, uid), #ns, std::nullopt,    \
      __FILE__, __LINE__);                                                                             \
  void DK_CONCAT(DK_LIBRARY_FRAGMENT_init_##ns##_, uid)(::dk::Library & m)

// DK_LIBRARY_IMPL(ns, Key, m) { m.impl("foo", ...); } : kernels of ns at Key (alias keys
// allowed). DK_LIBRARY_IMPL(_, Key, m) { m.fallback(...); } registers a backend fallback.
#define DK_LIBRARY_IMPL(ns, k, m) DK_LIBRARY_IMPL_UID(ns, k, m, DK_UID(DK_LIBRARY_IMPL_uid_))
#define DK_LIBRARY_IMPL_UID(ns, k, m, uid)                                                             \
  static void DK_CONCAT(DK_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::dk::Library&);                     \
  static const ::dk::detail::LibraryInitializer DK_CONCAT(DK_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)( \
      ::dk::Library::IMPL, &DK_CONCAT(DK_LIBRARY_IMPL_init_##ns##_##k##_, uid), #ns,                   \
      std::make_optional(::dk::DispatchKey::k), __FILE__, __LINE__);                                   \
  void DK_CONCAT(DK_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::dk::Library & m)
