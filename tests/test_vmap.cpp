// vmap (Note [vmap], Note [Batched tensors]): the batched result equals stacking the
// per-example results of a loop, for mapped and unmapped inputs, any in_dims and out_dims,
// nested levels, operators with a batching rule and those that take the for-loop fallback
// (which warns once per operator); and the errors of mismatched or out-of-range dims.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "dispatch_test_util.h"
#include "dk/dk.h"
#include "dk/func/batched_tensor.h"
#include "dk/func/vmap.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;
using dk::func::BatchDim;
using dk::func::vmap;

namespace {

Tensor randomTensor(const std::vector<int64_t>& sizes, uint32_t seed) { return uniformDoubles(sizes, seed, -2, 2); }

// f applied to each example (inputs sliced at their in_dims), the results stacked at out_dim.
Tensor loopReference(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                     const std::vector<BatchDim>& in_dims, int64_t out_dim) {
  int64_t batch = -1;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (in_dims[i]) batch = inputs[i].size(*in_dims[i]);
  std::vector<Tensor> results;
  for (int64_t e = 0; e < batch; ++e) {
    std::vector<Tensor> slice;
    for (size_t i = 0; i < inputs.size(); ++i) slice.push_back(in_dims[i] ? inputs[i].select(*in_dims[i], e) : inputs[i]);
    results.push_back(f(slice));
  }
  return dk::stack(results, out_dim);
}

bool sameTensor(const Tensor& got, const Tensor& want) {
  return got.sizes() == want.sizes() && sameValues(read(got), read(want), 1e-12);
}

}  // namespace

TEST_CASE("vmap: pointwise, matmul and reductions equal a loop over the batch, for any in_dims and out_dims",
          "[vmap]") {
  dk::func::setVmapFallbackWarningEnabled(false);
  struct Case {
    const char* name;
    std::function<Tensor(const std::vector<Tensor>&)> f;
    std::vector<std::vector<int64_t>> example_sizes;  // per input, without the batch dim
  };
  const std::vector<Case> cases = {
      {"add", [](const std::vector<Tensor>& x) { return dk::add(x[0], x[1]); }, {{3, 4}, {3, 4}}},
      {"mul broadcast", [](const std::vector<Tensor>& x) { return dk::mul(x[0], x[1]); }, {{3, 4}, {4}}},
      {"exp", [](const std::vector<Tensor>& x) { return dk::exp(x[0]); }, {{2, 5}}},
      {"mm", [](const std::vector<Tensor>& x) { return dk::mm(x[0], x[1]); }, {{3, 4}, {4, 2}}},
      {"sum dim", [](const std::vector<Tensor>& x) { return dk::sum(x[0], std::vector<int64_t>{1}); }, {{3, 4}}},
      {"full sum", [](const std::vector<Tensor>& x) { return dk::sum(x[0]); }, {{3, 4}}},
      {"softmax", [](const std::vector<Tensor>& x) { return dk::softmax(x[0], -1); }, {{3, 4}}},
      {"views", [](const std::vector<Tensor>& x) { return x[0].permute({1, 0}).unsqueeze(0).select(2, 1); }, {{3, 4}}},
      {"expand", [](const std::vector<Tensor>& x) { return dk::add(x[0].expand({2, 3, 4}), x[1]); }, {{3, 4}, {3, 4}}},
  };
  const int64_t batch = 5;
  uint32_t seed = 1;
  for (const Case& c : cases) {
    // Each input mapped at every dim (or not mapped, when another one is); outputs at 0 and -1.
    const size_t n = c.example_sizes.size();
    for (int64_t in0 = -1; in0 <= static_cast<int64_t>(c.example_sizes[0].size()); ++in0) {
      for (int mapped_second = 0; mapped_second < (n > 1 ? 2 : 1); ++mapped_second) {
        for (int64_t out_dim : {0, -1}) {
          std::vector<BatchDim> in_dims;
          std::vector<Tensor> inputs;
          for (size_t i = 0; i < n; ++i) {
            std::vector<int64_t> sizes = c.example_sizes[i];
            BatchDim d;
            if (i == 0 && in0 >= 0) d = in0;
            if (i == 1 && mapped_second) d = static_cast<int64_t>(sizes.size());  // the last dim
            if (d) sizes.insert(sizes.begin() + *d, batch);
            in_dims.push_back(d);
            inputs.push_back(randomTensor(sizes, seed++));
          }
          if (!in_dims[0] && !(n > 1 && in_dims[1])) continue;
          INFO(c.name << ": in_dims " << (in_dims[0] ? std::to_string(*in_dims[0]) : "None")
                      << (n > 1 ? (in_dims[1] ? ", " + std::to_string(*in_dims[1]) : ", None") : "") << ", out_dim "
                      << out_dim);
          Tensor got = vmap([&](const std::vector<Tensor>& xs) { return std::vector<Tensor>{c.f(xs)}; }, in_dims,
                            {out_dim})(inputs)[0];
          const int64_t want_dim = out_dim < 0 ? out_dim + got.dim() : out_dim;
          Tensor want = loopReference(c.f, inputs, in_dims, want_dim);
          CHECK(!dk::func::maybeBatched(got));
          CHECK(sameTensor(got, want));
        }
      }
    }
  }
  dk::func::setVmapFallbackWarningEnabled(true);
}

