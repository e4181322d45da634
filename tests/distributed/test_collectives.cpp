// Every collective of dk::distributed on the ranks tools/dkrun starts (2 and 4 local processes
// over the loopback address; tests/meson.build runs both), and with DK_TEST_BACKEND=mpi on the
// MPI backend under mpirun: each result against the value computed here from what every rank
// contributed. Every rank runs the same test cases in the same order
// (Catch2's declaration order), so the collectives line up; the world's timeout (20 s) turns a
// failure on one rank into an error on the others instead of a hang.
#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener below
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "dk/dk.h"
#include "dk/distributed/distributed.h"
#include "world_listener.h"
#include "dk/layers/modes.h"

using namespace dk;
namespace dist = dk::distributed;

namespace {

using dk::test::WorldListener;
CATCH_REGISTER_LISTENER(WorldListener)

int rank() { return dist::get_rank(); }
int world() { return dist::get_world_size(); }

// Rank r's value at index i: small integers, exact in every dtype (products of up to four of them
// stay below 2^11); bool tensors get a pattern with both values.
double valueAt(int r, int64_t i) { return static_cast<double>((r * 7 + i * 3) % 5 + 1); }
bool boolAt(int r, int64_t i) { return ((r + i) % 3) == 0 || i % 4 == 1; }

Tensor rankTensor(int r, int64_t n, ScalarType dtype) {
  Tensor t = dk::empty({n}, TensorOptions().dtype(kDouble));
  auto* p = t.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) p[i] = dtype == kBool ? (boolAt(r, i) ? 1.0 : 0.0) : valueAt(r, i);
  return t.to(dtype);
}

// What every rank's all_reduce must give, computed in double from every rank's tensor (exact for
// these values), then converted: AVG truncates for integers, as the kernels do.
Tensor expectedReduce(int64_t n, ScalarType dtype, dist::ReduceOp op) {
  Tensor acc = rankTensor(0, n, dtype).to(kDouble);
  for (int r = 1; r < world(); ++r) {
    Tensor x = rankTensor(r, n, dtype).to(kDouble);
    switch (op) {
      case dist::ReduceOp::SUM:
      case dist::ReduceOp::AVG: acc = dtype == kBool ? dk::maximum(acc, x) : acc + x; break;
      case dist::ReduceOp::PRODUCT: acc = dtype == kBool ? dk::minimum(acc, x) : acc * x; break;
      case dist::ReduceOp::MIN: acc = dk::minimum(acc, x); break;
      case dist::ReduceOp::MAX: acc = dk::maximum(acc, x); break;
    }
  }
  if (op == dist::ReduceOp::AVG) {
    acc = (acc / static_cast<double>(world())).contiguous();
    auto* p = acc.data_ptr<double>();
    if (!isFloatingType(dtype)) {
      for (int64_t i = 0; i < acc.numel(); ++i) p[i] = static_cast<double>(static_cast<int64_t>(p[i]));
    }
  }
  return acc.to(dtype);
}

// Same sizes, dtype and values (compared in double: exact for every dtype here).
bool same(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  Tensor x = a.to(kDouble).contiguous(), y = b.to(kDouble).contiguous();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (x.data_ptr<double>()[i] != y.data_ptr<double>()[i]) return false;
  }
  return true;
}

const ScalarType kDtypes[] = {kFloat, kDouble, kHalf, kBFloat16, kInt, kLong, kShort, kChar, kByte, kBool};
const dist::ReduceOp kOps[] = {dist::ReduceOp::SUM, dist::ReduceOp::PRODUCT, dist::ReduceOp::MIN, dist::ReduceOp::MAX,
                               dist::ReduceOp::AVG};

}  // namespace

TEST_CASE("all_reduce: every reduce op and dtype, sizes 0 to 1000") {
  for (ScalarType dtype : kDtypes) {
    for (dist::ReduceOp op : kOps) {
      if (dtype == kBool && op == dist::ReduceOp::AVG) continue;  // refused: see the error test
      for (int64_t n : {0, 1, 7, 1000}) {
        Tensor t = rankTensor(rank(), n, dtype);
        dist::all_reduce(t, op);
        INFO(toString(dtype) << " " << dist::reduceOpName(op) << " n=" << n);
        CHECK(same(t, expectedReduce(n, dtype, op)));
      }
    }
  }
}

