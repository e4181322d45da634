// dk::optim::SGD and dk::optim::Adam: three (or five) steps on sum(c * p^2) from the same start
// as PyTorch 1.13.1's torch.optim, whose parameter values are the expected ones below; option
// checks; zero_grad.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <vector>

#include "dk/dk.h"
#include "kernel_test_util.h"

using namespace dk;
using namespace dk::test;

namespace {

Values run(const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make_optimizer,
           int steps = 3) {
  Tensor p = make({1.0, -2.0, 3.0}, {3}, kDouble).requires_grad_();
  Tensor c = make({1.0, 2.0, 0.5}, {3}, kDouble);
  auto opt = make_optimizer({p});
  for (int i = 0; i < steps; ++i) {
    opt->zero_grad();
    dk::sum(dk::mul(dk::mul(p, p), c)).backward();
    opt->step();
  }
  return read(p);
}

}  // namespace

TEST_CASE("optim: SGD matches torch.optim.SGD") {
  CHECK(sameValues(run([](std::vector<Tensor> ps) { return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1)); }),
                   {0.512, -0.432, 2.187}, 1e-12));
  CHECK(sameValues(run([](std::vector<Tensor> ps) {
                     return std::make_unique<optim::SGD>(
                         ps, optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01));
                   }),
                   {0.09499854319, 1.01072308562, 1.51498705857}, 1e-10));
  CHECK(sameValues(run([](std::vector<Tensor> ps) {
                     return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
                   }),
                   {-0.108352, 0.866592, 0.981963}, 1e-12));
  Tensor p = dk::zeros({2}).requires_grad_();
  CHECK_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(-1)), "Invalid learning rate: -1");
  CHECK_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)),
                    "Nesterov momentum requires a momentum and zero dampening");
}

TEST_CASE("optim: Adam matches torch.optim.Adam") {
  CHECK(sameValues(run([](std::vector<Tensor> ps) { return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.1)); }),
                   {0.70158627294603, -1.700623391663641, 2.700381523957824}, 1e-12));
  CHECK(sameValues(run([](std::vector<Tensor> ps) {
                     return std::make_unique<optim::Adam>(
                         ps, optim::AdamOptions(0.05).betas({0.8, 0.9}).eps(1e-6).weight_decay(0.1));
                   }),
                   {0.850341775161956, -1.850151358311497, 2.850096830689772}, 1e-12));
  CHECK(sameValues(run([](std::vector<Tensor> ps) {
                     return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.1).amsgrad(true));
                   },
                       5),
                   {0.507963659264342, -1.502955780646025, 2.50177945708264}, 1e-12));
  Tensor p = dk::zeros({2}).requires_grad_();
  CHECK_THROWS_WITH(optim::Adam({p}, optim::AdamOptions(0.1).betas({1.0, 0.9})), "Invalid beta parameter at index 0: 1");
  CHECK_THROWS_WITH(optim::Adam({p}, optim::AdamOptions(0.1).eps(-1)), "Invalid epsilon value: -1");
}

TEST_CASE("optim: zero_grad and parameters without gradients") {
  Tensor p = make({1, 2}, {2}).requires_grad_();
  Tensor unused = make({5}, {1}).requires_grad_();
  optim::SGD sgd({p, unused}, optim::SGDOptions(0.5));
  dk::sum(dk::mul(p, p)).backward();
  sgd.step();  // `unused` has no gradient: left alone
  CHECK(sameValues(read(p), {0, 0}));
  CHECK(sameValues(read(unused), {5}));
  sgd.zero_grad();
  CHECK(sameValues(read(p.grad()), {0, 0}));
  sgd.zero_grad(/*set_to_none=*/true);
  CHECK_FALSE(p.grad().defined());
  CHECK(sgd.parameters().size() == 2);
}
