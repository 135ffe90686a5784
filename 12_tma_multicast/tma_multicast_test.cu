// Tests for 12_tma_multicast: the cluster model (ranks, masks, release targets, the two barrier
// counts and the seed's "- 1"), a model of the whole multicast pipeline searched for unsafe
// interleavings (broken counts and a missing final cluster sync included), the problem and its
// tensor maps, what the kernels compile to, every variant bit-exact on the GPU for several shapes,
// the hardware's rank order, and two miscounted barriers diagnosed instead of hung.
#include "tma_multicast.cu"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

// ---- The cluster model ----------------------------------------------------------------------------

// Every cluster shape a ClusterPlan accepts (whole slices, at most 16 blocks), with and without multicast.
std::vector<ClusterShape> plan_shapes() {
  std::vector<ClusterShape> shapes;
  for (int x : {1, 2, 4, 8, 16}) {
    for (int y : {1, 2, 4, 8, 16}) {
      if (x * y > kMaxClusterBlocks) continue;
      shapes.push_back({x, y, true});
      shapes.push_back({x, y, false});
    }
  }
  return shapes;
}

std::string name(const ClusterShape& c) {
  return std::to_string(c.x) + "x" + std::to_string(c.y) + (c.multicast ? " multicast" : " unicast");
}

// The blocks whose loads land in block (x, y), read off the masks alone (each rank once).
std::set<int> writers_of(const ClusterShape& c, int x, int y) {
  std::set<int> writers;
  const int me = cluster_rank(c, x, y);
  for (int py = 0; py < c.y; ++py) {
    for (int px = 0; px < c.x; ++px) {
      const unsigned mask = a_multicast_mask(c, px, py) | b_multicast_mask(c, px, py);
      if (mask >> me & 1u) writers.insert(cluster_rank(c, px, py));
    }
  }
  return writers;
}

TEST(HostClusterModel, RanksNumberTheBlocksXFastest) {
  const ClusterShape c{2, 2, true};
  EXPECT_EQ(cluster_rank(c, 0, 0), 0);
  EXPECT_EQ(cluster_rank(c, 1, 0), 1);
  EXPECT_EQ(cluster_rank(c, 0, 1), 2);
  EXPECT_EQ(cluster_rank(c, 1, 1), 3);
  for (const ClusterShape& s : plan_shapes()) {
    std::set<int> ranks;
    for (int y = 0; y < s.y; ++y) {
      for (int x = 0; x < s.x; ++x) ranks.insert(cluster_rank(s, x, y));
    }
    EXPECT_EQ(ranks.size(), std::size_t(s.x * s.y)) << name(s);
    EXPECT_EQ(*ranks.rbegin(), s.x * s.y - 1) << name(s);
  }
}

TEST(HostClusterModel, MasksOfATwoByTwoCluster) {
  const ClusterShape c{2, 2, true};
  EXPECT_EQ(a_multicast_mask(c, 0, 0), 0b0011);  // A goes along the row: ranks 0 and 1
  EXPECT_EQ(a_multicast_mask(c, 1, 0), 0b0011);
  EXPECT_EQ(a_multicast_mask(c, 0, 1), 0b1100);
  EXPECT_EQ(a_multicast_mask(c, 1, 1), 0b1100);
  EXPECT_EQ(b_multicast_mask(c, 0, 0), 0b0101);  // B goes down the column: ranks 0 and 2
  EXPECT_EQ(b_multicast_mask(c, 0, 1), 0b0101);
  EXPECT_EQ(b_multicast_mask(c, 1, 0), 0b1010);
  EXPECT_EQ(b_multicast_mask(c, 1, 1), 0b1010);
  const ClusterShape unicast{2, 2, false};
  EXPECT_EQ(a_multicast_mask(unicast, 1, 1), 0b1000);
  EXPECT_EQ(b_multicast_mask(unicast, 1, 1), 0b1000);
}

