// 12_tma_multicast, the model of the second lesson (bulk_multicast.cu): a broadcast stream, where
// the L2 is the limit, moved with the 1D bulk copy. The problem: every block of the grid adds up
// the same panel (the programs' is 2 MiB and stays in the L2), tile by tile, into one 4 KiB row of
// sums; the fold and the reference. The cluster plan: who copies which bytes of a tile (slices
// are byte ranges, multiples of 16 bytes), what a panel that ends inside a tile does to them (a
// 1D copy has no out-of-bounds fill: the slices are clipped, some to nothing), the ctaMask, the
// two counts every stage barrier starts with, the L2 traffic, and the cluster's protocol, run on
// the CPU in random orders by the first lesson model's engine (tma_multicast_model.hpp, Part 4):
// with the release done right, and done the way a ring without multicast does it (each block
// releasing only itself), which races or deadlocks.
// bulk_multicast.cu includes this header; bulk_multicast_test.cu checks it on the CPU.
// PTX: cp.async.bulk (.multicast::cluster, ctaMask)
//   https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async-bulk
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/pattern.hpp"
#include "tma_multicast_model.hpp"  // kConsumerWarps, mask_bits; Part 4: the protocol engine

// ==== The problem: a panel that every block adds up ===========================================
//
// The matrix product of the first lesson does 64 x 64 x 32 multiply-adds for every 16 KiB that
// lands in a block: its time is its arithmetic, and the L2 traffic that multicast saves was never
// its limit. This stream is the opposite case. Every block of the grid reads the same small panel
// (kPanelTiles tiles of 16 KiB: it stays in the L2 after the first reads), tile by tile through a
// ring of two stages, and does almost nothing with it: its 256 consumer threads add the tiles up,
// word by word, into one 4 KiB row of sums. Without multicast, every tile crosses from the L2 to
// an SM once per block; in a cluster of n blocks it crosses once per cluster and the hardware
// hands it to all n.

constexpr int kPanelTileWords = 4096;                                               // uint32 words
constexpr std::uint32_t kPanelTileBytes = kPanelTileWords * sizeof(std::uint32_t);  // 16 KiB, a stage
constexpr int kPanelTiles = 128;     // the programs' panel: 128 tiles, 2 MiB, L2-resident
constexpr int kBroadcastRing = 2;    // stages per block: 32 KiB of tiles, so that six blocks fit on an SM
constexpr int kConsumerThreads = kConsumerWarps * 32;
constexpr int kFoldWords = kConsumerThreads * 4;  // 1024: each consumer thread sums one uint4 column
constexpr int kChunksPerThread = kPanelTileWords / kFoldWords;  // uint4 reads per thread per tile: 4
static_assert(kPanelTileWords % kFoldWords == 0, "a tile holds whole rows of the fold, so every tile starts at word 0");

// Panel words: 32-bit patterns. Unsigned sums wrap modulo 2^32: exact, in any order.
inline std::uint32_t panel_value(std::uint64_t index) { return course::pattern_u32(index, 3); }

// Word w of the fold: the sum of the panel's words w, w + 1024, w + 2048, ... The consumer thread t
// of every block adds words 4t .. 4t+3 of every 1024 (one uint4 per 4 KiB), so it holds fold[4t..4t+3].
inline std::vector<std::uint32_t> panel_fold(const std::vector<std::uint32_t>& panel) {
  std::vector<std::uint32_t> fold(kFoldWords, 0u);
  for (std::size_t i = 0; i < panel.size(); ++i) fold[i % kFoldWords] += panel[i];
  return fold;
}

// Block b's row of the output: the fold mixed with b, so that every row differs and a row written
// by the wrong block, or twice, or not at all, shows.
TMA_MULTICAST_HOST_DEVICE constexpr std::uint32_t mix_with_block(std::uint32_t fold_word, std::uint32_t block) {
  return fold_word * (2u * block + 1u) + block;
}
inline std::vector<std::uint32_t> broadcast_reference(const std::vector<std::uint32_t>& panel, int blocks) {
  const std::vector<std::uint32_t> fold = panel_fold(panel);
  std::vector<std::uint32_t> out(std::size_t(blocks) * kFoldWords);
  for (int b = 0; b < blocks; ++b) {
    for (int w = 0; w < kFoldWords; ++w) out[std::size_t(b) * kFoldWords + w] = mix_with_block(fold[w], b);
  }
  return out;
}

