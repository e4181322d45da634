// The C++ API a PyTorch user reaches for: this file is written as a libtorch program would be
// (at::/torch:: renamed to dk::), and compiling it is half of the test; the checks pin that
// each spelling does what PyTorch's does.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "dk/dk.h"

namespace {

std::vector<double> values(const dk::Tensor& t) {
  dk::Tensor flat = t.to(dk::kFloat64).contiguous().reshape({-1});
  std::vector<double> out;
  for (int64_t i = 0; i < flat.numel(); ++i) out.push_back(flat.select(0, i).item<double>());
  return out;
}

}  // namespace

TEST_CASE("cpp api: out= functions take the output first (_out) or last (_outf)") {
  dk::Tensor a = dk::arange(0, 3, 1, dk::kFloat32), b = dk::ones({3}, dk::kFloat32);
  dk::Tensor out = dk::empty({3}, dk::kFloat32);
  dk::add_out(out, a, b);  // alpha defaults to 1, as at::add_out
  CHECK(values(out) == std::vector<double>{1, 2, 3});
  dk::add_out(out, a, b, 2);
  CHECK(values(out) == std::vector<double>{2, 3, 4});
  dk::add_outf(a, b, 3, out);
  CHECK(values(out) == std::vector<double>{3, 4, 5});
  dk::Tensor m = dk::arange(0, 6, 1, dk::kFloat32).reshape({2, 3});
  dk::Tensor s = dk::empty({0}, dk::kFloat32);
  dk::sum_out(s, m, {1});
  CHECK(values(s) == std::vector<double>{3, 12});
  dk::Tensor values_out = dk::empty({0}), indices_out = dk::empty({0}, dk::kInt64);
  dk::max_out(values_out, indices_out, m, 1);
  CHECK(values(values_out) == std::vector<double>{2, 5});
  CHECK(values(indices_out) == std::vector<double>{2, 2});
  dk::Tensor mm_out = dk::empty({2, 2});
  dk::mm_out(mm_out, m, m.t());
  CHECK(values(mm_out) == std::vector<double>{5, 14, 14, 50});
}

TEST_CASE("cpp api: methods and constants PyTorch code uses") {
  dk::Tensor x = dk::arange(1, 5, 1, dk::kFloat32);
  CHECK(x.sum().item<float>() == 10.0f);
  CHECK(x.mean().item<float>() == 2.5f);
  CHECK(x.mean(dk::kFloat64).scalar_type() == dk::kFloat64);
  CHECK_THROWS_WITH(dk::arange(0, 3, 1, dk::kInt64).mean(),
                    "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                    "dtype. Got: Long");
  x.sub_(1);
  x.div_(2);
  x.mul_(4);
  x.add_(1, /*alpha=*/2);
  CHECK(values(x) == std::vector<double>{2, 4, 6, 8});
  CHECK(dk::ones({1}).item<int64_t>() == 1);
  CHECK(dk::kFloat32 == dk::kFloat);
  CHECK(dk::kInt64 == dk::kLong);
  CHECK(dk::kInt16 == dk::kShort);
  CHECK(dk::kUInt8 == dk::kByte);
  CHECK(dk::kFloat16 == dk::kHalf);
  CHECK(dk::Reduction::Mean == 1);
  dk::Tensor logp = dk::log_softmax(dk::ones({2, 3}), 1);
  dk::Tensor target = dk::zeros({2}, dk::kInt64);
  CHECK(dk::nll_loss(logp, target, {}, dk::Reduction::Sum).item<double>() ==
        Approx(2 * dk::nll_loss(logp, target, {}, dk::Reduction::Mean).item<double>()));
}

TEST_CASE("cpp api: backward with inputs, and hooks that return nothing") {
  dk::Tensor a = dk::ones({2}, dk::TensorOptions().dtype(dk::kFloat64).requires_grad(true));
  dk::Tensor b = dk::ones({2}, dk::TensorOptions().dtype(dk::kFloat64).requires_grad(true));
  dk::Tensor h = dk::mul(a, 3.0);
  dk::Tensor loss = dk::mul(h, b).sum();
  std::vector<dk::Tensor> seen;
  a.register_hook([&](const dk::Tensor& grad) { seen.push_back(grad); });  // void: observes only
  // Only b accumulates; a's graph is not run, so its hook does not fire.
  loss.backward({}, /*retain_graph=*/true, /*create_graph=*/false, std::vector<dk::Tensor>{b});
  CHECK(values(b.grad()) == std::vector<double>{3, 3});
  CHECK_FALSE(a.grad().defined());
  CHECK(seen.empty());
  // A non-leaf input gets its .grad too; a and b are left alone.
  loss.backward({}, true, false, std::vector<dk::Tensor>{h});
  CHECK(values(h.grad()) == std::vector<double>{1, 1});
  CHECK(values(b.grad()) == std::vector<double>{3, 3});
  // Everything: the void hook sees a's gradient, which it leaves as it is.
  loss.backward();
  REQUIRE(seen.size() == 1);
  CHECK(values(seen[0]) == std::vector<double>{3, 3});
  CHECK(values(a.grad()) == std::vector<double>{3, 3});
  CHECK(values(b.grad()) == std::vector<double>{6, 6});
  CHECK_THROWS_WITH(loss.backward({}, true, false, std::vector<dk::Tensor>{}),
                    "'inputs' argument to backward() cannot be empty.");
}

TEST_CASE("cpp api: sizes() and strides() are IntArrayRef, as in PyTorch") {
  dk::Tensor t = dk::zeros({2, 3, 4});
  dk::IntArrayRef sizes = t.sizes();
  std::vector<int64_t> copy = t.sizes().vec();
  CHECK(copy == std::vector<int64_t>{2, 3, 4});
  std::vector<int64_t> converted = t.strides();  // converts, as c10::ArrayRef does
  CHECK(converted == std::vector<int64_t>{12, 4, 1});
  CHECK(sizes.size() == 3);
  CHECK(sizes.front() == 2);
  CHECK(sizes.back() == 4);
  CHECK(sizes.slice(1) == std::vector<int64_t>{3, 4});
  CHECK(sizes.slice(1, 1) == std::vector<int64_t>{3});
  CHECK(t.sizes() == t.sizes());
  CHECK(t.sizes() != t.transpose(0, 1).sizes());
  CHECK(std::vector<int64_t>{2, 3, 4} == t.sizes());
  CHECK(t.sizes().equals({2, 3, 4}));
  CHECK_THROWS_WITH(sizes.slice(4), "ArrayRef slice start 4 out of range for size 3");
}

TEST_CASE("cpp api: generated TensorOptions forms of the factories") {
  using namespace dk;
  Tensor z = dk::zeros_like(dk::ones({2}), TensorOptions().dtype(kDouble).requires_grad(true));
  CHECK(z.scalar_type() == kDouble);
  CHECK(z.requires_grad());
  CHECK(dk::randn({3}, Generator(1), TensorOptions().dtype(kDouble)).scalar_type() == kDouble);
  CHECK(dk::empty_like(dk::ones({2, 2}), TensorOptions().device(kMeta)).is_meta());
  CHECK(dk::zeros({2}, kInt).scalar_type() == kInt);  // a dtype still picks the plain overload
}
