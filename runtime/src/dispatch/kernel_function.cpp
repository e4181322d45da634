// KernelFunction's out-of-line members, the special kernels (fallthrough, ambiguous
// AutogradOther, missing), and the schema-inference helpers declared in kernel_function.h.
#include "dk/dispatch/kernel_function.h"

#include <cstdlib>
#include <cxxabi.h>
#include <memory>

#include "dk/dispatch/dispatcher.h"

namespace dk {
// ===================== special kernels =====================

namespace {
void fallthroughKernel(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  // Normally never called: the fallthrough mask drops this key before the lookup. A call
  // that raced with a registration change may still land here; going on below this key is
  // exactly what the fallthrough means.
  // Note [Fallthrough terminates]: each pass removes one functionality key, so a chain of
  // fallthroughs ends. With no functionality key left the call reached the Undefined slot
  // (slot 0), which a fallthrough at CompositeExplicitAutograd or CompositeImplicitAutograd
  // also fills: there is nothing below to fall through to, so the call fails instead of
  // redispatching to this same slot forever.
  const DispatchKey top = ks.highestFunctionalityKey();
  DK_CHECK(top != DispatchKey::Undefined, "fallthrough_kernel was executed for '", op.operator_name(),
           "' with no dispatch key left below it (key set ", ks, "). A fallthrough registered for one operator at "
           "an alias key that covers the Undefined slot (CompositeExplicitAutograd, CompositeImplicitAutograd) is "
           "reached when no key of the call has a kernel; register a kernel that does the work there instead.");
  op.redispatchBoxed(ks.remove(top), stack);
}
void ambiguousAutogradOtherKernel(OperatorKernel*, const OperatorHandle& op, DispatchKeySet, Stack*) {
  throw NotImplementedError(detail::concat(
      "'", op.operator_name(), "' has kernels registered to both CompositeImplicitAutograd and a backend mapped to "
      "AutogradOther (a Quantized or Sparse key). This makes the backend kernel unreachable: the dispatcher "
      "would run the CompositeImplicitAutograd kernel for AutogradOther tensors. Register a kernel at "
      "AutogradOther (or at the backend's own key) that says what should happen, or move the composite kernel "
      "to CompositeExplicitAutograd."));
}
void missingKernel(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  // A boxed call with too few values may have found no tensor where the schema has one; the
  // short stack is what the caller got wrong, so say that (as a kernel's boxed adapter would).
  if (stack != nullptr && op.hasSchema() && stack->size() < op.schema().arguments().size()) {
    detail::throwBoxedArityError(op, op.schema().arguments().size(), stack->size());
  }
  throw NotImplementedError(Dispatcher::singleton().missingKernelMessage(op, ks));
}
}  // namespace

bool KernelFunction::isFallthrough() const { return boxed_ == &fallthroughKernel; }
bool KernelFunction::isAmbiguousAutogradOther() const { return boxed_ == &ambiguousAutogradOtherKernel; }

KernelFunction KernelFunction::makeFromBoxedFunction(BoxedKernelFunction* fn) {
  KernelFunction k;
  k.boxed_ = fn;
  return k;
}
KernelFunction KernelFunction::makeFallthrough() { return makeFromBoxedFunction(&fallthroughKernel); }
KernelFunction KernelFunction::makeAmbiguousAutogradOther() {
  return makeFromBoxedFunction(&ambiguousAutogradOtherKernel);
}
KernelFunction KernelFunction::makeMissing() { return makeFromBoxedFunction(&missingKernel); }

std::string CppSignature::name() const {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type_.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : type_.name();
  std::free(demangled);
  return out;
}

namespace detail {
std::string inferredArgumentName(size_t i) {
  // Appended, not "_" + to_string(i): GCC 12 at -O3 warns (-Wrestrict) on that operator+.
  std::string name = "_";
  name += std::to_string(i);
  return name;
}
}  // namespace detail

std::optional<std::string> findSchemaDifference(const FunctionSchema& inferred, const FunctionSchema& specified) {
  auto same = [](const Type& a, const Type& b) {
    // A C++ IValue parameter (schema type Any) accepts whatever the schema says.
    if (a.kind() == TypeKind::Any || b.kind() == TypeKind::Any) return true;
    // C++ has no SymInt: int64_t stands for both int and SymInt.
    auto normalize = [](const Type& t, auto&& self) -> Type {
      switch (t.kind()) {
        case TypeKind::SymInt: return Type::base(TypeKind::Int);
        case TypeKind::Optional: return Type::optional(self(t.element(), self));
        case TypeKind::List: return Type::list(self(t.element(), self));
        default: return t;
      }
    };
    return normalize(a, normalize).equalsIgnoringSize(normalize(b, normalize));
  };
  const auto& ia = inferred.arguments();
  const auto& sa = specified.arguments();
  if (ia.size() != sa.size()) {
    return detail::concat("The number of arguments is different. ", sa.size(), " vs ", ia.size(), ".");
  }
  const auto& ir = inferred.returns();
  const auto& sr = specified.returns();
  if (ir.size() != sr.size()) {
    return detail::concat("The number of returns is different. ", sr.size(), " vs ", ir.size(), ".");
  }
  for (size_t i = 0; i < ia.size(); ++i) {
    if (!same(ia[i].type, sa[i].type)) {
      return detail::concat("Type mismatch in argument ", i + 1, ": ", sa[i].type.str(), " vs ", ia[i].type.str(), ".");
    }
  }
  for (size_t i = 0; i < ir.size(); ++i) {
    if (!same(ir[i].type, sr[i].type)) {
      return detail::concat("Type mismatch in return ", i + 1, ": ", sr[i].type.str(), " vs ", ir[i].type.str(), ".");
    }
  }
  return std::nullopt;
}

void KernelFunction::callBoxed(OperatorEntry* entry, DispatchKeySet ks, Stack* stack) const {
  boxed_(functor_, OperatorHandle(entry), ks, stack);
}

namespace detail {
constinit thread_local Stack* tls_spare_stack __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {
// Frees the thread's spare at thread exit (Note [Spare boxing stack]).
constinit thread_local bool tls_spare_stack_gone = false;
struct SpareStackOwner {
  ~SpareStackOwner() {
    delete tls_spare_stack;
    tls_spare_stack = nullptr;
    tls_spare_stack_gone = true;
  }
};
}  // namespace

Stack* newSpareStack() {
  auto s = std::make_unique<Stack>();
  if (tls_spare_stack_gone) {
    s->reserve(kMaxSpareCapacity + 1);  // too large to be kept: freed when given back
  } else {
    static thread_local SpareStackOwner owner;  // registers the thread-exit cleanup once
    (void)owner;
  }
  return s.release();
}

void freeStack(Stack* s) noexcept { delete s; }

void throwBoxedArityError(const OperatorHandle& op, size_t needed, size_t have) {
  DK_ERROR(op.operator_name(), ": a boxed call needs ", needed, " arguments on the stack but the stack has ", have);
}

void throwBoxedReturnCountError(const OperatorEntry& entry, size_t expected, size_t have) {
  DK_ERROR(entry.operator_name(), ": expected the boxed kernel to leave ", expected, " return value",
           expected == 1 ? "" : "s", " on the stack but it left ", have);
}
}  // namespace detail

}  // namespace dk
