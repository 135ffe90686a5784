// Grades exercise 12.1: for every cluster shape up to 16 blocks whose sides are powers of two, the
// ranks are checked against the hardware's numbering, every mask bit against the blocks that need
// the tile, and the slices are landed in model tiles of two sizes: every row of every block's A and
// B tile must arrive exactly once, from the blocks that share the tile, in equal shares.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "tma_multicast_model.hpp"  // the lesson's plan, for the last check

namespace {

using exercise::Cluster;
using exercise::Rows;

const std::vector<Cluster> kShapes = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 1}, {1, 4}, {4, 2}, {2, 4},
                                      {8, 1}, {1, 8}, {4, 4}, {8, 2}, {2, 8}, {16, 1}, {1, 16}};

std::string shape(const Cluster& c) { return "cluster " + std::to_string(c.x) + "x" + std::to_string(c.y); }
std::string block(int x, int y) { return "block (" + std::to_string(x) + "," + std::to_string(y) + ")"; }
std::string bits(std::uint16_t mask, int num_blocks) {  // rank 0 last, as in a binary literal
  std::ostringstream text;
  if (mask >> num_blocks != 0) {  // bits beyond the cluster: all sixteen
    num_blocks = 16;
  }
  text << "0b";
  for (int r = num_blocks - 1; r >= 0; --r) text << ((mask >> r & 1u) ? '1' : '0');
  return text.str();
}

TEST(HostExerciseSliceMasks, RanksNumberTheBlocksAsTheHardwareDoes) {
  for (const Cluster& c : kShapes) {
    std::vector<int> owner(c.x * c.y, -1);
    for (int y = 0; y < c.y; ++y) {
      for (int x = 0; x < c.x; ++x) {
        const int rank = exercise::rank_of(c, x, y);
        ASSERT_TRUE(rank >= 0 && rank < c.x * c.y)
            << shape(c) << ": " << block(x, y) << " has rank " << rank << ", but the ranks of a cluster of "
            << c.x * c.y << " blocks are 0 to " << c.x * c.y - 1;
        ASSERT_TRUE(owner[rank] == -1) << shape(c) << ": " << block(x, y) << " and "
                                   << block(owner[rank] % c.x, owner[rank] / c.x) << " both have rank " << rank
                                   << ": every block of a cluster has a rank of its own";
        owner[rank] = x + y * c.x;
        if (x > 0) {
          ASSERT_TRUE(rank == exercise::rank_of(c, x - 1, y) + 1)
              << shape(c) << ": " << block(x, y) << " has rank " << rank << " and " << block(x - 1, y) << " rank "
              << exercise::rank_of(c, x - 1, y) << ": the hardware numbers the blocks along x first";
        }
      }
    }
  }
}

// Block (x, y) needs the A tile of its cluster row and the B tile of its cluster column.
void expect_mask_reaches_its_sharers(const Cluster& c, int x, int y, bool is_a) {
  const std::uint16_t mask = is_a ? exercise::a_mask(c, x, y) : exercise::b_mask(c, x, y);
  const int num_blocks = c.x * c.y;
  const char* tile = is_a ? "A" : "B";
  const std::string where = shape(c) + ": the " + tile + " mask of " + block(x, y) + " is " + bits(mask, num_blocks);
  for (int r = 0; r < 16; ++r) {
    const bool sent = (mask >> r & 1u) != 0;
    if (r >= num_blocks) {
      ASSERT_FALSE(sent) << where << ": bit " << r << " names no block of a " << num_blocks << "-block cluster";
      continue;
    }
    const int rx = r % c.x, ry = r / c.x;  // the hardware's numbering: x fastest
    const bool needs = is_a ? ry == y : rx == x;
    if (sent && !needs) {
      ADD_FAILURE() << where << ": it reaches rank " << r << ", " << block(rx, ry)
                    << ", which computes C tiles of another "
                    << (is_a ? "row band" : "column band") << " and needs another " << tile << " tile";
      return;
    }
    if (!sent && needs) {
      ADD_FAILURE() << where << ": it does not reach rank " << r << ", " << block(rx, ry) << ", which needs the same "
                    << tile << " tile" << (r == x + y * c.x ? " (the block that loads a slice needs it too)" : "")
                    << ": that block's full barrier would wait for the slice's bytes forever";
      return;
    }
  }
}

TEST(HostExerciseSliceMasks, EachMaskReachesExactlyTheBlocksThatShareTheTile) {
  for (const Cluster& c : kShapes) {
    for (int y = 0; y < c.y; ++y) {
      for (int x = 0; x < c.x; ++x) {
        expect_mask_reaches_its_sharers(c, x, y, true);
        expect_mask_reaches_its_sharers(c, x, y, false);
        if (HasFailure()) return;
      }
    }
  }
}

