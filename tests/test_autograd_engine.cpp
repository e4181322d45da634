// The autograd runtime and engine, tested on graphs built by hand: the differentiable
// operations below (scale, mul, add, sum) compute their forward below autograd and record
// hand-written nodes, so nothing here depends on generated autograd kernels. The kernels used
// are dk::add, dk::mul, dk::ones_like, dk::zeros_like, dk::full and dk::sum.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "dk/autograd/autograd.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/generated/ops/add.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/mul.h"
#include "dk/generated/ops/ones_like.h"
#include "dk/generated/ops/sum.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/util/error.h"

using namespace dk;
using namespace dk::autograd;

namespace {

std::vector<float> values(const Tensor& t) {
  REQUIRE(t.defined());
  REQUIRE(t.dtype() == ScalarType::Float);
  REQUIRE(t.is_contiguous());
  const float* data = t.data_ptr<float>();
  return std::vector<float>(data, data + t.numel());
}

Tensor filled(std::vector<int64_t> sizes, double value) { return dk::full(sizes, value, ScalarType::Float); }

Tensor leaf23(bool requires_grad = true) {
  Tensor x = dk::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  if (requires_grad) x.requires_grad_();
  return x;
}

// ---- hand-written differentiable operations

// y = x * c
class ScaleBackward final : public Node {
 public:
  explicit ScaleBackward(double c, int* runs) : c_(c), runs_(runs) {}
  variable_list apply(variable_list grads) override {
    if (runs_ != nullptr) ++*runs_;
    const Tensor& g = grads.at(0);
    return {dk::mul(g, dk::full(g.sizes(), c_, g.dtype()))};
  }

 private:
  double c_;
  int* runs_;
};

Tensor ad_scale(const Tensor& x, double c, int* runs = nullptr) {
  Tensor out;
  {
    AutoDispatchBelowADInplaceOrView below;
    out = dk::mul(x, dk::full(x.sizes(), c, x.dtype()));
  }
  if (compute_requires_grad(x)) {
    auto node = std::make_shared<ScaleBackward>(c, runs);
    node->set_next_edges(collect_next_edges(x));
    set_history(out, node);
  }
  return out;
}

// z = a * b, saving both inputs.
class MulBackward0 final : public Node {
 public:
  variable_list apply(variable_list grads) override {
    const Tensor& g = grads.at(0);
    variable_list out(2);
    if (should_compute_output(0)) out[0] = dk::mul(g, other_.unpack());
    if (should_compute_output(1)) out[1] = dk::mul(g, self_.unpack());
    return out;
  }
  void release_variables() override {
    self_.reset_data();
    other_.reset_data();
  }
  std::string name() const override { return "MulBackward0"; }

  SavedVariable self_;
  SavedVariable other_;
};

Tensor ad_mul(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    AutoDispatchBelowADInplaceOrView below;
    out = dk::mul(a, b);
  }
  if (compute_requires_grad(a, b)) {
    auto node = std::make_shared<MulBackward0>();
    node->set_next_edges(collect_next_edges(a, b));
    node->self_ = SavedVariable(a, false);
    node->other_ = SavedVariable(b, false);
    set_history(out, node);
  }
  return out;
}

// z = a + b
class AddBackward0 final : public Node {
 public:
  variable_list apply(variable_list grads) override { return {grads.at(0), grads.at(0)}; }
};

Tensor ad_add(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    AutoDispatchBelowADInplaceOrView below;
    out = dk::add(a, b);
  }
  if (compute_requires_grad(a, b)) {
    auto node = std::make_shared<AddBackward0>();
    node->set_next_edges(collect_next_edges(a, b));
    set_history(out, node);
  }
  return out;
}

// s = sum(x), a 0-dim tensor
class SumBackward0 final : public Node {
 public:
  explicit SumBackward0(std::vector<int64_t> sizes) : sizes_(std::move(sizes)) {}
  variable_list apply(variable_list grads) override {
    const Tensor& g = grads.at(0);
    return {dk::mul(dk::full(sizes_, 1.0, g.dtype()), g)};
  }

 private:
  std::vector<int64_t> sizes_;
};

