// dk/core/custom_object.h: the base of opaque user objects carried through boxed calls (an
// IValue of kind Object), e.g. a random generator.
#pragma once

#include <string>

#include "dk/util/intrusive_ptr.h"

namespace dk {

class CustomObject : public intrusive_ptr_target {
 public:
  virtual std::string typeName() const = 0;
};

}  // namespace dk
