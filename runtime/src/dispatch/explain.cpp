// dk/dispatch/explain.cpp: see Note [explain] in dk/dispatch/explain.h.
#include "dk/dispatch/explain.h"

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>

#include "dk/core/local_dispatch_key_set.h"
#include "dk/dispatch/function_schema.h"
#include "dk/dispatch/operator_entry.h"

namespace dk {

namespace {

// One hop of a real call, as the observer sees it.
void printHop(std::ostream& out, const ObservedCall& call) {
  const bool redispatch = call.kind == detail::CallKind::Redispatch || call.kind == detail::CallKind::RedispatchBoxed;
  std::string text = Dispatcher::singleton().explain(
      call.op, call.inputs ? *call.inputs : Stack{}, redispatch ? std::optional<DispatchKeySet>(call.key_set) : std::nullopt);
  const std::string indent(static_cast<size_t>(2 * call.depth), ' ');
  std::istringstream lines(text);
  std::ostringstream block;
  for (std::string line; std::getline(lines, line);) block << indent << line << "\n";
  static std::mutex print_mutex;  // whole blocks, when several threads print
  std::lock_guard<std::mutex> lock(print_mutex);
  out << block.str() << std::flush;
}

Observer explainObserver(std::ostream& out) {
  Observer o;
  o.on_enter = [&out](const ObservedCall& call) { printHop(out, call); };
  o.needs_inputs = true;
  return o;
}

// DK_EXPLAIN=1: every call of the process, on stderr.
const bool kExplainFromEnvironment = [] {
  const char* v = std::getenv("DK_EXPLAIN");
  if (v && std::string(v) == "1") addGlobalObserver(explainObserver(std::cerr));
  return true;
}();

}  // namespace

std::string Dispatcher::explain(const OperatorHandle& op, const Stack& args,
                                std::optional<DispatchKeySet> redispatch_keys) {
  std::ostringstream out;
  out << (redispatch_keys ? "redispatch " : "call ") << op.operator_name() << "\n";
  DispatchKeySet wanted;
  if (redispatch_keys) {
    out << "  given key set: " << *redispatch_keys << "\n";
    wanted = *redispatch_keys;
  } else {
    const FunctionSchema& schema = op.schema();
    DispatchKeySet arguments;
    for (size_t i = 0; i < schema.arguments().size() && i < args.size(); ++i) {
      if (!schema.arguments()[i].type.isTensorLike()) continue;
      DispatchKeySet ks = detail::boxedArgumentKeySet(args[i]);
      out << "  argument " << schema.arguments()[i].name << ": " << ks << "\n";
      arguments = arguments | ks;
    }
    const LocalDispatchKeySet tls = tls_local_dispatch_key_set();
    out << "  thread included: " << tls.included << "\n";
    out << "  thread excluded: " << tls.excluded << "\n";
    wanted = (arguments | tls.included) - tls.excluded;
  }
  const OperatorEntry& entry = op.entry();
  const uint64_t raw = wanted.raw_repr();
  const DispatchKeySet merged =
      DispatchKeySet::fromRaw(entry.andFallthroughMask(raw, DispatchKeySet::highestBackendIndex(raw)));
  out << "  dropped as fallthrough: " << (wanted - merged) << "\n";
  out << "  merged key set: " << merged << "\n";
  const DispatchKey key = runtimeKeyForTableIndex(merged.getDispatchTableIndex());
  out << "  selects: " << key << "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  out << "  slot: " << entry.describeSlot(key, fallbackPointers()) << "\n";
  return out.str();
}

std::string explain(const OperatorHandle& op, const Stack& args) {
  return Dispatcher::singleton().explain(op, args);
}

ExplainGuard::ExplainGuard(std::ostream& out) : observer_(explainObserver(out), /*thread_local_only=*/true) {}
ExplainGuard::ExplainGuard() : ExplainGuard(std::cerr) {}

}  // namespace dk
