// dk::distributed in one process: the stores (TCPStore server and client, FileStore, PrefixStore),
// init_process_group's checks, a world of one rank (every collective is the identity), and what
// happens after destroy_process_group. The multi-rank tests are tests/distributed/.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "dk/dk.h"
#include "dk/distributed/distributed.h"

using namespace dk;
namespace dist = dk::distributed;
using namespace std::chrono_literals;

namespace {
std::string tempFolder(const char* what) {
  auto path = std::filesystem::temp_directory_path() / (std::string("dk-test-") + what + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  return path.string();
}

std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
}  // namespace

TEST_CASE("TCPStore: set, get, add, check, delete between a server and a client") {
  dist::TCPStore server("127.0.0.1", 0, /*is_server=*/true, 2s);
  REQUIRE(server.port() != 0);
  dist::TCPStore client("127.0.0.1", server.port(), /*is_server=*/false, 2s);
  server.set("a", std::string("hello"));
  CHECK(client.getString("a") == "hello");
  CHECK(client.add("n", 5) == 5);
  CHECK(server.add("n", -2) == 3);
  CHECK(client.check({"a", "n"}));
  CHECK_FALSE(client.check({"a", "missing"}));
  std::vector<uint8_t> binary = {0, 1, 255, 0};
  client.set("bin", binary);
  CHECK(server.get("bin") == binary);
  CHECK(client.deleteKey("a"));
  CHECK_FALSE(server.deleteKey("a"));
  CHECK_THROWS_WITH(client.wait({"n", "never"}, 50ms),
                    Catch::Contains("TCPStore(127.0.0.1:") && Catch::Contains("timed out after 50 ms") &&
                        Catch::Contains("'never'") && !Catch::Contains("'n'"));
}

TEST_CASE("TCPStore: a client gives up, with the address, when no server comes") {
  dist::TCPStore probe("127.0.0.1", 0, true, 1s);
  uint16_t port = probe.port();
  // A port with no server behind it: find one by opening and closing a server.
  { dist::TCPStore other("127.0.0.1", 0, true, 1s); port = other.port(); }
  CHECK_THROWS_WITH(dist::TCPStore("127.0.0.1", port, false, 200ms),
                    Catch::Contains("cannot connect to 127.0.0.1:" + std::to_string(port)) &&
                        Catch::Contains("rank 0"));
}

TEST_CASE("FileStore and PrefixStore") {
  std::string folder = tempFolder("filestore");
  auto store = std::make_shared<dist::FileStore>(folder, 1s);
  dist::FileStore other(folder, 1s);  // a second view of the same folder, as another process has
  store->set("key/with:odd chars", bytes("v1"));
  CHECK(other.getString("key/with:odd chars") == "v1");
  CHECK(store->add("count", 2) == 2);
  CHECK(other.add("count", 3) == 5);
  dist::PrefixStore prefixed("group1/", store);
  prefixed.set("x", bytes("1"));
  CHECK(store->getString("group1/x") == "1");
  CHECK_FALSE(prefixed.check({"count"}));
  CHECK_THROWS_WITH(prefixed.get("absent"), Catch::Contains("'group1/absent'") || Catch::Contains("'absent'"));
  std::filesystem::remove_all(folder);
}

TEST_CASE("init_process_group refuses bad arguments with a clear error, and changes nothing") {
  std::string folder = tempFolder("init");
  auto store = std::make_shared<dist::FileStore>(folder, 1s);
  CHECK_THROWS_WITH(dist::init_process_group("gloo", 0, 0, store), Catch::Contains("world_size must be at least 1, got 0"));
  CHECK_THROWS_WITH(dist::init_process_group("gloo", 2, 2, store),
                    Catch::Contains("rank 2 is out of range for world_size 2"));
  CHECK_THROWS_WITH(dist::init_process_group("gloo", -5, 2, store), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(dist::init_process_group("carrier-pigeon", 0, 1, store),
                    Catch::Contains("unknown backend 'carrier-pigeon'") && Catch::Contains("gloo"));
  CHECK_FALSE(dist::is_initialized());
  CHECK_THROWS_WITH(dist::default_group(), Catch::Contains("init_process_group first"));
  Tensor t = dk::ones({2});
  CHECK_THROWS_WITH(dk::c10d::all_reduce_(t, "sum", "0"), Catch::Contains("init_process_group first"));
  std::filesystem::remove_all(folder);
}

TEST_CASE("a world of one rank: every collective is the identity; then destroy") {
  std::string folder = tempFolder("world1");
  dist::init_process_group("gloo", 0, 1, std::make_shared<dist::FileStore>(folder, 5s), 5s);
  CHECK(dist::is_initialized());
  CHECK(dist::get_rank() == 0);
  CHECK(dist::get_world_size() == 1);
  CHECK_THROWS_WITH(dist::init_process_group("gloo", 0, 1, std::make_shared<dist::FileStore>(folder)),
                    Catch::Contains("already initialized"));
  Tensor t = dk::arange(0, 6, 1, TensorOptions().dtype(kLong));
  for (auto op : {dist::ReduceOp::SUM, dist::ReduceOp::PRODUCT, dist::ReduceOp::MIN, dist::ReduceOp::MAX,
                  dist::ReduceOp::AVG}) {
    dist::all_reduce(t, op);
    CHECK(t.data_ptr<int64_t>()[5] == 5);
  }
  dist::broadcast(t, 0);
  Tensor all = dk::empty({6}, TensorOptions().dtype(kLong));
  dist::all_gather_into_tensor(all, t);
  CHECK(all.data_ptr<int64_t>()[3] == 3);
  Tensor out = dk::empty({6}, TensorOptions().dtype(kLong));
  dist::reduce_scatter_tensor(out, t);
  CHECK(out.data_ptr<int64_t>()[4] == 4);
  dist::all_to_all_single(out, t);
  CHECK(out.data_ptr<int64_t>()[2] == 2);
  auto work = dist::barrier(nullptr, /*async_op=*/true);
  work->wait();
  CHECK(work->isSuccess());
  CHECK(dist::default_group()->sequenceNumber() == 10);

  dist::destroy_process_group();
  CHECK_FALSE(dist::is_initialized());
  CHECK_THROWS_WITH(dk::c10d::all_reduce_(t, "sum", "0"), Catch::Contains("c10d::all_reduce_: process group '0' was destroyed"));
  CHECK_THROWS_WITH(dist::all_reduce(t), Catch::Contains("init_process_group first"));
  std::filesystem::remove_all(folder);
}
