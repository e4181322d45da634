// dk/dispatch/kernel_function.h: what a dispatch table slot holds, and the adapters that let any
// kernel be called boxed or unboxed.
//
// Note [Kernel calling conventions]
// A KernelFunction always has a boxed entry
//     void boxed(OperatorKernel* functor, const OperatorHandle&, DispatchKeySet, Stack*)
// and, when it was made from C++ code, an unboxed entry
//     R unboxed(OperatorKernel* functor, DispatchKeySet, Args...)
// whose Args are exactly the operator's C++ signature. The key set is never on the stack.
// A typed call uses the unboxed entry when present, else boxes its arguments; a boxed call
// always uses the boxed entry (for C++ kernels an adapter that unboxes, calls and pushes).
//
// Note [One boxing family]
// Every adapter between the two conventions is one of the templates below:
// detail::BoxedAdapter (the boxed entry of a C++ kernel) and detail::BoxingFor<Sig>::callBoxed
// (a typed call of a kernel that has only a boxed entry). A kernel made from a function known
// at compile time keeps the function pointer in a functor of its signature's type, so its
// boxed entry depends on the signature only: detail::BoxingFor<Sig>::boxed. The generator
// instantiates BoxingFor once per distinct signature of its operators (BoxingAdapters*.cpp)
// and declares the instantiations extern (dk/generated/boxing/sig_<types>.h), so no other
// translation unit compiles them again.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeindex>
#include <utility>

#include "dk/core/dispatch_key_set.h"
#include "dk/dispatch/boxing.h"
#include "dk/dispatch/function_schema.h"
#include "dk/dispatch/ivalue.h"

namespace dk {

class OperatorHandle;
class OperatorEntry;

// State of a C++ kernel (a lambda's captures, a runtime function pointer).
class OperatorKernel {
 public:
  virtual ~OperatorKernel() = default;
};

using BoxedKernelFunction = void(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack);

// The C++ function type an operator is called with, e.g. Tensor(const Tensor&, int64_t).
class CppSignature {
 public:
  template <class FuncType>
  static CppSignature make() {
    return CppSignature(std::type_index(typeid(FuncType)));
  }
  std::string name() const;  // demangled, for error messages
  bool operator==(const CppSignature& o) const { return type_ == o.type_; }

 private:
  explicit CppSignature(std::type_index type) : type_(type) {}
  std::type_index type_;
};

namespace detail {
template <class T>
struct is_tuple : std::false_type {};
template <class... Ts>
struct is_tuple<std::tuple<Ts...>> : std::true_type {};

// "_0", "_1", ...: the names of an inferred schema's arguments. Out of line: GCC 12 at -O3
// reports a false -Wrestrict in the inlined std::string concatenation.
std::string inferredArgumentName(size_t i);

// The schema a C++ function type implies: arguments "_0", "_1", ...; returns likewise.
template <class R, class... Args>
FunctionSchema inferFunctionSchema() {
  std::vector<Argument> arguments;
  std::vector<Type> arg_types = {BoxingTraitsFor<Args>::schemaType()...};
  for (size_t i = 0; i < arg_types.size(); ++i) {
    Argument a;
    a.name = inferredArgumentName(i);
    a.type = arg_types[i];
    arguments.push_back(std::move(a));
  }
  std::vector<Argument> returns;
  for (Type& t : ReturnTraits<R>::schemaTypes()) {
    Argument a;
    a.type = std::move(t);
    returns.push_back(std::move(a));
  }
  return FunctionSchema(OperatorName{}, std::move(arguments), std::move(returns));
}
template <class Sig>
struct SchemaInferrer;
template <class R, class... Args>
struct SchemaInferrer<R(Args...)> {
  static FunctionSchema infer() { return inferFunctionSchema<R, Args...>(); }
};
}  // namespace detail

namespace detail {
template <class Sig, bool TakesKeySet = false>
struct BoxingFor;  // Note [One boxing family]; defined below KernelFunction
}  // namespace detail

// Makes the schema a kernel's C++ type implies (detail::SchemaInferrer<Sig>::infer).
using SchemaInferenceFn = FunctionSchema (*)();

// Why two schemas differ for calling purposes (argument/return counts and types; names,
// defaults and alias annotations do not matter; int and SymInt are the same to C++), or
// nullopt when they agree.
std::optional<std::string> findSchemaDifference(const FunctionSchema& inferred, const FunctionSchema& specified);

class KernelFunction {
 public:
  KernelFunction() = default;

