// Warning delivery; errors themselves are plain exceptions (dk/util/error.h).
#include <iostream>
#include <mutex>

#include "dk/util/error.h"

namespace dk {

namespace detail {
std::string printableMessage(std::string message) {
  auto unprintable = [](unsigned char c) { return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f; };
  size_t i = 0;
  while (i < message.size() && !unprintable(static_cast<unsigned char>(message[i]))) ++i;
  if (i == message.size()) return message;  // the usual case: nothing to escape
  std::string out = message.substr(0, i);
  static constexpr char kHex[] = "0123456789abcdef";
  for (; i < message.size(); ++i) {
    const auto c = static_cast<unsigned char>(message[i]);
    if (!unprintable(c)) {
      out += static_cast<char>(c);
      continue;
    }
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}
}  // namespace detail

namespace {
std::mutex& warningMutex() {
  static std::mutex m;
  return m;
}
WarningHandler& currentHandler() {
  static WarningHandler handler = [](const std::string& message) { std::cerr << "Warning: " << message << "\n"; };
  return handler;
}
}  // namespace

WarningHandler setWarningHandler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(warningMutex());
  std::swap(currentHandler(), handler);
  return handler;
}

void warn(const std::string& message) {
  WarningHandler handler;
  {
    std::lock_guard<std::mutex> lock(warningMutex());
    handler = currentHandler();
  }
  if (handler) handler(message);
}

}  // namespace dk