Tensor ad_sum(const Tensor& x) {
  Tensor out;
  {
    AutoDispatchBelowADInplaceOrView below;
    out = dk::sum(x);
  }
  if (compute_requires_grad(x)) {
    auto node = std::make_shared<SumBackward0>(x.sizes());
    node->set_next_edges(collect_next_edges(x));
    set_history(out, node);
  }
  return out;
}

// A node that returns whatever it was built to return, for the validation errors.
class FixedBackward final : public Node {
 public:
  FixedBackward(std::string name, variable_list result) : name_(std::move(name)), result_(std::move(result)) {}
  variable_list apply(variable_list /*grads*/) override { return result_; }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  variable_list result_;
};

// y = x, with a backward made of `node`; y's value is a copy of x's (no kernel involved).
Tensor with_node(const Tensor& x, const std::shared_ptr<Node>& node) {
  Tensor out = dk::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  node->set_next_edges(collect_next_edges(x));
  set_history(out, node);
  return out;
}

const std::vector<float> k23Ones = {1, 1, 1, 1, 1, 1};

}  // namespace

TEST_CASE("autograd engine: requires_grad_ flags and their errors") {
  Tensor x = leaf23(false);
  CHECK_FALSE(x.requires_grad());
  CHECK(x.is_leaf());
  CHECK_FALSE(x.grad().defined());
  CHECK(x.grad_fn() == nullptr);

  CHECK(&x.requires_grad_() == &x);
  CHECK(x.requires_grad());
  CHECK(x.is_leaf());
  x.requires_grad_(false);
  CHECK_FALSE(x.requires_grad());

  Tensor i = dk::tensor({1, 2, 3});
  CHECK_THROWS_WITH(i.requires_grad_(), "only Tensors of floating point dtype can require gradients");
  CHECK_NOTHROW(i.requires_grad_(false));

  x.requires_grad_();
  auto node = std::make_shared<FixedBackward>("IdentityBackward", variable_list{});
  Tensor y = with_node(x, node);
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
  CHECK(y.grad_fn() == node);
  CHECK(y.output_nr() == 0);
  CHECK(node->num_inputs() == 1);
  CHECK(node->next_edge(0).function == grad_accumulator(x));
  CHECK(node->next_edge(0).function->name() == "AccumulateGrad");
  CHECK_NOTHROW(y.requires_grad_(true));
  CHECK_THROWS_WITH(y.requires_grad_(false), "you can only change requires_grad flags of leaf variables.");
  CHECK_THROWS_WITH(i.register_hook([](const Tensor&) { return Tensor(); }),
                    "cannot register a hook on a tensor that doesn't require gradient");
  CHECK_THROWS_WITH(i.retain_grad(), "can't retain_grad on Tensor that has requires_grad=False");
}

TEST_CASE("autograd engine: the grad accumulator is shared while a graph holds it") {
  Tensor x = leaf23();
  std::shared_ptr<Node> first = grad_accumulator(x);
  CHECK(grad_accumulator(x) == first);
  std::weak_ptr<Node> weak = first;
  first.reset();
  CHECK(weak.expired());  // the leaf holds its accumulator weakly
  CHECK(grad_accumulator(leaf23(false)) == nullptr);
  CHECK_FALSE(gradient_edge(leaf23(false)).is_valid());
}

TEST_CASE("autograd engine: gradients accumulate over two backward passes") {
  Tensor x = leaf23();
  ad_sum(ad_scale(x, 3.0)).backward();
  CHECK(values(x.grad()) == std::vector<float>{3, 3, 3, 3, 3, 3});
  CHECK_FALSE(x.grad().requires_grad());
  ad_sum(ad_scale(x, 2.0)).backward();
  CHECK(values(x.grad()) == std::vector<float>{5, 5, 5, 5, 5, 5});

  // A non-scalar output with an explicit gradient.
  x.mutable_grad() = Tensor();
  ad_scale(x, 2.0).backward(dk::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}));
  CHECK(values(x.grad()) == std::vector<float>{2, 4, 6, 8, 10, 12});
}