  bool isValid() const { return boxed_ != nullptr; }
  bool isFallthrough() const;
  bool isAmbiguousAutogradOther() const;
  bool hasUnboxed() const { return unboxed_ != nullptr; }
  bool hasBoxed() const { return !boxed_is_adapter_; }  // written boxed, not only adapted

  // A boxed call: `stack` holds the arguments and receives the returns.
  void callBoxed(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) const {
    boxed_(functor_, op, ks, stack);
  }

  // The same, for a caller that has the operator's entry rather than a handle (the typed
  // call's fast path: Note [Generated operator handles]). Out of line: only boxed-only
  // kernels take it.
  void callBoxed(OperatorEntry* entry, DispatchKeySet ks, Stack* stack) const;

  // An unboxed call with the operator's exact C++ signature, of the operator at `entry`.
  // Fast: one indirect call through the unboxed entry; the boxed fallback only for
  // boxed-only kernels. The operator is passed as its entry, a pointer the caller holds in
  // a register, so that no handle object has to exist in memory for the call.
  template <class R, class... Args>
  R call(OperatorEntry* entry, DispatchKeySet ks, Args... args) const {
    if (__builtin_expect(unboxed_ != nullptr, 1)) {
      using Unboxed = R(OperatorKernel*, DispatchKeySet, Args...);
      return reinterpret_cast<Unboxed*>(unboxed_)(functor_, ks, std::forward<Args>(args)...);
    }
    return detail::BoxingFor<R(Args...)>::callBoxed(*this, entry, ks, std::forward<Args>(args)...);
  }

  // The raw entries, for generated call paths and adapters (Note [Kernel calling conventions]).
  void* unboxedFunction() const { return unboxed_; }
  OperatorKernel* functor() const { return functor_; }
  BoxedKernelFunction* boxedFunction() const { return boxed_; }

  // ---- makers ----
  // Assembles a kernel from its entries; the generator uses this to attach its own
  // per-signature boxing adapters. `owner` keeps the functor alive (may be null for a
  // functor with static storage).
  static KernelFunction makeFromParts(void* unboxed, OperatorKernel* functor, BoxedKernelFunction* boxed,
                                      std::shared_ptr<OperatorKernel> owner = nullptr) {
    KernelFunction k;
    k.unboxed_ = unboxed;
    k.functor_ = functor;
    k.boxed_ = boxed;
    k.boxed_is_adapter_ = unboxed != nullptr;
    k.functor_owner_ = std::move(owner);
    return k;
  }
  static KernelFunction makeFromBoxedFunction(BoxedKernelFunction* fn);
  template <auto* boxed_fn>
  static KernelFunction makeFromBoxedFunction();
  static KernelFunction makeFallthrough();
  static KernelFunction makeAmbiguousAutogradOther();
  static KernelFunction makeMissing();

  // A C++ functor (lambda or OperatorKernel subclass) with operator()(Args...) or
  // operator()(DispatchKeySet, Args...).
  // Traits describe the functor's call operator (see detail::function_traits).
  template <class Functor, class Traits>
  static KernelFunction makeFromUnboxedFunctor(std::unique_ptr<Functor> functor);
  // A function known at compile time: the adapter calls it directly (no extra indirection).
  template <auto* fn>
  static KernelFunction makeFromUnboxedFunction();
  // A function pointer known at run time: kept in a small functor.
  template <class FuncType>
  static KernelFunction makeFromUnboxedRuntimeFunction(FuncType* fn);

 private:

