// Exercise 06.1 (CPU): what the leader announces when it fills a stage of the ring.
//
// The lab's counter ring (counter_sync_ring) fills a stage in three steps: the leader takes the next
// tile number from a counter, arrives on the stage's full barrier with expect-tx, and issues one
// bulk copy of that tile. The barrier expects one arrival, so its phase completes when that
// arrival has come and the transaction count is back at zero: every byte announced must be a
// byte the copy writes, and every byte the copy writes must have been announced.
// Near the end of the array two things happen. The last tile may be shorter than a stage (the
// array need only hold whole 16-byte units). And the counter keeps handing out numbers past the
// last tile, because every block keeps filling its stages until it learns that nothing is left;
// such a fill issues no copy, yet its phase must still complete, so that the block wakes up,
// reads "none left" and stops.
//
// Your task: fill_tx_bytes() returns the bytes the leader announces for the fill that took tile
// number `tile` of an array of `num_bytes` bytes cut into stages of `stage_bytes` (0 means a plain
// arrival without bytes). The test plays rings of several blocks and stages on model barriers
// (course/mbarrier_model.hpp): each phase must complete exactly when its copy's last byte lands.
// The chapter's tile plan (tma_1d_model.hpp) is there to be used.
// Check: scripts/exercise.py fill_bytes
#pragma once

#include <cstddef>
#include <cstdint>

#include "tma_1d_model.hpp"  // num_tiles_of, tile_bytes_of, kBulkAlignBytes, kMaxTxBytes

inline std::uint32_t fill_tx_bytes(unsigned long long tile, std::size_t num_bytes, std::size_t stage_bytes) {
  (void)tile;
  (void)num_bytes;
  // TODO: a whole stage is right for most fills, but not for all of them.
  return static_cast<std::uint32_t>(stage_bytes);
}
