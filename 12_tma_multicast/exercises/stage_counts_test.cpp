// Grades exercise 12.2: one stage of every block of a cluster is replayed on model mbarriers
// (course/mbarrier_model.hpp), for multicast clusters of 1 to 16 blocks and for clusters without
// multicast, with three sets of tiles. The full barrier gets the producer's arrive.expect_tx and
// then the slices that land in the block, in random orders: its phase must complete with the last
// byte and not before. The empty barrier gets the release of every consumer warp of every block
// the block writes into, in random orders: its phase must complete with the last release and not
// before. Then the L2 bytes each block asks for, and their share, against what the cluster loads.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"
#include "tma_multicast_model.hpp"  // the lesson's plan, for the last check

namespace {

using exercise::Cluster;
using exercise::Tiles;

const std::vector<Tiles> kTiles = {
    {64, 64, 32, 4, 8},    // the lesson's: float, 8 consumer warps
    {128, 256, 64, 2, 8},  // a 16-bit tensor-core tile
    {64, 128, 64, 2, 4},   // four consumer warps
};
const std::vector<Cluster> kClusters = {{1, 1, true}, {2, 1, true},  {1, 2, true},  {2, 2, true},
                                        {4, 2, true}, {2, 4, true},  {4, 4, true},  {8, 2, true},
                                        {2, 2, false}, {2, 1, false}, {4, 2, false}, {1, 1, false}};

std::string name(const Cluster& c, const Tiles& t) {
  std::ostringstream text;
  text << "cluster " << c.x << "x" << c.y << (c.multicast ? " with multicast" : " without multicast") << ", C tile "
       << t.m << "x" << t.n << ", k-tile " << t.k << ", " << t.elem_bytes << "-byte elements, " << t.consumer_warps
       << " consumer warps";
  return text.str();
}
std::string block(int x, int y) { return "block (" + std::to_string(x) + "," + std::to_string(y) + ")"; }

struct Slice {
  std::string from;  // the block that loaded it
  int bytes;
};

// What lands in block (x, y) per k-tile: its A tile in slices from its row, its B tile in slices from
// its column (multicast), or both tiles whole from itself.
std::vector<Slice> slices_landing_in(const Cluster& c, const Tiles& t, int x, int y) {
  const int a_sharers = c.multicast ? c.x : 1, b_sharers = c.multicast ? c.y : 1;
  std::vector<Slice> slices;
  for (int i = 0; i < a_sharers; ++i) {
    slices.push_back({block(c.multicast ? i : x, y) + "'s A slice", t.m / a_sharers * t.k * t.elem_bytes});
  }
  for (int j = 0; j < b_sharers; ++j) {
    slices.push_back({block(x, c.multicast ? j : y) + "'s B slice", t.k / b_sharers * t.n * t.elem_bytes});
  }
  return slices;
}

// The blocks whose consumer warps release a stage of block (x, y): those it writes into.
std::vector<std::string> releasers_of(const Cluster& c, int x, int y) {
  std::vector<std::string> blocks{block(x, y)};
  if (c.multicast) {
    for (int i = 0; i < c.x; ++i) {
      if (i != x) blocks.push_back(block(i, y));
    }
    for (int j = 0; j < c.y; ++j) {
      if (j != y) blocks.push_back(block(x, j));
    }
  }
  return blocks;
}

TEST(HostExerciseStageCounts, FullPhaseCompletesWithTheLastByteThatLands) {
  std::mt19937 random(12);
  for (const Tiles& t : kTiles) {
    for (const Cluster& c : kClusters) {
      const std::uint32_t tx = exercise::full_tx_bytes(c, t);
      ASSERT_TRUE(tx < (1u << 20)) << name(c, t) << ": an mbarrier's transaction count holds less than 2^20 bytes";
      for (int y = 0; y < c.y; ++y) {
        for (int x = 0; x < c.x; ++x) {
          std::vector<Slice> slices = slices_landing_in(c, t, x, y);
          for (int order = 0; order < 4; ++order) {
            std::shuffle(slices.begin(), slices.end(), random);
            course::MbarrierModel full;
            full.init(1);                               // one arrival: the block's own producer
            full.expect_tx(static_cast<int>(tx));       // arrive.expect_tx: the count...
            full.arrive();                              // ...and the arrival
            for (std::size_t landed = 0; landed < slices.size(); ++landed) {
              ASSERT_FALSE(full.phase_done(0))
                  << name(c, t) << ": the full barrier of " << block(x, y) << " completes its phase when " << landed
                  << " of the " << slices.size() << " slices that land in it per k-tile have landed ("
                  << slices[landed].from
                  << (landed + 1 < slices.size() ? " and " + std::to_string(slices.size() - landed - 1) + " more" : "")
                  << " still on the way): its consumers would read a stage that is not all there";
              full.complete_tx(slices[landed].bytes);
            }
            ASSERT_TRUE(full.phase_done(0))
                << name(c, t) << ": all " << slices.size() << " slices that land in " << block(x, y)
                << " per k-tile have landed and its full barrier's phase is still open: its consumers would wait "
                   "forever";
          }
        }
      }
    }
  }
}

TEST(HostExerciseStageCounts, EmptyPhaseCompletesWithTheLastRelease) {
  std::mt19937 random(12);
  for (const Tiles& t : kTiles) {
    for (const Cluster& c : kClusters) {
      const int count = exercise::empty_arrivals(c, t);
      ASSERT_TRUE(count >= 1) << name(c, t) << ": an mbarrier expects at least one arrival per phase";
      for (int y = 0; y < c.y; ++y) {
        for (int x = 0; x < c.x; ++x) {
          const std::vector<std::string> blocks = releasers_of(c, x, y);
          std::vector<int> releases;  // one entry per consumer warp: the index of its block
          for (std::size_t b = 0; b < blocks.size(); ++b) releases.insert(releases.end(), t.consumer_warps, int(b));
          std::shuffle(releases.begin(), releases.end(), random);
          course::MbarrierModel empty;
          empty.init(count);
          std::vector<int> still_reading(blocks.size(), t.consumer_warps);
          for (std::size_t done = 0; done < releases.size(); ++done) {
            if (empty.phase_done(0)) {
              std::ostringstream readers;
              for (std::size_t b = 0; b < blocks.size(); ++b) {
                if (still_reading[b] > 0) readers << (readers.tellp() > 0 ? ", " : "") << blocks[b];
              }
              FAIL() << name(c, t) << ": the empty barrier of " << block(x, y) << " completes its phase after " << done
                     << " releases, while consumer warps of " << readers.str()
                     << " still read the stage: its producer would overwrite it under them";
            }
            empty.arrive();
            --still_reading[releases[done]];
          }
          std::ostringstream all;
          for (std::size_t b = 0; b < blocks.size(); ++b) all << (b ? ", " : "") << blocks[b];
          ASSERT_TRUE(empty.phase_done(0))
              << name(c, t) << ": every consumer warp of " << all.str() << " (the blocks " << block(x, y)
              << " writes into) has released the stage once, and its empty barrier's phase is still open: its "
                 "producer would wait forever";
        }
      }
    }
  }
}

TEST(HostExerciseStageCounts, BlocksAskTheL2ForEachTileOncePerCluster) {
  for (const Tiles& t : kTiles) {
    for (const Cluster& c : kClusters) {
      const double a_tile = double(t.m) * t.k * t.elem_bytes, b_tile = double(t.k) * t.n * t.elem_bytes;
      // With multicast, the cluster loads each of its c.y A tiles and c.x B tiles once; without, every block its own.
      const double needed = c.multicast ? c.y * a_tile + c.x * b_tile : c.x * c.y * (a_tile + b_tile);
      const double asked = double(c.x) * c.y * exercise::issued_bytes(c, t);
      ASSERT_TRUE(asked == needed) << name(c, t) << ": its " << c.x * c.y << " blocks together would ask the L2 for "
                               << asked / needed << " times the tiles they load between them per k-tile ("
                               << (c.multicast ? "each A and B tile once per cluster, in slices"
                                               : "each block its own A and B tile")
                               << ")";
    }
  }
}

TEST(HostExerciseStageCounts, ShareIsTheBytesAskedForRelativeToNoMulticast) {
  for (const Tiles& t : kTiles) {
    for (const Cluster& c : kClusters) {
      const double a_tile = double(t.m) * t.k * t.elem_bytes, b_tile = double(t.k) * t.n * t.elem_bytes;
      const double want = c.multicast ? (a_tile / c.x + b_tile / c.y) / (a_tile + b_tile) : 1.0;
      const double got = exercise::l2_share(c, t);
      ASSERT_TRUE(std::abs(got - want) <= 1e-12) << name(c, t) << ": l2_share is " << got
                                    << "; it is what one block's loads ask of the L2 per k-tile in this cluster, over "
                                       "what the same block asks for without multicast";
    }
  }
}

TEST(HostExerciseStageCounts, AgreesWithTheLessonsPlans) {
  const Tiles lesson_tiles{kTileM, kTileN, kTileK, static_cast<int>(sizeof(float)), kConsumerWarps};
  for (const ClusterShape& s : {ClusterShape{2, 2, false}, ClusterShape{2, 1, true}, ClusterShape{2, 2, true},
                                ClusterShape{4, 2, true}, ClusterShape{1, 4, true}}) {
    const Cluster c{s.x, s.y, s.multicast};
    const std::string what = name(c, lesson_tiles) + ": not the lesson's ";
    ASSERT_TRUE(exercise::full_tx_bytes(c, lesson_tiles) == full_tx_bytes(s))
        << what << "full count (Plan::kFullTxBytes)";
    ASSERT_TRUE(exercise::empty_arrivals(c, lesson_tiles) == empty_arrivals(s))
        << what << "empty count (Plan::kEmptyArrivals)";
    ASSERT_TRUE(exercise::issued_bytes(c, lesson_tiles) == issued_bytes_per_k_tile(s))
        << what << "bytes per k-tile (issued_bytes_per_k_tile)";
    ASSERT_TRUE(std::abs(exercise::l2_share(c, lesson_tiles) - l2_share(s)) <= 1e-12) << what << "share (l2_share)";
  }
}

}  // namespace
