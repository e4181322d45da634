// tests/distributed/world_listener.h: the Catch2 listener of the multi-rank test programs: the
// world (init_process_group from the environment tools/dkrun or mpirun sets, the backend from
// DK_TEST_BACKEND, default gloo, a 20 s timeout) is set up before the first test case and torn
// down after the last, so that every test case of every rank runs in the same world, in order.
// Include after <catch2/catch.hpp> with CATCH_CONFIG_EXTERNAL_INTERFACES defined.
#pragma once

#include <chrono>
#include <cstdlib>
#include <string>

#include "dk/distributed/distributed.h"

namespace dk::test {

struct WorldListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testRunStarting(const Catch::TestRunInfo&) override {
    distributed::init_process_group(backend(), -1, -1, nullptr, std::chrono::seconds(20));
  }
  void testRunEnded(const Catch::TestRunStats&) override {
    if (distributed::is_initialized()) distributed::destroy_process_group();
  }
  static std::string backend() {
    const char* name = std::getenv("DK_TEST_BACKEND");
    return name && *name ? name : "gloo";
  }
};

}  // namespace dk::test
