// Printing scalars, and the overflow error of Scalar::toLong.
#include "dk/core/scalar.h"

#include "dk/util/error.h"

namespace dk {

std::ostream& operator<<(std::ostream& out, const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Int: return out << s.toLong();
    case Scalar::Kind::Double: return out << s.toDouble();
    case Scalar::Kind::Bool: return out << (s.toBool() ? "True" : "False");
  }
  return out;
}

void Scalar::throwLongOverflow(double value) {
  DK_ERROR("value cannot be converted to type int64_t without overflow: ", value);
}

}  // namespace dk