TEST_CASE("autograd engine: implicit gradients and root errors") {
  Tensor x = leaf23();
  Tensor y = ad_scale(x, 2.0);
  CHECK_THROWS_WITH(y.backward(), "grad can be implicitly created only for scalar outputs");
  CHECK_THROWS_WITH(y.backward(dk::tensor({1.0, 2.0, 3.0})),
                    "Mismatch in shape: grad_output[0] has a shape of [3] and output[0] has a shape of [2, 3].");
  Tensor plain = leaf23(false);
  CHECK_THROWS_WITH(ad_sum(plain).backward(), "element 0 of tensors does not require grad and does not have a grad_fn");
  CHECK_THROWS_WITH(autograd::backward({y, ad_sum(y)}, {dk::ones_like(y)}), "got 2 tensors and 1 gradients");

  // A leaf as the root: its own gradient is ones.
  Tensor scalar = dk::tensor(2.0);
  scalar.requires_grad_();
  scalar.backward();
  CHECK(values(scalar.grad()) == std::vector<float>{1});
}

TEST_CASE("autograd engine: retain_graph and the second-backward error") {
  Tensor x = leaf23();
  Tensor w = dk::tensor({{2.0, 2.0, 2.0}, {3.0, 3.0, 3.0}});
  Tensor s = ad_sum(ad_mul(x, w));
  s.backward({}, /*retain_graph=*/true);
  CHECK(values(x.grad()) == std::vector<float>{2, 2, 2, 3, 3, 3});
  s.backward();  // frees the saved variables
  CHECK(values(x.grad()) == std::vector<float>{4, 4, 4, 6, 6, 6});
  CHECK_THROWS_WITH(s.backward(), ERR_BACKWARD_TWICE);
  CHECK(std::string(ERR_BACKWARD_TWICE) ==
        "Trying to backward through the graph a second time (or directly access saved tensors after they have "
        "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
        "you need to access saved tensors after calling backward.");
  // grad() frees the graph the same way.
  Tensor t = ad_sum(ad_mul(x, w));
  CHECK(values(autograd::grad({t}, {x})[0]) == std::vector<float>{2, 2, 2, 3, 3, 3});
  CHECK_THROWS_WITH(autograd::grad({t}, {x}), ERR_BACKWARD_TWICE);
}

TEST_CASE("autograd engine: a shared subgraph gets its gradients summed, each node runs once") {
  Tensor x = leaf23();
  int shared_runs = 0, left_runs = 0, right_runs = 0;
  Tensor h = ad_scale(x, 1.0, &shared_runs);  // the shared part
  Tensor a = ad_scale(h, 2.0, &left_runs);
  Tensor b = ad_scale(h, 3.0, &right_runs);
  Tensor s = ad_sum(ad_add(a, b));
  s.backward();
  CHECK(values(x.grad()) == std::vector<float>{5, 5, 5, 5, 5, 5});
  CHECK(shared_runs == 1);
  CHECK(left_runs == 1);
  CHECK(right_runs == 1);

  // The same tensor used twice by one node: both gradients reach one accumulator.
  Tensor y = leaf23();
  ad_sum(ad_mul(y, y)).backward();
  CHECK(values(y.grad()) == std::vector<float>{2, 4, 6, 8, 10, 12});
}

