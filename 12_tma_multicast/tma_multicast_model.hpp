// 12_tma_multicast, the model: the problem and its reference; who loads which slice of the shared
// tiles and where it lands, whom each multicast reaches, whom the consumers release, the two counts
// every stage barrier starts with, what each block's loads ask of the L2, and the whole cluster's
// protocol run step by step.
//
// Part 1 is the problem: its shape, its operands, its rules and the reference every kernel must
// match. Part 2, the cluster plan, is plain constexpr functions of the cluster shape and a block's
// place in it: the kernels (device code), the host model the programs print and the CPU tests all
// use the same ones. Part 3 is the traffic the loads ask of the L2, per block and per problem,
// which Nsight Compute can count (ncu_metrics.txt). Part 4 runs one cluster's pipeline on host
// models of the mbarriers (course/mbarrier_model.hpp), in random orders, with the kernel's counts
// or with one deliberately broken, and reports the first rule broken; bulk_multicast_model.hpp
// runs the second lesson's protocol on the same engine. tma_multicast.cu (the lesson) and
// tma_multicast_lab.cu include this header; tma_multicast_test.cu checks it on the CPU.
// Guide: https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/async-copies.html#using-the-tensor-memory-accelerator-tma
// PTX: cp.async.bulk.tensor (.multicast::cluster, ctaMask), %cluster_ctarank
//   https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async-bulk-tensor
//   https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#special-registers
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"
#include "course/pattern.hpp"

// The plan's functions are called by the kernels too; plain host functions without nvcc.
#ifdef __CUDACC__
#define TMA_MULTICAST_HOST_DEVICE __host__ __device__
#else
#define TMA_MULTICAST_HOST_DEVICE
#endif

// ==== Part 1: the problem, C = A x B with small integers in float ==============================

constexpr int kMaxK = 1 << 20;  // sums of up to 2^20 products of -4..4 stay exact

struct GemmShape {
  int m;  // rows of A and C
  int n;  // columns of B and C
  int k;  // columns of A, rows of B
};

// Integers in -4..4: every product and every sum of up to kMaxK of them is exact in float, in any order.
inline float operand_value(std::uint64_t index, std::uint32_t seed) {
  return static_cast<float>(static_cast<int>(course::pattern_u32(index, seed) % 9u) - 4);
}

// What every kernel must compute, bit for bit: the order of the sums does not matter (all exact).
inline std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& b, const GemmShape& s) {
  std::vector<float> c(std::size_t(s.m) * s.n, 0.0f);
  for (int i = 0; i < s.m; ++i) {
    float* c_row = c.data() + std::size_t(i) * s.n;
    for (int k = 0; k < s.k; ++k) {
      const float a_ik = a[std::size_t(i) * s.k + k];
      const float* b_row = b.data() + std::size_t(k) * s.n;
      for (int j = 0; j < s.n; ++j) c_row[j] += a_ik * b_row[j];
    }
  }
  return c;
}

// The shape's first broken rule, or nothing (the tensor-map rules are checked by the encoder).
inline std::optional<std::string> broken_shape_rule(const GemmShape& s) {
  if (s.m < 1 || s.n < 1 || s.k < 1) return "M, N and K must be at least 1";
  if (s.k > kMaxK) return "K must be at most 2^20: longer sums of -4..4 products are not exact in float";
  if (s.m > (1 << 21) || s.n > (1 << 21)) return "M and N must be at most 2^21 (gridDim.y is at most 65535)";
  return std::nullopt;
}
inline GemmShape checked(const GemmShape& s) {
  if (std::optional<std::string> broken = broken_shape_rule(s)) throw std::invalid_argument(*broken);
  return s;
}

// ==== Part 2: the cluster plan ================================================================

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
TMA_MULTICAST_HOST_DEVICE constexpr int cluster_rank(const ClusterShape& c, int x, int y) { return x + y * c.x; }

// How many blocks receive each A (B) tile; the tile is cut into that many slices, one per block.
TMA_MULTICAST_HOST_DEVICE constexpr int a_sharers(const ClusterShape& c) { return c.multicast ? c.x : 1; }
TMA_MULTICAST_HOST_DEVICE constexpr int b_sharers(const ClusterShape& c) { return c.multicast ? c.y : 1; }

