// Tests for 12_tma_multicast's second lesson, multicast without a tensor map (bulk_multicast.cu):
// its model on the CPU (the panel's fold and the reference; slices as byte ranges, clipped at the
// panel's end; masks; whom each block's consumers release; the two barrier counts; the traffic; the
// cluster's protocol with the release done right and done as a ring without multicast does it), the
// shape and command-line rules, the variant table, what every kernel compiles to (PTX for
// compute_90a and, where cuobjdump can read it, sm_90a machine code), every variant bit-exact on
// the GPU with panels that are and are not whole slices, and a release that covers only its own
// block diagnosed by the bounded wait instead of hanging.
#include "bulk_multicast.cu"

#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Every cluster a BulkPlan accepts, with and without multicast.
std::vector<BulkCluster> clusters() {
  std::vector<BulkCluster> all;
  for (int n : {1, 2, 4, 8}) {
    all.push_back({n, true});
    all.push_back({n, false});
  }
  return all;
}
std::string name(const BulkCluster& c) { return std::to_string(c.blocks) + (c.multicast ? " multicast" : " unicast"); }

// Tile sizes to try: whole, one granule, inside a slice of every cluster, on a slice boundary.
const std::uint32_t kTileSizes[] = {kPanelTileBytes, 16, 48, 912, 2048, 4096, 5008, 8192, 12288 + 16, 16368};

// ---- The panel, its fold and the reference ----------------------------------------------------

TEST(HostBulkPanel, ReferenceOfASmallPanelByHand) {
  // 2048 + 3 words: the fold adds word i to column i % 1024; block b's row is fold x (2b + 1) + b.
  std::vector<std::uint32_t> panel(2 * kFoldWords + 3, 0u);
  panel[0] = 5;
  panel[kFoldWords] = 7;                // column 0 again
  panel[2 * kFoldWords] = 0xFFFFFFFFu;  // and again: the sum wraps to 11
  panel[2 * kFoldWords + 2] = 9;        // column 2
  const std::vector<std::uint32_t> fold = panel_fold(panel);
  EXPECT_EQ(fold[0], 11u);
  EXPECT_EQ(fold[1], 0u);
  EXPECT_EQ(fold[2], 9u);
  const std::vector<std::uint32_t> out = broadcast_reference(panel, 3);
  ASSERT_EQ(out.size(), std::size_t(3) * kFoldWords);
  EXPECT_EQ(out[0], 11u);                          // block 0: x 1 + 0
  EXPECT_EQ(out[kFoldWords + 0], 11u * 3 + 1);     // block 1: x 3 + 1
  EXPECT_EQ(out[2 * kFoldWords + 2], 9u * 5 + 2);  // block 2: x 5 + 2
  EXPECT_EQ(out[2 * kFoldWords + 1], 2u) << "a zero column still carries the block";
}

// What a consumer thread t of the kernels adds, read off their indexing (uint4 number t + 256 j of
// every tile, only the chunks the tile has), is column 4t .. 4t+3 of the fold, whatever tile a
// cluster starts at, with a panel that ends inside a tile.
TEST(HostBulkPanel, EachConsumerThreadAddsOneUint4ColumnOfTheFold) {
  const std::uint32_t panel_bytes = 3 * kPanelTileBytes + 5008;
  std::vector<std::uint32_t> panel(panel_bytes / sizeof(std::uint32_t));
  for (std::size_t i = 0; i < panel.size(); ++i) panel[i] = panel_value(i);
  const std::vector<std::uint32_t> fold = panel_fold(panel);
  const int num_tiles = bulk_panel_tiles(panel_bytes);
  for (int cluster : {0, 1, 5}) {
    std::vector<std::uint32_t> sums(kFoldWords, 0u);
    for (int i = 0; i < num_tiles; ++i) {
      const int tile = (first_panel_tile(cluster, num_tiles) + i) % num_tiles;
      const int num_chunks = static_cast<int>(bulk_tile_bytes(panel_bytes, tile) / sizeof(uint4));
      for (int t = 0; t < kConsumerThreads; ++t) {
        for (int j = 0; j < kChunksPerThread; ++j) {
          const int c = t + j * kConsumerThreads;
          if (c >= num_chunks) continue;  // past the tile's bytes the stage holds an older tile
          for (int k = 0; k < 4; ++k) sums[4 * t + k] += panel[std::size_t(tile) * kPanelTileWords + 4 * c + k];
        }
      }
    }
    EXPECT_EQ(sums, fold) << "cluster " << cluster;
  }
}