// Lands the slices of the `sharers` blocks that share one tile of `tile_rows` rows and checks that
// every row arrives once. `slice_of(i)` is the slice of the i-th sharer, named `sharer_name(i)`.
template <class SliceOf, class NameOf>
void expect_tile_filled_once(const std::string& where, int tile_rows, int sharers, SliceOf slice_of,
                             NameOf sharer_name) {
  std::vector<int> loaded_by(tile_rows, -1);
  const int first_count = slice_of(0).count;
  for (int i = 0; i < sharers; ++i) {
    const Rows rows = slice_of(i);
    ASSERT_TRUE(rows.count >= 1) << where << ": the slice of " << sharer_name(i) << " holds no rows";
    ASSERT_TRUE(rows.first >= 0 && rows.first + rows.count <= tile_rows)
        << where << ": the slice of " << sharer_name(i) << ", rows " << rows.first << " to "
        << rows.first + rows.count - 1 << ", does not lie inside the tile's " << tile_rows << " rows";
    ASSERT_TRUE(rows.count == first_count) << where << ": " << sharer_name(0) << " loads " << first_count
                                           << " rows and "
                                       << sharer_name(i) << " " << rows.count
                                       << ": the blocks that share a tile share its loading equally";
    for (int row = rows.first; row < rows.first + rows.count; ++row) {
      ASSERT_TRUE(loaded_by[row] == -1) << where << ": row " << row << " is in the slices of "
                                        << sharer_name(loaded_by[row])
                                    << " and " << sharer_name(i) << ": it would land twice";
      loaded_by[row] = i;
    }
  }
  for (int row = 0; row < tile_rows; ++row) {
    ASSERT_TRUE(loaded_by[row] != -1) << where << ": row " << row << " is in no block's slice: it never lands, and the "
                                  << "full barriers of the blocks that need it would wait for its bytes forever";
  }
}

TEST(HostExerciseSliceMasks, SlicesFillEverySharedTileOnceInEqualShares) {
  struct Tile { int m, k; };
  for (const Tile& t : {Tile{64, 32}, Tile{128, 64}}) {
    for (const Cluster& c : kShapes) {
      for (int y = 0; y < c.y; ++y) {  // the A tile of cluster row y, shared by blocks (0..c.x-1, y)
        const std::string where =
            shape(c) + ", A tile of " + std::to_string(t.m) + " rows of cluster row " + std::to_string(y);
        expect_tile_filled_once(
            where, t.m, c.x, [&](int i) { return exercise::a_rows(c, t.m, i, y); }, [&](int i) { return block(i, y); });
        if (HasFatalFailure()) return;
      }
      for (int x = 0; x < c.x; ++x) {  // the B tile of cluster column x, shared by blocks (x, 0..c.y-1)
        const std::string where = shape(c) + ", B tile of " + std::to_string(t.k) +
                                  " rows (k values) of cluster column " + std::to_string(x);
        expect_tile_filled_once(
            where, t.k, c.y, [&](int j) { return exercise::b_rows(c, t.k, x, j); }, [&](int j) { return block(x, j); });
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(HostExerciseSliceMasks, AgreesWithTheLessonsPlans) {
  for (const Cluster& c : {Cluster{2, 1}, Cluster{2, 2}, Cluster{4, 2}, Cluster{2, 4}, Cluster{1, 4}}) {
    const ClusterShape lesson{c.x, c.y, true};
    for (int y = 0; y < c.y; ++y) {
      for (int x = 0; x < c.x; ++x) {
        ASSERT_TRUE(exercise::rank_of(c, x, y) == cluster_rank(lesson, x, y))
            << shape(c) << ", " << block(x, y) << ": the rank is not the one the lesson's kernels use";
        ASSERT_TRUE(exercise::a_mask(c, x, y) == a_multicast_mask(lesson, x, y))
            << shape(c) << ", " << block(x, y) << ": the A mask is not the one the lesson's multicast_" << c.x << "x"
            << c.y << " kernel uses";
        ASSERT_TRUE(exercise::b_mask(c, x, y) == b_multicast_mask(lesson, x, y))
            << shape(c) << ", " << block(x, y) << ": the B mask is not the one the lesson's multicast_" << c.x << "x"
            << c.y << " kernel uses";
        const Rows a = exercise::a_rows(c, kTileM, x, y);
        ASSERT_TRUE(a.count == a_slice_rows(lesson))
            << shape(c) << ", " << block(x, y) << ": the A slice does not have as many rows as the lesson's";
      }
    }
  }
}

}  // namespace