// Block (x, y) loads slice x of its row's A tile and slice y of its column's B tile.
TMA_MULTICAST_HOST_DEVICE constexpr int a_slice(const ClusterShape& c, int x) { return c.multicast ? x : 0; }
TMA_MULTICAST_HOST_DEVICE constexpr int b_slice(const ClusterShape& c, int y) { return c.multicast ? y : 0; }

// A slice is one box: whole rows of the A tile (kTileK floats each) or of the B tile (kTileN
// floats each). It lands at the same offset of the stage in every block that receives it.
TMA_MULTICAST_HOST_DEVICE constexpr int a_slice_rows(const ClusterShape& c) { return kTileM / a_sharers(c); }
TMA_MULTICAST_HOST_DEVICE constexpr int b_slice_rows(const ClusterShape& c) { return kTileK / b_sharers(c); }
TMA_MULTICAST_HOST_DEVICE constexpr int a_slice_first_row(const ClusterShape& c, int x) {
  return a_slice(c, x) * a_slice_rows(c);  // a row of the A tile (of C)
}
TMA_MULTICAST_HOST_DEVICE constexpr int b_slice_first_row(const ClusterShape& c, int y) {
  return b_slice(c, y) * b_slice_rows(c);  // a row of the B tile: a k within the k-tile
}
TMA_MULTICAST_HOST_DEVICE constexpr int a_slice_offset_elems(const ClusterShape& c, int x) {
  return a_slice_first_row(c, x) * kTileK;
}
TMA_MULTICAST_HOST_DEVICE constexpr int b_slice_offset_elems(const ClusterShape& c, int y) {
  return b_slice_first_row(c, y) * kTileN;
}
TMA_MULTICAST_HOST_DEVICE constexpr std::uint32_t a_slice_bytes(const ClusterShape& c) {
  return static_cast<std::uint32_t>(a_slice_rows(c) * kTileK * sizeof(float));
}
TMA_MULTICAST_HOST_DEVICE constexpr std::uint32_t b_slice_bytes(const ClusterShape& c) {
  return static_cast<std::uint32_t>(b_slice_rows(c) * kTileN * sizeof(float));
}
/// [cluster_model]

/// [masks_and_counts]
// ctaMask of the A slice that block (x, y) loads: its whole cluster row (bit r = rank r).
TMA_MULTICAST_HOST_DEVICE constexpr std::uint16_t a_multicast_mask(const ClusterShape& c, int x, int y) {
  std::uint16_t mask = 0;
  for (int i = 0; i < c.x; ++i) {
    if (c.multicast || i == x) mask |= static_cast<std::uint16_t>(1u << cluster_rank(c, i, y));
  }
  return mask;
}
// ctaMask of the B slice that block (x, y) loads: its whole cluster column.
TMA_MULTICAST_HOST_DEVICE constexpr std::uint16_t b_multicast_mask(const ClusterShape& c, int x, int y) {
  std::uint16_t mask = 0;
  for (int j = 0; j < c.y; ++j) {
    if (c.multicast || j == y) mask |= static_cast<std::uint16_t>(1u << cluster_rank(c, x, j));
  }
  return mask;
}

// The blocks that write into block (x, y): its row (A slices) and its column (B slices), itself in
// both. Its consumers release a stage by arriving once on the empty barrier of each of them.
TMA_MULTICAST_HOST_DEVICE constexpr int num_release_targets(const ClusterShape& c) {
  return a_sharers(c) + b_sharers(c) - 1;
}
TMA_MULTICAST_HOST_DEVICE constexpr int release_target(const ClusterShape& c, int x, int y, int i) {
  if (i < a_sharers(c)) return cluster_rank(c, c.multicast ? i : x, y);  // the row, itself included
  const int j = i - a_sharers(c);                                          // the column without itself
  return cluster_rank(c, x, j < y ? j : j + 1);
}

// Symmetrically, a block's empty barrier hears from every consumer warp of every block it writes
// into: the blocks sharing its A slice plus those sharing its B slice, less one, itself, which is
// in both groups and arrives once per warp like any other.
TMA_MULTICAST_HOST_DEVICE constexpr int empty_arrivals(const ClusterShape& c) {
  return (a_sharers(c) + b_sharers(c) - 1) * kConsumerWarps;
}