TEST(HostBulkPanel, ClustersStartAtDifferentTilesAndVisitEachOnce) {
  EXPECT_EQ(first_panel_tile(0, kPanelTiles), 0);
  EXPECT_EQ(first_panel_tile(5, kPanelTiles), 5);
  EXPECT_EQ(first_panel_tile(kPanelTiles + 3, kPanelTiles), 3);
  EXPECT_EQ(first_panel_tile(7, 1), 0);
  for (int tiles : {1, 3, kPanelTiles}) {
    for (int cluster : {0, 2, 131}) {
      std::set<int> visited;
      for (int i = 0; i < tiles; ++i) visited.insert((first_panel_tile(cluster, tiles) + i) % tiles);
      EXPECT_EQ(visited.size(), std::size_t(tiles)) << tiles << " tiles, cluster " << cluster;
    }
  }
}

// ---- The plan ---------------------------------------------------------------------------------

// A whole tile is cut into one slice per sharer, byte ranges that cover it exactly once, each
// starting and ending on a 16-byte boundary (the copy's rule for size and both addresses).
TEST(HostBulkPlan, SlicesCutEachTileIntoSixteenByteRangesCoveringItOnce) {
  for (const BulkCluster& c : clusters()) {
    for (std::uint32_t tile_bytes : kTileSizes) {
      std::vector<int> covered(tile_bytes / kBulkGranuleBytes, 0);
      for (int x = 0; x < bulk_sharers(c); ++x) {
        const std::uint32_t first = bulk_slice_offset(c, x), bytes = bulk_copy_bytes(c, x, tile_bytes);
        EXPECT_EQ(first % kBulkGranuleBytes, 0u) << name(c);
        EXPECT_EQ(bytes % kBulkGranuleBytes, 0u) << name(c) << ", tile of " << tile_bytes;
        EXPECT_LE(bytes, bulk_slice_bytes(c)) << name(c);
        for (std::uint32_t b = first; b < first + bytes; b += kBulkGranuleBytes) ++covered[b / kBulkGranuleBytes];
      }
      EXPECT_EQ(covered, std::vector<int>(tile_bytes / kBulkGranuleBytes, 1)) << name(c) << ", tile of " << tile_bytes;
    }
  }
}

// The same for every tile a panel of whole 16-byte units can end in: 16 bytes to 16 KiB.
TEST(HostBulkPlan, EveryTileSizeIsCoveredOnceInEveryCluster) {
  for (const BulkCluster& c : clusters()) {
    for (std::uint32_t tile_bytes = kBulkGranuleBytes; tile_bytes <= kPanelTileBytes; tile_bytes += kBulkGranuleBytes) {
      std::uint32_t total = 0;
      std::uint32_t next = 0;  // slices are consecutive: each starts where the one before ended
      for (int x = 0; x < bulk_sharers(c); ++x) {
        const std::uint32_t bytes = bulk_copy_bytes(c, x, tile_bytes);
        if (bytes > 0) {
          ASSERT_EQ(bulk_slice_offset(c, x), next) << name(c) << ", tile of " << tile_bytes << ", block " << x;
          next += bytes;
        }
        total += bytes;
      }
      ASSERT_EQ(total, tile_bytes) << name(c) << ", tile of " << tile_bytes;
    }
  }
}

TEST(HostBulkPlan, APartialTileClipsTheSlicesSomeToNothing) {
  const BulkCluster four{4, true};
  EXPECT_EQ(bulk_slice_bytes(four), 4096u);
  EXPECT_EQ(bulk_copy_bytes(four, 0, 5008), 4096u);
  EXPECT_EQ(bulk_copy_bytes(four, 1, 5008), 912u);
  EXPECT_EQ(bulk_copy_bytes(four, 2, 5008), 0u) << "past the end: nothing to copy";
  EXPECT_EQ(bulk_copy_bytes(four, 3, 5008), 0u);
  const BulkCluster eight{8, true};
  EXPECT_EQ(bulk_copy_bytes(eight, 0, 16), 16u);
  for (int x = 1; x < 8; ++x) EXPECT_EQ(bulk_copy_bytes(eight, x, 16), 0u) << "block " << x;
  EXPECT_EQ(bulk_copy_bytes({1, false}, 0, 5008), 5008u);
  EXPECT_EQ(bulk_copy_bytes({4, false}, 3, 5008), 5008u) << "without multicast every block copies the whole tile";
}

TEST(HostBulkPlan, TilesOfAPanelThatEndsInsideATile) {
  const std::uint32_t panel = 3 * kPanelTileBytes + 5008;
  EXPECT_EQ(bulk_panel_tiles(panel), 4);
  EXPECT_EQ(bulk_tile_bytes(panel, 0), kPanelTileBytes);
  EXPECT_EQ(bulk_tile_bytes(panel, 2), kPanelTileBytes);
  EXPECT_EQ(bulk_tile_bytes(panel, 3), 5008u);
  EXPECT_EQ(bulk_panel_tiles(kPanelTileBytes), 1);
  EXPECT_EQ(bulk_panel_tiles(16), 1);
  EXPECT_EQ(bulk_panel_tiles(kPanelTiles * kPanelTileBytes), kPanelTiles);
}