TEST(HostClusterModel, MasksOfAFourByTwoCluster) {
  const ClusterShape c{4, 2, true};
  EXPECT_EQ(a_multicast_mask(c, 2, 1), 0b1111'0000);
  EXPECT_EQ(b_multicast_mask(c, 2, 1), 0b0100'0100);
}

TEST(HostClusterModel, EveryMaskStaysInsideTheCluster) {
  for (const ClusterShape& c : plan_shapes()) {
    const unsigned inside = (1u << (c.x * c.y)) - 1u;
    for (int y = 0; y < c.y; ++y) {
      for (int x = 0; x < c.x; ++x) {
        EXPECT_EQ(a_multicast_mask(c, x, y) & ~inside, 0u) << name(c);
        EXPECT_EQ(b_multicast_mask(c, x, y) & ~inside, 0u) << name(c);
        EXPECT_TRUE(a_multicast_mask(c, x, y) >> cluster_rank(c, x, y) & 1u) << "a block receives its own A slice";
        EXPECT_TRUE(b_multicast_mask(c, x, y) >> cluster_rank(c, x, y) & 1u) << "a block receives its own B slice";
      }
    }
  }
}

TEST(HostClusterModel, ConsumersReleaseEveryWriterExactlyOnce) {
  for (const ClusterShape& c : plan_shapes()) {
    for (int y = 0; y < c.y; ++y) {
      for (int x = 0; x < c.x; ++x) {
        std::multiset<int> targets;
        for (int i = 0; i < num_release_targets(c); ++i) targets.insert(release_target(c, x, y, i));
        const std::set<int> writers = writers_of(c, x, y);
        EXPECT_EQ(std::set<int>(targets.begin(), targets.end()), writers) << name(c) << " block " << x << "," << y;
        EXPECT_EQ(targets.size(), writers.size()) << name(c) << ": a writer is released twice";
      }
    }
    EXPECT_LE(num_release_targets(c), 32) << "one lane per target";
  }
}

// The count each block's empty barrier is initialised with must be exactly the number of
// arrivals it receives per round: one per consumer warp of each block that names it a target.
TEST(HostClusterModel, EmptyBarrierCountsEveryArrivalItReceives) {
  for (const ClusterShape& c : plan_shapes()) {
    std::vector<int> received(c.x * c.y, 0);
    for (int y = 0; y < c.y; ++y) {
      for (int x = 0; x < c.x; ++x) {
        for (int i = 0; i < num_release_targets(c); ++i) received[release_target(c, x, y, i)] += kConsumerWarps;
      }
    }
    for (int r = 0; r < c.x * c.y; ++r) EXPECT_EQ(received[r], empty_arrivals(c)) << name(c) << " rank " << r;
  }
}

TEST(HostClusterModel, TheSeedsFormulaWithItsMinusOne) {
  // (blocks sharing A + blocks sharing B - 1) x consumer warps
  EXPECT_EQ(empty_arrivals({2, 2, true}), 3 * kConsumerWarps);
  EXPECT_EQ(empty_arrivals({4, 2, true}), 5 * kConsumerWarps);
  EXPECT_EQ(empty_arrivals({2, 1, true}), 2 * kConsumerWarps);
  EXPECT_EQ(empty_arrivals({1, 2, true}), 2 * kConsumerWarps);
  EXPECT_EQ(empty_arrivals({4, 4, true}), 7 * kConsumerWarps);
  EXPECT_EQ(empty_arrivals({2, 2, false}), kConsumerWarps) << "without multicast only our own warps arrive";
  // Without the "- 1" the block itself would be counted twice: one warp count too many, forever.
  for (const ClusterShape& c : plan_shapes()) {
    EXPECT_EQ((a_sharers(c) + b_sharers(c)) * kConsumerWarps - empty_arrivals(c), kConsumerWarps) << name(c);
  }
}

// Per destination: the slices that land in a block fill its A tile and its B tile exactly once,
// and add up to the bytes its full barrier expects.
TEST(HostClusterModel, EachFullBarrierCountsTheBytesThatLandInItsBlock) {
  for (const ClusterShape& c : plan_shapes()) {
    for (int y = 0; y < c.y; ++y) {
      for (int x = 0; x < c.x; ++x) {
        const int me = cluster_rank(c, x, y);
        std::multiset<int> a_slices, b_slices;
        std::uint32_t landed = 0;
        for (int py = 0; py < c.y; ++py) {
          for (int px = 0; px < c.x; ++px) {
            if (a_multicast_mask(c, px, py) >> me & 1u) {
              a_slices.insert(a_slice(c, px));
              landed += kATileBytes / a_sharers(c);
            }
            if (b_multicast_mask(c, px, py) >> me & 1u) {
              b_slices.insert(b_slice(c, py));
              landed += kBTileBytes / b_sharers(c);
            }
          }
        }
        EXPECT_EQ(landed, full_tx_bytes(c)) << name(c);
        EXPECT_EQ(full_tx_bytes(c), kStageBytes) << name(c);
        std::multiset<int> all_a, all_b;
        for (int s = 0; s < a_sharers(c); ++s) all_a.insert(s);
        for (int s = 0; s < b_sharers(c); ++s) all_b.insert(s);
        EXPECT_EQ(a_slices, all_a) << name(c) << ": every A slice once";
        EXPECT_EQ(b_slices, all_b) << name(c) << ": every B slice once";
      }
    }
  }
}

TEST(HostClusterModel, MulticastCutsWhatEachBlockAsksTheL2For) {
  EXPECT_EQ(issued_bytes_per_k_tile({2, 2, false}), kStageBytes);
  EXPECT_EQ(issued_bytes_per_k_tile({2, 1, true}), kATileBytes / 2 + kBTileBytes);
  EXPECT_EQ(issued_bytes_per_k_tile({2, 2, true}), kStageBytes / 2);
  EXPECT_EQ(issued_bytes_per_k_tile({4, 2, true}), kATileBytes / 4 + kBTileBytes / 2);
  // A cluster asks for each of its distinct tiles once: c.y A tiles and c.x B tiles per k-tile.
  for (const ClusterShape& c : plan_shapes()) {
    if (!c.multicast) continue;
    EXPECT_EQ(std::uint64_t{issued_bytes_per_k_tile(c)} * c.x * c.y, std::uint64_t{kATileBytes} * c.y + std::uint64_t{kBTileBytes} * c.x)
        << name(c);
  }
}

TEST(HostClusterModel, VariantsAreCompiledForTheShapesTheyAnnounce) {
  std::set<std::string> names;
  for (const Variant& v : kVariants) {
    EXPECT_TRUE(names.insert(v.name).second) << "two variants are called " << v.name;
    EXPECT_NE(v.launch, nullptr);
  }
  EXPECT_FALSE(kVariants[0].cluster.multicast);
  EXPECT_EQ(std::string(kVariants[0].name), "no_multicast");
  EXPECT_EQ(kVariants[2].cluster.x, 2);
  EXPECT_EQ(kVariants[2].cluster.y, 2);
  EXPECT_EQ(kVariants[3].cluster.x, 4);
}

// ---- A model of the pipeline, searched for unsafe interleavings ------------------------------------
//
// One cluster; per block one producer and `warps` consumer warps, each an agent that runs the
// kernel's steps in order. Multicast copies (one per destination) and remote arrivals travel on
// their own and land when the scheduler picks them. An agent's cluster arrival waits until its own
// remote arrivals have landed (release semantics), not for the copies its block issued (their only
// completion is the destinations' full barriers). At every step the scheduler picks one possible
// event at random. The first broken rule is reported: a stage read before all of its bytes
// landed, a stage overwritten before every consumer warp read it, something reaching a block that
// has exited (or a block exiting with one of its copies still on the way), or a deadlock.

enum class Broken {
  none,
  empty_counts_self_twice,      // (blocks sharing A + blocks sharing B) x warps: no "- 1"
  empty_counts_own_warps_only,  // the unicast count in a multicast kernel
  tx_counts_own_slices_only,    // expect only the bytes this block loads itself
  no_final_cluster_sync,
};

enum class Step { wait_empty, expect_tx, issue, wait_full, read, release, cluster_arrive, cluster_wait, exit };
struct Op {
  Step step;
  int k_tile;
};

std::vector<Op> agent_program(bool producer, int k_tiles, bool final_sync) {
  std::vector<Op> ops;
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

std::string simulate(const ClusterShape& c, int stages, Broken broken, int warps, int k_tiles, unsigned seed) {
  const int num_blocks = c.x * c.y, agents_per_block = 1 + warps, rounds = (k_tiles + stages - 1) / stages;
  const int empty_count = broken == Broken::empty_counts_self_twice      ? (a_sharers(c) + b_sharers(c)) * warps
                          : broken == Broken::empty_counts_own_warps_only ? warps
                                                                          : empty_arrivals(c) / kConsumerWarps * warps;
  const int tx_bytes = static_cast<int>(broken == Broken::tx_counts_own_slices_only ? issued_bytes_per_k_tile(c)
                                                                                    : full_tx_bytes(c));
  const bool final_sync = broken != Broken::no_final_cluster_sync;
  const std::vector<Op> producer_ops = agent_program(true, k_tiles, final_sync);
  const std::vector<Op> consumer_ops = agent_program(false, k_tiles, final_sync);

  struct Block {
    std::vector<course::MbarrierModel> full, empty;
    std::vector<std::vector<int>> landed, readers;  // [stage][round]: bytes landed, consumer warps that read
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
    bool copy;  // a slice of a multicast load, or a remote arrival on "empty"
    int from_agent, from_block, to_block, stage, round, bytes;
  };
  std::vector<Block> blocks(num_blocks);
  for (Block& b : blocks) {
    b.full.resize(stages);
    b.empty.resize(stages);
    for (course::MbarrierModel& m : b.full) m.init(1);
    for (course::MbarrierModel& m : b.empty) m.init(empty_count);
    b.landed.assign(stages, std::vector<int>(rounds, 0));
    b.readers.assign(stages, std::vector<int>(rounds, 0));
    b.agents_left = agents_per_block;
  }
  std::vector<Agent> agents(num_blocks * agents_per_block);
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
      const Op& op = (agent.producer ? producer_ops : consumer_ops)[agent.pc];
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
      const std::string what = event.copy ? "a multicast copy" : "a remote arrival";
      if (to.agents_left == 0) {
        return what + " from " + block_name(event.from_block) + " reached " + block_name(event.to_block) +
               " after it exited";
      }
      if (event.copy) {
        if (event.round > 0 && to.readers[event.stage][event.round - 1] < warps) {
          return block_name(event.from_block) + " overwrote stage " + std::to_string(event.stage) + " of " +
                 block_name(event.to_block) + " before all its consumer warps had read it";
        }
        to.landed[event.stage][event.round] += event.bytes;
        to.full[event.stage].complete_tx(event.bytes);
      } else {
        to.empty[event.stage].arrive();
        --agents[event.from_agent].arrivals_in_flight;
      }
      continue;
    }

    Agent& agent = agents[pick];
    const Op op = (agent.producer ? producer_ops : consumer_ops)[agent.pc++];
    const int stage = op.k_tile % stages, round = op.k_tile / stages;
    const int x = agent.block % c.x, y = agent.block / c.x;
    Block& blk = blocks[agent.block];
    switch (op.step) {
      case Step::expect_tx:
        blk.full[stage].expect_tx(tx_bytes);
        blk.full[stage].arrive();
        break;
      case Step::issue:
        for (int r = 0; r < num_blocks; ++r) {
          if (a_multicast_mask(c, x, y) >> r & 1u) {
            flight.push_back({true, pick, agent.block, r, stage, round, static_cast<int>(kATileBytes) / a_sharers(c)});
          }
          if (b_multicast_mask(c, x, y) >> r & 1u) {
            flight.push_back({true, pick, agent.block, r, stage, round, static_cast<int>(kBTileBytes) / b_sharers(c)});
          }
        }
        break;
      case Step::read:
        if (blk.landed[stage][round] < static_cast<int>(kStageBytes)) {
          return block_name(agent.block) + "'s consumers read stage " + std::to_string(stage) + " (k-tile " +
                 std::to_string(op.k_tile) + ") before all of its bytes had landed";
        }
        ++blk.readers[stage][round];
        break;
      case Step::release:
        for (int i = 0; i < num_release_targets(c); ++i) {
          flight.push_back({false, pick, agent.block, release_target(c, x, y, i), stage, round, 0});
          ++agent.arrivals_in_flight;
        }
        break;
      case Step::cluster_arrive: ++cluster_arrivals; break;
      case Step::exit:
        agent.exited = true;
        if (--blk.agents_left == 0) {
          for (const InFlight& f : flight) {
            if (f.copy && f.from_block == agent.block) {
              return block_name(agent.block) + " exited while its multicast copy to " + block_name(f.to_block) +
                     " was still on the way";
            }
          }
        }
        break;
      default: break;  // the waits: their condition was checked above
    }
  }
}

// The first problem any of `runs` random interleavings runs into, or "".
std::string first_problem(const ClusterShape& c, int stages, Broken broken, int runs = 300, int k_tiles = 7) {
  for (int seed = 1; seed <= runs; ++seed) {
    const std::string problem = simulate(c, stages, broken, 2, k_tiles, static_cast<unsigned>(seed));
    if (!problem.empty()) return problem;
  }
  return "";
}

TEST(HostMulticastProtocol, TheKernelsProtocolIsSafe) {
  for (const ClusterShape& c : {ClusterShape{2, 2, false}, ClusterShape{1, 1, true}, ClusterShape{2, 1, true},
                                ClusterShape{1, 2, true}, ClusterShape{2, 2, true}, ClusterShape{4, 2, true}}) {
    for (int stages : {1, 2, 3}) {
      EXPECT_EQ(first_problem(c, stages, Broken::none, 150), "") << name(c) << ", " << stages << " stages";
    }
  }
}

TEST(HostMulticastProtocol, WithoutTheMinusOneThePipelineDeadlocks) {
  for (const ClusterShape& c : {ClusterShape{2, 2, true}, ClusterShape{4, 2, true}}) {
    EXPECT_NE(first_problem(c, 2, Broken::empty_counts_self_twice).find("deadlock"), std::string::npos) << name(c);
  }
}

TEST(HostMulticastProtocol, CountingOnlyOwnWarpsLetsAStageBeOverwritten) {
  const std::string problem = first_problem({2, 2, true}, 2, Broken::empty_counts_own_warps_only);
  EXPECT_NE(problem.find("before all its consumer warps had read it"), std::string::npos) << problem;
}

TEST(HostMulticastProtocol, ExpectingOnlyOwnSlicesLetsConsumersReadEarly) {
  const std::string problem = first_problem({2, 2, true}, 2, Broken::tx_counts_own_slices_only);
  EXPECT_NE(problem.find("before all of its bytes had landed"), std::string::npos) << problem;
}

TEST(HostMulticastProtocol, WithoutTheFinalClusterSyncSomethingOutlivesABlock) {
  for (const ClusterShape& c : {ClusterShape{2, 2, true}, ClusterShape{4, 2, true}}) {
    const std::string problem = first_problem(c, 2, Broken::no_final_cluster_sync);
    EXPECT_NE(problem.find("exited"), std::string::npos) << name(c) << ": " << problem;
  }
}

// ---- The problem, its grid and its tensor maps ------------------------------------------------------

TEST(HostStageCursor, WalksStagesAndFlipsThePhaseEachRound) {
  StageCursor<kStages> cursor;
  for (int i = 0; i < 5 * kStages + 1; ++i, cursor.advance()) {
    EXPECT_EQ(cursor.stage, i % kStages) << "k-tile " << i;
    EXPECT_EQ(cursor.phase, static_cast<std::uint32_t>(i / kStages) & 1u) << "k-tile " << i;
  }
  StageCursor<1> one;
  one.advance();
  EXPECT_EQ(one.stage, 0);
  EXPECT_EQ(one.phase, 1u);
}

TEST(HostGemm, ReferenceOfASmallProductByHand) {
  const GemmShape s{2, 2, 3};
  const std::vector<float> a = {1, 2, 3, -4, 0, 4};  // [[1, 2, 3], [-4, 0, 4]]
  const std::vector<float> b = {1, -1, 2, 0, -3, 4};  // [[1, -1], [2, 0], [-3, 4]]
  EXPECT_EQ(reference(a, b, s), (std::vector<float>{-4, 11, -16, 20}));
}

TEST(HostGemm, OperandsAreTheNineSmallIntegers) {
  std::set<float> seen;
  for (std::uint64_t i = 0; i < 1000; ++i) seen.insert(operand_value(i, 1));
  EXPECT_EQ(seen, (std::set<float>{-4, -3, -2, -1, 0, 1, 2, 3, 4}));
  int differ = 0;
  for (std::uint64_t i = 0; i < 900; ++i) differ += operand_value(i, 1) != operand_value(i, 2) ? 1 : 0;
  EXPECT_GT(differ, 700) << "A and B use different seeds: about 8 in 9 positions differ";
  static_assert(16.0 * kMaxK <= 16777216.0, "every partial sum is an integer below 2^24: exact in float");
}

TEST(HostGemm, GridCoversTheMatrixInWholeClusters) {
  const dim3 g = gemm_grid({200, 300, 100}, {4, 2, true});
  EXPECT_EQ(g.x, 8u);  // 5 tile columns, rounded up to 2 clusters of 4
  EXPECT_EQ(g.y, 4u);  // 4 tile rows
  for (const Variant& v : kVariants) {
    for (const GemmShape& s : {GemmShape{1, 4, 4}, GemmShape{256, 1024, 1024}, GemmShape{999, 1004, 36}}) {
      const dim3 grid = gemm_grid(s, v.cluster);
      EXPECT_EQ(grid.x % v.cluster.x, 0u) << v.name;
      EXPECT_EQ(grid.y % v.cluster.y, 0u) << v.name;
      EXPECT_GE(grid.x * kTileN, static_cast<unsigned>(s.n)) << v.name;
      EXPECT_GE(grid.y * kTileM, static_cast<unsigned>(s.m)) << v.name;
      EXPECT_LT((grid.x - v.cluster.x) * kTileN, static_cast<unsigned>(s.n)) << v.name << ": a whole cluster of idle blocks";
    }
  }
}

TEST(HostGemm, BadShapesAreRefusedBeforeAnyAllocation) {
  EXPECT_THROW(Problem({0, 4, 4}), std::invalid_argument);
  EXPECT_THROW(Problem({4, 4, kMaxK + 1}), std::invalid_argument);
  EXPECT_FALSE(broken_shape_rule({200, 300, 100}));
}

const float* const kAlignedAddress = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);

