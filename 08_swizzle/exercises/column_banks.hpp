// Exercise 08.2 (CPU): the bank of every element, and what a column read costs.
//
// Shared memory has 32 banks of 4 bytes: the 4-byte word at address a is in bank (a / 4) % 32. A
// warp's shared-memory instruction is served in passes (wavefronts). Its lanes are taken in groups
// that can move 128 bytes together: all 32 lanes for 4-byte accesses, 16 for 8-byte ones, 8 (a
// quarter-warp) for 16-byte ones. In one pass a bank delivers one word, to every lane of the group
// that asks for that word. A group needs as many passes as its busiest bank has different words to
// deliver; the instruction needs the sum over its groups.
//
// The tile: rows of 32 floats (128 bytes), loaded by TMA with `swizzle` into shared memory that
// starts on a 1024-byte boundary. Element (row, col) is float `col` of row `row`, counted as in
// global memory; the swizzle decides where in its 128-byte row of shared memory it is stored
// (exercise 08.1, or the chapter's "One function for all four modes"). With the 64B and 32B modes
// the tile is read as 128-byte rows of shared memory all the same.
//
// Your task:
//   1. element_bank(): the bank that holds element (row, col);
//   2. read_wavefronts(): the passes one warp instruction needs when lane l reads `access_bytes`
//      (4, 8 or 16) bytes starting at element lanes[l]. Each access stays inside one 16-byte chunk
//      (col is a multiple of access_bytes / 4); fewer than 32 lanes may take part.
// Then predict, before the test tells you: what does a quarter-warp cost that reads one chunk
// column of eight consecutive rows, with each mode? And of eight rows four apart?
// The test compares your counts with the chapter's bank model (swizzle_model.hpp) on column reads,
// float reads, shared words and random accesses.
// Check: scripts/exercise.py column_banks
#pragma once

#include <cuda.h>  // CUtensorMapSwizzle

#include <vector>

struct LaneRead {
  int row;  // 0..31
  int col;  // 0..31, a multiple of access_bytes / 4
};

inline int element_bank(CUtensorMapSwizzle swizzle, int row, int col) {
  (void)swizzle, (void)row;
  return col % 32;  // TODO: right without a swizzle only
}

inline int read_wavefronts(CUtensorMapSwizzle swizzle, const std::vector<LaneRead>& lanes, int access_bytes) {
  (void)swizzle, (void)lanes, (void)access_bytes;
  return 0;  // TODO: the passes of the whole instruction
}