TEST(HostBulkPlan, MasksNameTheWholeClusterOrOnlyTheBlockItself) {
  EXPECT_EQ(bulk_mask({2, true}, 1), 0b11);
  EXPECT_EQ(bulk_mask({4, true}, 2), 0b1111);
  EXPECT_EQ(bulk_mask({8, true}, 7), 0xff);
  EXPECT_EQ(bulk_mask({4, false}, 2), 0b0100);
  for (const BulkCluster& c : clusters()) {
    for (int x = 0; x < c.blocks; ++x) {
      EXPECT_EQ(bulk_mask(c, x) >> c.blocks, 0) << name(c) << ": a bit beyond the cluster";
      EXPECT_TRUE(bulk_mask(c, x) >> x & 1u) << name(c) << ": a block receives its own slice";
    }
  }
}

// Per destination: the copies that land in block r (all senders whose mask names r) add up to the
// tile, which is what its full barrier expects, whoever sent them.
TEST(HostBulkPlan, EachFullBarrierReceivesTheWholeTileFromEverySender) {
  for (const BulkCluster& c : clusters()) {
    for (std::uint32_t tile_bytes : kTileSizes) {
      for (int r = 0; r < c.blocks; ++r) {
        std::uint32_t landed = 0;
        int senders = 0;
        for (int x = 0; x < c.blocks; ++x) {
          if (bulk_mask(c, x) >> r & 1u) {
            landed += bulk_copy_bytes(c, x, tile_bytes);
            ++senders;
          }
        }
        EXPECT_EQ(landed, tile_bytes) << name(c) << ", block " << r << ", tile of " << tile_bytes;
        EXPECT_EQ(senders, bulk_sharers(c)) << name(c) << ": n complete-tx per tile with multicast, one without";
      }
    }
  }
}

// The consumers of block x release exactly the blocks whose copies land in x, each once, and each
// empty barrier counts exactly the arrivals it receives: n x warps with multicast, its own warps without.
TEST(HostBulkPlan, EveryWriterIsReleasedOnceAndEveryEmptyBarrierCountsItsArrivals) {
  for (const BulkCluster& c : clusters()) {
    std::vector<int> received(c.blocks, 0);
    for (int x = 0; x < c.blocks; ++x) {
      std::multiset<int> targets;
      for (int i = 0; i < bulk_sharers(c); ++i) targets.insert(bulk_release_target(c, x, i));
      std::set<int> writers;
      for (int w = 0; w < c.blocks; ++w) {
        if (bulk_mask(c, w) >> x & 1u) writers.insert(w);
      }
      EXPECT_EQ(std::set<int>(targets.begin(), targets.end()), writers) << name(c) << ", block " << x;
      EXPECT_EQ(targets.size(), writers.size()) << name(c) << ": a writer released twice";
      for (int t : targets) received[t] += kConsumerWarps;
    }
    for (int r = 0; r < c.blocks; ++r) EXPECT_EQ(received[r], bulk_empty_arrivals(c)) << name(c) << ", block " << r;
  }
  EXPECT_EQ(bulk_empty_arrivals({4, true}), 4 * kConsumerWarps) << "every block of the cluster, itself included";
  EXPECT_EQ(bulk_empty_arrivals({4, false}), kConsumerWarps) << "without multicast only our own warps";
}

TEST(HostBulkPlan, PlansCarryTheModelsCounts) {
  EXPECT_EQ(Multicast4::kEmptyArrivals, 32);
  EXPECT_EQ(Multicast4::kReleaseTargets, 4);
  EXPECT_EQ(Multicast4::multicast_mask(3), 0b1111);
  EXPECT_EQ(Multicast4::release_target(3, 1), 1);
  EXPECT_EQ((BulkPlan<8, true>::kEmptyArrivals), 64);
  EXPECT_EQ(bulk_slice_bytes(BulkPlan<8, true>::kCluster), 2048u);
  EXPECT_EQ(NoMulticast::kEmptyArrivals, kConsumerWarps);
  EXPECT_EQ(NoMulticast::kReleaseTargets, 1);
  EXPECT_EQ(NoMulticast::release_target(0, 0), 0);
}

// ---- The traffic ----------------------------------------------------------------------------------

