// Exercise 12.1 (CPU): who loads which rows of a shared tile, and whom each load reaches. Solution.
//
// The hardware numbers a cluster's blocks x fastest, so block (x, y) is rank x + y * c.x, and that
// rank is its bit in every ctaMask. The A tile of a cluster row is needed by the c.x blocks with the
// same y: the A mask has their bits, the same mask for every block of the row. The B tile of a
// column is needed by the c.y blocks with the same x. Block (x, y) holds slice x of its row's A
// tile (tile_m / c.x rows) and slice y of its column's B tile (tile_k / c.y rows): the slices of a
// row are told apart by x, those of a column by y, so each tile is covered once, in equal shares.
#pragma once

#include <cstdint>

namespace exercise {

struct Cluster {
  int x;  // blocks along the columns of C (blockIdx.x)
  int y;  // blocks along the rows of C (blockIdx.y)
};

struct Rows {
  int first;  // the first row of the tile in the slice
  int count;  // how many rows, from `first` on
};

inline int rank_of(const Cluster& c, int x, int y) { return x + y * c.x; }  // x fastest

inline std::uint16_t a_mask(const Cluster& c, int x, int y) {
  (void)x;  // every block of the row sends its A slice to the same blocks: the whole row
  std::uint16_t mask = 0;
  for (int i = 0; i < c.x; ++i) mask |= static_cast<std::uint16_t>(1u << rank_of(c, i, y));
  return mask;
}

inline std::uint16_t b_mask(const Cluster& c, int x, int y) {
  (void)y;  // the whole column
  std::uint16_t mask = 0;
  for (int j = 0; j < c.y; ++j) mask |= static_cast<std::uint16_t>(1u << rank_of(c, x, j));
  return mask;
}

inline Rows a_rows(const Cluster& c, int tile_m, int x, int y) {
  (void)y;
  const int count = tile_m / c.x;  // the row's c.x blocks share the A tile
  return {x * count, count};
}

inline Rows b_rows(const Cluster& c, int tile_k, int x, int y) {
  (void)x;
  const int count = tile_k / c.y;  // the column's c.y blocks share the B tile
  return {y * count, count};
}

}  // namespace exercise
