/// @file
/// @brief The launch rule of chapters 01-05: one block per few batches (host code).
///
/// Chapter 01 introduces it and its page quotes it; 02-05 launch their lessons with it too.
/// `HostBatchGrid` (common/tests/batch_grid_test.cpp) checks it.
#pragma once

#include <cstddef>
#include <stdexcept>

namespace course {

/// [grid]
// The launch rule of chapters 01-05: one block for every `batches_per_block` batches (the last
// block takes what is left), at most `max_blocks` blocks when a caller caps the grid (0: no cap).
// Throws, naming the rule, for a block of no batches or a grid past gridDim.x's limit.
inline unsigned batch_grid(std::size_t num_batches, int batches_per_block, unsigned max_blocks = 0) {
  if (batches_per_block < 1) throw std::invalid_argument("batch_grid: a block takes at least one batch");
  std::size_t grid = (num_batches + batches_per_block - 1) / batches_per_block;
  if (max_blocks != 0 && max_blocks < grid) grid = max_blocks;
  if (grid > 0x7fffffffu) throw std::invalid_argument("batch_grid: gridDim.x is at most 2^31 - 1 blocks");
  return static_cast<unsigned>(grid);
}
/// [grid]

}  // namespace course
