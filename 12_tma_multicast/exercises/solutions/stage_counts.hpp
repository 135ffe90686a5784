// Exercise 12.2 (CPU): the counts a stage's two barriers start with, and what multicast saves.
// Solution.
//
// full: a block's barrier counts the bytes that land in *its* shared memory, whoever loaded them:
// its whole A tile and its whole B tile, with or without multicast. Expecting only the bytes of
// its own slices lets the phase complete with other slices still on the way, and the bytes that
// land after it run into the next phase's count.
// empty: block (x, y) writes into the c.x blocks of its row (A) and the c.y blocks of its column
// (B). It is in both, but its warps arrive once: (c.x + c.y - 1) blocks, every consumer warp of each.
// Without multicast it writes into itself alone.
// issued: one slice of each tile, 1/c.x of A and 1/c.y of B; the share of the L2 traffic falls
// with the cluster's sides, while what lands in every block stays the same.
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

inline std::uint32_t a_tile_bytes(const Tiles& t) { return static_cast<std::uint32_t>(t.m * t.k * t.elem_bytes); }
inline std::uint32_t b_tile_bytes(const Tiles& t) { return static_cast<std::uint32_t>(t.k * t.n * t.elem_bytes); }
inline int a_sharers(const Cluster& c) { return c.multicast ? c.x : 1; }
inline int b_sharers(const Cluster& c) { return c.multicast ? c.y : 1; }

inline std::uint32_t full_tx_bytes(const Cluster& c, const Tiles& t) {
  (void)c;  // what lands here does not depend on who loaded it
  return a_tile_bytes(t) + b_tile_bytes(t);
}

inline int empty_arrivals(const Cluster& c, const Tiles& t) {
  return (a_sharers(c) + b_sharers(c) - 1) * t.consumer_warps;  // the block itself is in its row and its column
}

inline std::uint32_t issued_bytes(const Cluster& c, const Tiles& t) {
  return a_tile_bytes(t) / a_sharers(c) + b_tile_bytes(t) / b_sharers(c);
}

inline double l2_share(const Cluster& c, const Tiles& t) {
  return static_cast<double>(issued_bytes(c, t)) / issued_bytes({c.x, c.y, false}, t);
}

}  // namespace exercise
