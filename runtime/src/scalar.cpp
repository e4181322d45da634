// Scalars, and the default random generator.
#include "dk/generator.h"
#include "dk/scalar.h"

#include "dk/error.h"

namespace dk {

std::ostream& operator<<(std::ostream& out, const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Int: return out << s.toLong();
    case Scalar::Kind::Double: return out << s.toDouble();
    case Scalar::Kind::Bool: return out << (s.toBool() ? "True" : "False");
  }
  return out;
}

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

void Scalar::throwLongOverflow(double value) {
  DK_ERROR("value cannot be converted to type int64_t without overflow: ", value);
}

}  // namespace dk