// The --size=16M run of --bench and of ncu_metrics.txt: 4096 blocks, each receiving the 2 MiB panel,
// 8 GiB landing in shared memory. The copies ask the L2 for 8, 4 and 2 GiB without multicast and in
// clusters of 2 and 4: 2^28, 2^27 and 2^26 sectors of 32 bytes (lts__t_sectors_srcunit_tex_op_read.sum).
TEST(HostBulkTraffic, TheBenchProblemAsksTheL2ForEightGiBDividedByTheCluster) {
  const BulkShape bulk = bulk_shape(std::size_t{16} << 20);
  EXPECT_EQ(bulk.blocks, 4096);
  EXPECT_EQ(bulk.panel_bytes, 2u << 20);
  for (const Variant& v : kVariants) {
    EXPECT_EQ(bulk_landed_bytes(v.cluster, bulk), std::uint64_t{8} << 30) << v.name;
    EXPECT_EQ(bulk_l2_request_bytes(v.cluster, bulk) * bulk_sharers(v.cluster), std::uint64_t{8} << 30) << v.name;
  }
  EXPECT_EQ(bulk_l2_request_bytes(NoMulticast::kCluster, bulk) / 32, 268'435'456u);
  EXPECT_EQ(bulk_l2_request_bytes(Multicast2::kCluster, bulk) / 32, 134'217'728u);
  EXPECT_EQ(bulk_l2_request_bytes(Multicast4::kCluster, bulk) / 32, 67'108'864u);
}

TEST(HostBulkTraffic, TheGridIsWholeClustersAndEveryBlockReceivesThePanel) {
  const BulkShape s{5, 3 * kPanelTileBytes + 5008};
  EXPECT_EQ(bulk_grid_blocks({4, true}, s), 8u);
  EXPECT_EQ(bulk_grid_blocks({1, false}, s), 5u);
  EXPECT_EQ(bulk_landed_bytes({4, true}, s), 8u * s.panel_bytes);
  EXPECT_EQ(bulk_l2_request_bytes({4, true}, s), 2u * s.panel_bytes);
}

// ---- The protocol, run on the CPU --------------------------------------------------------------

// Tiles of a panel that ends inside a slice (slices of some blocks empty in the last tile).
std::vector<std::uint32_t> panel_tiles_of(std::uint32_t panel_bytes) {
  std::vector<std::uint32_t> tiles;
  for (int t = 0; t < bulk_panel_tiles(panel_bytes); ++t) tiles.push_back(bulk_tile_bytes(panel_bytes, t));
  return tiles;
}

// The ring's plans (the minimal kernel has no ring: its cluster barrier is the release).
TEST(HostBulkProtocol, TheLessonsPlansAreSafe) {
  for (const Variant& v : kVariants) {
    if (v.launch == &launch_minimal) continue;
    for (std::uint32_t panel : {5 * kPanelTileBytes, 4 * kPanelTileBytes + 912, 16u, 2 * kPanelTileBytes + 48}) {
      EXPECT_EQ(first_bulk_problem(v.cluster, kStages, panel_tiles_of(panel), BulkBroken::none), "")
          << v.name << ", panel of " << panel << " bytes";
    }
  }
}

TEST(HostBulkProtocol, DeeperRingsAndUnicastClustersAreSafeToo) {
  for (const BulkCluster& c : clusters()) {
    for (int stages : {1, 3, 4}) {
      EXPECT_EQ(first_bulk_problem(c, stages, panel_tiles_of(6 * kPanelTileBytes + 2064), BulkBroken::none, 100), "")
          << name(c) << ", " << stages << " stages";
    }
  }
}

// The classic mistakes of a multicast ring, each on a cluster of 4 with five tiles and two stages.
TEST(HostBulkProtocol, ReleasingOnlyItselfWithTheClustersCountDeadlocks) {
  const std::string problem =
      first_bulk_problem({4, true}, kStages, panel_tiles_of(5 * kPanelTileBytes), BulkBroken::releases_only_itself);
  EXPECT_TRUE(contains(problem, "deadlock: block")) << problem;
}

TEST(HostBulkProtocol, ReleasingOnlyItselfWithItsOwnCountLetsAPeerOverwriteAStage) {
  const std::string problem = first_bulk_problem({4, true}, kStages, panel_tiles_of(5 * kPanelTileBytes),
                                                 BulkBroken::releases_only_itself_counted);
  EXPECT_TRUE(contains(problem, "overwrote stage")) << problem;
}

// What is wrong with multicast is right without it: a block that copies only into itself releases only itself.
TEST(HostBulkProtocol, WithoutMulticastReleasingOnlyItselfIsTheRightProtocol) {
  for (int n : {1, 4}) {
    EXPECT_EQ(first_bulk_problem({n, false}, kStages, panel_tiles_of(5 * kPanelTileBytes),
                                 BulkBroken::releases_only_itself_counted),
              "")
        << n;
  }
}

TEST(HostBulkProtocol, ExpectingOnlyItsOwnSliceLetsConsumersReadEarly) {
  const std::string problem =
      first_bulk_problem({4, true}, kStages, panel_tiles_of(5 * kPanelTileBytes), BulkBroken::expects_own_slice_only);
  EXPECT_TRUE(contains(problem, "before all of its bytes had landed")) << problem;
}

TEST(HostBulkProtocol, WithoutTheFinalClusterSyncSomethingReachesAnExitedBlock) {
  const std::string problem =
      first_bulk_problem({4, true}, kStages, panel_tiles_of(5 * kPanelTileBytes), BulkBroken::no_final_cluster_sync);
  EXPECT_TRUE(contains(problem, "after it exited") || contains(problem, "still on the way")) << problem;
}