// A block's full barrier counts the bytes that land in *its* shared memory per stage: every slice
// of its A tile and of its B tile, whichever block loaded it. Multicast does not change it.
TMA_MULTICAST_HOST_DEVICE constexpr std::uint32_t full_tx_bytes(const ClusterShape&) { return kStageBytes; }
/// [masks_and_counts]

/// [plan]
// What a kernel is compiled for: its cluster shape and the two counts its barriers start with.
template <int kX, int kY, bool kMulticast>
struct ClusterPlan {
  static constexpr ClusterShape kShape{kX, kY, kMulticast};
  static constexpr int kEmptyArrivals = empty_arrivals(kShape);
  static constexpr std::uint32_t kFullTxBytes = full_tx_bytes(kShape);
  static_assert(kX * kY <= kMaxClusterBlocks, "ctaMask has 16 bits: a cluster has at most 16 blocks");
  static_assert(kTileM % kX == 0 && kTileK % kY == 0, "each block loads an equal, whole slice of a shared tile");
  static_assert(a_slice_bytes(kShape) % kSmemAlign == 0 && b_slice_bytes(kShape) % kSmemAlign == 0,
                "every slice's shared-memory destination stays 128-byte aligned");
};
/// [plan]

// ==== Part 3: what the loads ask of the L2 =====================================================

// What one block's own loads ask of global memory (the L2) per k-tile: one slice of each tile.
TMA_MULTICAST_HOST_DEVICE constexpr std::uint32_t issued_bytes_per_k_tile(const ClusterShape& c) {
  return a_slice_bytes(c) + b_slice_bytes(c);
}
// The same, as a share of what lands in the block (and of what a block loads without multicast).
inline double l2_share(const ClusterShape& c) { return double(issued_bytes_per_k_tile(c)) / kStageBytes; }

// The blocks of a product: C's tiles, rounded up to whole clusters in both directions (the
// blocks past the edge load zeros and take part like any other).
inline std::uint64_t num_blocks(const ClusterShape& c, const GemmShape& s) {
  auto whole_clusters = [](int tiles, int side) { return std::uint64_t((tiles + side - 1) / side * side); };
  return whole_clusters((s.n + kTileN - 1) / kTileN, c.x) * whole_clusters((s.m + kTileM - 1) / kTileM, c.y);
}
// Every byte all the blocks' loads ask of the L2 for the whole product (zero fill included).
inline std::uint64_t l2_request_bytes(const ClusterShape& c, const GemmShape& s) {
  return num_blocks(c, s) * std::uint64_t((s.k + kTileK - 1) / kTileK) * issued_bytes_per_k_tile(c);
}

inline std::string mask_bits(const ClusterShape& c, std::uint16_t mask) {  // rank 0 last, as in a binary literal
  std::string text;
  for (int r = c.x * c.y - 1; r >= 0; --r) text += (mask >> r & 1u) ? '1' : '0';
  return text;
}

// The lines the programs print without a GPU: the tile and, per plan, block (0,0)'s masks, the
// empty count and the share of the L2 traffic.
inline void print_tile_summary(std::ostream& out, int stages) {
  out << "tile " << kTileM << " x " << kTileN << " of C per block, k-tiles of " << kTileK << ", " << stages
      << " stages; " << kStageBytes / 1024 << " KiB land in every block per k-tile; " << kConsumerWarps
      << " consumer warps + 1 producer warp\n";
}
inline void print_cluster_plan(std::ostream& out, const char* name, const ClusterShape& c) {
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * l2_share(c));
  out << "  " << name << ": cluster " << c.x << "x" << c.y << ", block (0,0) sends A to "
      << mask_bits(c, a_multicast_mask(c, 0, 0)) << " and B to " << mask_bits(c, b_multicast_mask(c, 0, 0))
      << "; empty expects (" << a_sharers(c) << " + " << b_sharers(c) << " - 1) x " << kConsumerWarps << " = "
      << empty_arrivals(c) << "; it loads " << issued_bytes_per_k_tile(c) / 1024 << " KiB per k-tile (" << share
      << ")\n";
}

