// dk-transformer (tools/demo): trains a one-block transformer on a synthetic sequence task with
// dk::optim::Adam; every layer a dk operator (embedding, layer_norm, linear,
// _scaled_dot_product_attention with a causal mask, gelu, dropout, cross_entropy_loss).
//
// The task: sequences of 10 tokens from a vocabulary of 16; at every position, predict the
// largest token seen so far (the running maximum). A position can only find it by attending to
// the earlier ones, which the causal mask allows and no further. The model: token and position
// embeddings (width 32), then one pre-norm block (single-head causal attention, an MLP 32 -> 64
// -> 32 with dropout 0.1, each with a residual connection), then a linear read-out. Measured on
// 512 held-out sequences; everything is seeded (dropout too).
//
//   dk-transformer            train, printing the loss, then the held-out token accuracy
//   dk-transformer --check    the same, and exit 1 unless the held-out accuracy is at least 95%
//                             (a test in the 'unit' suite)
//   dk-transformer --steps N  train for N steps (default 300)
#include <dk/dk.h>

#include "demo_args.h"

#include <algorithm>
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

constexpr int64_t kVocab = 16;
constexpr int64_t kLength = 10;
constexpr int64_t kWidth = 32;

struct Data {
  Tensor tokens;   // [N, 10] int64
  Tensor targets;  // [N, 10] int64: the running maximum
};

Data makeSequences(std::mt19937_64& rng, int64_t n) {
  std::uniform_int_distribution<int64_t> token(0, kVocab - 1);
  Tensor tokens = dk::empty({n, kLength}, kLong), targets = dk::empty({n, kLength}, kLong);
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = -1;
    for (int64_t t = 0; t < kLength; ++t) {
      const int64_t v = token(rng);
      best = std::max(best, v);
      tokens.data_ptr<int64_t>()[i * kLength + t] = v;
      targets.data_ptr<int64_t>()[i * kLength + t] = best;
    }
  }
  return {tokens, targets};
}

Tensor parameter(Generator& gen, std::vector<int64_t> sizes, double scale) {
  return dk::mul(dk::randn(sizes, gen), Scalar(scale)).requires_grad_();
}
Tensor constantParameter(std::vector<int64_t> sizes, double value) {
  return dk::full(sizes, Scalar(value)).requires_grad_();
}

struct Transformer {
  Tensor token_embedding, position_embedding;
  Tensor ln1_weight, ln1_bias, wq, wk, wv, wo;
  Tensor ln2_weight, ln2_bias, w1, b1, w2, b2;
  Tensor head, head_bias;

  Tensor forward(const Tensor& tokens, bool training) const {
    Tensor x = dk::add(dk::embedding(token_embedding, tokens), position_embedding);  // [N, L, W]
    Tensor h = dk::layer_norm(x, {kWidth}, ln1_weight, ln1_bias);
    auto [attended, weights] = dk::_scaled_dot_product_attention(dk::linear(h, wq), dk::linear(h, wk),
                                                                 dk::linear(h, wv), std::nullopt, 0.0, false,
                                                                 /*is_causal=*/true);
    x = dk::add(x, dk::linear(attended, wo));
    h = dk::layer_norm(x, {kWidth}, ln2_weight, ln2_bias);
    h = dk::dropout(dk::linear(dk::gelu(dk::linear(h, w1, b1)), w2, b2), 0.1, training);
    x = dk::add(x, h);
    return dk::linear(x, head, head_bias);  // [N, L, vocab]
  }
  std::vector<Tensor> parameters() const {
    return {token_embedding, position_embedding, ln1_weight, ln1_bias, wq, wk, wv, wo,
            ln2_weight,      ln2_bias,           w1,         b1,       w2, b2, head, head_bias};
  }
  // The same model on fake tensors on a pretend cuda:0 (--fake).
  Transformer fakeOnCuda() const {
    std::vector<Tensor> p = parameters();
    for (Tensor& t : p) t = demo::fakeOnCuda(t);
    return {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15]};
  }
};


}  // namespace

int main(int argc, char** argv) {
  std::optional<demo::Args> args = demo::parseArgs(argc, argv, "dk-transformer", 300);
  if (!args) return 2;
  const bool check = args->check;
  const int64_t steps = args->steps;
  try {
    std::mt19937_64 rng(11);
    Data train = makeSequences(rng, 4096), test = makeSequences(rng, 512);
    Generator gen(2024);
    manual_seed(2024);  // dropout draws from the default generator
    const double s = 1.0 / std::sqrt(static_cast<double>(kWidth));
    Transformer model{parameter(gen, {kVocab, kWidth}, 1.0),     parameter(gen, {kLength, kWidth}, 0.1),
                      constantParameter({kWidth}, 1),            constantParameter({kWidth}, 0),
                      parameter(gen, {kWidth, kWidth}, s),       parameter(gen, {kWidth, kWidth}, s),
                      parameter(gen, {kWidth, kWidth}, s),       parameter(gen, {kWidth, kWidth}, s),
                      constantParameter({kWidth}, 1),            constantParameter({kWidth}, 0),
                      parameter(gen, {2 * kWidth, kWidth}, s),   constantParameter({2 * kWidth}, 0),
                      parameter(gen, {kWidth, 2 * kWidth}, s / std::sqrt(2.0)), constantParameter({kWidth}, 0),
                      parameter(gen, {kVocab, kWidth}, s),       constantParameter({kVocab}, 0)};
    const int64_t batch = 64;
    if (args->fake) {
      Transformer fake = model.fakeOnCuda();
      Tensor tokens = demo::fakeOnCuda(dk::narrow(train.tokens, 0, 0, batch));
      Tensor targets = demo::fakeOnCuda(dk::narrow(train.targets, 0, 0, batch));
      return demo::planFakeStep(fake.parameters(), [&] {
        Tensor logits = fake.forward(tokens, /*training=*/true);
        Tensor loss = dk::cross_entropy_loss(dk::reshape(logits, {-1, kVocab}), dk::reshape(targets, {-1}));
        loss.backward();
        return loss;
      }) ? 0 : 1;
    }
    optim::Adam adam(model.parameters(), optim::AdamOptions(0.005));
    std::cout << "== training a one-block transformer (causal attention, width " << kWidth
              << ") to output the running maximum of " << kLength << "-token sequences, Adam (lr 0.005, batch "
              << batch << ", " << steps << " steps)\n";
    std::cout << std::fixed << std::setprecision(4);
    for (int64_t step = 0; step < steps; ++step) {
      const int64_t start = (step * batch) % train.tokens.size(0);
      Tensor tokens = dk::narrow(train.tokens, 0, start, batch), targets = dk::narrow(train.targets, 0, start, batch);
      adam.zero_grad();
      Tensor logits = model.forward(tokens, /*training=*/true);
      Tensor loss = dk::cross_entropy_loss(dk::reshape(logits, {-1, kVocab}), dk::reshape(targets, {-1}));
      loss.backward();
      adam.step();
      if (step % 50 == 0 || step == steps - 1)
        std::cout << "  step " << std::setw(4) << step << "  loss " << loss.item<double>() << "\n";
    }
    double acc;
    {
      NoGradGuard no_grad;
      acc = demo::accuracy(model.forward(test.tokens, /*training=*/false), test.targets, -1);
    }
    std::cout << "  held-out token accuracy " << std::setprecision(1) << 100 * acc << "% on " << test.tokens.size(0)
              << " new sequences\n";
    if (check) {
      bool ok = acc >= 0.95;
      std::cout << (ok ? "check passed" : "check FAILED") << ": held-out token accuracy >= 95%\n";
      return ok ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "dk-transformer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