// ---- Bad input: shapes and command lines --------------------------------------------------------

TEST(HostBulkInput, APanelOfLooseBytesIsRefusedWithTheCopysRule) {
  const std::optional<std::string> rule = broken_bulk_rule({4, 100});
  ASSERT_TRUE(rule);
  EXPECT_TRUE(contains(*rule, "whole number of 16-byte units: cp.async.bulk copies multiples of 16 bytes")) << *rule;
  EXPECT_THROW(checked(BulkShape{4, 100}), std::invalid_argument);
  EXPECT_TRUE(broken_bulk_rule({0, kPanelTileBytes}));
  EXPECT_TRUE(broken_bulk_rule({kMaxBulkBlocks + 1, kPanelTileBytes}));
  EXPECT_TRUE(broken_bulk_rule({1, 0}));
  EXPECT_TRUE(broken_bulk_rule({1, kMaxPanelBytes + 16}));
  EXPECT_FALSE(broken_bulk_rule({1, 16}));
  EXPECT_FALSE(broken_bulk_rule({kMaxBulkBlocks, kMaxPanelBytes}));
}

// The launcher checks the shape before it launches anything, so this runs without a GPU.
TEST(HostBulkInput, TheLauncherRefusesABadShapeBeforeLaunching) {
  for (const Variant& v : kVariants) {
    try {
      v.launch(nullptr, nullptr, BulkShape{4, 3 * kPanelTileBytes + 8});
      ADD_FAILURE() << v.name << ": launched a panel that is not whole 16-byte units";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "16-byte units")) << e.what();
    }
  }
}

course::Options options_of(std::vector<std::string> args) {
  std::vector<char*> argv;
  static char program[] = "bulk_multicast";
  argv.push_back(program);
  for (std::string& a : args) argv.push_back(a.data());
  return course::resolve_options(static_cast<int>(argv.size()), argv.data(), chapter_info(),
                                 course::variant_infos(kVariants));
}

TEST(HostBulkInput, ABadCommandLineNamesTheRule) {
  try {
    options_of({"--size=4097"});
    ADD_FAILURE() << "--size=4097 accepted";
  } catch (const course::UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "a whole number of 4 KiB rows (one per block)")) << e.what();
  }
  try {
    options_of({"--variant=bulk_multicast_16"});
    ADD_FAILURE() << "an unknown variant accepted";
  } catch (const course::UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "bulk_minimal, bulk_no_multicast, bulk_multicast_2, bulk_multicast_4")) << e.what();
  }
  EXPECT_THROW(options_of({"--size=65M"}), course::UsageError) << "more than 2^14 blocks";
  EXPECT_EQ(options_of({"--bench"}).size_bytes, std::size_t{16} << 20);
  EXPECT_EQ(options_of({"--size=8K"}).size_bytes, std::size_t{8} << 10);
}

// ---- The program: variants, host model, requirement ----------------------------------------------

TEST(HostBulkChapter, FourVariantsEachLaunchingItsPlan) {
  ASSERT_EQ(std::size(kVariants), 4u);
  const struct {
    const char* name;
    BulkCluster cluster;
    Launch launch;
  } expected[] = {{"bulk_minimal", {2, true}, &launch_minimal},
                  {"bulk_no_multicast", {1, false}, &launch_bulk<BulkPlan<1, false>>},
                  {"bulk_multicast_2", {2, true}, &launch_bulk<BulkPlan<2, true>>},
                  {"bulk_multicast_4", {4, true}, &launch_bulk<BulkPlan<4, true>>}};
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    EXPECT_STREQ(kVariants[i].name, expected[i].name);
    EXPECT_EQ(kVariants[i].cluster.blocks, expected[i].cluster.blocks) << kVariants[i].name;
    EXPECT_EQ(kVariants[i].cluster.multicast, expected[i].cluster.multicast) << kVariants[i].name;
    EXPECT_TRUE(kVariants[i].launch == expected[i].launch) << kVariants[i].name;
    EXPECT_LE(std::string(kVariants[i].summary).size(), 90u) << "--help prints one line per variant";
  }
}

TEST(HostBulkChapter, HostModelShowsEveryPlan) {
  std::ostringstream out;
  chapter_info().host_model(out);
  const std::string text = out.str();
  EXPECT_TRUE(contains(text, "panel of 128 tiles of 16 KiB (2 MiB) read by every block, 2 stages per block")) << text;
  EXPECT_TRUE(contains(text, "bulk_multicast_4: cluster of 4, block 0 copies bytes [0, 4096) of each 16 KiB tile to "
                             "1111; full expects the tile's bytes from 4 copies; empty expects 4 x 8 = 32; it asks "
                             "the L2 for 25.0% of what lands in it"))
      << text;
  EXPECT_TRUE(contains(text, "bulk_no_multicast: cluster of 1, block 0 copies bytes [0, 16384) of each 16 KiB tile "
                             "to 1; full expects the tile's bytes from 1 copy; empty expects 1 x 8 = 8"))
      << text;
}

