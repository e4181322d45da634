// dk-train-ddp: dk-train's MLP (tools/showcase/train.cpp) trained data-parallel on the ranks
// tools/dkrun starts: each rank computes the loss of its shard of the points, DataParallel
// averages the gradients over the ranks (bucketed all_reduces during backward), and every rank
// takes the same SGD step. Rank 0 prints the loss of the whole data set and, at the end, the
// accuracy.
//
//   tools/dkrun -n 2 build/release/tools/dk-train-ddp            train (150 steps)
//   ... dk-train-ddp --check     exit 1 unless the loss halves and the accuracy reaches 90%
//   ... dk-train-ddp --log DIR   every rank logs its operators to DIR/ops.rank<k>.log (RankLogger)
//   ... dk-train-ddp --log DIR --skip-rank 1 --skip-step 3 --timeout 5
//        rank 1 forgets to synchronize at step 3 (its backward runs under no_sync()): the ranks'
//        collectives no longer line up, the others fail after 5 s naming rank 1, and
//        tools/dk-ranklogs DIR shows where rank 1 went its own way.
#include <dk/dk.h>

#include <dk/distributed/data_parallel.h>
#include <dk/distributed/distributed.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "demo_args.h"

using namespace dk;
namespace dist = dk::distributed;

namespace {

struct Options {
  bool check = false;
  int64_t steps = 150;
  std::string log_dir;
  int skip_rank = -1;
  int64_t skip_step = 3;
  int timeout_s = 60;
};

std::optional<Options> parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--check") {
      o.check = true;
    } else if (arg == "--steps" && has_value) {
      o.steps = std::atoll(argv[++i]);
    } else if (arg == "--log" && has_value) {
      o.log_dir = argv[++i];
    } else if (arg == "--skip-rank" && has_value) {
      o.skip_rank = std::atoi(argv[++i]);
    } else if (arg == "--skip-step" && has_value) {
      o.skip_step = std::atoll(argv[++i]);
    } else if (arg == "--timeout" && has_value) {
      o.timeout_s = std::atoi(argv[++i]);
    } else {
      std::cerr << "usage: dk-train-ddp [--check] [--steps N] [--log DIR] [--skip-rank R] [--skip-step S] "
                   "[--timeout SECONDS]\n";
      return std::nullopt;
    }
  }
  return o;
}

// dk-train's data: four Gaussian blobs labelled like XOR, the same on every rank.
void makeBlobs(Generator& gen, int64_t per_blob, Tensor& x, Tensor& y) {
  const double centers[4][2] = {{1, 1}, {-1, -1}, {1, -1}, {-1, 1}};
  const int64_t labels[4] = {0, 0, 1, 1};
  std::vector<Tensor> xs, ys;
  for (int b = 0; b < 4; ++b) {
    xs.push_back(dk::add(dk::mul(dk::randn({per_blob, 2}, gen), Scalar(0.35)),
                         dk::tensor({centers[b][0], centers[b][1]})));
    ys.push_back(dk::full({per_blob}, Scalar(labels[b]), kLong));
  }
  x = dk::cat(xs, 0);
  y = dk::cat(ys, 0);
}

Tensor parameter(Generator& gen, std::vector<int64_t> sizes, int64_t fan_in) {
  Tensor p = dk::mul(dk::randn(sizes, gen), Scalar(std::sqrt(2.0 / static_cast<double>(fan_in))));
  p.requires_grad_();
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<Options> options = parse(argc, argv);
  if (!options) return 2;
  try {
    dist::init_process_group("gloo", -1, -1, nullptr, std::chrono::seconds(options->timeout_s));
    int rank = dist::get_rank(), world = dist::get_world_size();
    Generator data_gen(2024);
    Tensor x, y;
    makeBlobs(data_gen, 64, x, y);
    // This rank's shard: every world-th point, starting at its rank.
    Tensor rows = dk::arange(rank, x.size(0), world, TensorOptions().dtype(kLong));
    Tensor my_x = dk::index_select(x, 0, rows), my_y = dk::index_select(y, 0, rows);

    // Each rank starts from its own random values; DataParallel copies rank 0's to all.
    Generator init_gen(7 + static_cast<uint64_t>(rank));
    std::vector<Tensor> params = {parameter(init_gen, {16, 2}, 2), parameter(init_gen, {16}, 2),
                                  parameter(init_gen, {2, 16}, 16), parameter(init_gen, {2}, 16)};
    auto forward = [&](const Tensor& in) {
      return dk::linear(dk::relu(dk::linear(in, params[0], params[1])), params[2], params[3]);
    };
    dist::DataParallel ddp(params);

    // The training steps (what every rank does alike) are logged; rank 0's evaluation is not.
    std::shared_ptr<RankLogger> logger;
    if (!options->log_dir.empty()) logger = RankLogger::forRank(options->log_dir + "/ops", rank);
    if (rank == 0) {
      std::cout << "== data-parallel training of dk-train's MLP on " << world << " ranks, " << my_x.size(0)
                << " of the " << x.size(0) << " points each\n";
    }
    const double lr = 0.2;
    double initial = 0, final_loss = 0;
    std::cout << std::fixed << std::setprecision(4);
    for (int64_t step = 0; step <= options->steps; ++step) {
      if (rank == 0 && (step % 50 == 0 || step == options->steps)) {
        NoGradGuard no_grad;
        double whole = dk::cross_entropy_loss(forward(x), y).item().toDouble();
        if (step == 0) initial = whole;
        final_loss = whole;
        std::cout << "  step " << std::setw(4) << step << "  loss " << whole << "\n";
      }
      if (step == options->steps) break;
      std::optional<DispatchModeGuard> logging;
      if (logger) logging.emplace(logger);
      Tensor loss = dk::cross_entropy_loss(forward(my_x), my_y);
      if (rank == options->skip_rank && step == options->skip_step) {
        auto no_sync = ddp.no_sync();  // the bug: this rank does not synchronize this step
        loss.backward();
      } else {
        loss.backward();
      }
      NoGradGuard no_grad;
      for (const Tensor& p : params) {
        p.add_(p.grad(), -lr);
        p.mutable_grad() = Tensor();
      }
    }
    if (logger) logger->flush();
    int status = 0;
    if (rank == 0) {
      NoGradGuard no_grad;
      double acc = demo::accuracy(forward(x), y, 1);
      std::cout << "  final loss " << final_loss << " (initial " << initial << "), accuracy " << std::setprecision(1)
                << 100 * acc << "%\n";
      if (options->check) {
        bool ok = final_loss < 0.5 * initial && acc >= 0.9;
        std::cout << (ok ? "check passed" : "check FAILED") << ": loss halves and accuracy >= 90%\n";
        status = ok ? 0 : 1;
      }
    }
    dist::destroy_process_group();
    return status;
  } catch (const std::exception& e) {
    std::cerr << "dk-train-ddp: " << e.what() << "\n";
    return 1;
  }
}