TEST_CASE("vmap: nested levels give the doubly batched result", "[vmap]") {
  dk::func::setVmapFallbackWarningEnabled(false);
  // Outer over dim 0 of x, inner over dim 0 of y: out[i][j] = x[i] * y[j] + sum(x[i]).
  Tensor x = randomTensor({3, 4}, 7), y = randomTensor({2, 4}, 8);
  auto inner = [](const std::vector<Tensor>& xs) {
    return std::vector<Tensor>{dk::add(dk::mul(xs[0], xs[1]), dk::sum(xs[0]))};
  };
  auto outer = [&](const std::vector<Tensor>& xs) {
    CHECK(dk::func::currentVmapLevel() == 1);
    return vmap(inner, {std::nullopt, 0})({xs[0], xs[1]});
  };
  Tensor got = vmap(outer, {0, std::nullopt})({x, y})[0];
  REQUIRE(got.sizes() == std::vector<int64_t>{3, 2, 4});
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      Tensor want = dk::add(dk::mul(x.select(0, i), y.select(0, j)), dk::sum(x.select(0, i)));
      CHECK(sameTensor(got.select(0, i).select(0, j), want));
    }
  }
  CHECK(dk::func::currentVmapLevel() == 0);
  dk::func::setVmapFallbackWarningEnabled(true);
}

TEST_CASE("vmap: unmapped outputs are broadcast, out_dims None returns them as they are", "[vmap]") {
  Tensor x = randomTensor({4, 3}, 11);
  Tensor constant = randomTensor({3}, 12);
  auto f = [&](const std::vector<Tensor>& xs) { return std::vector<Tensor>{xs[0], constant}; };
  std::vector<Tensor> out = vmap(f, {0}, {1, 0})({x});
  CHECK(sameTensor(out[0], x.permute({1, 0})));
  REQUIRE(out[1].sizes() == std::vector<int64_t>{4, 3});
  for (int64_t i = 0; i < 4; ++i) CHECK(sameTensor(out[1].select(0, i), constant));
  std::vector<Tensor> kept = vmap(f, {0}, {0, std::nullopt})({x});
  CHECK(kept[1].is_same(constant));
}

TEST_CASE("vmap: an operator without a batching rule runs once per element and warns once", "[vmap]") {
  dk::testing::WarningCapture warnings;
  Tensor x = randomTensor({6, 3}, 21);
  auto f = [](const Tensor& t) { return dk::sum(t); };  // the whole-tensor sum has no rule
  Tensor got = vmap(std::function<Tensor(const Tensor&)>(f))(x);
  CHECK(sameTensor(got, dk::sum(x, {1})));
  vmap(std::function<Tensor(const Tensor&)>(f))(x);  // the second call does not warn again
  int sum_warnings = 0;
  for (const std::string& m : warnings.messages)
    if (m.find("dk::sum") != std::string::npos && m.find("no batching rule") != std::string::npos) ++sum_warnings;
  CHECK(sum_warnings == 1);
}

