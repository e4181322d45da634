// The dispatch trace: DK_SHOW_DISPATCH_TRACE=1 (set by the build's test definition) prints
// every call, redispatch and boxed call to stderr, indented by nesting depth.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "dispatch_test_util.h"
#include "dk/autograd/node.h"
#include "dk/func/grad.h"
#include "dk/func/vmap.h"
#include "dk/generated/ops/sin.h"
#include "dk/generated/ops/sum.h"
#include "dk/generated/ops/full.h"
#include "dk/generated/ops/mul.h"

using namespace dk;
using namespace dk::testing;

namespace {
// Runs `fn` with stderr redirected to a temporary file; returns what was written.
template <class Fn>
std::string captureStderr(Fn fn) {
  std::fflush(stderr);
  char path[] = "/tmp/dk_trace_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  int saved = dup(2);
  dup2(fd, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return text.str();
}
}  // namespace

TEST_CASE("trace: an autograd kernel's call and its redispatch, indented by depth") {
  REQUIRE(isDispatchTraceEnabled());
  Library def(Library::DEF, "t_trace");
  def.def("op(Tensor x) -> int");
  auto cpu = implAt("t_trace", "op", DispatchKey::CPU, tagKernel(1, "cpu"));
  auto handle = std::make_shared<std::optional<UnaryIntOp>>();
  auto ag = implAt("t_trace", "op", DispatchKey::Autograd, CppFunction([handle](DispatchKeySet ks, const Tensor& x) -> int64_t {
                     return (*handle)->redispatch(ks & after_autograd_keyset, x) + 10;
                   }));
  *handle = unaryIntOp("t_trace", "op");
  Tensor t = cpuTensor();
  std::string text = captureStderr([&] { CHECK((*handle)->call(t) == 11); });
  CHECK(text == "[call] op=[t_trace::op], key=[AutogradCPU]\n  [redispatch] op=[t_trace::op], key=[CPU]\n");
  text = captureStderr([&] {
    Stack stack{IValue(t)};
    (*handle)->callBoxed(&stack);
  });
  CHECK(text == "[callBoxed] op=[t_trace::op], key=[AutogradCPU]\n  [redispatch] op=[t_trace::op], key=[CPU]\n");
  setDispatchTraceEnabled(false);
  text = captureStderr([&] { (*handle)->call(t); });
  CHECK(text.empty());
  setDispatchTraceEnabled(true);
}

TEST_CASE("trace: a generated autograd kernel records, then redispatches below autograd to the CPU kernel") {
  REQUIRE(isDispatchTraceEnabled());
  Tensor a = dk::full({2}, 1.5, ScalarType::Float);
  Tensor b = dk::full({2}, 2.0, ScalarType::Float);
  a.requires_grad_();
  Tensor out;
  std::string text = captureStderr([&] { out = dk::mul(a, b); });
  CHECK(text == "[call] op=[dk::mul.Tensor], key=[AutogradCPU]\n  [redispatch] op=[dk::mul.Tensor], key=[CPU]\n");
  REQUIRE(out.grad_fn() != nullptr);
  CHECK(out.grad_fn()->name() == "MulBackward0");

  // In place: the autograd kernel redispatches to ADInplaceOrView (which bumps the version),
  // which redispatches to the CPU kernel.
  Tensor c = dk::full({2}, 3.0, ScalarType::Float);
  text = captureStderr([&] { c.add_(b); });
  CHECK(text ==
        "[call] op=[dk::add_.Tensor], key=[AutogradCPU]\n"
        "  [redispatch] op=[dk::add_.Tensor], key=[ADInplaceOrView]\n"
        "    [redispatch] op=[dk::add_.Tensor], key=[CPU]\n");
  CHECK(c._version() == 1);
}

TEST_CASE("trace: under vmap(grad(f)) each layer strips itself and redispatches, grad's first") {
  REQUIRE(isDispatchTraceEnabled());
  // The seed's walk-through made visible (Note [Dynamic layer stack]): sin on a grad wrapper of
  // a batched tensor goes to the front fallback, which hands it to the innermost layer (grad,
  // level 2): the autograd kernel records it and redispatches below autograd to the back
  // fallback, which pops the grad layer and calls sin on the wrapped value, a batched tensor of
  // level 1, whose batching rule calls sin once for the whole batch on the plain value (its
  // autograd kernel records nothing, as nothing there requires grad, and then the CPU kernel).
  Tensor xs = dk::full({4, 3}, 0.5, ScalarType::Double);
  std::string text;
  auto f = [&](const Tensor& x) {
    Tensor y;
    text = captureStderr([&] { y = dk::sin(x); });
    return dk::sum(y);
  };
  Tensor g = func::vmap(func::grad(std::function<Tensor(const Tensor&)>(f)))(xs);
  CHECK(text ==
        "[call] op=[dk::sin], key=[FuncTorchDynamicLayerFrontMode]\n"
        "  [redispatchBoxed] op=[dk::sin], key=[AutogradCPU]\n"
        "    [redispatch] op=[dk::sin], key=[FuncTorchDynamicLayerBackMode]\n"
        "      [callBoxed] op=[dk::sin], key=[FuncTorchBatched]\n"
        "        [callBoxed] op=[dk::sin], key=[AutogradCPU]\n"
        "          [redispatch] op=[dk::sin], key=[CPU]\n");
  CHECK(g.sizes() == std::vector<int64_t>{4, 3});
}