TEST_CASE("autograd engine: grad() returns gradients without touching .grad") {
  Tensor x = leaf23();
  int x_to_h_runs = 0;
  Tensor h = ad_scale(x, 2.0, &x_to_h_runs);  // 2, 4, 6, ...
  Tensor s = ad_sum(ad_mul(h, h));
  variable_list gh = autograd::grad({s}, {h}, {}, /*retain_graph=*/true);
  REQUIRE(gh.size() == 1);
  CHECK(values(gh[0]) == std::vector<float>{4, 8, 12, 16, 20, 24});
  CHECK(x_to_h_runs == 0);  // h's grad_fn only captures: nothing below it runs
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(h.grad().defined());

  variable_list both = autograd::grad({s}, {x, h}, {}, /*retain_graph=*/true);
  CHECK(values(both[0]) == std::vector<float>{8, 16, 24, 32, 40, 48});
  CHECK(values(both[1]) == std::vector<float>{4, 8, 12, 16, 20, 24});
  CHECK(x_to_h_runs == 1);
  CHECK_FALSE(x.grad().defined());

  Tensor unused = leaf23();
  CHECK_THROWS_WITH(autograd::grad({s}, {unused}, {}, true),
                    "One of the differentiated Tensors appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior.");
  variable_list maybe = autograd::grad({s}, {x, unused}, {}, true, false, /*allow_unused=*/true);
  CHECK(maybe[0].defined());
  CHECK_FALSE(maybe[1].defined());
  CHECK_THROWS_WITH(autograd::grad({s}, {leaf23(false)}), "One of the differentiated Tensors does not require grad");
  CHECK_THROWS_WITH(autograd::grad({s}, {}), "grad requires non-empty inputs.");

  // With an explicit grad_output on a non-scalar output.
  Tensor y = ad_scale(x, 3.0);
  variable_list gx = autograd::grad({y}, {x}, {filled({2, 3}, 2.0)});
  CHECK(values(gx[0]) == std::vector<float>{6, 6, 6, 6, 6, 6});
}