TEST_CASE("vmap: reductions, scans and sorts along dims run once for the batch (along_dims family)", "[vmap]") {
  dk::testing::WarningCapture warnings;
  Tensor x = randomTensor({3, 5, 4}, 22);  // examples [3, 4] along dim 1
  auto along = [](const std::vector<Tensor>& in) {
    const Tensor& t = in[0];
    auto [sorted, order] = dk::sort(t, -1, true);
    auto [top, top_indices] = dk::topk(t, 2, 0);
    auto [most, where] = dk::max(t, -2, true);
    return std::vector<Tensor>{dk::cumsum(t, 0), dk::sum(t, {-1}), dk::mean(t, {0, 1}, true), sorted, order,
                               top, where, dk::_softmax(t, 1, false), dk::argmin(t, 1)};
  };
  std::vector<Tensor> got = vmap(along, {1})({x});
  std::vector<std::vector<Tensor>> rows;
  for (int64_t i = 0; i < 5; ++i) rows.push_back(along({x.select(1, i)}));
  REQUIRE(got.size() == rows[0].size());
  for (size_t j = 0; j < got.size(); ++j) {
    std::vector<Tensor> column;
    for (const auto& r : rows) column.push_back(r[j]);
    INFO("result " << j);
    CHECK(sameTensor(got[j], dk::stack(column, 0)));
  }
  for (const std::string& m : warnings.messages) CHECK(m.find("no batching rule") == std::string::npos);
  // A dim of None (every dim) is the fallback's: the batch dim must not be reduced.
  auto all = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{dk::argmax(in[0])}; };
  dk::func::setVmapFallbackWarningEnabled(false);
  Tensor flat = vmap(all, {1})({x})[0];
  dk::func::setVmapFallbackWarningEnabled(true);
  for (int64_t i = 0; i < 5; ++i) CHECK(sameTensor(flat.select(0, i), dk::argmax(x.select(1, i))));
}

TEST_CASE("vmap: the scatters and the view copies have rules, mapped or not on each argument", "[vmap]") {
  dk::testing::WarningCapture warnings;
  Tensor base = randomTensor({4, 3, 5}, 24);  // examples [3, 5]
  Tensor rows = randomTensor({4, 3}, 25);     // examples [3]: a column of the example
  Tensor cols = randomTensor({4, 3, 2}, 26);  // examples [3, 2]: two columns
  auto scatter = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{dk::select_scatter(in[0], in[1], 1, 2), dk::slice_scatter(in[0], in[2], -1, 1, 5, 2),
                               dk::select_copy(in[0], -1, 0), dk::unbind_copy(in[0], 1)[3]};
  };
  const std::vector<std::vector<BatchDim>> choices = {{0, 0, 0}, {std::nullopt, 0, 0}, {0, std::nullopt, std::nullopt}};
  for (const auto& dims : choices) {
    std::vector<Tensor> inputs{dims[0] ? base : base.select(0, 0), dims[1] ? rows : rows.select(0, 0),
                               dims[2] ? cols : cols.select(0, 0)};
    std::vector<Tensor> got = vmap(scatter, dims)(inputs);
    for (size_t j = 0; j < got.size(); ++j) {
      std::vector<Tensor> column;
      for (int64_t i = 0; i < 4; ++i) {
        std::vector<Tensor> example;
        for (size_t k = 0; k < inputs.size(); ++k) example.push_back(dims[k] ? inputs[k].select(0, i) : inputs[k]);
        column.push_back(scatter(example)[j]);
      }
      INFO("result " << j);
      CHECK(sameTensor(got[j], dk::stack(column, 0)));
    }
  }
  for (const std::string& m : warnings.messages) CHECK(m.find("no batching rule") == std::string::npos);
}