// The clusters start at different tiles of the panel, so that the clusters of the grid do not all
// ask the same L2 slices for the same lines at the same time; a cluster's blocks start together,
// since they share every tile.
TMA_MULTICAST_HOST_DEVICE constexpr int first_panel_tile(int cluster_index, int num_tiles) {
  return cluster_index % num_tiles;
}

// At 16-byte granularity: the panel's size in bytes, its last tile possibly partial.

constexpr std::uint32_t kBulkGranuleBytes = 16;  // cp.async.bulk: size and both addresses, multiples of 16 bytes
constexpr std::uint32_t kMaxPanelBytes = 256u << 20;  // the panel is meant to stay in the L2
constexpr int kMaxBulkBlocks = 1 << 14;               // 64 MiB of output: the reference is computed on the CPU

struct BulkShape {
  int blocks;                 // blocks that write a 4 KiB row of the output (the grid rounds up to whole clusters)
  std::uint32_t panel_bytes;  // whole 16-byte units; the last 16 KiB tile may be partial
};

inline std::optional<std::string> broken_bulk_rule(const BulkShape& s) {
  if (s.blocks < 1 || s.blocks > kMaxBulkBlocks) return "the stream has 1 to 2^14 blocks (64 MiB of output)";
  if (s.panel_bytes < kBulkGranuleBytes || s.panel_bytes > kMaxPanelBytes) return "the panel has 16 bytes to 256 MiB";
  if (s.panel_bytes % kBulkGranuleBytes != 0) {
    return "the panel is a whole number of 16-byte units: cp.async.bulk copies multiples of 16 bytes between "
           "16-byte-aligned addresses, and a 1D copy fills nothing past the end";
  }
  return std::nullopt;
}
inline BulkShape checked(const BulkShape& s) {
  if (std::optional<std::string> broken = broken_bulk_rule(s)) throw std::invalid_argument(*broken);
  return s;
}

TMA_MULTICAST_HOST_DEVICE constexpr int bulk_panel_tiles(std::uint32_t panel_bytes) {
  return static_cast<int>((panel_bytes + kPanelTileBytes - 1) / kPanelTileBytes);
}
// The bytes of tile `tile` that exist: 16 KiB, or less for the panel's last tile.
TMA_MULTICAST_HOST_DEVICE constexpr std::uint32_t bulk_tile_bytes(std::uint32_t panel_bytes, int tile) {
  const std::uint32_t left = panel_bytes - static_cast<std::uint32_t>(tile) * kPanelTileBytes;
  return left < kPanelTileBytes ? left : kPanelTileBytes;
}

// ==== The cluster plan ========================================================================

/// [bulk_model]
// A cluster of `blocks` blocks along x (rank = x). With multicast each tile is cut into one slice
// per block, a byte range; block x copies slice x into the same offset of every block's stage.
// Without multicast every block copies the whole tile into its own stage.
struct BulkCluster {
  int blocks;
  bool multicast;
};

