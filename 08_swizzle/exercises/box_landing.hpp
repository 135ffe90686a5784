// Exercise 08.1 (CPU): where a swizzled box lands, what it occupies, what its barrier expects.
//
// Read shared memory as 128-byte rows of eight 16-byte chunks. A TMA load with the swizzle
// CU_TENSOR_MAP_SWIZZLE_32B, _64B or _128B moves each chunk of a box inside its 128-byte row: the
// chunk that would sit at position p of the row is stored at p XOR (the row's place in the
// pattern). The pattern has span / 16 rows (span: 32, 64 or 128 bytes) and follows shared-memory
// addresses, not positions in the buffer: a 128-byte row at address a has place (a / 128) modulo
// the pattern's rows. Without a swizzle nothing moves.
// A box's inner dimension may be any whole number of chunks up to the span, so a box row can be
// narrower than the span; how far apart its rows then lie is part of the question (the chapter's
// "Where a box lands").
//
// Your task, for a box of `rows` rows of `inner_bytes` bytes each, whose first byte TMA writes at
// the shared-memory address `smem_addr` (128-byte aligned, as TMA requires, but not necessarily
// where the pattern starts):
//   1. chunk_landing_byte(): where chunk `chunk` of box row `row` lands, in bytes from the box's
//      first byte;
//   2. box_footprint_bytes(): the shared memory the box may write, wherever it is placed: what to
//      allocate for it;
//   3. box_expect_tx_bytes(): the count the leader announces on the box's full barrier.
// The chapter's model (swizzle_model.hpp) holds the answers: work them out from the rules instead.
// The test loads numbered boxes of every legal shape, at every 128-byte place of the pattern, into
// a model of shared memory, looks where you say each chunk is, and replays each load on a model
// mbarrier (course/mbarrier_model.hpp).
// Check: scripts/exercise.py box_landing
#pragma once

#include <cuda.h>  // CUtensorMapSwizzle

#include <cstdint>

inline std::uint32_t chunk_landing_byte(CUtensorMapSwizzle swizzle, int inner_bytes, int row, int chunk,
                                        std::uint32_t smem_addr) {
  (void)swizzle, (void)smem_addr;
  // TODO: right without a swizzle only
  return static_cast<std::uint32_t>(row * inner_bytes + chunk * 16);
}

inline std::uint32_t box_footprint_bytes(CUtensorMapSwizzle swizzle, int inner_bytes, int rows) {
  (void)swizzle;
  // TODO: right without a swizzle only
  return static_cast<std::uint32_t>(rows * inner_bytes);
}

inline std::uint32_t box_expect_tx_bytes(CUtensorMapSwizzle swizzle, int inner_bytes, int rows) {
  (void)swizzle, (void)inner_bytes, (void)rows;
  return 0;  // TODO: the bytes the phase waits for
}
