#include "course/batch_grid.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace {

using course::batch_grid;

TEST(HostBatchGrid, OneBlockPerFourBatchesTheLastTakesWhatIsLeft) {
  EXPECT_EQ(batch_grid(1, 4), 1u);
  EXPECT_EQ(batch_grid(4, 4), 1u);
  EXPECT_EQ(batch_grid(5, 4), 2u) << "a fifth batch needs a second block";
  EXPECT_EQ(batch_grid(333, 4), 84u);
  EXPECT_EQ(batch_grid(777, 4), 195u);
  EXPECT_EQ(batch_grid(1007, 4), 252u);
  EXPECT_EQ(batch_grid(10007, 4), 2502u);
  EXPECT_EQ(batch_grid(7, 1), 7u);
  EXPECT_EQ(batch_grid(0, 4), 0u);
}

TEST(HostBatchGrid, ACapLowersTheGridAndZeroMeansNone) {
  EXPECT_EQ(batch_grid(10007, 4, 3), 3u);
  EXPECT_EQ(batch_grid(10007, 4, 1), 1u) << "max_blocks = 1: one block takes every batch";
  EXPECT_EQ(batch_grid(10007, 4, 0), 2502u) << "max_blocks = 0: no cap";
  EXPECT_EQ(batch_grid(5, 4, 100), 2u) << "a cap above the rule changes nothing";
}

// Every batch has exactly one block, whichever the count and the batches per block: block b of
// the grid takes batches b, b + grid, ... (the kernels' loop), and no block is left without one.
TEST(HostBatchGrid, EveryBatchHasABlockAndEveryBlockABatch) {
  for (int per_block = 1; per_block <= 8; ++per_block) {
    for (std::size_t num_batches = 1; num_batches <= 70; ++num_batches) {
      const unsigned grid = batch_grid(num_batches, per_block);
      std::vector<int> taken(num_batches, 0);
      for (unsigned block = 0; block < grid; ++block) {
        int mine = 0;
        for (std::size_t batch = block; batch < num_batches; batch += grid, ++mine) ++taken[batch];
        EXPECT_GE(mine, 1) << num_batches << " batches: block " << block << " has none";
        EXPECT_LE(mine, per_block) << num_batches << " batches: block " << block;
      }
      EXPECT_EQ(std::count(taken.begin(), taken.end(), 1), static_cast<long>(num_batches))
          << num_batches << " batches, " << per_block << " per block";
    }
  }
}

TEST(HostBatchGrid, RefusesABlockOfNoBatchesAndAGridPastTheLimit) {
  EXPECT_THROW(batch_grid(10, 0), std::invalid_argument);
  EXPECT_THROW(batch_grid(10, -1), std::invalid_argument);
  EXPECT_THROW(batch_grid(std::size_t{1} << 33, 1), std::invalid_argument);
  EXPECT_EQ(batch_grid(std::size_t{1} << 33, 1, 1024), 1024u) << "capped below the limit";
  EXPECT_EQ(batch_grid(0x7fffffffu, 1), 0x7fffffffu) << "the largest grid is allowed";
  EXPECT_THROW(batch_grid(std::size_t{0x7fffffffu} + 1, 1), std::invalid_argument);
}

}  // namespace
