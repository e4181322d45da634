// Thread-local dispatch state: the included and excluded key sets and their guards.
#include "dk/core/local_dispatch_key_set.h"

namespace dk {

namespace detail {
// Every thread starts with ThreadRegistration included: its first call lands in that slot,
// which registers it with the reclaimer (Note [Kernel reclamation]).
constinit thread_local ThreadDispatchKeys tls_dispatch_keys __attribute__((tls_model("initial-exec"))) = {
    default_included_set.add(DispatchKey::ThreadRegistration), ~default_excluded_set.raw_repr(), 0};
}  // namespace detail

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet ks)
    : change_(detail::KeySetChange::apply(ks, {}, {}, {})) {}
IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() { change_.undo(); }

ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet ks)
    : change_(detail::KeySetChange::apply({}, {}, ks, {})) {}
ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() { change_.undo(); }

namespace detail {

KeySetChange KeySetChange::apply(DispatchKeySet include, DispatchKeySet uninclude, DispatchKeySet exclude,
                                 DispatchKeySet unexclude) {
  auto& tls = tls_dispatch_keys;
  KeySetChange c;
  const uint64_t included = tls.included.raw_repr();
  c.included_added_ = include.raw_repr() & ~included;
  c.included_removed_ = uninclude.raw_repr() & included & ~include.raw_repr();
  tls.included = DispatchKeySet::fromRaw((included | c.included_added_) & ~c.included_removed_);
  const uint64_t excluded = ~tls.allowed;
  c.excluded_added_ = exclude.raw_repr() & kFunctionalityMask & ~kThreadRegistrationBit & ~excluded;
  c.excluded_removed_ = unexclude.raw_repr() & kFunctionalityMask & excluded & ~exclude.raw_repr();
  tls.allowed = ~((excluded | c.excluded_added_) & ~c.excluded_removed_);
  return c;
}

void KeySetChange::undo() const {
  auto& tls = tls_dispatch_keys;
  tls.included = DispatchKeySet::fromRaw((tls.included.raw_repr() & ~included_added_) | included_removed_);
  tls.allowed = ~((~tls.allowed & ~excluded_added_) | excluded_removed_);
}

}  // namespace detail

}  // namespace dk
