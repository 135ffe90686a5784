// 12_tma_multicast: the cluster model. Which slice of the shared A and B tiles each block of a
// cluster loads, which blocks its multicast reaches (the ctaMask), which blocks its consumers must
// release a stage to, and the two counts every stage barrier starts with.
//
// Plain constexpr functions of the cluster shape and a block's place in it, used by the kernels
// (device), by the host model the program prints, and by the CPU tests in tma_multicast_test.cu,
// which check them against each other and simulate the whole pipeline with them.
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-the-tensor-memory-accelerator-tma
// PTX: cp.async.bulk.tensor (.multicast::cluster, ctaMask), %cluster_ctarank
//   https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async-bulk-tensor
//   https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#special-registers
#pragma once

#include <cuda_runtime.h>  // __host__ __device__

#include <cstddef>
#include <cstdint>

constexpr int kTileM = 64;                                              // rows of C (and of A) per block
constexpr int kTileN = 64;                                              // columns of C (and of B) per block
constexpr int kTileK = 32;                                              // one k-tile: columns of A, rows of B
constexpr int kConsumerWarps = 8;                                       // warps that multiply, per block
constexpr std::uint32_t kATileBytes = kTileM * kTileK * sizeof(float);  // 8 KiB
constexpr std::uint32_t kBTileBytes = kTileK * kTileN * sizeof(float);  // 8 KiB
constexpr std::uint32_t kStageBytes = kATileBytes + kBTileBytes;        // 16 KiB land in every block per stage
constexpr std::size_t kSmemAlign = 128;                                 // TMA shared-memory boxes: 128-byte aligned
constexpr int kMaxClusterBlocks = 16;                                   // ctaMask has 16 bits
static_assert(kStageBytes < (1u << 20), "an mbarrier's transaction count holds less than 2^20 bytes per phase");

/// [cluster_model]
// A cluster of x by y blocks. The block at (x, y) of the cluster computes C tile (blockIdx.x,
// blockIdx.y), so the blocks of one cluster row (same y) need the same A tile and the blocks of
// one cluster column (same x) the same B tile. Without multicast the cluster only groups blocks.
struct ClusterShape {
  int x;
  int y;
  bool multicast;
};

// The hardware's numbering of a cluster's blocks (%cluster_ctarank, the bits of ctaMask): x fastest.
__host__ __device__ constexpr int cluster_rank(const ClusterShape& c, int x, int y) { return x + y * c.x; }

// How many blocks receive each A (B) tile; the tile is cut into that many slices, one per block.
__host__ __device__ constexpr int a_sharers(const ClusterShape& c) { return c.multicast ? c.x : 1; }
__host__ __device__ constexpr int b_sharers(const ClusterShape& c) { return c.multicast ? c.y : 1; }

// Block (x, y) loads slice x of its row's A tile and slice y of its column's B tile.
__host__ __device__ constexpr int a_slice(const ClusterShape& c, int x) { return c.multicast ? x : 0; }
__host__ __device__ constexpr int b_slice(const ClusterShape& c, int y) { return c.multicast ? y : 0; }

// ctaMask of the A slice that block (x, y) loads: its whole cluster row (bit r = rank r).
__host__ __device__ constexpr std::uint16_t a_multicast_mask(const ClusterShape& c, int x, int y) {
  std::uint16_t mask = 0;
  for (int i = 0; i < c.x; ++i) {
    if (c.multicast || i == x) mask |= static_cast<std::uint16_t>(1u << cluster_rank(c, i, y));
  }
  return mask;
}
// ctaMask of the B slice that block (x, y) loads: its whole cluster column.
__host__ __device__ constexpr std::uint16_t b_multicast_mask(const ClusterShape& c, int x, int y) {
  std::uint16_t mask = 0;
  for (int j = 0; j < c.y; ++j) {
    if (c.multicast || j == y) mask |= static_cast<std::uint16_t>(1u << cluster_rank(c, x, j));
  }
  return mask;
}

// The blocks that write into block (x, y): its row (A slices) and its column (B slices), itself in
// both. Its consumers release a stage by arriving once on the empty barrier of each of them.
__host__ __device__ constexpr int num_release_targets(const ClusterShape& c) {
  return a_sharers(c) + b_sharers(c) - 1;
}
__host__ __device__ constexpr int release_target(const ClusterShape& c, int x, int y, int i) {
  if (i < a_sharers(c)) return cluster_rank(c, c.multicast ? i : x, y);  // the row, itself included
  const int j = i - a_sharers(c);                                          // the column without itself
  return cluster_rank(c, x, j < y ? j : j + 1);
}

// Symmetrically, a block's empty barrier hears from every consumer warp of every block it writes
// into: the blocks sharing its A slice plus those sharing its B slice, less one, itself, which is
// in both groups and arrives once per warp like any other.
__host__ __device__ constexpr int empty_arrivals(const ClusterShape& c) {
  return (a_sharers(c) + b_sharers(c) - 1) * kConsumerWarps;
}

// A block's full barrier counts the bytes that land in *its* shared memory per stage: every slice
// of its A tile and of its B tile, whichever block loaded it. Multicast does not change it.
__host__ __device__ constexpr std::uint32_t full_tx_bytes(const ClusterShape&) { return kStageBytes; }

// What one block's own loads ask of global memory (the L2) per k-tile.
__host__ __device__ constexpr std::uint32_t issued_bytes_per_k_tile(const ClusterShape& c) {
  return kATileBytes / a_sharers(c) + kBTileBytes / b_sharers(c);
}
/// [cluster_model]

/// [plan]
// What a kernel is compiled for: its cluster shape and the two counts its barriers start with.
template <int kX, int kY, bool kMulticast>
struct ClusterPlan {
  static constexpr ClusterShape kShape{kX, kY, kMulticast};
  static constexpr int kEmptyArrivals = empty_arrivals(kShape);
  static constexpr std::uint32_t kFullTxBytes = full_tx_bytes(kShape);
  static_assert(kX * kY <= kMaxClusterBlocks, "ctaMask has 16 bits: a cluster has at most 16 blocks");
  static_assert(kTileM % kX == 0 && kTileK % kY == 0, "each block loads an equal, whole slice of a shared tile");
  static_assert(kTileM / kX * kTileK * sizeof(float) % kSmemAlign == 0 && kTileK / kY * kTileN * sizeof(float) % kSmemAlign == 0,
                "every slice's shared-memory destination stays 128-byte aligned");
};
/// [plan]