TEST(HostTensorMap, EveryVariantsMapsPassTheRules) {
  for (const Variant& v : kVariants) {
    for (const GemmShape& s : {GemmShape{256, kDefaultN, kDefaultK}, GemmShape{200, 300, 100}, GemmShape{1, 4, 4}}) {
      const std::optional<std::string> a = course::broken_tensor_map_rule(a_request(kAlignedAddress, s, v.cluster));
      const std::optional<std::string> b = course::broken_tensor_map_rule(b_request(kAlignedAddress, s, v.cluster));
      EXPECT_FALSE(a) << v.name << ": " << *a;
      EXPECT_FALSE(b) << v.name << ": " << *b;
    }
  }
}

TEST(HostTensorMap, BoxesAreOneSlice) {
  const GemmShape s{256, kDefaultN, kDefaultK};
  const course::TensorMapRequest a = a_request(kAlignedAddress, s, {4, 2, true});
  const course::TensorMapRequest b = b_request(kAlignedAddress, s, {4, 2, true});
  EXPECT_EQ(a.box_dim[0], std::uint32_t{kTileK});
  EXPECT_EQ(a.box_dim[1], std::uint32_t{kTileM / 4});
  EXPECT_EQ(b.box_dim[0], std::uint32_t{kTileN});
  EXPECT_EQ(b.box_dim[1], std::uint32_t{kTileK / 2});
  const course::TensorMapRequest whole = a_request(kAlignedAddress, s, {2, 2, false});
  EXPECT_EQ(whole.box_dim[1], std::uint32_t{kTileM}) << "without multicast a block loads the whole tile";
  EXPECT_EQ(std::uint64_t{a.box_dim[0]} * a.box_dim[1] * sizeof(float) * 4, std::uint64_t{kATileBytes});
}

