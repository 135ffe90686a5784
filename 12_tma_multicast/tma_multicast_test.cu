// Tests for 12_tma_multicast: the model on the CPU (ranks, slices and where they land, masks,
// release targets, the two barrier counts and their "- 1", the L2 traffic each plan asks for, and
// the whole cluster's protocol searched for unsafe interleavings, broken counts and a missing final
// cluster sync included), the problem and its tensor maps, the variant tables of lesson and lab,
// what every kernel of the lesson and the lab compiles to (PTX and machine code), every lesson
// variant and every lab row bit-exact on the GPU for several shapes, the hardware's rank order,
// two miscounted barriers diagnosed instead of hung.
#include "tma_multicast_lab.cu"  // the lab, which brings the lesson and the model
#include "multicast_figures.cpp"  // the concept figure, drawn from the model

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
namespace lab {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace lab

namespace {

// ---- The cluster plan -------------------------------------------------------------------------------

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
bool same(const ClusterShape& a, const ClusterShape& b) { return a.x == b.x && a.y == b.y && a.multicast == b.multicast; }

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

// The slices of a shared tile cut it into equal boxes of whole rows, each loaded by one block of
// the row (A) or column (B), each landing 128-byte aligned at its own offset of the stage.
TEST(HostClusterModel, SlicesCutEachTileIntoAlignedBoxesOfWholeRows) {
  for (const ClusterShape& c : plan_shapes()) {
    std::vector<int> a_rows(kTileM, 0), b_rows(kTileK, 0);
    for (int x = 0; x < a_sharers(c); ++x) {
      for (int r = 0; r < a_slice_rows(c); ++r) ++a_rows[a_slice_first_row(c, x) + r];
      EXPECT_EQ(a_slice_offset_elems(c, x), a_slice_first_row(c, x) * kTileK) << name(c);
      EXPECT_EQ(a_slice_offset_elems(c, x) * sizeof(float) % kSmemAlign, 0u) << name(c) << " A slice " << x;
    }
    for (int y = 0; y < b_sharers(c); ++y) {
      for (int r = 0; r < b_slice_rows(c); ++r) ++b_rows[b_slice_first_row(c, y) + r];
      EXPECT_EQ(b_slice_offset_elems(c, y), b_slice_first_row(c, y) * kTileN) << name(c);
      EXPECT_EQ(b_slice_offset_elems(c, y) * sizeof(float) % kSmemAlign, 0u) << name(c) << " B slice " << y;
    }
    EXPECT_EQ(a_rows, std::vector<int>(kTileM, 1)) << name(c) << ": every row of the A tile in exactly one slice";
    EXPECT_EQ(b_rows, std::vector<int>(kTileK, 1)) << name(c) << ": every row of the B tile in exactly one slice";
    EXPECT_EQ(std::uint64_t{a_slice_bytes(c)} * a_sharers(c), std::uint64_t{kATileBytes}) << name(c);
    EXPECT_EQ(std::uint64_t{b_slice_bytes(c)} * b_sharers(c), std::uint64_t{kBTileBytes}) << name(c);
  }
}

TEST(HostClusterModel, SlicesOfAFourByTwoCluster) {
  const ClusterShape c{4, 2, true};
  EXPECT_EQ(a_slice_rows(c), 16);
  EXPECT_EQ(a_slice_first_row(c, 3), 48);
  EXPECT_EQ(a_slice_bytes(c), 2048u);
  EXPECT_EQ(b_slice_rows(c), 16);
  EXPECT_EQ(b_slice_offset_elems(c, 1), 16 * kTileN);
  EXPECT_EQ(b_slice_bytes(c), 4096u);
  const ClusterShape unicast{4, 2, false};
  EXPECT_EQ(a_slice_first_row(unicast, 3), 0) << "without multicast every block loads its whole tile";
  EXPECT_EQ(a_slice_bytes(unicast), kATileBytes);
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

TEST(HostClusterModel, TheEmptyCountWithItsMinusOne) {
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
              landed += a_slice_bytes(c);
            }
            if (b_multicast_mask(c, px, py) >> me & 1u) {
              b_slices.insert(b_slice(c, py));
              landed += b_slice_bytes(c);
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

// A plan's counts are the model's, for every plan a kernel of the lesson or the lab is compiled for.
TEST(HostClusterModel, PlansCarryTheModelsCounts) {
  EXPECT_EQ(NoMulticast::kEmptyArrivals, 8);
  EXPECT_EQ(Multicast2x1::kEmptyArrivals, 16);
  EXPECT_EQ(Multicast2x2::kEmptyArrivals, 24);
  EXPECT_EQ((ClusterPlan<4, 2, true>::kEmptyArrivals), 40);
  EXPECT_EQ((ClusterPlan<1, 4, true>::kEmptyArrivals), 32);
  EXPECT_EQ(Multicast2x2::kFullTxBytes, kStageBytes);
  EXPECT_EQ(NoMulticast::kFullTxBytes, kStageBytes);
}

// ---- What the loads ask of the L2 ---------------------------------------------------------------------

TEST(HostTraffic, MulticastCutsWhatEachBlockAsksTheL2For) {
  EXPECT_EQ(issued_bytes_per_k_tile({2, 2, false}), kStageBytes);
  EXPECT_EQ(issued_bytes_per_k_tile({2, 1, true}), kATileBytes / 2 + kBTileBytes);
  EXPECT_EQ(issued_bytes_per_k_tile({2, 2, true}), kStageBytes / 2);
  EXPECT_EQ(issued_bytes_per_k_tile({4, 2, true}), kATileBytes / 4 + kBTileBytes / 2);
  EXPECT_DOUBLE_EQ(l2_share({2, 2, false}), 1.0);
  EXPECT_DOUBLE_EQ(l2_share({2, 1, true}), 0.75);
  EXPECT_DOUBLE_EQ(l2_share({1, 2, true}), 0.75) << "both tiles are 8 KiB: sharing B saves what sharing A saves";
  EXPECT_DOUBLE_EQ(l2_share({2, 2, true}), 0.5);
  EXPECT_DOUBLE_EQ(l2_share({4, 1, true}), 0.625);
  EXPECT_DOUBLE_EQ(l2_share({4, 2, true}), 0.375);
  EXPECT_DOUBLE_EQ(l2_share({2, 4, true}), 0.375);
  // A cluster asks for each of its distinct tiles once: c.y A tiles and c.x B tiles per k-tile.
  for (const ClusterShape& c : plan_shapes()) {
    if (!c.multicast) continue;
    EXPECT_EQ(std::uint64_t{issued_bytes_per_k_tile(c)} * c.x * c.y,
              std::uint64_t{kATileBytes} * c.y + std::uint64_t{kBTileBytes} * c.x)
        << name(c);
  }
}

// The --size=16M problem of ncu_metrics.txt: 1024 blocks, 32 k-tiles each.
const GemmShape kProfiledShape{4096, kDefaultN, kDefaultK};

TEST(HostTraffic, TheProfiledProblemAsksFor512To192MiB) {
  EXPECT_EQ(l2_request_bytes(NoMulticast::kShape, kProfiledShape), std::uint64_t{512} << 20);
  EXPECT_EQ(l2_request_bytes(Multicast2x1::kShape, kProfiledShape), std::uint64_t{384} << 20);
  EXPECT_EQ(l2_request_bytes(Multicast2x2::kShape, kProfiledShape), std::uint64_t{256} << 20);
  EXPECT_EQ(l2_request_bytes({4, 2, true}, kProfiledShape), std::uint64_t{192} << 20);
}

// What Nsight Compute counted on the H100 (REFERENCE.md, lts__t_sectors_srcunit_tex_op_read.sum, 32-byte
// sectors) for the three multicast plans is exactly what the model predicts.
TEST(HostTraffic, MatchesTheSectorsTheH100Counted) {
  EXPECT_EQ(l2_request_bytes(Multicast2x1::kShape, kProfiledShape) / 32, 12'582'912u);
  EXPECT_EQ(l2_request_bytes(Multicast2x2::kShape, kProfiledShape) / 32, 8'388'608u);
  EXPECT_EQ(l2_request_bytes({4, 2, true}, kProfiledShape) / 32, 6'291'456u);
}

// The model's block count is the launcher's grid, for every variant of the lesson and row of the lab.
TEST(HostTraffic, BlocksAreTheLaunchersGrid) {
  std::vector<ClusterShape> shapes;
  for (const Variant& v : kVariants) shapes.push_back(v.cluster);
  for (const lab::Variant& v : lab::kVariants) shapes.push_back(v.cluster);
  for (const ClusterShape& c : shapes) {
    for (const GemmShape& s : {GemmShape{1, 4, 4}, GemmShape{200, 300, 100}, kProfiledShape, GemmShape{999, 1004, 36}}) {
      const dim3 grid = gemm_grid(s, c);
      EXPECT_EQ(num_blocks(c, s), std::uint64_t{grid.x} * grid.y) << name(c);
    }
  }
}

// ---- The cluster's protocol, searched for unsafe interleavings ---------------------------------------

TEST(HostMulticastProtocol, TheKernelsProtocolIsSafe) {
  for (const ClusterShape& c : {ClusterShape{2, 2, false}, ClusterShape{1, 1, true}, ClusterShape{2, 1, true},
                                ClusterShape{1, 2, true}, ClusterShape{2, 2, true}, ClusterShape{4, 2, true}}) {
    for (int stages : {1, 2, 3}) {
      EXPECT_EQ(first_problem(c, stages, Broken::none, 150), "") << name(c) << ", " << stages << " stages";
    }
  }
}

// The lab's other shapes: the same protocol, other counts.
TEST(HostMulticastProtocol, TheLabsShapesAreSafe) {
  for (const lab::Variant& v : lab::kVariants) {
    EXPECT_EQ(first_problem(v.cluster, kStages, Broken::none, 60, 2 * kStages + 1), "") << v.name;
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
  for (const lab::Variant& v : lab::kVariants) {
    for (const GemmShape& s : {GemmShape{1, 4, 4}, GemmShape{256, 1024, 1024}, GemmShape{999, 1004, 36}}) {
      const dim3 grid = gemm_grid(s, v.cluster);
      EXPECT_EQ(grid.x % v.cluster.x, 0u) << v.name;
      EXPECT_EQ(grid.y % v.cluster.y, 0u) << v.name;
      EXPECT_GE(grid.x * kTileN, static_cast<unsigned>(s.n)) << v.name;
      EXPECT_GE(grid.y * kTileM, static_cast<unsigned>(s.m)) << v.name;
      EXPECT_LT((grid.x - v.cluster.x) * kTileN, static_cast<unsigned>(s.n)) << v.name << ": a whole cluster of idle blocks";
      EXPECT_LT((grid.y - v.cluster.y) * kTileM, static_cast<unsigned>(s.m)) << v.name << ": a whole cluster of idle blocks";
    }
  }
}

TEST(HostGemm, BadShapesAreRefusedBeforeAnyAllocation) {
  EXPECT_THROW(Problem({0, 4, 4}), std::invalid_argument);
  EXPECT_THROW(Problem({4, 4, kMaxK + 1}), std::invalid_argument);
  EXPECT_THROW(Problem({(1 << 21) + 1, 4, 4}), std::invalid_argument);
  EXPECT_FALSE(broken_shape_rule({200, 300, 100}));
}

const float* const kAlignedAddress = reinterpret_cast<const float*>(std::uintptr_t{1} << 20);

TEST(HostTensorMap, EveryVariantsAndRowsMapsPassTheRules) {
  std::vector<std::pair<std::string, ClusterShape>> plans;
  for (const Variant& v : kVariants) plans.emplace_back(v.name, v.cluster);
  for (const lab::Variant& v : lab::kVariants) plans.emplace_back(v.name, v.cluster);
  for (const auto& [variant, c] : plans) {
    for (const GemmShape& s : {GemmShape{256, kDefaultN, kDefaultK}, GemmShape{200, 300, 100}, GemmShape{1, 4, 4}}) {
      const std::optional<std::string> a = course::broken_tensor_map_rule(a_request(kAlignedAddress, s, c));
      const std::optional<std::string> b = course::broken_tensor_map_rule(b_request(kAlignedAddress, s, c));
      EXPECT_FALSE(a) << variant << ": " << *a;
      EXPECT_FALSE(b) << variant << ": " << *b;
    }
  }
}

TEST(HostTensorMap, BoxesAreOneSlice) {
  const GemmShape s{256, kDefaultN, kDefaultK};
  for (const ClusterShape& c : plan_shapes()) {
    const course::TensorMapRequest a = a_request(kAlignedAddress, s, c);
    const course::TensorMapRequest b = b_request(kAlignedAddress, s, c);
    EXPECT_EQ(a.box_dim[0], std::uint32_t{kTileK}) << name(c);
    EXPECT_EQ(a.box_dim[1], static_cast<std::uint32_t>(a_slice_rows(c))) << name(c);
    EXPECT_EQ(b.box_dim[0], std::uint32_t{kTileN}) << name(c);
    EXPECT_EQ(b.box_dim[1], static_cast<std::uint32_t>(b_slice_rows(c))) << name(c);
    EXPECT_EQ(std::uint64_t{a.box_dim[0]} * a.box_dim[1] * sizeof(float), std::uint64_t{a_slice_bytes(c)}) << name(c);
    EXPECT_EQ(std::uint64_t{b.box_dim[0]} * b.box_dim[1] * sizeof(float), std::uint64_t{b_slice_bytes(c)}) << name(c);
  }
  EXPECT_EQ(a_request(kAlignedAddress, s, {4, 2, true}).box_dim[1], std::uint32_t{kTileM / 4});
  EXPECT_EQ(a_request(kAlignedAddress, s, {2, 2, false}).box_dim[1], std::uint32_t{kTileM})
      << "without multicast a block loads the whole tile";
}

TEST(HostTensorMap, RowsThatAreNotWholeGranulesAreNamed) {
  const std::optional<std::string> broken =
      course::broken_tensor_map_rule(a_request(kAlignedAddress, {64, 64, 101}, {2, 2, true}));
  ASSERT_TRUE(broken);
  EXPECT_NE(broken->find("globalStrides[0] = 404 bytes is not a multiple of 16"), std::string::npos) << *broken;
}

// ---- The programs: command line, host model, variant tables ----------------------------------------

TEST(HostChapter, SizeIsWholeRowsOfC) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_FALSE(info.size_rule(kRowBytes));
  EXPECT_FALSE(info.size_rule(info.verify_bytes));
  EXPECT_FALSE(info.size_rule(info.bench_bytes));
  EXPECT_TRUE(info.size_rule(kRowBytes + 16));
  EXPECT_TRUE(info.size_rule(std::size_t{128} << 20));
  EXPECT_TRUE(info.requirement.arch_specific) << "sm_90a code runs on 9.0 only";
}

TEST(HostChapter, RequiresSm90aExactly) {
  const course::Requirement r = chapter_info().requirement;
  EXPECT_EQ(r.major, 9);
  EXPECT_EQ(r.minor, 0);
  course::DeviceInfo later;
  later.present = true;
  later.major = 10;
  later.name = "a newer GPU";
  const std::optional<std::string> why = course::unmet_requirement(r, later);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("sm_90a code runs on no other architecture"), std::string::npos) << *why;
}

TEST(HostChapter, HostModelShowsMasksAndCounts) {
  std::ostringstream out;
  chapter_info().host_model(out);
  EXPECT_NE(out.str().find("multicast_2x2: cluster 2x2, block (0,0) sends A to 0011 and B to 0101"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("(2 + 2 - 1) x 8 = 24"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("no_multicast: cluster 2x2, block (0,0) sends A to 0001 and B to 0001; empty expects "
                           "(1 + 1 - 1) x 8 = 8; it loads 16 KiB per k-tile (100.0%)"),
            std::string::npos)
      << out.str();
}

TEST(HostChapter, LabModelShowsEveryRow) {
  std::ostringstream out;
  lab::chapter_info().host_model(out);
  EXPECT_NE(out.str().find("multicast_4x2: cluster 4x2, block (0,0) sends A to 00001111 and B to 00010001; empty "
                           "expects (4 + 2 - 1) x 8 = 40; it loads 6 KiB per k-tile (37.5%)"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("no_multicast_1x1: cluster 1x1"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("no_multicast_4x2: cluster 4x2"), std::string::npos) << out.str();
}

TEST(HostChapter, TheLabTakesTheLessonsCommandLine) {
  const course::ChapterInfo lesson = chapter_info(), lab = lab::chapter_info();
  EXPECT_STREQ(lab.program, "tma_multicast_lab");
  EXPECT_EQ(std::string(lab.title).rfind("12 tma_multicast lab: ", 0), 0u) << lab.title;
  EXPECT_EQ(lab.verify_bytes, lesson.verify_bytes);
  EXPECT_EQ(lab.bench_bytes, lesson.bench_bytes);
  for (std::size_t bytes : {std::size_t{0}, kRowBytes, kRowBytes + 16, std::size_t{64} << 20, std::size_t{128} << 20}) {
    EXPECT_EQ(bool(lab.size_rule(bytes)), bool(lesson.size_rule(bytes))) << bytes;
  }
  EXPECT_EQ(lab.requirement.major, 9);
  EXPECT_TRUE(lab.requirement.arch_specific);
}

// The tables are wired as their names say: each row's cluster (which shapes the maps' boxes) is
// the plan its launcher was compiled for.
TEST(HostChapter, EveryRowLaunchesThePlanItsMapsAreCutFor) {
  ASSERT_EQ(std::size(kVariants), 3u);
  EXPECT_TRUE(kVariants[0].launch == &launch_gemm<NoMulticast> && same(kVariants[0].cluster, {2, 2, false}));
  EXPECT_TRUE(kVariants[1].launch == &launch_gemm<Multicast2x1> && same(kVariants[1].cluster, {2, 1, true}));
  EXPECT_TRUE(kVariants[2].launch == &launch_gemm<Multicast2x2> && same(kVariants[2].cluster, {2, 2, true}));
  struct Expected {
    const char* name;
    ClusterShape cluster;
    ::Launch launch;
  };
  const Expected expected[] = {
      {"multicast_4x2", {4, 2, true}, &launch_gemm<ClusterPlan<4, 2, true>>},
      {"no_multicast_1x1", {1, 1, false}, &launch_gemm<ClusterPlan<1, 1, false>>},
      {"no_multicast_4x2", {4, 2, false}, &launch_gemm<ClusterPlan<4, 2, false>>},
  };
  ASSERT_EQ(std::size(lab::kVariants), std::size(expected));
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    const lab::Variant& v = lab::kVariants[i];
    EXPECT_STREQ(v.name, expected[i].name);
    EXPECT_TRUE(same(v.cluster, expected[i].cluster)) << v.name;
    EXPECT_TRUE(v.launch == expected[i].launch) << v.name;
  }
  EXPECT_TRUE(lab::kVariants[0].resident_clusters == (&lab::resident_clusters<ClusterPlan<4, 2, true>>));
}

// ---- What the compiler emits (PTX for compute_90a, written by the build) ------------------------------

struct CompiledKernel {
  bool in_lab;           // its PTX: the lab's (tma_multicast_lab.cu) or the lesson's
  const char* mangled;   // part of the kernel's mangled name
  ClusterShape cluster;  // its plan's shape
  int stages;
  int loads = 2;         // tensor loads in its code: a slice of A and one of B
};
// Every kernel a variant of the lesson or a row of the lab launches.
const CompiledKernel kKernels[] = {
    {false, "11gemm_kernelI11ClusterPlanILi2ELi2ELb0EEE", {2, 2, false}, 4},
    {false, "11gemm_kernelI11ClusterPlanILi2ELi1ELb1EEE", {2, 1, true}, 4},
    {false, "11gemm_kernelI11ClusterPlanILi2ELi2ELb1EEE", {2, 2, true}, 4},
    {true, "11gemm_kernelI11ClusterPlanILi4ELi2ELb1EEE", {4, 2, true}, 4},
    {true, "11gemm_kernelI11ClusterPlanILi1ELi1ELb0EEE", {1, 1, false}, 4},
    {true, "11gemm_kernelI11ClusterPlanILi4ELi2ELb0EEE", {4, 2, false}, 4},
};

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    lesson_ptx_ = course::chapter_ptx("tma_multicast", "90a");
    lab_ptx_ = course::chapter_ptx("tma_multicast_lab", "90a");
  }
  static std::string kernel(const std::string& ptx, const char* name) {
    const std::string body = course::ptx_kernel_body(ptx, name);
    EXPECT_FALSE(body.empty()) << "no kernel " << name << " in the PTX under " << COURSE_PTX_DIR;
    return body;
  }
  static bool has(const std::string& body, const std::string& text) { return body.find(text) != std::string::npos; }
  static int count(const std::string& body, const std::string& text) {
    int n = 0;
    for (std::size_t pos = body.find(text); pos != std::string::npos; pos = body.find(text, pos + 1)) ++n;
    return n;
  }
  // The PTX of one kernel of the tables, from the program that launches it.
  static std::string ptx_of(const CompiledKernel& k) { return kernel(k.in_lab ? lab_ptx_ : lesson_ptx_, k.mangled); }
  static inline std::string lesson_ptx_, lab_ptx_;
};

const char* const kMulticastLoad =
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster";
const char* const kOwnLoad = "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes";

TEST_F(HostCodegen, EveryKernelOfTheTablesIsFound) {
  ASSERT_FALSE(lesson_ptx_.empty() || lab_ptx_.empty()) << "no PTX under " << COURSE_PTX_DIR;
  for (const CompiledKernel& k : kKernels) ptx_of(k);  // each one fails the test when it is missing
  EXPECT_EQ(std::size(kKernels), std::size(kVariants) + std::size(lab::kVariants))
      << "one kernel per variant and row";
}

TEST_F(HostCodegen, MulticastKernelsSendEachSliceToItsRowOrColumn) {
  for (const CompiledKernel& k : kKernels) {
    if (!k.cluster.multicast) continue;
    const std::string body = ptx_of(k);
    EXPECT_EQ(count(body, kMulticastLoad), k.loads)
        << k.mangled << ": one A slice and one B slice per k-tile";
    EXPECT_FALSE(has(body, "shared::cta.global.tile")) << k.mangled;
  }
}

TEST_F(HostCodegen, UnicastKernelsLoadIntoTheirOwnSharedMemory) {
  int unicast = 0;
  for (const CompiledKernel& k : kKernels) {
    if (k.cluster.multicast) continue;
    const std::string body = ptx_of(k);
    EXPECT_EQ(count(body, kOwnLoad), k.loads) << k.mangled;
    EXPECT_FALSE(has(body, ".multicast::cluster")) << k.mangled << ": the unicast kernel issues no multicast copy";
    ++unicast;
  }
  EXPECT_EQ(unicast, 3) << "no_multicast, the lab's 1x1 and 4x2 clusters";
}

TEST_F(HostCodegen, EveryKernelIsAClusterThatReleasesAndWaitsAtClusterScope) {
  for (const CompiledKernel& k : kKernels) {
    const std::string body = ptx_of(k);
    EXPECT_TRUE(has(body, ".explicitcluster")) << k.mangled;
    const std::string dims = ".reqnctapercluster " + std::to_string(k.cluster.x) + ", " + std::to_string(k.cluster.y) + ", 1";
    EXPECT_TRUE(has(body, dims)) << k.mangled << ": " << dims;
    EXPECT_TRUE(has(body, "fence.mbarrier_init.release.cluster")) << k.mangled;
    EXPECT_EQ(count(body, "barrier.cluster.arrive"), 2) << k.mangled << ": after the inits and before the exit";
    EXPECT_EQ(count(body, "barrier.cluster.wait"), 2) << k.mangled;
    EXPECT_TRUE(has(body, "mapa.u64")) << k.mangled << ": map_shared_rank of the writers' empty barriers";
    EXPECT_TRUE(has(body, "mbarrier.arrive.release.cluster.shared::cluster.b64")) << k.mangled;
    EXPECT_TRUE(has(body, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64")) << k.mangled;
    EXPECT_TRUE(has(body, "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64")) << k.mangled;
    EXPECT_FALSE(has(body, "mbarrier.try_wait.parity.shared::cta")) << k.mangled << ": no CTA-scope wait";
    EXPECT_TRUE(has(body, "elect.sync")) << k.mangled;
    EXPECT_FALSE(has(body, "ld.global")) << k.mangled << ": operands reach shared memory through TMA only";
  }
}

// The ring's barriers are static shared arrays: kStages mbarriers of 8 bytes
// each, all initialised by the unrolled loop, full_bar with one arrival and empty_bar with the
// plan's count: mbarrier.init takes the count in a register, set once by a mov of the constant.
TEST_F(HostCodegen, EachKernelInitialisesTheBarriersOfItsRingWithThePlansCounts) {
  const std::regex full_bar(R"(full_bar\[(\d+)\])"), empty_bar(R"(empty_bar\[(\d+)\])");
  const std::regex init(R"(mbarrier\.init\.shared\.b64 \[%r\d+\], (%r\d+);)");
  for (const CompiledKernel& k : kKernels) {
    const std::string body = ptx_of(k);
    std::smatch match;
    ASSERT_TRUE(std::regex_search(body, match, full_bar)) << k.mangled;
    EXPECT_EQ(std::stoi(match[1]), 8 * k.stages) << k.mangled;
    ASSERT_TRUE(std::regex_search(body, match, empty_bar)) << k.mangled;
    EXPECT_EQ(std::stoi(match[1]), 8 * k.stages) << k.mangled;
    std::multiset<int> counts;
    for (auto it = std::sregex_iterator(body.begin(), body.end(), init); it != std::sregex_iterator(); ++it) {
      const std::regex set_count("mov\\.u32\\s+" + (*it)[1].str() + R"(, (\d+);)");
      std::smatch value;
      ASSERT_TRUE(std::regex_search(body, value, set_count)) << k.mangled << ": where is " << (*it)[1] << " set?";
      counts.insert(std::stoi(value[1]));
    }
    std::multiset<int> expected;
    for (int s = 0; s < k.stages; ++s) expected.insert({1, empty_arrivals(k.cluster)});
    EXPECT_EQ(counts, expected) << k.mangled;
  }
}

// The course moves data with TMA (cp.async.bulk), never with chapter 02's LDGSTS (cp.async.ca/cg).
TEST_F(HostCodegen, NoCopyGoesThroughLdgsts) {
  ASSERT_FALSE(lesson_ptx_.empty() || lab_ptx_.empty()) << "no PTX under " << COURSE_PTX_DIR;
  for (const std::string* ptx : {&lesson_ptx_, &lab_ptx_}) {
    EXPECT_EQ(course::count_matches(*ptx, R"(cp\.async\.c[ag]\.)"), 0);
  }
}

// The machine code of this executable (cuobjdump; skipped where it or the sm_90a code is missing).
// A tensor load is UTMALDG, with .MULTICAST when it has a ctaMask; the parity waits are
// SYNCS.PHASECHK, the remote arrivals SYNCS.ARRIVE.TRANS64.RED, cluster.sync() UCGABAR_ARV and
// UCGABAR_WAIT, and elect.sync ELECT.
TEST_F(HostCodegen, MachineCodeLoadsThroughTheTmaUnitAndMeetsAtClusterBarriers) {
  COURSE_SASS_OR_SKIP(sass, course::sm90a_sass_name());
  for (const CompiledKernel& k : kKernels) {
    const std::string body = course::sass_kernel_body(sass, k.mangled);
    ASSERT_FALSE(body.empty()) << "no kernel " << k.mangled << " in the " << course::sm90a_sass_name() << " machine code";
    for (const char* op : {R"(UTMALDG)", R"(SYNCS\.PHASECHK)", R"(SYNCS\.ARRIVE\.TRANS64\.RED)", R"(UCGABAR_ARV)",
                           R"(UCGABAR_WAIT)", R"(ELECT)"}) {
      EXPECT_GE(course::count_matches(body, op), 1) << k.mangled << ": " << op;
    }
    if (k.cluster.multicast) {
      EXPECT_GE(course::count_matches(body, R"(UTMALDG\.2D\.MULTICAST)"), 1) << k.mangled;
    } else {
      EXPECT_EQ(course::count_matches(body, "MULTICAST"), 0) << k.mangled;
    }
  }
}

// ---- On the GPU: every lesson variant and every lab row -------------------------------------------

// The cases every variant and every row runs, each compared bit for bit with the reference.
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

// The same cases through every row of the lab: other cluster shapes.
class Sm90a_TmaMulticastLab : public course::GpuTest, public ::testing::WithParamInterface<lab::Variant> {
 protected:
  Sm90a_TmaMulticastLab() : GpuTest(lab::chapter_info().requirement) {}
  void expect_correct(const GemmShape& s) {
    Problem problem(s);
    const course::Comparison result = lab::verify(GetParam(), problem);
    EXPECT_TRUE(result.ok()) << s.m << " x " << s.n << " x " << s.k << ": " << result.summary() << '\n' << result.first;
    EXPECT_EQ(result.untouched, 0u);
  }
};

TEST_P(Sm90a_TmaMulticastLab, OneKTile) { expect_correct({128, 256, kTileK}); }
TEST_P(Sm90a_TmaMulticastLab, EveryStageAndPhaseManyTimes) { expect_correct({128, 256, 37 * kTileK}); }
TEST_P(Sm90a_TmaMulticastLab, PartialTilesInEveryDimension) { expect_correct({200, 300, 100}); }
TEST_P(Sm90a_TmaMulticastLab, SmallerThanOneTile) { expect_correct({1, 4, 4}); }
TEST_P(Sm90a_TmaMulticastLab, ManyClusters) { expect_correct({1024, 1024, 256}); }
TEST_P(Sm90a_TmaMulticastLab, TheProgramsDefaultProblem) { expect_correct({256, kDefaultN, kDefaultK}); }

TEST_P(Sm90a_TmaMulticastLab, RepeatedRunsGiveTheSameBits) {
  Problem problem({320, 512, 288});
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = lab::verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, Sm90a_TmaMulticastLab, ::testing::ValuesIn(lab::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// The residency the lab prints: every row's kernel fits at least one cluster, and no row fits more
// blocks than the SMs' shared memory holds (228 KiB per SM, 1 KiB of it reserved per block).
class Sm90a_TmaMulticastResidency : public course::GpuTest {
 protected:
  Sm90a_TmaMulticastResidency() : GpuTest(lab::chapter_info().requirement) {}
};

TEST_F(Sm90a_TmaMulticastResidency, EveryRowFitsAtLeastOneClusterAndAtMostThreeBlocksPerSm) {
  int sms = 0, device = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  auto check = [&](const char* name, const ClusterShape& c, int clusters, std::size_t smem_bytes) {
    EXPECT_GE(clusters, 1) << name;
    const int per_sm = static_cast<int>((228 * 1024) / (smem_bytes + 1024));  // 64 KiB rings: 3
    EXPECT_LE(clusters * c.x * c.y, per_sm * sms) << name;
  };
  for (const lab::Variant& v : lab::kVariants) check(v.name, v.cluster, v.resident_clusters(), kDynamicSmemBytes);
}

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
TEST_F(Sm90a_ClusterRank, TwoByFourIsXFastest) { expect_x_fastest<2, 4>(); }

// ---- Miscounted barriers, stopped by the bounded waits ----------------------------------------------

/// [broken]
// 16 bytes more than ever land: no full phase completes. K = kStages k-tiles, so the producer never
// has to wait for a stage and only the consumers' full waits can be stuck.
struct ExpectsSixteenBytesTooMany : ClusterPlan<2, 2, true> {
  static constexpr std::uint32_t kFullTxBytes = ClusterPlan<2, 2, true>::kFullTxBytes + 16;  // BROKEN
};
// The count without its "- 1": every empty phase waits for one warp count that never comes.
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

// ---- The concept figure and the program that draws it -----------------------------------------

TEST(HostFigures, CommittedSvgIsWhatTheFunctionDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, DrawsTheModelsMasksAndCounts) {
  const std::string svg = multicast_masks_svg();
  EXPECT_NE(svg.find("viewBox=\"0 0 720 "), std::string::npos) << "scales to its column";
  EXPECT_NE(svg.find("width=\"100%\""), std::string::npos) << "no fixed width";
  EXPECT_NE(svg.find("block (1,1), rank 3"), std::string::npos) << svg;
  EXPECT_NE(svg.find("A rows 32-63 (4096 B) to mask 1100"), std::string::npos) << svg;
  EXPECT_NE(svg.find("B k-rows 16-31 (4096 B) to mask 1010"), std::string::npos) << svg;
  EXPECT_NE(svg.find("full: 1 arrival + 16384 bytes"), std::string::npos) << svg;
  EXPECT_NE(svg.find("empty: 24 arrivals"), std::string::npos) << svg;
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

}  // namespace