TEST_CASE("autograd engine: tensor hooks see and replace gradients") {
  Tensor x = leaf23();
  Tensor y = ad_scale(x, 2.0);
  std::vector<std::string> order;
  std::vector<float> seen_by_y;
  y.register_hook([&](const Tensor& g) {
    order.push_back("y");
    seen_by_y = values(g);
    return dk::mul(g, filled({2, 3}, 10.0));  // y's gradient becomes 10
  });
  unsigned removed = y.register_hook([&](const Tensor&) {
    order.push_back("removed");
    return Tensor();
  });
  y.register_hook([&](const Tensor&) {
    order.push_back("y keeps");
    return Tensor();  // leaves the gradient unchanged
  });
  y.remove_hook(removed);
  x.register_hook([&](const Tensor& g) {
    order.push_back("x");
    return dk::add(g, filled({2, 3}, 1.0));  // x's gradient + 1
  });
  ad_sum(y).backward();
  CHECK(order == std::vector<std::string>{"y", "y keeps", "x"});
  CHECK(seen_by_y == k23Ones);
  CHECK(values(x.grad()) == std::vector<float>{21, 21, 21, 21, 21, 21});
  CHECK_THROWS_WITH(y.remove_hook(7), "Invalid index, no hook at position 7");

  // Hooks run in grad() too, before the gradient is captured; .grad stays untouched.
  order.clear();
  x.mutable_grad() = Tensor();
  variable_list gx = autograd::grad({ad_sum(ad_scale(x, 2.0))}, {x});
  CHECK(order == std::vector<std::string>{"x"});
  CHECK(values(gx[0]) == std::vector<float>{3, 3, 3, 3, 3, 3});
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("autograd engine: retain_grad keeps the gradient of a non-leaf") {
  Tensor x = leaf23();
  Tensor y = ad_scale(x, 2.0);
  CHECK_FALSE(y.retains_grad());
  y.register_hook([](const Tensor& g) { return dk::mul(g, filled({2, 3}, 3.0)); });
  y.retain_grad();
  y.retain_grad();  // twice is once
  CHECK(y.retains_grad());
  Tensor s = ad_sum(y);
  s.backward({}, /*retain_graph=*/true);
  CHECK(values(y.grad()) == std::vector<float>{3, 3, 3, 3, 3, 3});  // after y's hook
  CHECK(values(x.grad()) == std::vector<float>{6, 6, 6, 6, 6, 6});
  s.backward();
  CHECK(values(y.grad()) == std::vector<float>{6, 6, 6, 6, 6, 6});  // accumulated

  // A leaf keeps its grad anyway: retain_grad changes nothing.
  x.retain_grad();
  CHECK_FALSE(x.retains_grad());
  // A non-leaf that does not retain has no grad.
  Tensor z = ad_scale(x, 2.0);
  ad_sum(z).backward();
  CHECK_FALSE(z.grad().defined());
}

TEST_CASE("autograd engine: no_grad leaves graphs unbuilt") {
  Tensor x = leaf23();
  Tensor y;
  {
    NoGradGuard no_grad;
    CHECK_FALSE(compute_requires_grad(x));
    y = ad_scale(x, 2.0);
  }
  CHECK(compute_requires_grad(x));
  CHECK_FALSE(y.requires_grad());
  CHECK(y.grad_fn() == nullptr);
  CHECK(y.is_leaf());
  CHECK_THROWS_WITH(ad_sum(y).backward(), "element 0 of tensors does not require grad and does not have a grad_fn");
}

TEST_CASE("autograd engine: backward runs with grad mode off unless create_graph") {
  class ModeProbe final : public Node {
   public:
    explicit ModeProbe(bool* seen) : seen_(seen) {}
    variable_list apply(variable_list grads) override {
      *seen_ = GradMode::is_enabled();
      return {grads.at(0)};
    }

   private:
    bool* seen_;
  };
  Tensor x = leaf23();
  bool seen = true;
  with_node(x, std::make_shared<ModeProbe>(&seen)).backward(filled({2, 3}, 1.0));
  CHECK_FALSE(seen);
  with_node(x, std::make_shared<ModeProbe>(&seen)).backward(filled({2, 3}, 1.0), std::nullopt, /*create_graph=*/true);
  CHECK(seen);
  CHECK(GradMode::is_enabled());
}

TEST_CASE("autograd engine: a saved variable modified in place raises the version error") {
  Tensor x = leaf23();
  Tensor c = filled({2, 3}, 2.0);
  Tensor a = ad_mul(x, c);  // output 0 of MulBackward0
  a.unsafeGetTensorImpl()->bump_version();  // version 1 when saved below
  Tensor s = ad_sum(ad_mul(a, x));  // saves a, which x's gradient needs
  a.unsafeGetTensorImpl()->bump_version();  // "modified in place" after the save
  CHECK_THROWS_WITH(s.backward(),
                    "one of the variables needed for gradient computation has been modified by an inplace operation: "
                    "[Float [2, 3]], which is output 0 of MulBackward0, is at version 2; expected version 1 instead.");

  // A leaf has no grad_fn to name.
  Tensor other = leaf23();
  Tensor t = ad_sum(ad_mul(x, other));  // saves x, which other's gradient needs
  x.unsafeGetTensorImpl()->bump_version();
  CHECK_THROWS_WITH(t.backward(),
                    "one of the variables needed for gradient computation has been modified by an inplace operation: "
                    "[Float [2, 3]] is at version 1; expected version 0 instead.");
}

TEST_CASE("autograd engine: saved variables") {
  SavedVariable empty;
  CHECK_FALSE(empty.unpack().defined());
  empty.reset_data();
  CHECK_FALSE(empty.unpack().defined());
  CHECK_FALSE(SavedVariable(Tensor(), false).unpack().defined());

  Tensor x = leaf23();
  SavedVariable input(x, false);
  CHECK(input.unpack().is_same(x));
  input.reset_data();
  CHECK(input.was_released());
  CHECK_THROWS_WITH(input.unpack(), ERR_BACKWARD_TWICE);

  // An output is saved without its grad_fn (no cycle) and gets it back on unpack.
  auto node = std::make_shared<FixedBackward>("OwnerBackward", variable_list{Tensor()});
  std::weak_ptr<Node> weak_node = node;
  {
    Tensor y = with_node(x, node);
    auto saved = std::make_shared<SavedVariable>(y, /*is_output=*/true);
    Tensor unpacked = saved->unpack(node);
    CHECK_FALSE(unpacked.is_same(y));
    CHECK(unpacked.unsafeGetTensorImpl()->storage().data() == y.unsafeGetTensorImpl()->storage().data());
    CHECK(unpacked.grad_fn() == node);
    CHECK(unpacked.output_nr() == 0);
    CHECK(saved->unpack().grad_fn() == node);  // through the weak reference while the node lives
    y.unsafeGetTensorImpl()->bump_version();     // the alias shares the version counter
    CHECK_THROWS_WITH(saved->unpack(node),
                      "one of the variables needed for gradient computation has been modified by an inplace "
                      "operation: [Float [2, 3]], which is output 0 of OwnerBackward, is at version 1; expected "
                      "version 0 instead.");
  }
  node.reset();
  CHECK(weak_node.expired());
}

TEST_CASE("autograd engine: NotImplementedNode raises when backward reaches it") {
  Tensor x = leaf23();
  Tensor y = with_node(x, std::make_shared<NotImplementedNode>("dk::frobnicate"));
  CHECK(y.grad_fn()->name() == "NotImplemented");
  CHECK_THROWS_AS(y.backward(filled({2, 3}, 1.0)), NotImplementedError);
  CHECK_THROWS_WITH(y.backward(filled({2, 3}, 1.0)), "derivative for dk::frobnicate is not implemented");
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("autograd engine: gradients are checked against what the next node expects") {
  Tensor x = leaf23();
  Tensor wrong_shape =
      with_node(x, std::make_shared<FixedBackward>("BadShapeBackward", variable_list{dk::tensor({1.0, 2.0, 3.0, 4.0})}));
  CHECK_THROWS_WITH(wrong_shape.backward(filled({2, 3}, 1.0)),
                    "Function BadShapeBackward returned an invalid gradient at index 0 - got [4] but expected shape "
                    "compatible with [2, 3]");
  Tensor wrong_count = with_node(x, std::make_shared<FixedBackward>("TwoBackward", variable_list{Tensor(), Tensor()}));
  CHECK_THROWS_WITH(wrong_count.backward(filled({2, 3}, 1.0)),
                    "Function TwoBackward returned an invalid number of gradients - expected 1, but got 2");
  // A gradient the expected shape broadcasts to is summed down to it.
  Tensor broadcast =
      with_node(x, std::make_shared<FixedBackward>("BroadcastBackward", variable_list{filled({4, 2, 3}, 1.0)}));
  broadcast.backward(filled({2, 3}, 1.0));
  CHECK(x.grad().sizes() == std::vector<int64_t>{2, 3});
  CHECK(values(x.grad()) == std::vector<float>{4, 4, 4, 4, 4, 4});
  // An undefined gradient is skipped.
  x.mutable_grad() = Tensor();
  with_node(x, std::make_shared<FixedBackward>("NothingBackward", variable_list{Tensor()})).backward(filled({2, 3}, 1.0));
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("autograd engine: execute() runs a graph of nodes without tensors") {
  // root -> (a, b) -> leaf accumulator: the engine sums at the leaf, later nodes first.
  std::vector<std::string> order;
  class Recorder final : public Node {
   public:
    Recorder(std::string label, std::vector<std::string>* order, edge_list next)
        : Node(std::move(next)), label_(std::move(label)), order_(order) {}
    variable_list apply(variable_list grads) override {
      order_->push_back(label_);
      return variable_list(num_outputs(), grads.at(0));
    }

   private:
    std::string label_;
    std::vector<std::string>* order_;
  };
  Tensor x = leaf23();
  Edge leaf = gradient_edge(x);
  auto a = std::make_shared<Recorder>("a", &order, edge_list{leaf});
  auto b = std::make_shared<Recorder>("b", &order, edge_list{leaf});
  auto root = std::make_shared<Recorder>("root", &order, edge_list{Edge(a, 0), Edge(b, 0)});
  CHECK(b->sequence_nr() > a->sequence_nr());
  execute({Edge(root, 0)}, {filled({2, 3}, 1.0)}, /*keep_graph=*/false, /*create_graph=*/false);
  CHECK(order == std::vector<std::string>{"root", "b", "a"});
  CHECK(values(x.grad()) == std::vector<float>{2, 2, 2, 2, 2, 2});

  // Capture mode: the gradient arriving at a's input, with nothing below a run.
  order.clear();
  variable_list captured = execute({Edge(root, 0)}, {filled({2, 3}, 3.0)}, false, false, {Edge(a, 0)});
  CHECK(order == std::vector<std::string>{"root"});
  CHECK(values(captured.at(0)) == std::vector<float>{3, 3, 3, 3, 3, 3});
}

TEST_CASE("autograd engine: a long chain of nodes is freed without recursion") {
  class Link final : public Node {
   public:
    using Node::Node;
    variable_list apply(variable_list grads) override { return grads; }
  };
  std::shared_ptr<Node> head = std::make_shared<Link>();
  std::weak_ptr<Node> tail = head;
  for (int i = 0; i < 200000; ++i) head = std::make_shared<Link>(edge_list{Edge(std::move(head), 0)});
  head.reset();
  CHECK(tail.expired());
}

TEST_CASE("autograd engine: rebase_history moves retain_grad and leaves earlier hooks behind") {
  // y = 2x, then "y *= 5 in place": y's history is rebased onto a new node.
  Tensor x = leaf23();
  Tensor y = ad_scale(x, 2.0);
  y.retain_grad();
  std::vector<std::vector<float>> before, after;
  y.register_hook([&](const Tensor& g) {
    before.push_back(values(g));
    return Tensor();
  });
  auto inplace = std::make_shared<ScaleBackward>(5.0, nullptr);
  inplace->set_next_edges(collect_next_edges(y));  // to y's old grad_fn
  check_inplace(y);
  rebase_history(y, inplace);
  CHECK(y.grad_fn() == inplace);
  y.register_hook([&](const Tensor& g) {
    after.push_back(values(g));
    return Tensor();
  });
  ad_sum(y).backward();
  CHECK(after == std::vector<std::vector<float>>{k23Ones});                           // the new value's gradient
  CHECK(before == std::vector<std::vector<float>>{{5, 5, 5, 5, 5, 5}});               // the old value's gradient
  CHECK(values(y.grad()) == k23Ones);                                                // retain_grad moved along
  CHECK(values(x.grad()) == std::vector<float>{10, 10, 10, 10, 10, 10});

  CHECK_THROWS_WITH(check_inplace(x), "a leaf Variable that requires grad is being used in an in-place operation.");
  NoGradGuard no_grad;
  CHECK_NOTHROW(check_inplace(x));
}

TEST_CASE("autograd engine: several roots, a root as input, and a reentrant backward") {
  Tensor z = leaf23();
  Tensor h = ad_scale(z, 2.0);
  autograd::backward({ad_sum(h), ad_sum(ad_scale(h, 3.0))});
  CHECK(values(z.grad()) == std::vector<float>{8, 8, 8, 8, 8, 8});

  Tensor y = ad_scale(z, 2.0);
  variable_list gy = autograd::grad({y}, {y}, {filled({2, 3}, 4.0)});
  CHECK(values(gy[0]) == std::vector<float>{4, 4, 4, 4, 4, 4});

  // A node that runs a forward and backward of its own, as activation checkpointing does.
  class Reentrant final : public Node {
   public:
    explicit Reentrant(Tensor inner) : inner_(std::move(inner)) {}
    variable_list apply(variable_list grads) override {
      AutoGradMode enable_grad(true);
      ad_sum(ad_scale(inner_, 7.0)).backward();
      return {grads.at(0)};
    }

   private:
    Tensor inner_;
  };
  Tensor x = leaf23();
  Tensor inner = leaf23();
  with_node(x, std::make_shared<Reentrant>(inner)).backward(filled({2, 3}, 1.0));
  CHECK(values(inner.grad()) == std::vector<float>{7, 7, 7, 7, 7, 7});
  CHECK(values(x.grad()) == k23Ones);
  CHECK(GradMode::is_enabled());

  // create_graph keeps the graph by default.
  Tensor s = ad_sum(ad_mul(z, z));
  s.backward({}, std::nullopt, /*create_graph=*/true);
  CHECK_NOTHROW(s.backward());
  CHECK_THROWS_WITH(s.backward(), ERR_BACKWARD_TWICE);

  // An integer output keeps its place among the node's inputs but gets no history.
  Tensor long_out = dk::tensor({1, 2});
  auto node = std::make_shared<AddBackward0>();
  set_history(long_out, node);
  CHECK(node->num_inputs() == 1);
  CHECK_FALSE(long_out.requires_grad());
  CHECK(long_out.grad_fn() == nullptr);
}
