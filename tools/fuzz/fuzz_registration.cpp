// libFuzzer target: the registration API (dk/dispatch/library.h) driven at random.
//
// The input is a program of registration steps on a few operators of one namespace: def an
// operator, register a kernel (a tagged kernel or a fallthrough) at a random runtime or alias
// key, register a backend fallback (tagged or fallthrough) at a random runtime key, or destroy
// one of the live Library objects, in any order. After every step:
//   - the operator the step touched, and one more, are called boxed and unboxed with tensors of
//     several key sets and with a bare stack: each call terminates (libFuzzer's -timeout turns a
//     loop into a finding) and either returns the tag of a live kernel or raises a dk::Error;
//   - each operator's computed table equals the table of a fresh operator given the same live
//     registrations in the same order (registration history must not leak into the table).
// At the end every Library is destroyed and the operators are back to having nothing.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dk/dispatch.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"
#include "fuzz_input.h"

using namespace dk;
using dk::fuzz::FuzzInput;

namespace {

constexpr int kOps = 3;  // fz::f0..f2 take a tensor; fz::g takes nothing
const char* const kNames[kOps + 1] = {"f0", "f1", "f2", "g"};

// The keys a kernel may be registered at: runtime keys of every kind, and every alias.
const DispatchKey kKernelKeys[] = {
    DispatchKey::CPU,
    DispatchKey::CUDA,
    DispatchKey::Meta,
    DispatchKey::PrivateUse1,
    DispatchKey::SparseCPU,
    DispatchKey::AutogradCPU,
    DispatchKey::AutogradCUDA,
    DispatchKey::AutogradOther,
    DispatchKey::ADInplaceOrView,
    DispatchKey::BackendSelect,
    DispatchKey::Python,
    DispatchKey::TESTING_ONLY_GenericMode,
    DispatchKey::Autograd,
    DispatchKey::CompositeImplicitAutograd,
    DispatchKey::CompositeExplicitAutograd,
    DispatchKey::CompositeExplicitAutogradNonFunctional,
};
// Runtime keys that take a backend fallback here. Keys with a fallback a fresh process already
// has (Python, the autograd keys, ...) are left out: a second one is an error by design.
const DispatchKey kFallbackKeys[] = {DispatchKey::PrivateUse1, DispatchKey::Meta, DispatchKey::SparseCPU,
                                     DispatchKey::TESTING_ONLY_GenericMode};

// One registration, as the program made it; kept to rebuild the reference.
struct Registration {
  enum Kind { Def, Kernel, Fallback } kind;
  int op;          // Def, Kernel
  DispatchKey key;  // Kernel, Fallback
  bool fallthrough;
  int64_t tag;
};

struct LiveLibrary {
  std::unique_ptr<Library> lib;
  Registration what;
};

std::string schemaOf(int op) { return std::string(kNames[op]) + (op < kOps ? "(Tensor x) -> int" : "() -> int"); }

CppFunction kernelFor(const Registration& r) {
  if (r.fallthrough) return CppFunction::makeFallthrough();
  const int64_t tag = r.tag;
  if (r.op < kOps) return CppFunction([tag](const Tensor&) -> int64_t { return tag; }).debug("k" + std::to_string(tag));
  return CppFunction([tag]() -> int64_t { return tag; }).debug("k" + std::to_string(tag));
}

// Fallbacks answer with their tag whatever the operator; its arguments are dropped.
template <int64_t Tag>
void taggedFallback(const OperatorHandle& op, Stack* stack) {
  drop(*stack, std::min(stack->size(), op.schema().arguments().size()));
  stack->push_back(IValue(Tag));
}
CppFunction taggedFallbackFor(int64_t tag) {
  switch (tag) {
    case 1001: return CppFunction::makeFromBoxedFunction<&taggedFallback<1001>>();
    case 1002: return CppFunction::makeFromBoxedFunction<&taggedFallback<1002>>();
    case 1003: return CppFunction::makeFromBoxedFunction<&taggedFallback<1003>>();
    default: return CppFunction::makeFromBoxedFunction<&taggedFallback<1004>>();
  }
}

// Makes `r` in namespace `ns` (the program's or the reference's); null when it was refused.
std::unique_ptr<Library> make(const Registration& r, const std::string& ns) {
  try {
    switch (r.kind) {
      case Registration::Def: {
        auto lib = std::make_unique<Library>(Library::FRAGMENT, ns);
        lib->def(schemaOf(r.op));
        return lib;
      }
      case Registration::Kernel: {
        auto lib = std::make_unique<Library>(Library::IMPL, ns, r.key);
        lib->impl(kNames[r.op], kernelFor(r));
        return lib;
      }
      case Registration::Fallback: {
        auto lib = std::make_unique<Library>(Library::IMPL, "_", r.key);
        lib->fallback(r.fallthrough ? CppFunction::makeFallthrough() : taggedFallbackFor(r.tag));
        return lib;
      }
    }
  } catch (const Error&) {
  }
  return nullptr;
}

std::vector<Tensor> probeTensors() {
  auto on = [](DeviceType d) { return make_tensor({1}, ScalarType::Float, Device(d)); };
  Tensor rg = make_tensor({1});
  rg.requires_grad_();
  Tensor inference;
  {
    InferenceMode guard;
    inference = make_tensor({1});
  }
  return {on(DeviceType::CPU), on(DeviceType::CUDA), on(DeviceType::Meta), on(DeviceType::PrivateUse1), rg,
          inference};
}

// Calls op `i` every way; each call returns a live tag or raises dk::Error.
void probeCalls(int i, const std::set<int64_t>& live_tags, const std::vector<Tensor>& tensors) {
  auto op = Dispatcher::singleton().findSchema(OperatorName{std::string("fz::") + kNames[i], ""});
  if (!op) return;
  auto check = [&](int64_t got) { FUZZ_CHECK(live_tags.count(got) == 1 || (got > 1000 && got <= 1004)); };
  if (i < kOps) {
    auto typed = op->typed<int64_t(const Tensor&)>();
    for (const Tensor& t : tensors) {
      try {
        check(typed.call(t));
      } catch (const Error&) {
      }
      try {
        Stack stack{IValue(t)};
        op->callBoxed(&stack);
        FUZZ_CHECK(stack.size() == 1);
        check(stack.back().toInt());
      } catch (const Error&) {
      }
    }
  }
  try {
    Stack bare;
    op->callBoxed(&bare);
    if (i == kOps) check(bare.back().toInt());
  } catch (const Error&) {
  }
  if (i == kOps) {
    try {
      check(op->typed<int64_t()>().call());
    } catch (const Error&) {
    }
  }
}

std::string tableOf(const std::string& ns, int i) {
  auto op = Dispatcher::singleton().findOp(OperatorName{ns + "::" + kNames[i], ""});
  return op ? op->dumpComputedTable() : std::string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<Tensor> tensors = probeTensors();
  // Silences the "overriding a previously registered kernel" warnings.
  static const bool quiet = (setWarningHandler([](const std::string&) {}), true);
  (void)quiet;
  FuzzInput in(data, size);
  std::vector<LiveLibrary> live;
  int64_t next_tag = 1;
  for (int step = 0; step < 24 && !in.empty(); ++step) {
    // Actions: 0-1 def, 2-10 kernel, 11 backend fallback (rarer: each one recomputes every
    // operator of the process), 12-15 destroy a Library.
    const uint8_t action = in.byte() % 16;
    Registration r{Registration::Kernel, static_cast<int>(in.pick(kOps + 1)), DispatchKey::CPU, false, next_tag++};
    if (action <= 1) {
      r.kind = Registration::Def;
    } else if (action <= 10) {
      r.key = kKernelKeys[in.pick(std::size(kKernelKeys))];
      r.fallthrough = in.pick(3) == 0;
    } else if (action == 11) {
      r.kind = Registration::Fallback;
      r.key = kFallbackKeys[in.pick(std::size(kFallbackKeys))];
      r.fallthrough = in.flag();
      r.tag = 1001 + r.tag % 4;
    } else if (!live.empty()) {
      auto gone = live.begin() + static_cast<std::ptrdiff_t>(in.pick(live.size()));
      r.op = gone->what.kind == Registration::Fallback ? r.op : gone->what.op;
      live.erase(gone);
    }
    if (action <= 11) {
      if (auto lib = make(r, "fz")) live.push_back({std::move(lib), r});
    }

    std::set<int64_t> live_tags;
    for (const LiveLibrary& l : live)
      if (l.what.kind == Registration::Kernel && !l.what.fallthrough) live_tags.insert(l.what.tag);
    // Calls of the operator this step touched (a destroyed Library's, or the one picked), and of
    // one more picked at random: the error paths cost most of a step, so not all every time.
    probeCalls(r.op, live_tags, tensors);
    probeCalls(static_cast<int>(in.pick(kOps + 1)), live_tags, tensors);

    // The reference: the live operator registrations, fresh, in the same order (the backend
    // fallbacks are process-wide and shared, so they are not registered twice).
    std::vector<std::unique_ptr<Library>> reference;
    for (const LiveLibrary& l : live)
      if (l.what.kind != Registration::Fallback) reference.push_back(make(l.what, "fzref"));
    for (int i = 0; i <= kOps; ++i) FUZZ_CHECK(tableOf("fz", i) == tableOf("fzref", i));
  }
  // Undo in a random order; then nothing of the program is left.
  while (!live.empty()) live.erase(live.begin() + static_cast<std::ptrdiff_t>(in.pick(live.size())));
  for (int i = 0; i <= kOps; ++i) FUZZ_CHECK(tableOf("fz", i) == tableOf("fzref", i));
  return 0;
}