TEST(HostTensorMap, RowsThatAreNotWholeGranulesAreNamed) {
  const std::optional<std::string> broken =
      course::broken_tensor_map_rule(a_request(kAlignedAddress, {64, 64, 101}, {2, 2, true}));
  ASSERT_TRUE(broken);
  EXPECT_NE(broken->find("globalStrides[0] = 404 bytes is not a multiple of 16"), std::string::npos) << *broken;
}

TEST(HostChapter, SizeIsWholeRowsOfC) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(kRowBytes));
  EXPECT_FALSE(info.size_rule(info.verify_bytes));
  EXPECT_FALSE(info.size_rule(info.bench_bytes));
  EXPECT_TRUE(info.size_rule(kRowBytes + 16));
  EXPECT_TRUE(info.size_rule(std::size_t{128} << 20));
  EXPECT_TRUE(info.requirement.arch_specific) << "sm_90a code runs on 9.0 only";
}

TEST(HostChapter, HostModelShowsMasksAndCounts) {
  std::ostringstream out;
  print_host_model(out);
  EXPECT_NE(out.str().find("multicast_2x2: cluster 2x2, block (0,0) sends A to 0011 and B to 0101"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("(2 + 2 - 1) x 8 = 24"), std::string::npos) << out.str();
}

// ---- What the compiler emits (PTX for compute_90a, generated by the build) ---------------------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = course::read_text_file(COURSE_PTX_DIR "/tma_multicast.compute_90a.ptx"); }
  static std::string kernel(const char* name) {
    const std::string body = course::ptx_kernel_body(ptx_, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static bool has(const std::string& body, const char* text) { return body.find(text) != std::string::npos; }
  static int count(const std::string& body, const char* text) {
    int n = 0;
    for (std::size_t pos = body.find(text); pos != std::string::npos; pos = body.find(text, pos + 1)) ++n;
    return n;
  }
  static inline std::string ptx_;
};

struct CompiledKernel {
  const char* mangled;      // part of the kernel's mangled name
  const char* cluster_dims; // the PTX directive __cluster_dims__ becomes
  bool multicast;
};
const CompiledKernel kKernels[] = {
    {"gemm_kernelI11ClusterPlanILi2ELi2ELb0EEE", ".reqnctapercluster 2, 2, 1", false},
    {"gemm_kernelI11ClusterPlanILi2ELi1ELb1EEE", ".reqnctapercluster 2, 1, 1", true},
    {"gemm_kernelI11ClusterPlanILi2ELi2ELb1EEE", ".reqnctapercluster 2, 2, 1", true},
    {"gemm_kernelI11ClusterPlanILi4ELi2ELb1EEE", ".reqnctapercluster 4, 2, 1", true},
};

TEST_F(HostCodegen, MulticastKernelsSendEachSliceToItsRowOrColumn) {
  for (const CompiledKernel& k : kKernels) {
    if (!k.multicast) continue;
    const std::string body = kernel(k.mangled);
    EXPECT_EQ(count(body, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"), 2)
        << k.mangled << ": one A slice and one B slice per k-tile";
    EXPECT_FALSE(has(body, "shared::cta.global.tile")) << k.mangled;
  }
}

TEST_F(HostCodegen, UnicastKernelLoadsIntoItsOwnSharedMemory) {
  const std::string body = kernel(kKernels[0].mangled);
  EXPECT_EQ(count(body, "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes"), 2);
  EXPECT_FALSE(has(body, ".multicast::cluster")) << "the unicast kernel issues no multicast copy";
}

TEST_F(HostCodegen, EveryKernelIsAClusterThatReleasesAndWaitsAtClusterScope) {
  for (const CompiledKernel& k : kKernels) {
    const std::string body = kernel(k.mangled);
    EXPECT_TRUE(has(body, ".explicitcluster")) << k.mangled;
    EXPECT_TRUE(has(body, k.cluster_dims)) << k.mangled;
    EXPECT_TRUE(has(body, "fence.mbarrier_init.release.cluster")) << k.mangled;
    EXPECT_EQ(count(body, "barrier.cluster.arrive"), 2) << k.mangled << ": after the inits and before the exit";
    EXPECT_TRUE(has(body, "mapa.u64")) << k.mangled << ": map_shared_rank of the writers' empty barriers";
    EXPECT_TRUE(has(body, "mbarrier.arrive.release.cluster.shared::cluster.b64")) << k.mangled;
    EXPECT_TRUE(has(body, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64")) << k.mangled;
    EXPECT_TRUE(has(body, "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64")) << k.mangled;
    EXPECT_FALSE(has(body, "mbarrier.try_wait.parity.shared::cta")) << k.mangled << ": no CTA-scope wait";
    EXPECT_TRUE(has(body, "elect.sync")) << k.mangled;
    EXPECT_FALSE(has(body, "ld.global")) << k.mangled << ": operands reach shared memory through TMA only";
  }
}

// ---- On the GPU: every variant --------------------------------------------------------------------

class Sm90a_TmaMulticast : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90a_TmaMulticast() : GpuTest(chapter_info().requirement) {}
  void expect_correct(const GemmShape& s) {
    Problem problem(s);
    const course::Comparison result = verify(GetParam(), problem);
    EXPECT_TRUE(result.ok()) << s.m << " x " << s.n << " x " << s.k << ": " << result.summary() << '\n' << result.first;
    EXPECT_EQ(result.untouched, 0u);
  }
};

TEST_P(Sm90a_TmaMulticast, OneKTile) { expect_correct({128, 256, kTileK}); }
TEST_P(Sm90a_TmaMulticast, EveryStageAndPhaseManyTimes) { expect_correct({128, 256, 37 * kTileK}); }
TEST_P(Sm90a_TmaMulticast, PartialTilesInEveryDimension) { expect_correct({200, 300, 100}); }
TEST_P(Sm90a_TmaMulticast, SmallerThanOneTile) { expect_correct({1, 4, 4}); }  // blocks loading only zeros
TEST_P(Sm90a_TmaMulticast, ManyClusters) { expect_correct({1024, 1024, 256}); }
TEST_P(Sm90a_TmaMulticast, TheProgramsDefaultProblem) { expect_correct({256, kDefaultN, kDefaultK}); }

TEST_P(Sm90a_TmaMulticast, RepeatedRunsGiveTheSameBits) {
  Problem problem({320, 512, 288});
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm90a_TmaMulticast, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// Cluster shapes that no variant uses: B shared and A not, and longer rows and columns.
class Sm90a_TmaMulticastShapes : public course::GpuTest {
 protected:
  Sm90a_TmaMulticastShapes() : GpuTest(chapter_info().requirement) {}
  template <class Plan>
  void expect_correct(const GemmShape& s) {
    Problem problem(s);
    const GemmMaps maps = problem.maps(Plan::kShape);
    problem.gmem_c.poison();
    launch_gemm<Plan>(maps, problem.gmem_c.data(), s);
    COURSE_CHECK(cudaDeviceSynchronize());
    const course::Comparison result = problem.gmem_c.check(problem.expected, static_cast<std::size_t>(s.n));
    EXPECT_TRUE(result.ok()) << name(Plan::kShape) << ": " << result.summary() << '\n' << result.first;
  }
};

TEST_F(Sm90a_TmaMulticastShapes, OneByTwo) { expect_correct<ClusterPlan<1, 2, true>>({300, 200, 200}); }
TEST_F(Sm90a_TmaMulticastShapes, OneByFour) { expect_correct<ClusterPlan<1, 4, true>>({300, 200, 200}); }
TEST_F(Sm90a_TmaMulticastShapes, FourByOne) { expect_correct<ClusterPlan<4, 1, true>>({300, 200, 200}); }
TEST_F(Sm90a_TmaMulticastShapes, TwoByFour) { expect_correct<ClusterPlan<2, 4, true>>({300, 200, 200}); }

// The masks assume that %cluster_ctarank numbers a cluster's blocks x fastest. Check it.
template <int kX, int kY>
__global__ void __cluster_dims__(kX, kY, 1) cluster_rank_kernel(int* gmem_out) {
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) {
    int* out = gmem_out + 3 * (blockIdx.y * gridDim.x + blockIdx.x);
    out[0] = static_cast<int>(cluster.block_rank());
    out[1] = static_cast<int>(cluster.block_index().x);
    out[2] = static_cast<int>(cluster.block_index().y);
  }
}

class Sm90a_ClusterRank : public course::GpuTest {
 protected:
  Sm90a_ClusterRank() : GpuTest(chapter_info().requirement) {}
  template <int kX, int kY>
  void expect_x_fastest() {
    const dim3 grid(2 * kX, 3 * kY);
    course::DeviceBuffer<int> out(3 * grid.x * grid.y);
    cluster_rank_kernel<kX, kY><<<grid, 32>>>(out.data());
    COURSE_CHECK_LAUNCH();
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<int> host(out.size());
    out.download(host.data());
    const ClusterShape c{kX, kY, true};
    for (unsigned by = 0; by < grid.y; ++by) {
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        const int* got = &host[3 * (by * grid.x + bx)];
        EXPECT_EQ(got[1], static_cast<int>(bx % kX)) << "block " << bx << "," << by;
        EXPECT_EQ(got[2], static_cast<int>(by % kY)) << "block " << bx << "," << by;
        EXPECT_EQ(got[0], cluster_rank(c, got[1], got[2])) << "block " << bx << "," << by;
      }
    }
  }
};

TEST_F(Sm90a_ClusterRank, TwoByTwoIsXFastest) { expect_x_fastest<2, 2>(); }
TEST_F(Sm90a_ClusterRank, FourByTwoIsXFastest) { expect_x_fastest<4, 2>(); }

// ---- Miscounted barriers, stopped by the bounded waits ----------------------------------------------

/// [broken]
// 16 bytes more than ever land: no full phase completes. K = kStages k-tiles, so the producer never
// has to wait for a stage and only the consumers' full waits can be stuck.
struct ExpectsSixteenBytesTooMany : ClusterPlan<2, 2, true> {
  static constexpr std::uint32_t kFullTxBytes = ClusterPlan<2, 2, true>::kFullTxBytes + 16;  // BROKEN
};
// The seed's count without its "- 1": every empty phase waits for one warp count that never comes.
struct EmptyCountsItselfTwice : ClusterPlan<2, 2, true> {
  static constexpr int kEmptyArrivals = (2 + 2) * kConsumerWarps;  // BROKEN
};
/// [broken]

class Sm90a_TmaMulticastDiagnosis : public course::GpuTest {
 protected:
  Sm90a_TmaMulticastDiagnosis() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90a_TmaMulticastDiagnosis, TooManyExpectedBytesIsDiagnosedNotHung) {
  Problem problem({128, 128, kStages * kTileK});
  const GemmMaps maps = problem.maps(ExpectsSixteenBytesTooMany::kShape);
  auto launch = [&] { launch_gemm<ExpectsSixteenBytesTooMany>(maps, problem.gmem_c.data(), problem.shape); };
  COURSE_EXPECT_DIAGNOSED_HANG(launch(), "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

TEST_F(Sm90a_TmaMulticastDiagnosis, EmptyCountWithoutTheMinusOneIsDiagnosedNotHung) {
  // The producer waits for stage 0 to be released after round 0 (empty, parity 0) and the consumers
  // then wait for round 1 of stage 0 (full, parity 1): whichever limit runs out first reports.
  Problem problem({128, 128, (kStages + 1) * kTileK});
  const GemmMaps maps = problem.maps(EmptyCountsItselfTwice::kShape);
  auto launch = [&] { launch_gemm<EmptyCountsItselfTwice>(maps, problem.gmem_c.data(), problem.shape); };
  COURSE_EXPECT_DIAGNOSED_HANG(launch(),
                               "bounded wait: gave up .*barrier '(empty', stage 0, phase 0|full', stage 0, phase 1)",
                               30.0);
}

}  // namespace