TEST(HostBulkChapter, RequiresSm90aAndSizesInWholeRows) {
  const course::ChapterInfo info = chapter_info();
  EXPECT_STREQ(info.program, "bulk_multicast");
  EXPECT_EQ(info.requirement.major, 9);
  EXPECT_EQ(info.requirement.minor, 0);
  EXPECT_TRUE(info.requirement.arch_specific) << "the multicast overload exists for sm_90a only";
  EXPECT_EQ(info.verify_bytes, std::size_t{1} << 20);
  EXPECT_EQ(info.bench_bytes, std::size_t{16} << 20) << "the bench size: 4096 blocks";
  EXPECT_FALSE(info.size_rule(kOutRowBytes));
  EXPECT_FALSE(info.size_rule(std::size_t{64} << 20));
  EXPECT_TRUE(info.size_rule(0));
  EXPECT_TRUE(info.size_rule(kOutRowBytes + 16));
}

// ---- What the compiler emits (PTX for compute_90a, written by the build) ------------------------------

struct CompiledKernel {
  const char* mangled;  // part of the kernel's mangled name
  BulkCluster cluster;
};
const CompiledKernel kKernels[] = {
    {"21bulk_broadcast_kernelI8BulkPlanILi1ELb0EEE", {1, false}},
    {"21bulk_broadcast_kernelI8BulkPlanILi2ELb1EEE", {2, true}},
    {"21bulk_broadcast_kernelI8BulkPlanILi4ELb1EEE", {4, true}},
};

class HostBulkCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ptx_ = course::chapter_ptx("bulk_multicast", "90a"); }
  static std::string kernel(const CompiledKernel& k) {
    const std::string body = course::ptx_kernel_body(ptx_, k.mangled);
    EXPECT_FALSE(body.empty()) << "no kernel " << k.mangled << " in bulk_multicast.compute_90a.ptx under "
                               << COURSE_PTX_DIR;
    return body;
  }
  static inline std::string ptx_;
};

constexpr const char* kMulticastCopy =
    R"(cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes\.multicast::cluster)";
constexpr const char* kOwnCopy = R"(cp\.async\.bulk\.shared::cta\.global\.mbarrier::complete_tx::bytes)";

TEST_F(HostBulkCodegen, OneKernelPerVariant) {
  ASSERT_FALSE(ptx_.empty()) << "no PTX under " << COURSE_PTX_DIR;
  EXPECT_EQ(std::size(kKernels) + 1, std::size(kVariants)) << "the ring's kernels and the minimal one";
  for (const CompiledKernel& k : kKernels) kernel(k);  // each one fails the test when it is missing
}

// The minimal kernel: a cluster of 2, one multicast copy issued by block 0 with the mask 0b11, the
// plain cluster-scope wait (no time limit), the init fenced before any copy, and one cluster
// barrier after the init and one per tile.
TEST_F(HostBulkCodegen, TheMinimalKernelIsOneMulticastCopyAndPlainWaits) {
  const std::string body = kernel({"24minimal_multicast_kernel", {2, true}});
  EXPECT_TRUE(contains(body, ".reqnctapercluster 2, 1, 1"));
  EXPECT_EQ(course::count_matches(body, kMulticastCopy), 1);
  EXPECT_EQ(course::count_matches(body, kOwnCopy), 0);
  EXPECT_GE(course::count_matches(body, R"(mbarrier\.try_wait\.parity\.acquire\.cluster\.shared::cta\.b64)"), 1);
  EXPECT_FALSE(contains(body, "%globaltimer")) << "the plain wait, not the course's bounded one";
  EXPECT_FALSE(contains(body, "mapa")) << "no remote arrival: the cluster barrier releases the tile";
  EXPECT_EQ(course::count_matches(body, R"(mbarrier\.init\.shared\.b64)"), 1);
  EXPECT_EQ(course::count_matches(body, R"(barrier\.cluster\.arrive)"), 2);
  const std::size_t fence = body.find("fence.mbarrier_init.release.cluster"), copy = body.find("cp.async.bulk");
  ASSERT_NE(fence, std::string::npos);
  EXPECT_LT(fence, copy) << "the init is fenced before any copy";
}