TEST_CASE("vmap: in-place operators write through the batched input's value", "[vmap]") {
  dk::func::setVmapFallbackWarningEnabled(false);
  Tensor x = randomTensor({4, 3}, 31), y = randomTensor({4, 3}, 32);
  Tensor expected = dk::add(x, y);
  Tensor target = x.clone();
  vmap([](const std::vector<Tensor>& xs) { return std::vector<Tensor>{xs[0].add_(xs[1])}; }, {0})({target, y});
  CHECK(sameTensor(target, expected));
  // self not mapped while the other argument is: the batched values cannot go into it.
  Tensor small = randomTensor({3}, 33);
  auto bad = [](const std::vector<Tensor>& xs) { return std::vector<Tensor>{xs[0].add_(xs[1])}; };
  CHECK_THROWS_WITH(vmap(bad, {std::nullopt, 0})({small, y}),
                    Catch::Contains("vmap: dk::add_(self, *extra_args) is not possible because there exists a Tensor "
                                    "`other` in extra_args that has more elements than `self`") &&
                        Catch::Contains("not being vmapped over at level 1"));
  dk::func::setVmapFallbackWarningEnabled(true);
}

TEST_CASE("vmap: errors name the problem", "[vmap]") {
  dk::func::setVmapFallbackWarningEnabled(false);
  auto id = [](const std::vector<Tensor>& xs) { return std::vector<Tensor>{xs[0]}; };
  auto both = [](const std::vector<Tensor>& xs) { return std::vector<Tensor>{dk::add(xs[0], xs[1])}; };
  Tensor a = randomTensor({2, 3}, 41), b = randomTensor({4, 3}, 42);
  CHECK_THROWS_WITH(vmap(both)({a, b}), "vmap: Expected all tensors to have the same size in the mapped dimension, "
                                        "got sizes [2, 4] for the mapped dimension");
  CHECK_THROWS_WITH(vmap(id, {2})({a}), "vmap(f, in_dims=2, ...)(<inputs>): Got in_dim=2 for some input, but that "
                                        "input is a Tensor of dimensionality 2 so expected in_dim to satisfy -2 <= "
                                        "in_dim < 2.");
  CHECK_THROWS_WITH(vmap(id, {0, 0, 0})({a, b}), Catch::Contains("in_dims is not compatible with the structure of "
                                                                 "`inputs`"));
  CHECK_THROWS_WITH(vmap(id, {std::nullopt})({a}), Catch::Contains("at least one input must be mapped"));
  CHECK_THROWS_WITH(vmap(id)({}), Catch::Contains("got no inputs"));
  CHECK_THROWS_WITH(vmap(id, {0}, {std::nullopt})({a}),
                    Catch::Contains("f can not return a BatchedTensor when out_dim is None"));
  CHECK_THROWS_WITH(vmap(id, {0}, {3})({a}), Catch::Contains("out_dim"));
  CHECK(dk::func::currentVmapLevel() == 0);  // every error left its level
  CHECK_THROWS_WITH(dk::func::makeBatched(a, 2, 1), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(make_intrusive<dk::func::BatchedTensorImpl>(a, 5, 1), Catch::Contains("is not a dim of a value"));
  CHECK_THROWS_WITH(make_intrusive<dk::func::BatchedTensorImpl>(dk::func::makeBatched(a, 0, 1).select(0, 0), 0, 2),
                    Catch::Contains("is not a dim of a value of dimensionality 0"));
  // An operator whose result is not a tensor has no fallback.
  auto item = [](const std::vector<Tensor>& xs) {
    (void)dk::sum(xs[0]).item();
    return std::vector<Tensor>{xs[0]};
  };
  CHECK_THROWS_WITH(vmap(item)({a}), Catch::Contains("We could not generate a fallback"));
  dk::func::setVmapFallbackWarningEnabled(true);
}

TEST_CASE("vmap: the pointwise batching rule runs an operator once for the batch, with the loop's values",
          "[vmap]") {
  // The YAML's pointwise family (generated/RegisterBatching.cpp) registers the rule for these.
  dk::testing::WarningCapture warnings;
  auto op = std::make_shared<OpCounter>();
  const int64_t batch = 4;
  struct Case {
    const char* name;
    std::function<Tensor(const std::vector<Tensor>&)> f;
    std::vector<std::vector<int64_t>> sizes;  // per input, without the batch dim
    std::vector<BatchDim> in_dims;
  };
  const std::vector<Case> cases = {
      {"same shapes", [](const std::vector<Tensor>& x) { return dk::add(x[0], x[1]); }, {{3, 2}, {3, 2}}, {0, 1}},
      {"ranks differ", [](const std::vector<Tensor>& x) { return dk::mul(x[0], x[1]); }, {{3, 2}, {2}}, {2, 0}},
      {"lower rank batched", [](const std::vector<Tensor>& x) { return dk::mul(x[0], x[1]); }, {{2}, {3, 2}}, {0, 0}},
      {"unbatched operand", [](const std::vector<Tensor>& x) { return dk::add(x[0], x[1]); }, {{2}, {3, 2}},
       {0, std::nullopt}},
      {"unbatched higher rank", [](const std::vector<Tensor>& x) { return dk::mul(x[0], x[1]); }, {{3, 2}, {5, 3, 2}},
       {-1, std::nullopt}},
      {"unary", [](const std::vector<Tensor>& x) { return dk::exp(x[0]); }, {{2, 3}}, {1}},
      {"logical scalars", [](const std::vector<Tensor>& x) { return dk::add(x[0], x[1]); }, {{}, {}}, {0, 0}},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c.sizes.size(); ++i) {
      std::vector<int64_t> sizes = c.sizes[i];
      if (c.in_dims[i]) {
        const auto rank = static_cast<int64_t>(sizes.size()) + 1;
        const int64_t d = *c.in_dims[i] < 0 ? *c.in_dims[i] + rank : *c.in_dims[i];
        sizes.insert(sizes.begin() + d, batch);
      }
      inputs.push_back(randomTensor(sizes, seed++));
    }
    std::vector<BatchDim> wrapped_dims = c.in_dims;
    for (BatchDim& d : wrapped_dims)
      if (d && *d < 0) *d += static_cast<int64_t>(inputs[static_cast<size_t>(&d - wrapped_dims.data())].dim());
    Tensor got;
    {
      DispatchModeGuard counting(op);
      got = vmap([&](const std::vector<Tensor>& xs) { return std::vector<Tensor>{c.f(xs)}; }, c.in_dims)(inputs)[0];
    }
    CHECK(sameTensor(got, loopReference(c.f, inputs, wrapped_dims, 0)));
  }
  // One call of each operator per vmap call (the rule), never one per batch element.
  CHECK(op->count("dk::add.Tensor") == 3);
  CHECK(op->count("dk::mul.Tensor") == 3);
  CHECK(op->count("dk::exp") == 1);
  for (const std::string& m : warnings.messages) CHECK(m.find("no batching rule") == std::string::npos);
  // In place: written through self's value.
  Tensor x = randomTensor({4, 3}, 200), y = randomTensor({3}, 201);
  Tensor expected = dk::add(x, y);
  vmap([](const std::vector<Tensor>& xs) { return std::vector<Tensor>{xs[0].add_(xs[1])}; }, {0, std::nullopt})({x, y});
  CHECK(sameTensor(x, expected));
  // Nested: the inner level's rule calls the operator on the outer level's tensors, whose rule
  // runs it once more.
  Tensor a = randomTensor({3, 2}, 202), b = randomTensor({5, 2}, 203);
  auto inner = [](const std::vector<Tensor>& xs) { return std::vector<Tensor>{dk::mul(xs[0], xs[1])}; };
  Tensor nested = vmap([&](const std::vector<Tensor>& xs) { return vmap(inner, {std::nullopt, 0})(xs); },
                       {0, std::nullopt})({a, b})[0];
  REQUIRE(nested.sizes() == std::vector<int64_t>{3, 5, 2});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) CHECK(sameTensor(nested.select(0, i).select(0, j), dk::mul(a.select(0, i), b.select(0, j))));
}

