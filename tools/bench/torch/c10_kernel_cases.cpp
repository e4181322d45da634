// c10-bench-kernels: the libtorch side of dk-bench-kernels (tools/bench/kernel_cases.cpp), the
// same cases under the same names, on the same inputs (kernel_reference.h).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gbench_main.h"
#include "kernel_reference.h"

namespace {

using benchcase::Case;
using at::Tensor;
namespace kb = kernelbench;

Tensor filled(std::vector<int64_t> sizes, int stream, float scale = 1.0f) {
  Tensor t = at::empty(sizes);
  kb::fill(t.data_ptr<float>(), t.numel(), stream, scale);
  return t;
}

void useThreads(int n) {
  if (at::get_num_threads() != n) at::set_num_threads(n);
}

Case kernelCase(const std::string& name, int threads, std::function<Tensor()> compute,
                std::function<std::string(const Tensor&)> check) {
  Case c{name + "_t" + std::to_string(threads), [threads, compute](int64_t n) {
           useThreads(threads);
           int64_t s = 0;
           for (int64_t i = 0; i < n; ++i) s += compute().defined() ? 1 : 0;
           return s;
         }, 1};
  c.check = [threads, compute, check] {
    useThreads(threads);
    return check(compute().contiguous());
  };
  c.batch = 1;
  c.callgrind_n = 0;
  return c;
}

struct Mlp {
  Tensor x = filled({kb::kMlpBatch, kb::kMlpWidth}, 1);
  Tensor w1 = filled({kb::kMlpWidth, kb::kMlpWidth}, 2, 0.03f), b1 = filled({kb::kMlpWidth}, 3);
  Tensor w2 = filled({kb::kMlpWidth, kb::kMlpWidth}, 4, 0.03f), b2 = filled({kb::kMlpWidth}, 5);
  Mlp() {
    for (Tensor& p : {std::ref(w1), std::ref(b1), std::ref(w2), std::ref(b2)}) p.requires_grad_();
  }
  Tensor step() {
    Tensor loss = at::linear(at::relu(at::linear(x, w1, b1)), w2, b2).sum();
    loss.backward();
    Tensor g = b2.grad();
    for (Tensor& p : {std::ref(w1), std::ref(b1), std::ref(w2), std::ref(b2)}) p.mutable_grad() = Tensor();
    return g;
  }
};

std::vector<Case> kernelCases() {
  static const Tensor a512 = filled({512, 512}, 1), b512 = filled({512, 512}, 2);
  static const Tensor a1024 = filled({1024, 1024}, 3), b1024 = filled({1024, 1024}, 4);
  static const Tensor x = filled({kb::kElementwise}, 5, 4.0f), y = filled({kb::kElementwise}, 6);
  static const Tensor sm = filled({kb::kSoftmaxRows, kb::kSoftmaxCols}, 7, 8.0f);
  static const Tensor ln = filled({kb::kNormRows, kb::kNormCols}, 8, 3.0f);
  static const Tensor conv_in = filled({kb::kConvN, kb::kConvC, kb::kConvHW, kb::kConvHW}, 9);
  static const Tensor conv_w = filled({kb::kConvC, kb::kConvC, kb::kConvK, kb::kConvK}, 10, 0.05f);
  static Mlp* mlp = new Mlp();
  auto p = [](const Tensor& t) { return t.data_ptr<float>(); };
  std::vector<Case> cases;
  for (int t : kb::kThreadCounts) {
    struct Mm {
      const char* name;
      const Tensor* a;
      const Tensor* b;
      int64_t size;
    };
    for (const Mm& mm : {Mm{"mm_512", &a512, &b512, 512}, Mm{"mm_1024", &a1024, &b1024, 1024}}) {
      cases.push_back(kernelCase(mm.name, t, [mm] { return at::mm(*mm.a, *mm.b); }, [mm, p](const Tensor& r) {
        return kb::checkMm(p(*mm.a), p(*mm.b), p(r), mm.size, mm.size, mm.size);
      }));
    }
    cases.push_back(kernelCase("exp_4M", t, [] { return at::exp(x); },
                               [=](const Tensor& r) { return kb::checkExp(p(x), p(r), kb::kElementwise); }));
    cases.push_back(kernelCase("softmax_4096x1024", t, [] { return at::softmax(sm, 1); }, [=](const Tensor& r) {
      return kb::checkSoftmax(p(sm), p(r), kb::kSoftmaxRows, kb::kSoftmaxCols);
    }));
    cases.push_back(kernelCase("sum_4M", t, [] { return at::sum(x); },
                               [=](const Tensor& r) { return kb::checkSum(p(x), kb::kElementwise, p(r)[0]); }));
    cases.push_back(kernelCase("add_4M", t, [] { return at::add(x, y); },
                               [=](const Tensor& r) { return kb::checkAdd(p(x), p(y), p(r), kb::kElementwise); }));
    cases.push_back(kernelCase("layer_norm_4096x1024", t, [] { return at::layer_norm(ln, {kb::kNormCols}); },
                               [=](const Tensor& r) {
                                 return kb::checkLayerNorm(p(ln), p(r), kb::kNormRows, kb::kNormCols);
                               }));
    cases.push_back(kernelCase("conv2d_8x64x56x56_3x3", t,
                               [] { return at::conv2d(conv_in, conv_w, {}, {1, 1}, {1, 1}); },
                               [=](const Tensor& r) { return kb::checkConv2d(p(conv_in), p(conv_w), p(r)); }));
    cases.push_back(kernelCase("mlp_step_256x1024", t, [] { return mlp->step(); }, [](const Tensor& g) {
      for (int64_t i = 0; i < g.numel(); ++i)
        if (g.data_ptr<float>()[i] != static_cast<float>(kb::kMlpBatch))
          return kb::mismatch("grad of b2", i, g.data_ptr<float>()[i], kb::kMlpBatch);
      return std::string();
    }));
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) { return benchcase::gbenchMain(kernelCases(), argc, argv); }