TEST_CASE("all_reduce: async_op returns a Work that completes; the operator called directly waits") {
  Tensor t = rankTensor(rank(), 64, kFloat);
  auto work = dist::all_reduce(t, dist::ReduceOp::SUM, nullptr, /*async_op=*/true);
  work->wait();
  CHECK(work->isCompleted());
  CHECK(work->isSuccess());
  CHECK(same(t, expectedReduce(64, kFloat, dist::ReduceOp::SUM)));
  Tensor u = rankTensor(rank(), 64, kFloat);
  dk::c10d::all_reduce_(u, "max", "0");
  CHECK(same(u, expectedReduce(64, kFloat, dist::ReduceOp::MAX)));
  // Several in flight at once complete in order.
  std::vector<Tensor> ts;
  std::vector<dist::WorkHandle> works;
  for (int k = 0; k < 8; ++k) {
    ts.push_back(rankTensor(rank(), 100 + k, kDouble));
    works.push_back(dist::all_reduce(ts.back(), dist::ReduceOp::SUM, nullptr, true));
  }
  for (int k = 0; k < 8; ++k) {
    works[k]->wait();
    CHECK(same(ts[k], expectedReduce(100 + k, kDouble, dist::ReduceOp::SUM)));
  }
}

TEST_CASE("broadcast: from every root, every dtype") {
  for (int root = 0; root < world(); ++root) {
    for (ScalarType dtype : kDtypes) {
      Tensor t = rankTensor(rank(), 33, dtype);
      dist::broadcast(t, root);
      CHECK(same(t, rankTensor(root, 33, dtype)));
    }
  }
}

TEST_CASE("all_gather: uneven rows per rank, and into one tensor") {
  // Rank r gives r + 1 rows of 3.
  auto rows = [](int r) {
    Tensor t = dk::arange(0, 3 * (r + 1), 1, TensorOptions().dtype(kFloat)).view({r + 1, 3});
    return t + 100.0 * r;
  };
  std::vector<Tensor> outputs;
  for (int r = 0; r < world(); ++r) outputs.push_back(dk::zeros({r + 1, 3}));
  dist::all_gather(outputs, rows(rank()));
  for (int r = 0; r < world(); ++r) CHECK(same(outputs[r], rows(r)));

  Tensor mine = rankTensor(rank(), 10, kLong).view({2, 5});
  Tensor all = dk::empty({2 * world(), 5}, TensorOptions().dtype(kLong));
  dist::all_gather_into_tensor(all, mine);
  for (int r = 0; r < world(); ++r) CHECK(same(all.narrow(0, 2 * r, 2), rankTensor(r, 10, kLong).view({2, 5})));
}

TEST_CASE("reduce_scatter: every reduce op, uneven pieces, and the even tensor form") {
  for (dist::ReduceOp op : kOps) {
    // Piece p has p + 2 elements; rank r's input is its pieces concatenated.
    std::vector<Tensor> inputs;
    int64_t offset = 0;
    for (int p = 0; p < world(); ++p) {
      inputs.push_back(rankTensor(rank(), offset + p + 2, kDouble).narrow(0, offset, p + 2).contiguous());
      offset += p + 2;
    }
    Tensor out = dk::empty({rank() + 2}, TensorOptions().dtype(kDouble));
    dist::reduce_scatter(out, inputs, op);
    int64_t mine_at = 0;
    for (int p = 0; p < rank(); ++p) mine_at += p + 2;
    Tensor full = expectedReduce(mine_at + rank() + 2, kDouble, op);
    INFO(dist::reduceOpName(op));
    CHECK(same(out, full.narrow(0, mine_at, rank() + 2)));
  }
  Tensor input = rankTensor(rank(), 4 * world(), kInt);
  Tensor out = dk::empty({4}, TensorOptions().dtype(kInt));
  dist::reduce_scatter_tensor(out, input, dist::ReduceOp::SUM);
  CHECK(same(out, expectedReduce(4 * world(), kInt, dist::ReduceOp::SUM).narrow(0, 4 * rank(), 4)));
}

