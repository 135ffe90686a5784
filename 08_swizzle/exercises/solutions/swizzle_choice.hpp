// Exercise 08.4 (CPU): choose the swizzle from the bank model. Solution.
//
// Each lane's byte goes where TMA puts it for the mode (box_smem_byte: with a swizzle a row takes
// a whole span), and the bank model counts every instruction. The modes are tried from the
// smallest span up, each only if its span holds the box's rows, and a later one wins only with
// strictly fewer wavefronts, so a tie goes to the smallest span. No swizzle holds every box.
//
// What the model answers, reads down the columns in 16-byte chunks: 128-byte rows want 128B (eight
// rows of one chunk column in eight bank groups; 8 ways without). 64-byte rows want 64B, not 128B:
// both read conflict-free, and 64B takes half the shared memory. 32-byte rows want 32B. Rows of
// 16, 48, 80 or 112 bytes want no swizzle: an odd number of chunks per row already puts eight
// consecutive rows in eight bank groups, as the classic transpose's padding does. Rows wider than
// 128 bytes can have no swizzle at all. Reads row by row never want one: without a swizzle a
// quarter-warp reads 128 consecutive bytes, and the span a narrow row takes leaves gaps that put
// two rows in the same banks (rows of 64 bytes with 128B: twice the wavefronts).
#pragma once

#include <cuda.h>  // CUtensorMapSwizzle

#include <cstdint>
#include <vector>

#include "swizzle_model.hpp"  // box_smem_byte, count_bank_conflicts, box_fits_span, Swizzle

struct BoxSpot {
  int row;   // the box row, from 0
  int byte;  // the first byte the lane reads in that row: a multiple of the bytes it reads
};

struct ReadPattern {
  int row_bytes;     // the box's inner dimension in bytes: 16, 32, ..., 256
  int access_bytes;  // what each lane reads: 4 (a float), 8 (a double) or 16 (a float4)
  std::vector<std::vector<BoxSpot>> instructions;  // each a warp instruction: lane l reads spot l
};

inline int pattern_wavefronts(CUtensorMapSwizzle swizzle, const ReadPattern& reads) {
  const auto mode = static_cast<Swizzle>(static_cast<int>(swizzle));
  int wavefronts = 0;
  for (const std::vector<BoxSpot>& instruction : reads.instructions) {
    std::vector<std::uint32_t> lane_bytes;  // where each lane's bytes are stored
    for (const BoxSpot& spot : instruction) {
      lane_bytes.push_back(box_smem_byte(mode, reads.row_bytes, spot.row, spot.byte));
    }
    wavefronts += count_bank_conflicts(lane_bytes, reads.access_bytes).wavefronts;
  }
  return wavefronts;
}

inline CUtensorMapSwizzle choose_swizzle(const ReadPattern& reads) {
  CUtensorMapSwizzle best = CU_TENSOR_MAP_SWIZZLE_NONE;  // holds every box of whole chunks
  int fewest = pattern_wavefronts(best, reads);
  for (CUtensorMapSwizzle swizzle :
       {CU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B}) {
    if (!box_fits_span(static_cast<Swizzle>(static_cast<int>(swizzle)), reads.row_bytes)) continue;
    const int wavefronts = pattern_wavefronts(swizzle, reads);
    if (wavefronts < fewest) best = swizzle, fewest = wavefronts;  // a tie keeps the smaller span
  }
  return best;
}
