// Exercise 08.2 (CPU): the bank of every element, and what a column read costs. Solution.
//
// Element (row, col) lies in chunk col / 4 of its row; the swizzle stores that chunk at position
// (col / 4) XOR (row % pattern rows), 8, 4, 2 or 1 of them for 128B, 64B, 32B and none. Rows are
// 128 bytes, 32 words, so the row does not change the bank: bank = 4 x stored chunk + col % 4.
// A quarter-warp reading one chunk column of eight consecutive rows finds it stored at 1, 2, 4 or
// 8 different positions with none, 32B, 64B and 128B: 8, 4, 2 and 1 passes. Rows four apart
// meet only two places of the 128B pattern: four passes, which is why the lesson's quad transpose
// starts each lane at another row of its quad.
#pragma once

#include <cuda.h>  // CUtensorMapSwizzle

#include <algorithm>
#include <set>
#include <vector>

struct LaneRead {
  int row;  // 0..31
  int col;  // 0..31, a multiple of access_bytes / 4
};

namespace exercise {
// Rows of the pattern: the XOR takes the row modulo this (1 without a swizzle: nothing moves).
inline int pattern_rows(CUtensorMapSwizzle swizzle) {
  return swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 1 : 1 << static_cast<int>(swizzle);
}
// The word of shared memory (from the tile's first) where element (row, col) is stored.
inline int stored_word(CUtensorMapSwizzle swizzle, int row, int col) {
  const int chunk = (col / 4) ^ (row % pattern_rows(swizzle));
  return row * 32 + chunk * 4 + col % 4;
}
}  // namespace exercise

inline int element_bank(CUtensorMapSwizzle swizzle, int row, int col) {
  return exercise::stored_word(swizzle, row, col) % 32;
}

inline int read_wavefronts(CUtensorMapSwizzle swizzle, const std::vector<LaneRead>& lanes, int access_bytes) {
  const int words_per_lane = access_bytes / 4;
  const std::size_t group = static_cast<std::size_t>(128 / access_bytes);  // lanes served together
  int passes = 0;
  for (std::size_t first = 0; first < lanes.size(); first += group) {
    std::set<int> asked[32];  // the different words each bank must deliver to this group
    for (std::size_t l = first; l < std::min(lanes.size(), first + group); ++l) {
      const int word = exercise::stored_word(swizzle, lanes[l].row, lanes[l].col);
      for (int w = 0; w < words_per_lane; ++w) asked[(word + w) % 32].insert(word + w);
    }
    std::size_t busiest = 0;
    for (const std::set<int>& bank : asked) busiest = std::max(busiest, bank.size());
    passes += static_cast<int>(busiest);
  }
  return passes;
}
