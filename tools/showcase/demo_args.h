// tools/showcase/demo_args.h: what the training demos (dk-train, dk-cnn, dk-transformer) share:
// their command line (--check, --steps N) and the accuracy of class scores.
#pragma once

#include <dk/dk.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

namespace dk::demo {

struct Args {
  bool check = false;
  int64_t steps;
};

// The demo's options, or nothing (after printing the usage) when the command line is wrong.
inline std::optional<Args> parseArgs(int argc, char** argv, const char* name, int64_t default_steps) {
  Args args{false, default_steps};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--check") {
      args.check = true;
    } else if (arg == "--steps" && i + 1 < argc) {
      args.steps = std::atoll(argv[++i]);
    } else {
      std::cerr << "usage: " << name << " [--check] [--steps N]\n";
      return std::nullopt;
    }
  }
  return args;
}

// The share of positions where the largest score (along `dim`) is at the target class.
inline double accuracy(const Tensor& scores, const Tensor& targets, int64_t dim) {
  Tensor correct = dk::sum(dk::eq(dk::argmax(scores, dim), targets));
  return static_cast<double>(correct.item().toLong()) / static_cast<double>(targets.numel());
}

}  // namespace dk::demo
