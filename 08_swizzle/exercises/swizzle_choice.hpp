// Exercise 08.4 (CPU): choose the swizzle from the bank model.
//
// A kernel TMA-loads a box into shared memory that starts where every pattern starts (a 1024-byte
// boundary), and its threads then read the box in a fixed way: down its columns, row by row, or
// both. The tensor map's swizzle decides where the box's bytes land, and with that what the reads
// cost. Which mode should the map ask for? The chapter's rules:
//   - a box row must be no wider than the mode's span (32, 64 or 128 bytes); without a swizzle any
//     whole number of 16-byte chunks goes (the reference page's "The four modes");
//   - with a swizzle each box row takes a whole span in shared memory, however narrow the row
//     ("Where a box lands"): a narrow box with a wide span wastes shared memory;
//   - a warp instruction takes as many wavefronts as the bank model counts ("Counting conflicts").
//
// Your task, for a pattern of reads (ReadPattern: the box's row width in bytes, the bytes each lane
// reads, and the warp instructions that read the box, lane by lane):
//   1. pattern_wavefronts(): the wavefronts all the pattern's instructions take together, with the
//      box loaded with `swizzle` (a mode whose span holds the box's rows);
//   2. choose_swizzle(): the mode the tensor map should ask for: one whose span holds the box's
//      rows, and whose reads take the fewest wavefronts; where several modes tie, the one of the
//      smallest span (no swizzle counts as the smallest): it takes no more shared memory than the
//      others, and often less.
// Call the chapter's model (swizzle_model.hpp) for where a byte of the box lands (box_smem_byte)
// and for the bank counts (count_bank_conflicts). Its Swizzle numbers the modes as
// CUtensorMapSwizzle does: static_cast<Swizzle>(static_cast<int>(swizzle)).
// Then predict, before the test tells you: which mode for reads down the columns in 16-byte chunks,
// with rows of 128, 64, 32 and 48 bytes? Which for reads row by row?
// The test grades your choice against the model for every row width from 16 to 256 bytes, reads
// of 4, 8 and 16 bytes a lane, down the columns, row by row, both, and at scattered places.
// Check: scripts/exercise.py swizzle_choice
#pragma once

#include <cuda.h>  // CUtensorMapSwizzle

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
  (void)swizzle, (void)reads;
  return 0;  // TODO: the wavefronts of every instruction, added up
}

inline CUtensorMapSwizzle choose_swizzle(const ReadPattern& reads) {
  (void)reads;
  return CU_TENSOR_MAP_SWIZZLE_128B;  // TODO: choose from the wavefronts
}
