// dk-train (tools/demo, after the showcase): trains a 2-layer MLP with plain SGD, built from dk
// operators and the autograd engine alone.
//
// The data are four Gaussian blobs at the corners of a square, labelled like XOR (class 0 at
// (+1, +1) and (-1, -1), class 1 at (+1, -1) and (-1, +1)), so no linear model separates them:
// the hidden layer has to learn. Each step runs the forward (linear, relu, linear,
// cross_entropy_loss), loss.backward(), and the SGD update p -= lr * p.grad under NoGradGuard
// (an in-place change of a leaf that requires grad, refused in grad mode), then clears the
// gradients. Everything is seeded, so every run prints the same numbers.
//
//   dk-train            train and print the loss every 50 steps and the final accuracy
//   dk-train --check    the same, and exit 1 unless the final loss is below half the initial
//                       loss and the accuracy at least 90% (a test in the 'unit' suite)
//   dk-train --steps N  train for N steps (default 300)
#include <dk/dk.h>

#include "demo_args.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <set>
#include <string>
#include <vector>

using namespace dk;

namespace {

struct Data {
  Tensor x;  // [N, 2] float32
  Tensor y;  // [N] int64 class indices
};

Data makeBlobs(Generator& gen, int64_t per_blob) {
  struct Blob {
    double cx, cy;
    int64_t label;
  };
  const Blob blobs[] = {{1, 1, 0}, {-1, -1, 0}, {1, -1, 1}, {-1, 1, 1}};
  std::vector<Tensor> xs, ys;
  for (const Blob& b : blobs) {
    Tensor noise = dk::randn({per_blob, 2}, gen);
    xs.push_back(dk::add(dk::mul(noise, Scalar(0.35)), dk::tensor({b.cx, b.cy})));
    ys.push_back(dk::full({per_blob}, Scalar(b.label), kLong));
  }
  return {dk::cat(xs, 0), dk::cat(ys, 0)};
}

// A parameter: random values scaled for relu layers (He initialization), or zeros; a leaf that
// requires grad (made while nothing requires grad, so it has no history).
Tensor parameter(Generator& gen, std::vector<int64_t> sizes, int64_t fan_in) {
  Tensor p = dk::mul(dk::randn(sizes, gen), Scalar(std::sqrt(2.0 / static_cast<double>(fan_in))));
  p.requires_grad_();
  return p;
}
Tensor zerosParameter(std::vector<int64_t> sizes) {
  Tensor p = dk::zeros(sizes);
  p.requires_grad_();
  return p;
}

struct Mlp {
  Tensor w1, b1, w2, b2;
  Tensor forward(const Tensor& x) const { return dk::linear(dk::relu(dk::linear(x, w1, b1)), w2, b2); }
  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2}; }
};

// The backward graph below `t`, one node per line, each node once (the graph is a DAG: a node
// reached again is marked "(seen)").
void printGraph(const std::shared_ptr<autograd::Node>& node, int depth, std::set<autograd::Node*>& seen) {
  if (!node) return;
  std::cout << std::string(static_cast<size_t>(2 * depth + 4), ' ') << node->name();
  if (!seen.insert(node.get()).second) {
    std::cout << " (seen)\n";
    return;
  }
  std::cout << "\n";
  for (const autograd::Edge& e : node->next_edges()) {
    if (e.is_valid()) printGraph(e.function, depth + 1, seen);
  }
}


}  // namespace

int main(int argc, char** argv) {
  std::optional<demo::Args> args = demo::parseArgs(argc, argv, "dk-train", 300);
  if (!args) return 2;
  const bool check = args->check;
  const int64_t steps = args->steps;

  try {
    Generator gen(2024);
    Data data = makeBlobs(gen, 64);
    const int64_t hidden = 16;
    Mlp model{parameter(gen, {hidden, 2}, 2), zerosParameter({hidden}), parameter(gen, {2, hidden}, hidden),
              zerosParameter({2})};
    const double lr = 0.2;

    std::cout << "== training a 2-layer MLP (2 -> " << hidden << " -> 2) on " << data.x.size(0)
              << " XOR-like points with plain SGD (lr " << lr << ", " << steps << " steps)\n";

    double initial_loss = 0, final_loss = 0;
    std::cout << std::fixed << std::setprecision(4);
    for (int64_t step = 0; step <= steps; ++step) {
      Tensor loss = dk::cross_entropy_loss(model.forward(data.x), data.y);
      double value = loss.item().toDouble();
      if (step == 0) {
        initial_loss = value;
        std::cout << "  the loss's backward graph:\n";
        std::set<autograd::Node*> seen;
        printGraph(loss.grad_fn(), 0, seen);
      }
      if (step % 50 == 0) std::cout << "  step " << std::setw(4) << step << "  loss " << value << "\n";
      final_loss = value;
      if (step == steps) break;  // the last loss is measured, not trained on

      loss.backward();
      {
        // The update must not be recorded, and is an in-place change of leaves requiring grad.
        NoGradGuard no_grad;
        for (const Tensor& p : model.parameters()) {
          p.add_(p.grad(), -lr);
          p.mutable_grad() = Tensor();  // the next backward starts from no gradient
        }
      }
    }

    double acc;
    {
      NoGradGuard no_grad;
      acc = demo::accuracy(model.forward(data.x), data.y, 1);
    }
    std::cout << "  final loss " << final_loss << " (initial " << initial_loss << "), accuracy " << std::setprecision(1)
              << 100 * acc << "%\n";

    if (check) {
      bool ok = final_loss < 0.5 * initial_loss && acc >= 0.9;
      std::cout << (ok ? "check passed" : "check FAILED") << ": final loss < 0.5 x initial loss and accuracy >= 90%\n";
      return ok ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "dk-train: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
