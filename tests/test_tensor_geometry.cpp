// The shape helpers of dk/tensor/tensor_geometry.h: inferSize, computeStrideForView,
// inferBroadcastShape and maybe_wrap_dim.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dk/core/grad_mode.h"
#include "dk/core/local_dispatch_key_set.h"
#include "dk/tensor/empty_tensor.h"
#include "dk/tensor/tensor.h"
#include "dk/tensor/tensor_from_values.h"
#include "dk/tensor/tensor_geometry.h"
#include "dk/tensor/type_promotion.h"
#include "dk/util/error.h"
#include "dk/util/half.h"

using namespace dk;

namespace {

using Sizes = std::vector<int64_t>;

}  // namespace

TEST_CASE("tensor: inferSize") {
  CHECK(inferSize({2, -1}, 6) == Sizes{2, 3});
  CHECK(inferSize({-1}, 0) == Sizes{0});
  CHECK(inferSize({2, 3}, 6) == Sizes{2, 3});
  CHECK(inferSize({}, 1).empty());
  CHECK_THROWS_WITH(inferSize({-1, -1}, 4), "only one dimension can be inferred");
  CHECK_THROWS_WITH(inferSize({2, -2}, 4), "invalid shape dimension -2");
  CHECK_THROWS_WITH(inferSize({2, -1}, 7), "shape '[2, -1]' is invalid for input of size 7");
  CHECK_THROWS_WITH(inferSize({2, 4}, 7), "shape '[2, 4]' is invalid for input of size 7");
  CHECK_THROWS_WITH(inferSize({0, -1}, 0),
                    "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified dimension size "
                    "-1 can be any value and is ambiguous");
  // A zero among the known sizes of a tensor that has elements: the shape is just invalid.
  CHECK_THROWS_WITH(inferSize({-1, 0}, 6), "shape '[-1, 0]' is invalid for input of size 6");
}

TEST_CASE("tensor: computeStrideForView") {
  using Result = std::optional<Sizes>;
  // Contiguous: any reshape is a view.
  CHECK(computeStrideForView({2, 3, 4}, {12, 4, 1}, {6, 4}) == Result(Sizes{4, 1}));
  CHECK(computeStrideForView({2, 3, 4}, {12, 4, 1}, {24}) == Result(Sizes{1}));
  CHECK(computeStrideForView({2, 3}, {3, 1}, {3, 2}) == Result(Sizes{2, 1}));
  CHECK(computeStrideForView({6}, {1}, {1, 2, 1, 3, 1}) == Result(Sizes{6, 3, 3, 1, 1}));
  // Transposed: cannot be flattened.
  CHECK(computeStrideForView({3, 2}, {1, 3}, {6}) == std::nullopt);
  // ...but splitting or merging within one dense chunk works.
  CHECK(computeStrideForView({3, 2}, {1, 3}, {3, 2, 1}) == Result(Sizes{1, 3, 3}));
  // Every other column of a [4, 12] is evenly spaced: it flattens.
  CHECK(computeStrideForView({4, 6}, {12, 2}, {24}) == Result(Sizes{2}));
  // The first 6 columns of a [4, 12]: rows cannot merge, columns can split.
  CHECK(computeStrideForView({4, 6}, {12, 1}, {4, 2, 3}) == Result(Sizes{12, 3, 1}));
  CHECK(computeStrideForView({4, 6}, {12, 1}, {2, 2, 6}) == Result(Sizes{24, 12, 1}));
  CHECK(computeStrideForView({4, 6}, {12, 1}, {24}) == std::nullopt);
  CHECK(computeStrideForView({4, 6}, {12, 1}, {2, 12}) == std::nullopt);
  CHECK(computeStrideForView({4, 6}, {12, 1}, {8, 3}) == std::nullopt);
  // Size-1 dims with odd strides are ignored.
  CHECK(computeStrideForView({2, 1, 3}, {3, 100, 1}, {6}) == Result(Sizes{1}));
  // Expanded (stride 0) dims can still be split.
  CHECK(computeStrideForView({4}, {0}, {2, 2}) == Result(Sizes{0, 0}));
  // 0-dim and empty tensors.
  CHECK(computeStrideForView({}, {}, {1, 1}) == Result(Sizes{1, 1}));
  CHECK(computeStrideForView({1}, {5}, {}) == Result(Sizes{}));
  CHECK(computeStrideForView({2, 0}, {7, 7}, {2, 0}) == Result(Sizes{7, 7}));
  CHECK(computeStrideForView({2, 0}, {7, 7}, {0, 3}) == Result(Sizes{3, 1}));
  // Element counts must match.
  CHECK(computeStrideForView({2, 3}, {3, 1}, {5}) == std::nullopt);
}

TEST_CASE("tensor: inferBroadcastShape") {
  CHECK(inferBroadcastShape({2, 3}, {3}) == Sizes{2, 3});
  CHECK(inferBroadcastShape({2, 1}, {1, 4}) == Sizes{2, 4});
  CHECK(inferBroadcastShape({}, {2}) == Sizes{2});
  CHECK(inferBroadcastShape({5, 1, 3}, {4, 1}) == Sizes{5, 4, 3});
  CHECK(inferBroadcastShape({0}, {1}) == Sizes{0});
  CHECK_THROWS_WITH(inferBroadcastShape({2, 3}, {4}),
                    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1 "
                    "(shapes [2, 3] and [4])");
  CHECK_THROWS_WITH(inferBroadcastShape({2, 3}, {3, 3}),
                    "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0 "
                    "(shapes [2, 3] and [3, 3])");
  CHECK_THROWS_WITH(inferBroadcastShape({0}, {2}),
                    "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 0 "
                    "(shapes [0] and [2])");
}

TEST_CASE("tensor: maybe_wrap_dim") {
  CHECK(maybe_wrap_dim(-1, 2) == 1);
  CHECK(maybe_wrap_dim(-2, 2) == 0);
  CHECK(maybe_wrap_dim(1, 2) == 1);
  CHECK(maybe_wrap_dim(0, 0) == 0);
  CHECK(maybe_wrap_dim(-1, 0) == 0);
  CHECK_THROWS_WITH(maybe_wrap_dim(5, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
  CHECK_THROWS_WITH(maybe_wrap_dim(-3, 2), "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  CHECK_THROWS_WITH(maybe_wrap_dim(1, 0), "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  CHECK_THROWS_WITH(maybe_wrap_dim(0, 0, false), "Dimension specified as 0 but tensor has no dimensions");
}
