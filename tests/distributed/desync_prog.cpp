// The seed's scenario, end to end: every rank logs its operators with RankLogger; rank 1 skips
// one all_reduce. The others must fail within the group's timeout with an error that names rank 1,
// and tools/dk-ranklogs must then point at rank 1 and the all_reduce it skipped
// (tests/distributed/check_desync.py runs this under tools/dkrun, then dk-ranklogs).
//
// Usage: desync_prog LOG_DIR   (under tools/dkrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include "dk/dk.h"
#include "dk/distributed/distributed.h"
#include "dk/layers/modes.h"

namespace dist = dk::distributed;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: desync_prog LOG_DIR\n";
    return 2;
  }
  constexpr auto kTimeout = std::chrono::seconds(3);
  dist::init_process_group("gloo", -1, -1, nullptr, kTimeout);
  int rank = dist::get_rank();
  std::string error;
  {
    auto logger = dk::RankLogger::forRank(std::string(argv[1]) + "/ops", rank);
    dk::DispatchModeGuard guard(logger);
    dk::Tensor w = dk::ones({4, 2});
    for (int step = 0; step < 3; ++step) {
      dk::Tensor grad = dk::mul(w, static_cast<double>(step + 1));
      try {
        if (!(rank == 1 && step == 1)) dist::all_reduce(grad);  // rank 1 skips the second one
      } catch (const dk::Error& e) {
        error = e.what();
        break;
      }
      w = dk::sub(w, grad, 0.1);
    }
  }
  if (rank == 1) {
    // Stay until the others have read this rank's monitoring key and given up.
    std::this_thread::sleep_for(kTimeout + std::chrono::seconds(2));
    dist::destroy_process_group();
    return error.empty() ? 0 : 1;
  }
  std::cout << "rank " << rank << " error: " << error << std::endl;
  dist::destroy_process_group();
  bool named = error.find("ranks that had not arrived: rank 1 (last entered collective 2") != std::string::npos &&
               error.find("c10d::all_reduce_: collective 3 on process group '0'") != std::string::npos &&
               error.find("did not complete within 3000 ms") != std::string::npos;
  return named ? 0 : 1;
}