// ==== Part 4: the cluster's protocol, searched for unsafe interleavings ========================
//
// One cluster; per block one producer and `warps` consumer warps, each an agent that runs the
// kernel's steps in order. Multicast copies (one per destination) and remote arrivals travel on
// their own and land when the scheduler picks them. An agent's cluster arrival waits until its own
// remote arrivals have landed (release semantics), not for the copies its block issued (their only
// completion is the destinations' full barriers). At every step the scheduler picks one possible
// event at random. The first broken rule is reported: a stage read before all of its bytes
// landed, a stage overwritten before every consumer warp read it, something reaching a block that
// has exited (or a block exiting with one of its copies still on the way), or a deadlock.
//
// The engine (run_cluster_protocol) knows only these rules. What a kernel does is its protocol: how
// many bytes each full barrier expects, which copies a producer issues, whom its consumers release,
// the empty count. simulate_cluster below describes this lesson's matrix product to it;
// bulk_multicast_model.hpp describes the 1D broadcast to the same engine.

enum class Step { wait_empty, expect_tx, issue, wait_full, read, release, cluster_arrive, cluster_wait, exit };
struct ProtocolOp {
  Step step;
  int k_tile;
};

// One agent's steps: per k-tile, the producer's wait/expect-tx/issue or a consumer's wait/read/release.
inline std::vector<ProtocolOp> agent_program(bool producer, int k_tiles, bool final_sync) {
  std::vector<ProtocolOp> ops;
  for (int kt = 0; kt < k_tiles; ++kt) {
    if (producer) {
      for (Step s : {Step::wait_empty, Step::expect_tx, Step::issue}) ops.push_back({s, kt});
    } else {
      for (Step s : {Step::wait_full, Step::read, Step::release}) ops.push_back({s, kt});
    }
  }
  if (final_sync) {
    ops.push_back({Step::cluster_arrive, 0});
    ops.push_back({Step::cluster_wait, 0});
  }
  ops.push_back({Step::exit, 0});
  return ops;
}

// One copy of a producer's issue step: the block it lands in and its bytes.
struct ProtocolCopy {
  int to_block;
  std::uint32_t bytes;
};

// A kernel's protocol, as the engine needs it. Blocks are cluster ranks; a tile is one trip round
// the ring of stages (a k-tile of the product, a tile of the broadcast's panel).
struct ClusterProtocol {
  int num_blocks = 1;
  int num_tiles = 1;
  int empty_count = 1;     // arrivals each empty barrier waits for per phase
  bool final_sync = true;  // a cluster arrive + wait before every agent exits
  std::function<std::uint32_t(int block, int tile)> expect_tx_bytes;    // the producer's expect-tx on full
  std::function<std::vector<ProtocolCopy>(int block, int tile)> copies;  // its issue step, in issue order
  std::function<std::uint32_t(int block, int tile)> read_bytes;         // what must have landed for a read
  std::function<std::vector<int>(int block)> release_targets;           // whose empty a consumer warp arrives on
  std::string copy_word = "copy";  // in messages: "a copy from block 1 reached ..."
  std::string tile_word = "tile";  // in messages: "... read stage 0 (tile 2) before ..."
};