  // Hot fields first: the unboxed entry and the functor it takes.
  void* unboxed_ = nullptr;
  OperatorKernel* functor_ = nullptr;
  BoxedKernelFunction* boxed_ = nullptr;
  bool boxed_is_adapter_ = false;
  std::shared_ptr<OperatorKernel> functor_owner_;
};

namespace detail {

template <class T>
struct function_traits;
template <class R, class... Args>
struct function_traits<R(Args...)> {
  using return_type = R;
  using func_type = R(Args...);
  using args = std::tuple<Args...>;
  static constexpr bool takes_key_set = false;
  using dispatcher_signature = R(Args...);
};
template <class R, class... Args>
struct function_traits<R(DispatchKeySet, Args...)> {
  using return_type = R;
  using func_type = R(DispatchKeySet, Args...);
  static constexpr bool takes_key_set = true;
  using dispatcher_signature = R(Args...);
};
template <class C, class R, class... Args>
struct function_traits<R (C::*)(Args...) const> : function_traits<R(Args...)> {};
template <class C, class R, class... Args>
struct function_traits<R (C::*)(Args...)> : function_traits<R(Args...)> {};
template <class Functor>
struct functor_traits : function_traits<decltype(&Functor::operator())> {};

// Calls a functor with or without the key set, as its signature wants.
template <class Functor, bool TakesKeySet, class R, class... Args>
struct FunctorInvoker {
  static R invoke(Functor& f, DispatchKeySet ks, Args... args) {
    if constexpr (TakesKeySet) {
      return f(ks, std::forward<Args>(args)...);
    } else {
      (void)ks;
      return f(std::forward<Args>(args)...);
    }
  }
};

template <class Functor, bool TakesKeySet, class Sig>
struct UnboxedAdapter;
template <class Functor, bool TakesKeySet, class R, class... Args>
struct UnboxedAdapter<Functor, TakesKeySet, R(Args...)> {
  // The unboxed entry of Note [Kernel calling conventions].
  static R call(OperatorKernel* functor, DispatchKeySet ks, Args... args) {
    return FunctorInvoker<Functor, TakesKeySet, R, Args...>::invoke(*static_cast<Functor*>(functor), ks,
                                                                   std::forward<Args>(args)...);
  }
};

// The unboxed entry of a function known at compile time: a direct call the compiler can
// inline; the functor argument is not touched.
template <auto* fn, bool TakesKeySet, class Sig>
struct CompileTimeUnboxedAdapter;
template <auto* fn, bool TakesKeySet, class R, class... Args>
struct CompileTimeUnboxedAdapter<fn, TakesKeySet, R(Args...)> {
  static R call(OperatorKernel*, DispatchKeySet ks, Args... args) {
    if constexpr (TakesKeySet) {
      return (*fn)(ks, std::forward<Args>(args)...);
    } else {
      (void)ks;
      return (*fn)(std::forward<Args>(args)...);
    }
  }
};

// Note [Spare boxing stack]
// A typed call of a boxed-only kernel (a dispatch mode, a boxed fallback, a kernel written
// boxed) needs a Stack for the call's duration. Each thread keeps one spare: the call takes it
// (one thread-local load and store, initial-exec like the key sets), and gives it back empty
// with its capacity kept, so the steady state allocates nothing (a new vector's malloc and free
// were ~125 instructions a call). A nested boxed call, made while the spare is out, gets a new
// Stack, which becomes the spare when it is given back to an empty slot, else is freed; so is
// one whose capacity grew past kMaxSpareCapacity values. The thread's spare is freed at thread
// exit; a call during thread teardown after that gets a Stack made with more than that
// capacity, so it is freed, not kept.
inline constexpr size_t kMaxSpareCapacity = 256;
extern constinit thread_local Stack* tls_spare_stack __attribute__((tls_model("initial-exec")));
Stack* newSpareStack();                  // the slow path of SpareStack: a fresh Stack
void freeStack(Stack* s) noexcept;        // the slow path of ~SpareStack: a Stack not kept
class SpareStack {
 public:
  SpareStack() : stack_(tls_spare_stack) {
    if (__builtin_expect(stack_ != nullptr, 1)) {
      tls_spare_stack = nullptr;
    } else {
      stack_ = newSpareStack();
    }
  }
  ~SpareStack() {
    stack_->clear();
    if (__builtin_expect(tls_spare_stack == nullptr && stack_->capacity() <= kMaxSpareCapacity, 1)) {
      tls_spare_stack = stack_;
    } else {
      freeStack(stack_);
    }
  }
  SpareStack(const SpareStack&) = delete;
  SpareStack& operator=(const SpareStack&) = delete;
  Stack& operator*() const { return *stack_; }