// The multicast kernels issue one multicast bulk copy (a slice of a tile) and nothing else that
// copies; the kernel without multicast one copy into its own shared memory. None uses a tensor map.
TEST_F(HostBulkCodegen, TheCopyIsTheOneDimensionalBulkCopyWithACtaMaskOrIntoTheBlockItself) {
  for (const CompiledKernel& k : kKernels) {
    const std::string body = kernel(k);
    EXPECT_EQ(course::count_matches(body, kMulticastCopy), k.cluster.multicast ? 1 : 0) << k.mangled;
    EXPECT_EQ(course::count_matches(body, kOwnCopy), k.cluster.multicast ? 0 : 1) << k.mangled;
    EXPECT_EQ(course::count_matches(body, R"(cp\.async\.bulk)"), 1) << k.mangled << ": one copy instruction";
    EXPECT_FALSE(contains(body, "cp.async.bulk.tensor")) << k.mangled << ": no tensor map, no tensor copy";
    EXPECT_FALSE(contains(body, "tensormap")) << k.mangled;
    EXPECT_EQ(course::count_matches(body, R"(cp\.async\.c[ag]\.)"), 0) << k.mangled << ": no LDGSTS";
  }
}

TEST_F(HostBulkCodegen, EveryKernelIsAClusterThatReleasesAndWaitsAtClusterScope) {
  for (const CompiledKernel& k : kKernels) {
    const std::string body = kernel(k);
    EXPECT_TRUE(contains(body, ".reqnctapercluster " + std::to_string(k.cluster.blocks) + ", 1, 1")) << k.mangled;
    EXPECT_GE(course::count_matches(body, R"(mbarrier\.try_wait\.parity\.acquire\.cluster\.shared::cta\.b64)"), 2)
        << k.mangled << ": the empty and full waits";
    EXPECT_EQ(course::count_matches(body, R"(mbarrier\.try_wait\.parity\.shared::cta\.b64)"), 0)
        << k.mangled << ": a wait at CTA scope does not pair with the peers' cluster-scope release";
    EXPECT_TRUE(contains(body, "%globaltimer")) << k.mangled << ": a wait without a time limit";
    EXPECT_TRUE(contains(body, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64")) << k.mangled;
    EXPECT_TRUE(contains(body, "mbarrier.arrive.release.cluster.shared::cluster.b64")) << k.mangled;
    EXPECT_GE(course::count_matches(body, R"(mapa\.u64)"), 1) << k.mangled;
    EXPECT_EQ(course::count_matches(body, R"(barrier\.cluster\.arrive)"), 2) << k.mangled;
    EXPECT_EQ(course::count_matches(body, R"(barrier\.cluster\.wait)"), 2) << k.mangled;
    EXPECT_GE(course::count_matches(body, R"(elect\.sync)"), 1) << k.mangled;
    EXPECT_EQ(course::count_matches(body, R"(mbarrier\.init\.shared\.b64)"), 2 * kStages) << k.mangled;
    const std::size_t fence = body.find("fence.mbarrier_init.release.cluster"), copy = body.find("cp.async.bulk");
    ASSERT_NE(fence, std::string::npos) << k.mangled;
    EXPECT_LT(fence, copy) << k.mangled << ": the inits are fenced before any copy";
  }
}

TEST_F(HostBulkCodegen, ConsumersReadSixteenBytesAtATimeAndStoreOneRow) {
  for (const CompiledKernel& k : kKernels) {
    const std::string body = kernel(k);
    EXPECT_EQ(course::count_matches(body, R"(ld\.shared\.v4\.u32)"), kChunksPerThread) << k.mangled;
    EXPECT_EQ(course::count_matches(body, R"(st\.global\.v4\.u32)"), 1) << k.mangled;
    EXPECT_FALSE(contains(body, "ld.shared.u32")) << k.mangled;
  }
}

// The machine code of this executable (cuobjdump; skipped where it or the sm_90a code is missing):
// the bulk copy is UBLKCP.S.G, with .MULTICAST when it has a ctaMask; never a tensor load (UTMALDG).
TEST_F(HostBulkCodegen, MachineCodeCopiesWithUblkcpAndMeetsAtClusterBarriers) {
  COURSE_SASS_OR_SKIP(sass, course::sm90a_sass_name());
  for (const CompiledKernel& k : kKernels) {
    const std::string body = course::sass_kernel_body(sass, k.mangled);
    ASSERT_FALSE(body.empty()) << "no kernel " << k.mangled << " in the " << course::sm90a_sass_name() << " machine code";
    EXPECT_GE(course::count_matches(body, R"(UBLKCP\.S\.G)"), 1) << k.mangled;
    EXPECT_EQ(course::count_matches(body, "UTMALDG"), 0) << k.mangled;
    for (const char* op : {R"(SYNCS\.PHASECHK)", R"(SYNCS\.ARRIVE\.TRANS64\.RED)", R"(UCGABAR_ARV)", R"(UCGABAR_WAIT)",
                           R"(ELECT)"}) {
      EXPECT_GE(course::count_matches(body, op), 1) << k.mangled << ": " << op;
    }
    EXPECT_EQ(course::count_matches(body, R"(UBLKCP\.S\.G\.MULTICAST)") >= 1, k.cluster.multicast) << k.mangled;
  }
}

// ---- On the GPU: every variant, bit for bit ----------------------------------------------------------

class Sm90a_BulkMulticast : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90a_BulkMulticast() : GpuTest(chapter_info().requirement) {}
  void expect_correct(const BulkShape& s) {
    Problem problem(s);
    const course::Comparison result = verify(GetParam(), problem);
    EXPECT_TRUE(result.ok()) << s.blocks << " blocks, panel of " << s.panel_bytes << " bytes: " << result.summary()
                             << '\n'
                             << result.first;
    EXPECT_EQ(result.untouched, 0u);
  }
};

TEST_P(Sm90a_BulkMulticast, OneTile) { expect_correct({3, kPanelTileBytes}); }
TEST_P(Sm90a_BulkMulticast, OneGranule) { expect_correct({1, 16}); }  // only block 0's slice has a byte
TEST_P(Sm90a_BulkMulticast, PanelEndsInsideASlice) { expect_correct({5, 3 * kPanelTileBytes + 5008}); }
TEST_P(Sm90a_BulkMulticast, PanelEndsOnASliceBoundary) { expect_correct({6, 2 * kPanelTileBytes + 8192}); }
TEST_P(Sm90a_BulkMulticast, EveryStageAndPhaseManyTimes) { expect_correct({13, 37 * kPanelTileBytes + 48}); }
TEST_P(Sm90a_BulkMulticast, MoreClustersThanFitAtOnce) { expect_correct({2000, 9 * kPanelTileBytes + 8208}); }
TEST_P(Sm90a_BulkMulticast, TheProgramsDefaultProblem) { expect_correct(bulk_shape(std::size_t{1} << 20)); }

TEST_P(Sm90a_BulkMulticast, RepeatedRunsGiveTheSameBits) {
  Problem problem({21, 11 * kPanelTileBytes + 4112});
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam(), problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm90a_BulkMulticast, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- A release that covers only its own block, stopped by the bounded waits --------------------------

// The habit of a ring without multicast: each consumer warp arrives only on its own block's empty
// barrier, which still counts every warp of the cluster. No empty phase ever completes.
struct ReleasesOnlyItself : BulkPlan<4, true> {
  static constexpr int kReleaseTargets = 1;                                                     // BROKEN
  TMA_MULTICAST_HOST_DEVICE static constexpr int release_target(int rank, int) { return rank; }  // BROKEN
};

class Sm90a_BulkMulticastDiagnosis : public course::GpuTest {
 protected:
  Sm90a_BulkMulticastDiagnosis() : GpuTest(chapter_info().requirement) {}
};

// Three tiles through two stages: the producers wait for stage 0 after round 0 (empty, parity 0)
// and the consumers for round 1 of stage 0 (full, parity 1); whichever limit runs out first reports.
TEST_F(Sm90a_BulkMulticastDiagnosis, ReleasingOnlyItselfIsDiagnosedNotHung) {
  Problem problem({4, (kStages + 1) * kPanelTileBytes});
  auto launch = [&] { launch_bulk<ReleasesOnlyItself>(problem.gmem_panel.data(), problem.gmem_out.data(), problem.shape); };
  COURSE_EXPECT_DIAGNOSED_HANG(launch(),
                               "bounded wait: gave up .*barrier '(empty', stage 0, phase 0|full', stage 0, phase 1)",
                               30.0);
}

// The same problem with the lesson's release, in the same test setting: the diagnosis above is the release's doing.
TEST_F(Sm90a_BulkMulticastDiagnosis, TheSameProblemWithTheRightReleasePasses) {
  Problem problem({4, (kStages + 1) * kPanelTileBytes});
  ASSERT_STREQ(kVariants[3].name, "bulk_multicast_4");
  const course::Comparison result = verify(kVariants[3], problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

// A mask that leaves out the last block of a cluster of 4: no slice ever lands there, not even its
// own, so its full barrier waits forever for the tile. With exactly kStages tiles no producer has
// to wait for a stage, so only that block's consumers can be stuck.
struct MaskLeavesOutTheLastBlock : BulkPlan<4, true> {
  TMA_MULTICAST_HOST_DEVICE static constexpr std::uint16_t multicast_mask(int rank) {
    return BulkPlan<4, true>::multicast_mask(rank) & 0b0111;  // BROKEN
  }
};

TEST_F(Sm90a_BulkMulticastDiagnosis, AMaskWithoutABlockIsDiagnosedNotHung) {
  Problem problem({4, kStages * kPanelTileBytes});
  auto launch = [&] {
    launch_bulk<MaskLeavesOutTheLastBlock>(problem.gmem_panel.data(), problem.gmem_out.data(), problem.shape);
  };
  COURSE_EXPECT_DIAGNOSED_HANG(launch(), "bounded wait: gave up .*barrier 'full', stage 0, phase 0", 30.0);
}

}  // namespace