// One random interleaving (seeded) of protocol p with `stages` stages and `warps` consumer warps per
// block; "" when it ends with every agent done and nothing broken.
inline std::string run_cluster_protocol(const ClusterProtocol& p, int stages, int warps, unsigned seed) {
  const int agents_per_block = 1 + warps, rounds = (p.num_tiles + stages - 1) / stages;
  const std::vector<ProtocolOp> producer_ops = agent_program(true, p.num_tiles, p.final_sync);
  const std::vector<ProtocolOp> consumer_ops = agent_program(false, p.num_tiles, p.final_sync);

  struct Block {
    std::vector<course::MbarrierModel> full, empty;
    std::vector<std::vector<std::uint32_t>> landed;  // [stage][round]: bytes landed
    std::vector<std::vector<int>> readers;           // [stage][round]: consumer warps that read it
    int agents_left = 0;
  };
  struct Agent {
    int block = 0;
    bool producer = false;
    std::size_t pc = 0;
    bool exited = false;
    int arrivals_in_flight = 0;
  };
  struct InFlight {
    bool copy;  // a copy into one destination, or a remote arrival on its empty barrier
    int from_agent, from_block, to_block, stage, round;
    std::uint32_t bytes;
  };
  std::vector<Block> blocks(p.num_blocks);
  for (Block& b : blocks) {
    b.full.resize(stages);
    b.empty.resize(stages);
    for (course::MbarrierModel& m : b.full) m.init(1);
    for (course::MbarrierModel& m : b.empty) m.init(p.empty_count);
    b.landed.assign(stages, std::vector<std::uint32_t>(rounds, 0));
    b.readers.assign(stages, std::vector<int>(rounds, 0));
    b.agents_left = agents_per_block;
  }
  std::vector<Agent> agents(p.num_blocks * agents_per_block);
  for (std::size_t i = 0; i < agents.size(); ++i) {
    agents[i].block = static_cast<int>(i) / agents_per_block;
    agents[i].producer = i % agents_per_block == 0;
  }
  std::vector<InFlight> flight;
  int cluster_arrivals = 0;
  std::mt19937 random(seed);
  auto block_name = [](int b) { return "block " + std::to_string(b); };

  for (;;) {
    std::vector<int> choices;  // i < agents.size(): agent i's next step; else an event in flight
    for (std::size_t i = 0; i < agents.size(); ++i) {
      const Agent& agent = agents[i];
      if (agent.exited) continue;
      const ProtocolOp& op = (agent.producer ? producer_ops : consumer_ops)[agent.pc];
      const int stage = op.k_tile % stages;
      const unsigned parity = (op.k_tile / stages) & 1u;
      const Block& blk = blocks[agent.block];
      bool possible = true;
      if (op.step == Step::wait_empty) possible = blk.empty[stage].phase_done(parity ^ 1u);
      if (op.step == Step::wait_full) possible = blk.full[stage].phase_done(parity);
      if (op.step == Step::cluster_arrive) possible = agent.arrivals_in_flight == 0;
      if (op.step == Step::cluster_wait) possible = cluster_arrivals == static_cast<int>(agents.size());
      if (possible) choices.push_back(static_cast<int>(i));
    }
    for (std::size_t f = 0; f < flight.size(); ++f) choices.push_back(static_cast<int>(agents.size() + f));
    if (choices.empty()) {
      for (const Agent& agent : agents) {
        if (!agent.exited) {
          return "deadlock: " + block_name(agent.block) + (agent.producer ? "'s producer" : "'s consumer") +
                 " waits forever at step " + std::to_string(agent.pc);
        }
      }
      return "";
    }
    const int pick = choices[std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(random)];

    if (pick >= static_cast<int>(agents.size())) {  // an event lands
      const InFlight event = flight[pick - agents.size()];
      flight.erase(flight.begin() + (pick - static_cast<int>(agents.size())));
      Block& to = blocks[event.to_block];
      if (to.agents_left == 0) {
        return (event.copy ? "a " + p.copy_word : std::string("a remote arrival")) + " from " +
               block_name(event.from_block) + " reached " + block_name(event.to_block) + " after it exited";
      }
      if (event.copy) {
        if (event.round > 0 && to.readers[event.stage][event.round - 1] < warps) {
          return block_name(event.from_block) + " overwrote stage " + std::to_string(event.stage) + " of " +
                 block_name(event.to_block) + " before all its consumer warps had read it";
        }
        to.landed[event.stage][event.round] += event.bytes;
        to.full[event.stage].complete_tx(static_cast<int>(event.bytes));
      } else {
        to.empty[event.stage].arrive();
        --agents[event.from_agent].arrivals_in_flight;
      }
      continue;
    }

    Agent& agent = agents[pick];
    const ProtocolOp op = (agent.producer ? producer_ops : consumer_ops)[agent.pc++];
    const int stage = op.k_tile % stages, round = op.k_tile / stages;
    Block& blk = blocks[agent.block];
    switch (op.step) {
      case Step::expect_tx:
        blk.full[stage].expect_tx(static_cast<int>(p.expect_tx_bytes(agent.block, op.k_tile)));
        blk.full[stage].arrive();
        break;
      case Step::issue:
        for (const ProtocolCopy& copy : p.copies(agent.block, op.k_tile)) {
          flight.push_back({true, pick, agent.block, copy.to_block, stage, round, copy.bytes});
        }
        break;
      case Step::read:
        if (blk.landed[stage][round] < p.read_bytes(agent.block, op.k_tile)) {
          return block_name(agent.block) + "'s consumers read stage " + std::to_string(stage) + " (" + p.tile_word +
                 " " + std::to_string(op.k_tile) + ") before all of its bytes had landed";
        }
        ++blk.readers[stage][round];
        break;
      case Step::release:
        for (int target : p.release_targets(agent.block)) {
          flight.push_back({false, pick, agent.block, target, stage, round, 0u});
          ++agent.arrivals_in_flight;
        }
        break;
      case Step::cluster_arrive: ++cluster_arrivals; break;
      case Step::exit:
        agent.exited = true;
        if (--blk.agents_left == 0) {
          for (const InFlight& f : flight) {
            if (f.copy && f.from_block == agent.block) {
              return block_name(agent.block) + " exited while its " + p.copy_word + " to " + block_name(f.to_block) +
                     " was still on the way";
            }
          }
        }
        break;
      default: break;  // the waits: their condition was checked above
    }
  }
}