TEST_CASE("vmap: random operators follow the randomness policy (Note [vmap randomness])") {
  using dk::func::Randomness;
  const Tensor xs = dk::ones({4, 3}, kDouble);
  auto rows_equal = [](const Tensor& t) {
    for (int64_t r = 1; r < t.size(0); ++r)
      if (read(t.select(0, r)) != read(t.select(0, 0))) return false;
    return true;
  };
  auto rows_distinct = [](const Tensor& t) {
    for (int64_t r = 0; r < t.size(0); ++r)
      for (int64_t q = 0; q < r; ++q)
        if (read(t.select(0, r)) == read(t.select(0, q))) return false;
    return true;
  };
  auto add_noise = [](const Tensor& x) { return dk::add(x, dk::rand({3}, kDouble)); };
  // Error, functorch's default, names the operator; the level is left.
  CHECK_THROWS_WITH(vmap(add_noise)(xs), Catch::Contains("vmap: called random operation while in randomness error "
                                                         "mode") && Catch::Contains("dk::rand"));
  CHECK(dk::func::currentVmapLevel() == 0);
  CHECK_THROWS_WITH(vmap([](const Tensor& x) { return dk::dropout(x, 0.5, true); })(xs),
                    Catch::Contains("randomness error mode"));
  // Same: one draw for the whole batch; Different: one per example.
  const Tensor same = vmap(add_noise, 0, 0, Randomness::Same)(xs);
  REQUIRE(same.sizes() == std::vector<int64_t>{4, 3});
  CHECK(rows_equal(same));
  const Tensor different = vmap(add_noise, 0, 0, Randomness::Different)(xs);
  REQUIRE(different.sizes() == std::vector<int64_t>{4, 3});
  CHECK(rows_distinct(different));
  for (double v : read(different)) CHECK((v >= 1.0 && v < 2.0));
  // A factory alone: Different gives a batched draw, Same one that vmap broadcasts.
  auto noise = [](const Tensor&) { return dk::randn({3}, kDouble); };
  CHECK(rows_distinct(vmap(noise, 0, 0, Randomness::Different)(xs)));
  CHECK(rows_equal(vmap(noise, 0, 0, Randomness::Same)(xs)));
  // dropout decomposes into a rand of the example's shape, which follows the policy.
  const Tensor wide = dk::ones({4, 64}, kDouble);
  auto drop = [](const Tensor& x) { return dk::dropout(x, 0.5, true); };
  const Tensor shared = vmap(drop, 0, 0, Randomness::Same)(wide);
  CHECK(rows_equal(shared));
  const Tensor own = vmap(drop, 0, 0, Randomness::Different)(wide);
  CHECK(rows_distinct(own));
  for (double v : read(own)) CHECK((v == 0.0 || v == 2.0));
  // dropout of an unmapped tensor: Different still gives each example its own mask.
  dk::func::TensorsFn drop_shared_input = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{dk::dropout(in[1], 0.5, true)};
  };
  const Tensor per_example_masks =
      vmap(drop_shared_input, {0, std::nullopt}, {0}, Randomness::Different)({wide, dk::ones({64}, kDouble)})[0];
  REQUIRE(per_example_masks.sizes() == std::vector<int64_t>{4, 64});
  CHECK(rows_distinct(per_example_masks));
  // Nested: each Different level adds its batch dim in front of the draw.
  const Tensor grid = dk::ones({2, 4, 3}, kDouble);
  const Tensor nested = vmap(vmap(add_noise, 0, 0, Randomness::Different), 0, 0, Randomness::Different)(grid);
  REQUIRE(nested.sizes() == std::vector<int64_t>{2, 4, 3});
  CHECK(rows_distinct(nested.reshape({8, 3})));
  // Outer Same, inner Different: the draw differs along the inner batch only.
  const Tensor inner_only = vmap(vmap(add_noise, 0, 0, Randomness::Different), 0, 0, Randomness::Same)(grid);
  CHECK(rows_equal(inner_only));  // the two outer examples agree
  CHECK(rows_distinct(inner_only.select(0, 0)));
}
