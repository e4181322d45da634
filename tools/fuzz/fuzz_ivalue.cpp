// libFuzzer target: the IValue accessors (dk/dispatch/ivalue.h) and the boxing conversions
// (dk/dispatch/boxing.h).
//
// The input is a program for a small machine with four IValue registers: make a value of a
// random kind, copy, move, swap, read through an accessor, compare, check against a schema
// type, print, build lists and tuples, work a Stack with pop/peek/drop, unbox through
// BoxingTraits. Properties checked on every step:
//   - an accessor succeeds exactly when the tag says so, and otherwise raises dk::Error;
//   - a copy compares equal to its source (values without NaN), a moved-from value is None;
//   - makeList raises dk::Error exactly when an element does not fit the element type;
//   - stack helpers raise dk::Error exactly when the stack is too short;
//   - unboxing succeeds exactly when the value fits the C++ type's schema type;
//   - no reference is lost or leaked: the tensors and objects the program used are back to
//     one reference when it ends.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dk/core/generator.h"
#include "dk/dispatch/boxing.h"
#include "dk/dispatch/ivalue.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/util/error.h"
#include "fuzz_input.h"

using namespace dk;
using dk::fuzz::FuzzInput;

namespace {

// True when `f` raises dk::Error; any other exception escapes to libFuzzer (a finding).
template <class F>
bool raises(F&& f) {
  try {
    f();
  } catch (const Error&) {
    return true;
  }
  return false;
}

struct OtherObject : CustomObject {
  std::string typeName() const override { return "OtherObject"; }
};

// The heap values programs share, so reference counts can be checked at the end.
struct Pool {
  Tensor tensors[2] = {detail::empty_contiguous({2}, kFloat, Device(DeviceType::CPU)), Tensor()};
  intrusive_ptr<CustomObject> generator = make_intrusive<GeneratorImpl>(7);
  intrusive_ptr<CustomObject> other = make_intrusive<OtherObject>();
};

Pool& pool() {
  static Pool p;
  return p;
}

Type randomType(FuzzInput& in, int depth = 0) {
  constexpr size_t kBases = static_cast<size_t>(TypeKind::Optional);
  const size_t choice = in.pick(kBases + 3);
  if (choice < kBases || depth >= 2) return Type::base(static_cast<TypeKind>(choice % kBases));
  Type elem = randomType(in, depth + 1);
  if (choice == kBases) return Type::optional(std::move(elem));
  if (choice == kBases + 1) return Type::list(std::move(elem));
  return Type::list(std::move(elem), in.small(0, 2));
}

// Lists and tuples of copies of registers share structure, so a program of n steps can build
// a value of 4^n leaves (reading it is then exponential, which libFuzzer reports as a hang).
// Values are kept under this many nodes; `budget` counts down while walking.
constexpr int64_t kMaxNodes = 4096;
bool fitsBudget(const IValue& v, int64_t& budget) {
  if (--budget < 0) return false;
  const std::vector<IValue>* children = v.isList() ? &v.toListElements() : v.isTuple() ? &v.toTupleElements() : nullptr;
  if (children)
    for (const IValue& c : *children)
      if (!fitsBudget(c, budget)) return false;
  return true;
}
IValue bounded(IValue v) {
  int64_t budget = kMaxNodes;
  return fitsBudget(v, budget) ? v : IValue();
}

IValue makeValue(FuzzInput& in, const std::vector<IValue>& regs, int depth = 0) {
  switch (in.pick(15)) {
    case 0: return IValue();
    case 1: return IValue(pool().tensors[in.pick(2)]);
    case 2: {
      static constexpr double values[] = {0.0, -0.0, 1.5, std::numeric_limits<double>::infinity(),
                                          std::numeric_limits<double>::quiet_NaN()};
      return IValue(values[in.pick(std::size(values))]);
    }
    case 3: return IValue(static_cast<int64_t>(in.u16()) - 32768);
    case 4: return IValue(in.flag());
    case 5: return IValue(std::string(in.pick(3), static_cast<char>(in.byte())));
    case 6: return IValue(Device(static_cast<DeviceType>(in.pick(4)), static_cast<int8_t>(in.small(-1, 3))));
    case 7: return IValue(static_cast<ScalarType>(in.pick(kNumScalarTypes + 1)));
    case 8: return IValue(in.flag() ? Layout::Sparse : Layout::Strided);
    case 9: return IValue(static_cast<MemoryFormat>(in.pick(3)));
    case 10: return IValue(in.flag() ? pool().generator : pool().other);
    case 11:
    case 12: {
      // A list or tuple of copies of registers (and of fresh values, one level down).
      std::vector<IValue> elements(in.small(0, 3));
      for (IValue& e : elements) e = depth < 2 && in.flag() ? makeValue(in, regs, depth + 1) : regs[in.pick(regs.size())];
      if (in.pick(2) == 0) return bounded(IValue::makeTuple(std::move(elements)));
      Type any = Type::base(TypeKind::Any);
      return bounded(IValue::makeList(any, std::move(elements)));
    }
    default: return regs[in.pick(regs.size())];
  }
}

bool containsNaN(const IValue& v) {
  if (v.isDouble()) return std::isnan(v.toDouble());
  if (v.isList())
    for (const IValue& e : v.toListElements())
      if (containsNaN(e)) return true;
  if (v.isTuple())
    for (const IValue& e : v.toTupleElements())
      if (containsNaN(e)) return true;
  return false;
}

// Each accessor, with the kind it needs: it must succeed exactly on that kind.
void checkAccessor(const IValue& v, size_t which) {
  using K = IValue::Kind;
  auto expect = [&](K kind, auto&& read) { FUZZ_CHECK(raises(read) == (v.tagKind() != kind)); };
  switch (which) {
    case 0: return expect(K::Tensor, [&] { (void)v.toTensor(); });
    case 1: return expect(K::Double, [&] { (void)v.toDouble(); });
    case 2: return expect(K::Int, [&] { (void)v.toInt(); });
    case 3: return expect(K::Bool, [&] { (void)v.toBool(); });
    case 4: return expect(K::String, [&] { (void)v.toStringRef(); });
    case 5: return expect(K::String, [&] { (void)v.toStringValue(); });
    case 6: return expect(K::Device, [&] { (void)v.toDevice(); });
    case 7: return expect(K::ScalarType, [&] { (void)v.toScalarType(); });
    case 8: return expect(K::Layout, [&] { (void)v.toLayout(); });
    case 9: return expect(K::MemoryFormat, [&] { (void)v.toMemoryFormat(); });
    case 10: return expect(K::GenericList, [&] { (void)v.toListRef(); });
    case 11: return expect(K::GenericList, [&] { (void)v.listElementType(); });
    case 12: return expect(K::GenericList, [&] { (void)v.toListElements(); });
    case 13: return expect(K::Tuple, [&] { (void)v.toTupleElements(); });
    case 14: return expect(K::Object, [&] { (void)v.toObject(); });
    default: {
      // The rvalue toTensor() consumes a copy, leaving it None when it succeeds.
      IValue copy = v;
      const bool threw = raises([&] { (void)std::move(copy).toTensor(); });
      FUZZ_CHECK(threw == !v.isTensor());
      FUZZ_CHECK(threw ? copy.tagKind() == v.tagKind() : copy.isNone());
    }
  }
}

// Unboxing as C++ type T succeeds exactly when the value fits T's schema type (a Generator
// must also be a GeneratorImpl object).
template <class T>
void checkUnbox(const IValue& v) {
  using Traits = BoxingTraits<T>;
  bool fits = v.matchesType(Traits::schemaType());
  if constexpr (std::is_same_v<T, Generator> || std::is_same_v<T, std::optional<Generator>>) {
    if (v.isObject()) fits = fits && v.toObject().get() == pool().generator.get();
  }
  bool threw = raises([&] {
    typename Traits::Holder h = Traits::unbox(IValue(v));
    (void)Traits::view(h);
  });
  FUZZ_CHECK(threw == !fits);
}

void checkUnboxAs(const IValue& v, size_t which) {
  switch (which) {
    case 0: return checkUnbox<Tensor>(v);
    case 1: return checkUnbox<int64_t>(v);
    case 2: return checkUnbox<double>(v);
    case 3: return checkUnbox<bool>(v);
    case 4: return checkUnbox<std::string>(v);
    case 5: return checkUnbox<std::string_view>(v);
    case 6: return checkUnbox<Scalar>(v);
    case 7: return checkUnbox<Generator>(v);
    case 8: return checkUnbox<std::optional<Tensor>>(v);
    case 9: return checkUnbox<std::optional<int64_t>>(v);
    case 10: return checkUnbox<std::vector<int64_t>>(v);
    case 11: return checkUnbox<ArrayRef<Tensor>>(v);
    case 12: return checkUnbox<std::vector<std::optional<Tensor>>>(v);
    case 13: return checkUnbox<std::optional<std::vector<int64_t>>>(v);
    case 14: return checkUnbox<ScalarType>(v);
    case 15: return checkUnbox<Device>(v);
    case 16: return checkUnbox<std::optional<Generator>>(v);
    default: return checkUnbox<ArrayRef<double>>(v);
  }
}

void run(FuzzInput& in) {
  std::vector<IValue> regs(4);
  for (int steps = 0; steps < 64 && !in.empty(); ++steps) {
    IValue& a = regs[in.pick(regs.size())];
    IValue& b = regs[in.pick(regs.size())];
    switch (in.pick(12)) {
      case 0: a = makeValue(in, regs); break;
      case 1:
        a = b;
        if (!containsNaN(a)) FUZZ_CHECK(a == b);
        break;
      case 2:
        if (&a != &b) {
          a = std::move(b);
          FUZZ_CHECK(b.isNone());  // NOLINT: reading a moved-from IValue is defined (None)
        }
        break;
      case 3: {
        const IValue::Kind ka = a.tagKind(), kb = b.tagKind();
        a.swap(b);
        FUZZ_CHECK(a.tagKind() == kb && b.tagKind() == ka);
        break;
      }
      case 4: checkAccessor(a, in.pick(16)); break;
      case 5: {
        const Type t = randomType(in);
        (void)a.matchesType(t);
        // Optional accepts None; Any accepts everything.
        FUZZ_CHECK(a.matchesType(Type::base(TypeKind::Any)));
        FUZZ_CHECK(IValue().matchesType(Type::optional(t)));
        break;
      }
      case 6: {
        std::ostringstream out;
        out << a << a.tagKind();
        break;
      }
      case 7: {
        const Type elem = randomType(in);
        std::vector<IValue> elements(regs.begin(), regs.begin() + static_cast<ptrdiff_t>(in.pick(regs.size() + 1)));
        bool fit = true;
        for (const IValue& e : elements) fit = fit && e.matchesType(elem);
        IValue list;
        const bool threw = raises([&] { list = IValue::makeList(elem, elements); });
        FUZZ_CHECK(threw == !fit);
        if (!threw) {
          FUZZ_CHECK(list.matchesType(Type::list(elem)));
          FUZZ_CHECK(list.toListElements().size() == elements.size());
          a = bounded(std::move(list));
        }
        break;
      }
      case 8: {
        std::vector<IValue> elements(regs.begin(), regs.begin() + static_cast<ptrdiff_t>(in.pick(regs.size() + 1)));
        IValue tuple = IValue::makeTuple(elements);
        FUZZ_CHECK(tuple.toTupleElements().size() == elements.size());
        b = bounded(std::move(tuple));
        break;
      }
      case 9: {
        Stack stack(regs.begin(), regs.begin() + static_cast<ptrdiff_t>(in.pick(regs.size() + 1)));
        const size_t size = stack.size();
        const size_t n = in.pick(6), i = in.pick(6);
        switch (in.pick(4)) {
          case 0:
            FUZZ_CHECK(raises([&] { (void)pop(stack); }) == (size == 0));
            break;
          case 1: {
            const bool threw = raises([&] { FUZZ_CHECK(pop(stack, n).size() == n); });
            FUZZ_CHECK(threw == (n > size));
            FUZZ_CHECK(stack.size() == (threw ? size : size - n));
            break;
          }
          case 2:
            FUZZ_CHECK(raises([&] { (void)peek(stack, i, n); }) == !(i < n && n <= size));
            break;
          default:
            FUZZ_CHECK(raises([&] { drop(stack, n); }) == (n > size));
            break;
        }
        break;
      }
      case 10: checkUnboxAs(a, in.pick(18)); break;
      default: {
        // Box a C++ value and read it back.
        const int64_t i = static_cast<int64_t>(in.u16()) - 32768;
        FUZZ_CHECK(BoxingTraits<int64_t>::box(i).toInt() == i);
        std::vector<int64_t> ints{i, -i};
        IValue list = BoxingTraits<std::vector<int64_t>>::box(ints);
        FUZZ_CHECK(BoxingTraits<std::vector<int64_t>>::unbox(std::move(list)) == ints);
        a = BoxingTraits<Scalar>::box(Scalar(i));
        FUZZ_CHECK(a.isInt());
        break;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  run(in);
  // Every IValue of the program is gone: the pool holds the only references again.
  Pool& p = pool();
  FUZZ_CHECK(p.tensors[0].use_count() == 1);
  FUZZ_CHECK(p.generator->use_count() == 1);  // NOLINT
  FUZZ_CHECK(p.other->use_count() == 1);
  return 0;
}