// How many blocks copy a part of each tile, and how many copies land in each block: the same number.
TMA_MULTICAST_HOST_DEVICE constexpr int bulk_sharers(const BulkCluster& c) { return c.multicast ? c.blocks : 1; }
TMA_MULTICAST_HOST_DEVICE constexpr std::uint32_t bulk_slice_bytes(const BulkCluster& c) {
  return kPanelTileBytes / static_cast<std::uint32_t>(bulk_sharers(c));
}
// Where block x's slice starts in the tile: in the panel, and in every stage it lands in.
TMA_MULTICAST_HOST_DEVICE constexpr std::uint32_t bulk_slice_offset(const BulkCluster& c, int x) {
  return c.multicast ? static_cast<std::uint32_t>(x) * bulk_slice_bytes(c) : 0u;
}
// What block x copies of a tile of `tile_bytes`: its slice, clipped at the tile's end (0: nothing).
TMA_MULTICAST_HOST_DEVICE constexpr std::uint32_t bulk_copy_bytes(const BulkCluster& c, int x, std::uint32_t tile_bytes) {
  const std::uint32_t first = bulk_slice_offset(c, x);
  if (first >= tile_bytes) return 0u;
  return tile_bytes - first < bulk_slice_bytes(c) ? tile_bytes - first : bulk_slice_bytes(c);
}
// ctaMask of block x's copy (bit r = rank r): the whole cluster, or only itself.
TMA_MULTICAST_HOST_DEVICE constexpr std::uint16_t bulk_mask(const BulkCluster& c, int x) {
  return static_cast<std::uint16_t>(c.multicast ? (1u << c.blocks) - 1u : 1u << x);
}
// The blocks whose copies land in block x, each of which its consumers must release: with multicast
// every block of the cluster (i = 0 .. blocks - 1), itself included; without, only itself.
TMA_MULTICAST_HOST_DEVICE constexpr int bulk_release_target(const BulkCluster& c, int x, int i) {
  return c.multicast ? i : x;
}
// One arrival per consumer warp of every block that block x writes into.
TMA_MULTICAST_HOST_DEVICE constexpr int bulk_empty_arrivals(const BulkCluster& c) {
  return bulk_sharers(c) * kConsumerWarps;
}

// What a kernel is compiled for: the cluster and what its barriers and releases are built from.
template <int kBlocks, bool kMulticast>
struct BulkPlan {
  static constexpr BulkCluster kCluster{kBlocks, kMulticast};
  static constexpr int kEmptyArrivals = bulk_empty_arrivals(kCluster);
  static constexpr int kReleaseTargets = bulk_sharers(kCluster);  // one signalling lane per target
  TMA_MULTICAST_HOST_DEVICE static constexpr int release_target(int x, int i) {
    constexpr BulkCluster c = kCluster;  // a copy: device code cannot refer to the static member itself
    return bulk_release_target(c, x, i);
  }
  TMA_MULTICAST_HOST_DEVICE static constexpr std::uint16_t multicast_mask(int x) {
    constexpr BulkCluster c = kCluster;
    return bulk_mask(c, x);
  }
  static_assert(kBlocks >= 1 && kBlocks <= 8, "8 blocks is the portable maximum cluster size");
  static_assert(kPanelTileBytes % kBlocks == 0 && bulk_slice_bytes(kCluster) % kBulkGranuleBytes == 0,
                "every slice is a whole number of 16-byte units, so every copy starts 16-byte aligned");
  static_assert(kReleaseTargets <= 32, "one lane of a consumer warp per block to release");
};
/// [bulk_model]

// ==== What the loads ask of the L2 ============================================================

inline std::uint64_t bulk_grid_blocks(const BulkCluster& c, const BulkShape& s) {
  return std::uint64_t((s.blocks + c.blocks - 1) / c.blocks) * c.blocks;
}
// Every block receives the whole panel, whatever the cluster.
inline std::uint64_t bulk_landed_bytes(const BulkCluster& c, const BulkShape& s) {
  return bulk_grid_blocks(c, s) * s.panel_bytes;
}
// Each byte of the panel is copied once per group of blocks that share it.
inline std::uint64_t bulk_l2_request_bytes(const BulkCluster& c, const BulkShape& s) {
  return bulk_grid_blocks(c, s) / bulk_sharers(c) * s.panel_bytes;
}

