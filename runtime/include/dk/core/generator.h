// dk/core/generator.h: a seedable random-number generator, passed to random operators as the
// schema type Generator (boxed as an opaque object).
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

#include "dk/core/custom_object.h"
#include "dk/util/intrusive_ptr.h"

namespace dk {

class GeneratorImpl : public CustomObject {
 public:
  explicit GeneratorImpl(uint64_t seed) : seed_(seed), engine_(seed) {}
  std::string typeName() const override { return "Generator"; }
  void set_current_seed(uint64_t seed);
  uint64_t current_seed() const;
  // Next 64 random bits; thread-safe.
  uint64_t random64();

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  std::mt19937_64 engine_;
};

// A shared handle to a GeneratorImpl.
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : impl_(make_intrusive<GeneratorImpl>(seed)) {}
  explicit Generator(intrusive_ptr<GeneratorImpl> impl) : impl_(std::move(impl)) {}
  GeneratorImpl* operator->() const { return impl_.get(); }
  const intrusive_ptr<GeneratorImpl>& impl() const { return impl_; }
  bool operator==(const Generator& o) const { return impl_ == o.impl_; }

 private:
  intrusive_ptr<GeneratorImpl> impl_;
};

// The process-wide default generator (what random operators use when given None).
Generator& defaultGenerator();
void manual_seed(uint64_t seed);

}  // namespace dk
