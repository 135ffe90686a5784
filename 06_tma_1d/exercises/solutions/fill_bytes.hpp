// Exercise 06.1 (CPU): what the leader announces when it fills a stage of the ring. Solution.
//
// A fill announces exactly what its copy delivers: a whole stage, the shorter remainder for the
// last tile, and nothing at all for a number past the last tile, where the leader's plain
// arrival completes the phase by itself. Announcing a whole stage for the last tile leaves the
// transaction count above zero for ever (the bounded wait gives up); announcing less than the
// copy delivers completes the phase while bytes are still landing (a race nothing reports).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tma_1d_model.hpp"  // num_tiles_of, tile_bytes_of, kBulkAlignBytes, kMaxTxBytes

inline std::uint32_t fill_tx_bytes(unsigned long long tile, std::size_t num_bytes, std::size_t stage_bytes) {
  if (tile >= num_tiles_of(num_bytes, stage_bytes)) return 0;  // no copy: the arrival alone completes the phase
  return tile_bytes_of(tile, num_bytes, stage_bytes);           // the last tile may be shorter than a stage
}