TEST_CASE("all_to_all_single: even, and uneven splits") {
  // Even: rank r sends element block p (2 elements) to rank p.
  Tensor input = dk::arange(0, 2 * world(), 1, TensorOptions().dtype(kFloat)) + 1000.0 * rank();
  Tensor output = dk::empty({2 * world()});
  dist::all_to_all_single(output, input);
  for (int p = 0; p < world(); ++p) {
    Tensor from_p = dk::arange(0, 2 * world(), 1, TensorOptions().dtype(kFloat)) + 1000.0 * p;
    CHECK(same(output.narrow(0, 2 * p, 2), from_p.narrow(0, 2 * rank(), 2)));
  }
  // Uneven: rank r sends (r + p) % 3 rows of 2 to rank p.
  auto count = [](int r, int p) { return static_cast<int64_t>((r + p) % 3); };
  std::vector<int64_t> in_splits, out_splits;
  int64_t out_rows = 0;
  for (int p = 0; p < world(); ++p) {
    in_splits.push_back(count(rank(), p));
    out_splits.push_back(count(p, rank()));
    out_rows += out_splits.back();
  }
  auto sent = [&](int r) {  // rank r's input
    int64_t rows = 0;
    for (int p = 0; p < world(); ++p) rows += count(r, p);
    return (dk::arange(0, 2 * rows, 1, TensorOptions().dtype(kDouble)) + 100.0 * r).view({rows, 2});
  };
  Tensor uneven_out = dk::zeros({out_rows, 2}, TensorOptions().dtype(kDouble));
  dist::all_to_all_single(uneven_out, sent(rank()), out_splits, in_splits);
  int64_t at = 0;
  for (int p = 0; p < world(); ++p) {
    int64_t offset = 0;
    for (int q = 0; q < rank(); ++q) offset += count(p, q);
    CHECK(same(uneven_out.narrow(0, at, count(p, rank())), sent(p).narrow(0, offset, count(p, rank()))));
    at += count(p, rank());
  }
}

TEST_CASE("barrier and send/recv around a ring") {
  dist::barrier();
  int next = (rank() + 1) % world(), prev = (rank() + world() - 1) % world();
  Tensor mine = rankTensor(rank(), 17, kDouble);
  Tensor got = dk::zeros({17}, TensorOptions().dtype(kDouble));
  auto sending = dist::send(mine, next, nullptr, /*tag=*/5, /*async_op=*/true);
  dist::recv(got, prev, nullptr, 5);
  sending->wait();
  CHECK(same(got, rankTensor(prev, 17, kDouble)));
  dist::barrier();
}

TEST_CASE("new_group: a subgroup of ranks 0 and 1 has its own ranks and sequence numbers") {
  auto pair = dist::new_group({0, 1});
  if (rank() > 1) {
    CHECK(pair == nullptr);
  } else {
    REQUIRE(pair != nullptr);
    CHECK(pair->size() == 2);
    CHECK(pair->rank() == rank());
    Tensor t = dk::full({3}, static_cast<double>(rank() + 1));
    dist::all_reduce(t, dist::ReduceOp::SUM, pair);
    CHECK(same(t, dk::full({3}, 3.0)));
    CHECK(pair->sequenceNumber() == 1);
    dist::destroy_process_group(pair);
    Tensor u = dk::ones({3});
    CHECK_THROWS_WITH(dist::all_reduce(u, dist::ReduceOp::SUM, pair), Catch::Contains("was destroyed"));
  }
  dist::barrier();
}

TEST_CASE("modes see collectives as operators: OpCounter, and RankLogger's group and sequence number") {
  auto counter = std::make_shared<OpCounter>();
  std::string path = "test_collectives_logger.rank" + std::to_string(rank()) + ".log";
  uint64_t next = dist::default_group()->sequenceNumber() + 1;
  {
    auto logger = std::make_shared<RankLogger>(path, RankLogger::Options{false});
    DispatchModeGuard guard_counter(counter);
    DispatchModeGuard guard_logger(logger);
    Tensor t = dk::ones({2, 2});
    dist::all_reduce(t);
    dist::barrier();
    logger->flush();
  }
  CHECK(counter->count("c10d::all_reduce_") == 1);
  CHECK(counter->count("c10d::barrier") == 1);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("c10d::all_reduce_(Float[2, 2]") &&
                       Catch::Contains("[group=0 seq=" + std::to_string(next) + "]") &&
                       Catch::Contains("c10d::barrier(") &&
                       Catch::Contains("[group=0 seq=" + std::to_string(next + 1) + "]"));
  std::remove(path.c_str());
}

