// GeneratorImpl's locked engine, and the process-wide default generator.
#include "dk/core/generator.h"

namespace dk {

void GeneratorImpl::set_current_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  engine_.seed(seed);
}
uint64_t GeneratorImpl::current_seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}
uint64_t GeneratorImpl::random64() {
  std::lock_guard<std::mutex> lock(mutex_);
  return engine_();
}

Generator& defaultGenerator() {
  static Generator generator;
  return generator;
}
void manual_seed(uint64_t seed) { defaultGenerator()->set_current_seed(seed); }

}  // namespace dk