// This lesson's protocol: the kernel's counts, or one deliberately broken.
enum class Broken {
  none,
  empty_counts_self_twice,      // (blocks sharing A + blocks sharing B) x warps: no "- 1"
  empty_counts_own_warps_only,  // the unicast count in a multicast kernel
  tx_counts_own_slices_only,    // expect only the bytes this block loads itself
  no_final_cluster_sync,
};

// One random interleaving (seeded) of a cluster of shape c with `stages` stages and `warps` consumer
// warps per block over k_tiles k-tiles; "" when it ends with every agent done and nothing broken.
inline std::string simulate_cluster(const ClusterShape& c, int stages, Broken broken, int warps, int k_tiles,
                                    unsigned seed) {
  ClusterProtocol p;
  p.num_blocks = c.x * c.y;
  p.num_tiles = k_tiles;
  p.empty_count = broken == Broken::empty_counts_self_twice      ? (a_sharers(c) + b_sharers(c)) * warps
                  : broken == Broken::empty_counts_own_warps_only ? warps
                                                                  : empty_arrivals(c) / kConsumerWarps * warps;
  p.final_sync = broken != Broken::no_final_cluster_sync;
  const std::uint32_t tx_bytes =
      broken == Broken::tx_counts_own_slices_only ? issued_bytes_per_k_tile(c) : full_tx_bytes(c);
  p.expect_tx_bytes = [tx_bytes](int, int) { return tx_bytes; };
  p.copies = [c](int block, int) {  // per destination rank: the A slice, then the B slice
    const int x = block % c.x, y = block / c.x;
    std::vector<ProtocolCopy> copies;
    for (int r = 0; r < c.x * c.y; ++r) {
      if (a_multicast_mask(c, x, y) >> r & 1u) copies.push_back({r, a_slice_bytes(c)});
      if (b_multicast_mask(c, x, y) >> r & 1u) copies.push_back({r, b_slice_bytes(c)});
    }
    return copies;
  };
  p.read_bytes = [](int, int) { return kStageBytes; };  // both whole tiles, every k-tile
  p.release_targets = [c](int block) {
    const int x = block % c.x, y = block / c.x;
    std::vector<int> targets;
    for (int i = 0; i < num_release_targets(c); ++i) targets.push_back(release_target(c, x, y, i));
    return targets;
  };
  p.copy_word = "multicast copy";
  p.tile_word = "k-tile";
  return run_cluster_protocol(p, stages, warps, seed);
}

// The first problem any of `runs` random interleavings (two consumer warps per block) runs into, or "".
inline std::string first_problem(const ClusterShape& c, int stages, Broken broken, int runs = 300, int k_tiles = 7) {
  for (int seed = 1; seed <= runs; ++seed) {
    const std::string problem = simulate_cluster(c, stages, broken, 2, k_tiles, static_cast<unsigned>(seed));
    if (!problem.empty()) return problem;
  }
  return "";
}