 private:
  Stack* stack_;
};

// "dk::add.Tensor: a boxed call needs 3 arguments on the stack but the stack has 2".
[[noreturn]] void throwBoxedArityError(const OperatorHandle& op, size_t needed, size_t have);
// "dk::add.Tensor: expected the boxed kernel to leave 1 return value on the stack but it left 0".
[[noreturn]] void throwBoxedReturnCountError(const OperatorEntry& entry, size_t expected, size_t have);

// The boxed entry of a C++ kernel: unbox the top sizeof...(Args) values, call, push returns.
template <class Functor, bool TakesKeySet, class Sig>
struct BoxedAdapter;
template <class Functor, bool TakesKeySet, class R, class... Args>
struct BoxedAdapter<Functor, TakesKeySet, R(Args...)> {
  static void call(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
    if (stack->size() < sizeof...(Args)) throwBoxedArityError(op, sizeof...(Args), stack->size());
    callWithIndices(functor, ks, stack, std::index_sequence_for<Args...>{});
  }

 private:
  template <size_t... I>
  static void callWithIndices(OperatorKernel* functor, DispatchKeySet ks, Stack* stack, std::index_sequence<I...>) {
    constexpr size_t n = sizeof...(Args);
    IValue* base = stack->data() + (stack->size() - n);
    (void)base;
    std::tuple<typename BoxingTraitsFor<Args>::Holder...> holders(
        BoxingTraitsFor<Args>::unbox(std::move(base[I]))...);
    // Erasing the moved-from values at the end is inline (a tag test each); resize is an
    // out-of-line call with a growth path.
    stack->erase(stack->end() - static_cast<ptrdiff_t>(n), stack->end());
    auto& f = *static_cast<Functor*>(functor);
    if constexpr (std::is_void_v<R>) {
      FunctorInvoker<Functor, TakesKeySet, R, Args...>::invoke(f, ks, BoxingTraitsFor<Args>::view(std::get<I>(holders))...);
    } else {
      ReturnTraits<R>::push(*stack, FunctorInvoker<Functor, TakesKeySet, R, Args...>::invoke(
                                        f, ks, BoxingTraitsFor<Args>::view(std::get<I>(holders))...));
    }
  }
};

template <class FuncType>
struct RuntimeFunctionFunctor final : OperatorKernel {
  explicit RuntimeFunctionFunctor(FuncType* f) : fn(f) {}
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return (*fn)(std::forward<Args>(args)...);
  }
  FuncType* fn;
};

template <class Lambda>
struct LambdaFunctor final : OperatorKernel {
  explicit LambdaFunctor(Lambda l) : lambda(std::move(l)) {}
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    return lambda(std::forward<Args>(args)...);
  }
  Lambda lambda;
};

template <auto* boxed_fn>
void boxedFunctionAdapter(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  using F = std::remove_pointer_t<decltype(boxed_fn)>;
  if constexpr (std::is_invocable_v<F, const OperatorHandle&, DispatchKeySet, Stack*>) {
    (*boxed_fn)(op, ks, stack);
  } else {
    static_assert(std::is_invocable_v<F, const OperatorHandle&, Stack*>,
                  "a boxed kernel is void(const OperatorHandle&, Stack*) or "
                  "void(const OperatorHandle&, DispatchKeySet, Stack*)");
    (void)ks;
    (*boxed_fn)(op, stack);
  }
}

}  // namespace detail

template <auto* boxed_fn>
KernelFunction KernelFunction::makeFromBoxedFunction() {
  return makeFromBoxedFunction(&detail::boxedFunctionAdapter<boxed_fn>);
}

template <class Functor, class Traits>
KernelFunction KernelFunction::makeFromUnboxedFunctor(std::unique_ptr<Functor> functor) {
  using Sig = typename Traits::dispatcher_signature;
  constexpr bool takes_ks = Traits::takes_key_set;
  KernelFunction k;
  k.unboxed_ = reinterpret_cast<void*>(&detail::UnboxedAdapter<Functor, takes_ks, Sig>::call);
  k.functor_ = functor.get();
  k.boxed_ = &detail::BoxedAdapter<Functor, takes_ks, Sig>::call;
  k.boxed_is_adapter_ = true;
  k.functor_owner_ = std::shared_ptr<OperatorKernel>(std::move(functor));
  return k;
}

