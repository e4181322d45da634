// Warning delivery; errors themselves are plain exceptions (dk/error.h).
#include <iostream>
#include <mutex>

#include "dk/error.h"

namespace dk {

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
