// dk-cnn (tools/demo): trains a small convolutional network on synthetic images with
// dk::optim::Adam, every layer a dk operator (conv2d, batch_norm, relu, max_pool2d, linear,
// cross_entropy_loss) and every gradient from the autograd engine.
//
// The images are 12x12, one stroke each on Gaussian noise: a horizontal bar, a vertical bar, a
// diagonal or an anti-diagonal, of random length and position; the class is the stroke's
// direction. The network: conv 3x3 (1 -> 8) + batch_norm + relu + max_pool 2, conv 3x3 (8 -> 16) +
// relu + max_pool 2, linear (144 -> 4). It trains on 1024 images and is measured on 512 others
// (batch_norm in evaluation mode, its running statistics). Everything is seeded.
//
//   dk-cnn            train, printing the loss, then the held-out accuracy
//   dk-cnn --check    the same, and exit 1 unless the held-out accuracy is at least 95%
//                     (a test in the 'unit' suite)
//   dk-cnn --steps N  train for N steps (default 250)
#include <dk/dk.h>

#include "demo_args.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace dk;

namespace {

constexpr int64_t kSide = 12;
constexpr int64_t kClasses = 4;

struct Data {
  Tensor x;  // [N, 1, 12, 12] float32
  Tensor y;  // [N] int64
};

Data makeStrokes(std::mt19937_64& rng, int64_t n) {
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::uniform_int_distribution<int64_t> label(0, kClasses - 1), length(5, 8), where(0, kSide - 1);
  Tensor x = dk::empty({n, 1, kSide, kSide});
  Tensor y = dk::empty({n}, kLong);
  float* pixels = x.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    float* image = pixels + i * kSide * kSide;
    for (int64_t p = 0; p < kSide * kSide; ++p) image[p] = noise(rng);
    const int64_t c = label(rng), len = length(rng);
    // Start where the whole stroke fits.
    const int64_t r0 = where(rng) % (c == 0 ? kSide : kSide - len + 1);
    const int64_t c0 = (c == 3 ? len - 1 : 0) + where(rng) % (c == 1 ? kSide : kSide - len + 1);
    for (int64_t k = 0; k < len; ++k) {
      const int64_t dr[] = {0, 1, 1, 1}, dc[] = {1, 0, 1, -1};
      image[(r0 + k * dr[c]) * kSide + (c0 + k * dc[c])] += 1.0f;
    }
    y.data_ptr<int64_t>()[i] = c;
  }
  return {x, y};
}

Tensor parameter(Generator& gen, std::vector<int64_t> sizes, int64_t fan_in) {
  Tensor p = dk::mul(dk::randn(sizes, gen), Scalar(std::sqrt(2.0 / static_cast<double>(fan_in))));
  return p.requires_grad_();
}
Tensor constantParameter(std::vector<int64_t> sizes, double value) {
  return dk::full(sizes, Scalar(value)).requires_grad_();
}

struct Cnn {
  Tensor conv1, conv1_bias, bn_weight, bn_bias, conv2, conv2_bias, fc, fc_bias;
  Tensor running_mean = dk::zeros({8}), running_var = dk::ones({8});

  Tensor forward(const Tensor& x, bool training) {
    Tensor h = dk::conv2d(x, conv1, conv1_bias, {1}, {1});
    h = dk::batch_norm(h, bn_weight, bn_bias, running_mean, running_var, training, 0.1, 1e-5, false);
    h = dk::max_pool2d(dk::relu(h), {2, 2});
    h = dk::max_pool2d(dk::relu(dk::conv2d(h, conv2, conv2_bias, {1}, {1})), {2, 2});
    return dk::linear(dk::flatten(h, 1), fc, fc_bias);
  }
  std::vector<Tensor> parameters() const { return {conv1, conv1_bias, bn_weight, bn_bias, conv2, conv2_bias, fc, fc_bias}; }
  // The same model on fake tensors on a pretend cuda:0 (--fake).
  Cnn fakeOnCuda() const {
    Cnn m{demo::fakeOnCuda(conv1), demo::fakeOnCuda(conv1_bias), demo::fakeOnCuda(bn_weight),
          demo::fakeOnCuda(bn_bias), demo::fakeOnCuda(conv2),      demo::fakeOnCuda(conv2_bias),
          demo::fakeOnCuda(fc),      demo::fakeOnCuda(fc_bias)};
    m.running_mean = demo::fakeOnCuda(running_mean);
    m.running_var = demo::fakeOnCuda(running_var);
    return m;
  }
};


}  // namespace

int main(int argc, char** argv) {
  std::optional<demo::Args> args = demo::parseArgs(argc, argv, "dk-cnn", 250);
  if (!args) return 2;
  const bool check = args->check;
  const int64_t steps = args->steps;
  try {
    std::mt19937_64 rng(7);
    Data train = makeStrokes(rng, 1024), test = makeStrokes(rng, 512);
    Generator gen(2024);
    Cnn model{parameter(gen, {8, 1, 3, 3}, 9),   constantParameter({8}, 0),  constantParameter({8}, 1),
              constantParameter({8}, 0),         parameter(gen, {16, 8, 3, 3}, 72), constantParameter({16}, 0),
              parameter(gen, {kClasses, 144}, 144), constantParameter({kClasses}, 0)};
    const int64_t batch = 64;
    if (args->fake) {
      Cnn fake = model.fakeOnCuda();
      Tensor x = demo::fakeOnCuda(dk::narrow(train.x, 0, 0, batch)), y = demo::fakeOnCuda(dk::narrow(train.y, 0, 0, batch));
      return demo::planFakeStep(fake.parameters(), [&] {
        Tensor loss = dk::cross_entropy_loss(fake.forward(x, /*training=*/true), y);
        loss.backward();
        return loss;
      }) ? 0 : 1;
    }
    optim::Adam adam(model.parameters(), optim::AdamOptions(0.01));
    std::cout << "== training a CNN (conv-bn-relu-pool, conv-relu-pool, linear) on " << train.x.size(0)
              << " 12x12 stroke images, 4 classes, Adam (lr 0.01, batch " << batch << ", " << steps << " steps)\n";
    std::cout << std::fixed << std::setprecision(4);
    for (int64_t step = 0; step < steps; ++step) {
      const int64_t start = (step * batch) % train.x.size(0);
      Tensor x = dk::narrow(train.x, 0, start, batch), y = dk::narrow(train.y, 0, start, batch);
      adam.zero_grad();
      Tensor loss = dk::cross_entropy_loss(model.forward(x, /*training=*/true), y);
      loss.backward();
      adam.step();
      if (step % 25 == 0 || step == steps - 1)
        std::cout << "  step " << std::setw(4) << step << "  loss " << loss.item<double>() << "\n";
    }
    double acc;
    {
      NoGradGuard no_grad;
      acc = demo::accuracy(model.forward(test.x, /*training=*/false), test.y, 1);
    }
    std::cout << "  held-out accuracy " << std::setprecision(1) << 100 * acc << "% on " << test.x.size(0)
              << " new images\n";
    if (check) {
      bool ok = acc >= 0.95;
      std::cout << (ok ? "check passed" : "check FAILED") << ": held-out accuracy >= 95%\n";
      return ok ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "dk-cnn: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
