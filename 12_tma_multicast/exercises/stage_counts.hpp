// Exercise 12.2 (CPU): the counts a stage's two barriers start with, and what multicast saves.
//
// Every block of a cluster x by y has, per stage, a full barrier (the stage's A and B tiles have
// landed) and an empty barrier (the stage may be refilled). With multicast, block (x, y) loads one
// slice of its row's A tile and one of its column's B tile, each sent to every block that shares
// the tile (exercise 12.1); without it, every block loads its own two tiles whole. The block's
// producer arrives once on its own full barrier per stage, with arrive.expect_tx and a byte count;
// after reading a stage, every consumer warp arrives once on the empty barrier of each block whose
// loads land in its block (itself included, once).
//
// Your task, for a cluster and a block's tiles (C tile m x n, k-tile k, operand elements of
// elem_bytes bytes, consumer_warps consumer warps per block):
//   full_tx_bytes   the byte count each block's producer announces on its full barrier per stage;
//   empty_arrivals  the arrival count each block's empty barrier is initialised with;
//   issued_bytes    the bytes one block's own loads ask of the L2 per k-tile;
//   l2_share        issued_bytes as a share of what the same block asks for without multicast.
// The test replays a stage on the model mbarriers of course/mbarrier_model.hpp: the slices that
// land in a block, in random orders, and the releases of every consumer warp that reads what the
// block loaded. It reports a phase that completes too early or never.
// Check: scripts/exercise.py stage_counts
#pragma once

#include <cstdint>

namespace exercise {

struct Cluster {
  int x;           // blocks along the columns of C
  int y;           // blocks along the rows of C
  bool multicast;  // false: the cluster only groups blocks, each loads its own tiles
};

struct Tiles {
  int m, n, k;         // C tile m x n per block; A tile m x k, B tile k x n per k-tile
  int elem_bytes;      // bytes per element of A and B
  int consumer_warps;  // warps per block that read the stages
};

inline std::uint32_t full_tx_bytes(const Cluster& c, const Tiles& t) {
  (void)c, (void)t;
  return 0;  // TODO
}

inline int empty_arrivals(const Cluster& c, const Tiles& t) {
  (void)c, (void)t;
  return 0;  // TODO
}

inline std::uint32_t issued_bytes(const Cluster& c, const Tiles& t) {
  (void)c, (void)t;
  return 0;  // TODO
}

inline double l2_share(const Cluster& c, const Tiles& t) {
  (void)c, (void)t;
  return 0.0;  // TODO
}

}  // namespace exercise