inline void print_bulk_plan(std::ostream& out, const char* name, const BulkCluster& c) {
  char line[320];
  std::snprintf(line, sizeof line,
                "  %s: cluster of %d, block 0 copies bytes [0, %u) of each %u KiB tile to %s; full expects the "
                "tile's bytes from %d cop%s; empty expects %d x %d = %d; it asks the L2 for %.1f%% of what lands "
                "in it\n",
                name, c.blocks, bulk_slice_bytes(c), kPanelTileBytes / 1024,
                mask_bits(ClusterShape{c.blocks, 1, c.multicast}, bulk_mask(c, 0)).c_str(), bulk_sharers(c),
                bulk_sharers(c) == 1 ? "y" : "ies", bulk_sharers(c), kConsumerWarps, bulk_empty_arrivals(c),
                100.0 / bulk_sharers(c));
  out << line;
}

// ==== The cluster's protocol, run step by step ================================================
//
// One cluster; per block one producer and `warps` consumer warps, run by Part 4's engine
// (run_cluster_protocol in tma_multicast_model.hpp): the copies (one per destination) and the
// remote arrivals travel on their own and land when the scheduler picks them. Reported: a stage
// read before all of its tile's bytes landed, a copy that overwrites a stage before every consumer
// warp of that block read it, something reaching an exited block, or a deadlock. What is new here
// is only the protocol: full expects the tile's bytes (less for the panel's last tile), a slice
// clipped to nothing is not copied at all, and a consumer warp releases every block of the cluster.

enum class BulkBroken {
  none,
  releases_only_itself,          // consumers arrive only on their own block's empty; it counts the cluster's warps
  releases_only_itself_counted,  // ...and the empty barrier counts only its own warps: a ring without multicast
  expects_own_slice_only,        // full expects the bytes this block copies, not the whole tile
  no_final_cluster_sync,
};

// One random interleaving (seeded) over tiles of the given byte counts; "" when nothing broke.
inline std::string simulate_bulk_cluster(const BulkCluster& c, int stages, const std::vector<std::uint32_t>& tile_bytes,
                                         BulkBroken broken, int warps, unsigned seed) {
  const bool only_itself =
      broken == BulkBroken::releases_only_itself || broken == BulkBroken::releases_only_itself_counted;
  ClusterProtocol p;
  p.num_blocks = c.blocks;
  p.num_tiles = static_cast<int>(tile_bytes.size());
  p.empty_count = broken == BulkBroken::releases_only_itself_counted ? warps : bulk_sharers(c) * warps;
  p.final_sync = broken != BulkBroken::no_final_cluster_sync;
  p.expect_tx_bytes = [&c, &tile_bytes, broken](int x, int tile) {
    return broken == BulkBroken::expects_own_slice_only ? bulk_copy_bytes(c, x, tile_bytes[tile]) : tile_bytes[tile];
  };
  p.copies = [&c, &tile_bytes](int x, int tile) {
    std::vector<ProtocolCopy> copies;
    const std::uint32_t bytes = bulk_copy_bytes(c, x, tile_bytes[tile]);
    if (bytes == 0) return copies;  // the slice lies past the panel's end: no copy at all
    for (int r = 0; r < c.blocks; ++r) {
      if (bulk_mask(c, x) >> r & 1u) copies.push_back({r, bytes});
    }
    return copies;
  };
  p.read_bytes = [&tile_bytes](int, int tile) { return tile_bytes[tile]; };
  p.release_targets = [&c, only_itself](int x) {
    std::vector<int> targets;
    for (int i = 0; i < (only_itself ? 1 : bulk_sharers(c)); ++i) {
      targets.push_back(only_itself ? x : bulk_release_target(c, x, i));
    }
    return targets;
  };
  p.copy_word = "copy";
  p.tile_word = "tile";
  return run_cluster_protocol(p, stages, warps, seed);
}

// The first problem any of `runs` random interleavings (two consumer warps per block) runs into, or "".
inline std::string first_bulk_problem(const BulkCluster& c, int stages, const std::vector<std::uint32_t>& tile_bytes,
                                      BulkBroken broken, int runs = 300) {
  for (int seed = 1; seed <= runs; ++seed) {
    const std::string problem = simulate_bulk_cluster(c, stages, tile_bytes, broken, 2, static_cast<unsigned>(seed));
    if (!problem.empty()) return problem;
  }
  return "";
}
