// dk/dispatch/registration_site.h: where a registration call was written, for dk::explain and the
// table dump.
#pragma once

#include <string>

namespace dk {

// Where a registration call (Library::impl, def with a kernel, fallback) was written: the
// default argument RegistrationSite::current() takes the caller's file and line, as
// std::source_location::current() would (which clang 14 with libstdc++ 12 does not provide).
// Two words, stored as given: registering formats nothing, and only a reader (explain, the dump)
// pays for toString(). `file` must outlive the registration: __builtin_FILE() gives a literal.
struct RegistrationSite {
  const char* file = "";
  unsigned line = 0;
  static constexpr RegistrationSite current(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    return {file, line};
  }
  bool known() const { return file != nullptr && file[0] != '\0'; }
  // "FILE:LINE", the file as the compiler was given it less any leading "../" and "./" (a build
  // directory's relative paths); empty when not known().
  std::string toString() const;
};

}  // namespace dk