TEST_CASE("bad input raises a clear error on the rank that gave it, before anything is sent") {
  Tensor t = dk::ones({4, 4});
  Tensor transposed = t.t();
  CHECK_THROWS_WITH(dist::all_reduce(transposed), Catch::Contains("must be contiguous"));
  Tensor meta = dk::empty({4}, TensorOptions().device(Device(DeviceType::Meta)));
  CHECK_THROWS_WITH(dist::all_reduce(meta), Catch::Contains(WorldListener::backend() + " backend, which cannot move"));
  CHECK_THROWS_WITH(dk::c10d::all_reduce_(t, "mean", "0"), Catch::Contains("unknown reduce op 'mean'"));
  CHECK_THROWS_WITH(dk::c10d::all_reduce_(t, "sum", "7"), Catch::Contains("not a member of a process group named '7'"));
  CHECK_THROWS_WITH(dist::broadcast(t, world()), Catch::Contains("source rank") && Catch::Contains("out of range"));
  Tensor b = dk::ones({2}, TensorOptions().dtype(kBool));
  CHECK_THROWS_WITH(dist::all_reduce(b, dist::ReduceOp::AVG), Catch::Contains("avg is not defined for bool"));
  Tensor out = dk::empty({3});
  CHECK_THROWS_WITH(dist::all_gather_into_tensor(out, dk::ones({2})), Catch::Contains("output has 3 elements"));
  CHECK_THROWS_WITH(dist::send(t, rank()), Catch::Contains("is this rank"));
  // Nothing was issued: the group still works.
  Tensor ok = dk::ones({2});
  dist::all_reduce(ok);
  CHECK(same(ok, dk::full({2}, static_cast<double>(world()))));
}

TEST_CASE("mismatched arguments across ranks: the same clear error on every rank, and the group stays usable") {
  // Note [Argument check]: the ranks compare what they are about to do before any data moves.
  auto group = dist::new_group({}, std::chrono::seconds(10));
  Tensor t = dk::ones({rank() == 0 ? 1000 : 999});
  std::string message;
  try {
    dist::all_reduce(t, dist::ReduceOp::SUM, group);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("c10d::all_reduce_: collective 1 on process group '" + group->name() + "'") &&
                          Catch::Contains("rank 0 called c10d::all_reduce_ Float[1000] sum") &&
                          Catch::Contains("rank 1 called c10d::all_reduce_ Float[999] sum"));
  // Another reduce op on one rank.
  Tensor u = dk::ones({8});
  CHECK_THROWS_WITH(dist::all_reduce(u, rank() == 1 ? dist::ReduceOp::MAX : dist::ReduceOp::SUM, group),
                    Catch::Contains("rank 1 called c10d::all_reduce_ Float[8] max"));
  // all_to_all: rank 0 sends rank 1 one element more than rank 1 expects.
  std::vector<int64_t> in(static_cast<size_t>(world()), 1), out(static_cast<size_t>(world()), 1);
  if (rank() == 0) in[1] = 2;
  Tensor input = dk::ones({rank() == 0 ? world() + 1 : world()});
  Tensor output = dk::empty({world()});
  CHECK_THROWS_WITH(dist::all_to_all_single(output, input, out, in, group),
                    Catch::Contains("rank 0 sends 2 elements to rank 1, which expects 1"));
  // Nothing was sent: the group still works once the ranks agree.
  Tensor ok = dk::ones({10});
  dist::all_reduce(ok, dist::ReduceOp::SUM, group);
  CHECK(same(ok, dk::full({10}, static_cast<double>(world()))));
  dist::destroy_process_group(group);
  dist::barrier();
}
