// dk/util/error.h: the exceptions users catch and the checks that raise them.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace dk {

// Every user-facing failure is a dk::Error; what() holds the whole message.
namespace detail {
// `message` with every control byte other than a line break or a tab, and DEL, written as \xNN:
// messages quote user input (names, schemas, strings), and a NUL byte would cut what() short.
std::string printableMessage(std::string message);
}  // namespace detail

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message) : std::runtime_error(detail::printableMessage(std::move(message))) {}
};

// Raised when no kernel can run an operator for the given keys.
class NotImplementedError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace dk

// DK_CHECK(cond, parts...): throws dk::Error whose message is the parts streamed together.
#define DK_CHECK(cond, ...)                                  \
  do {                                                       \
    if (__builtin_expect(!(cond), 0)) {                      \
      throw ::dk::Error(::dk::detail::concat(__VA_ARGS__));  \
    }                                                        \
  } while (0)

#define DK_ERROR(...) throw ::dk::Error(::dk::detail::concat(__VA_ARGS__))

#include <functional>

namespace dk {
// Warnings (e.g. a kernel overriding another at the same key) go to a handler: stderr by
// default; tests install their own to capture them. Returns the previous handler.
using WarningHandler = std::function<void(const std::string&)>;
WarningHandler setWarningHandler(WarningHandler handler);
void warn(const std::string& message);
}  // namespace dk