namespace detail {
// The unboxed entry for a function known at compile time: calls it directly, ignoring the
// functor argument.
template <auto* fn>
void* unboxedEntryFor() {
  using Traits = function_traits<std::remove_pointer_t<decltype(fn)>>;
  using Sig = typename Traits::dispatcher_signature;
  return reinterpret_cast<void*>(&CompileTimeUnboxedAdapter<fn, Traits::takes_key_set, Sig>::call);
}
}  // namespace detail

template <auto* fn>
KernelFunction KernelFunction::makeFromUnboxedFunction() {
  using FuncType = std::remove_pointer_t<decltype(fn)>;
  using Traits = detail::function_traits<FuncType>;
  using Sig = typename Traits::dispatcher_signature;
  using Boxing = detail::BoxingFor<Sig, Traits::takes_key_set>;
  // The unboxed entry calls fn directly; the boxed entry is the signature's (Note [One boxing
  // family]), reaching fn through this functor: static storage, no allocation.
  static typename Boxing::Functor instance(fn);
  KernelFunction k;
  k.unboxed_ = detail::unboxedEntryFor<fn>();
  k.functor_ = &instance;
  k.boxed_ = &Boxing::boxed;
  k.boxed_is_adapter_ = true;
  return k;
}

template <class FuncType>
KernelFunction KernelFunction::makeFromUnboxedRuntimeFunction(FuncType* fn) {
  using Traits = detail::function_traits<FuncType>;
  using Sig = typename Traits::dispatcher_signature;
  using Boxing = detail::BoxingFor<Sig, Traits::takes_key_set>;
  using Functor = typename Boxing::Functor;
  KernelFunction k;
  auto owner = std::make_shared<Functor>(fn);
  k.unboxed_ = reinterpret_cast<void*>(&detail::UnboxedAdapter<Functor, Traits::takes_key_set, Sig>::call);
  k.functor_ = owner.get();
  k.boxed_ = &Boxing::boxed;
  k.boxed_is_adapter_ = true;
  k.functor_owner_ = std::move(owner);
  return k;
}

namespace detail {
// The adapters of one C++ signature (Note [One boxing family]). The members are defined out
// of the class, so not inline: an `extern template struct BoxingFor<Sig>;` keeps a
// translation unit from compiling them when one explicit instantiation provides them.
template <class R, class... Args, bool TakesKeySet>
struct BoxingFor<R(Args...), TakesKeySet> {
  // The function of a kernel of this signature, with or without the key set first.
  using Function = std::conditional_t<TakesKeySet, R(DispatchKeySet, Args...), R(Args...)>;
  using Functor = RuntimeFunctionFunctor<Function>;
  // The boxed entry of a Functor kernel: unbox the arguments, call, push the returns.
  static void boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack);
  // A typed call of a kernel with only a boxed entry: box the arguments, call, unbox the
  // returns. Out of line: boxing is the rare path and must not cost the unboxed one a frame.
  __attribute__((noinline)) static R callBoxed(const KernelFunction& kernel, OperatorEntry* entry, DispatchKeySet ks,
                                               Args... args);
};

template <class R, class... Args, bool TakesKeySet>
void BoxingFor<R(Args...), TakesKeySet>::boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks,
                                               Stack* stack) {
  BoxedAdapter<Functor, TakesKeySet, R(Args...)>::call(functor, op, ks, stack);
}

template <class R, class... Args, bool TakesKeySet>
R BoxingFor<R(Args...), TakesKeySet>::callBoxed(const KernelFunction& kernel, OperatorEntry* entry,
                                                DispatchKeySet ks, Args... args) {
  SpareStack spare;  // Note [Spare boxing stack]
  Stack& stack = *spare;
  stack.reserve(sizeof...(Args));
  (stack.push_back(BoxingTraitsFor<Args>::box(std::forward<Args>(args))), ...);
  kernel.callBoxed(entry, ks, &stack);
  if (stack.size() != ReturnTraits<R>::count) throwBoxedReturnCountError(*entry, ReturnTraits<R>::count, stack.size());
  return ReturnTraits<R>::pop(stack);
}
}  // namespace detail

}  // namespace dk
