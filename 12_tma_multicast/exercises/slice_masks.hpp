// Exercise 12.1 (CPU): who loads which rows of a shared tile, and whom each load reaches.
//
// A cluster of x by y blocks covers x tile columns and y tile rows of C. The blocks of one cluster
// row compute C tiles of the same row band, so they need the same A tile; the blocks of one cluster
// column need the same B tile. Nobody loads a shared tile whole: each block of a row loads one
// slice of the row's A tile (whole rows of it, an equal share for every block) and multicasts it to
// the blocks that need it; each block of a column does the same with the column's B tile. The copy
// names its receivers in a 16-bit ctaMask, one bit per block of the cluster, bit r for the block
// whose %cluster_ctarank is r.
//
// Your task, for a cluster shape and the block at (x, y) of the cluster (0 <= x < c.x, 0 <= y < c.y):
//   rank_of   the block's %cluster_ctarank, in the order the hardware numbers a cluster's blocks;
//   a_mask    the ctaMask of the A slice it loads; b_mask the same for its B slice;
//   a_rows    the rows of the A tile (tile_m rows, numbered from 0) that its slice holds;
//   b_rows    the rows of the B tile (tile_k rows: the k values of one k-tile) that its slice holds.
// Every cluster shape here has sides that divide the tile's rows. The test lands every block's
// slices in model tiles and reports the first row that arrives twice, never, or in a block that
// does not need it. The chapter's model (tma_multicast_model.hpp) works this out for its own tiles.
// Check: scripts/exercise.py slice_masks
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

inline int rank_of(const Cluster& c, int x, int y) {
  (void)c, (void)x, (void)y;
  return 0;  // TODO
}

inline std::uint16_t a_mask(const Cluster& c, int x, int y) {
  (void)c, (void)x, (void)y;
  return 0;  // TODO: one bit per block that needs the A tile this block's slice belongs to
}

inline std::uint16_t b_mask(const Cluster& c, int x, int y) {
  (void)c, (void)x, (void)y;
  return 0;  // TODO: one bit per block that needs the B tile this block's slice belongs to
}

inline Rows a_rows(const Cluster& c, int tile_m, int x, int y) {
  (void)c, (void)tile_m, (void)x, (void)y;
  return {0, 0};  // TODO
}

inline Rows b_rows(const Cluster& c, int tile_k, int x, int y) {
  (void)c, (void)tile_k, (void)x, (void)y;
  return {0, 0};  // TODO
}

}  // namespace exercise
