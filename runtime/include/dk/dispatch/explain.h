// dk/dispatch/explain.h: why a call goes where it goes (included by dk/explain.h and dk/dk.h).
//
//   std::cout << dk::explain(op, {x, y, 1.0});   // one decision, no kernel runs
//   { dk::ExplainGuard guard; dk::add(x, y); }   // every hop of a real call, on stderr
//
// Note [explain]
// dk::explain(op, args) says how the dispatcher chooses a kernel for `args` on this thread,
// without running anything: each dispatch argument's key set, the thread's included and
// excluded sets, the keys the operator's fallthrough mask drops, the merged key set, the runtime
// key it selects, and that slot's rule (the words of dumpComputedTable: kernel, default backend
// kernel, math kernel, autograd kernel, backend fallback, missing), the kernel's name and the
// FILE:LINE of the impl(...) or fallback(...) call that registered it.
//
// ExplainGuard (or DK_EXPLAIN=1 in the environment, for the whole process) prints the same for
// every hop of real calls on this thread (a redispatch shows the key set it was given),
// indented by call depth like the trace. It is an observer: calls take the dispatcher's slow
// path only while one is active, so with none the call path is unchanged.
#pragma once

#include <iosfwd>
#include <string>

#include "dk/dispatch/dispatcher.h"
#include "dk/dispatch/ivalue.h"
#include "dk/dispatch/observer.h"

namespace dk {

std::string explain(const OperatorHandle& op, const Stack& args);

class ExplainGuard {
 public:
  explicit ExplainGuard(std::ostream& out);
  ExplainGuard();  // prints to std::cerr
  ExplainGuard(const ExplainGuard&) = delete;
  ExplainGuard& operator=(const ExplainGuard&) = delete;

 private:
  ScopedObserver observer_;
};

}  // namespace dk
