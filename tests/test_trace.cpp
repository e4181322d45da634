// The dispatch trace: DK_SHOW_DISPATCH_TRACE=1 (set by the build's test definition) prints
// every call, redispatch and boxed call to stderr, indented by nesting depth.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "dispatch_test_util.h"
#include "dk/autograd/node.h"
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
