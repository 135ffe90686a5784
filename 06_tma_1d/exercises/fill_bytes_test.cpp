// Grades exercise 06.1: the counts from fill_tx_bytes() are played on model barriers, one per stage
// of every block, as the lab's counter ring (counter_sync_ring) uses them. Each block primes its stages, then
// waits for them in ring order and refills each one it has consumed, until a stage says that no
// tile is left. Every fill is one phase of its stage's barrier: the leader's arrival with the
// announced bytes, then the copy's bytes landing 16 at a time. The phase must stay open until
// the last byte has landed and complete with it.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "course/mbarrier_model.hpp"

namespace {

struct Ring {
  std::size_t num_bytes;    // the array
  std::size_t stage_bytes;  // one tile per stage
  int blocks;
  int stages;
};

std::string describe(const Ring& ring) {
  const std::size_t tiles = num_tiles_of(ring.num_bytes, ring.stage_bytes);
  std::ostringstream text;
  text << "array of " << ring.num_bytes << " bytes in stages of " << ring.stage_bytes << " (" << tiles
       << (tiles == 1 ? " tile" : " tiles") << ", " << ring.blocks << (ring.blocks == 1 ? " block" : " blocks") << " x "
       << ring.stages << " stages)";
  return text.str();
}

// One fill: returns "" when its phase completes exactly with the copy's last byte, else the problem.
std::string play_fill(course::MbarrierModel& bar, unsigned parity, unsigned long long tile, const Ring& ring) {
  const std::size_t num_tiles = num_tiles_of(ring.num_bytes, ring.stage_bytes);
  const std::uint32_t announced = fill_tx_bytes(tile, ring.num_bytes, ring.stage_bytes);
  const std::size_t delivered = tile < num_tiles ? tile_bytes_of(tile, ring.num_bytes, ring.stage_bytes) : 0;
  std::ostringstream what;
  what << describe(ring) << ": the fill that takes tile number " << tile;
  if (tile >= num_tiles) what << " (past the last tile: no copy is issued)";
  if (announced > kMaxTxBytes) {
    what << " announces " << announced << " bytes, more than one barrier phase can count (" << kMaxTxBytes << ")";
    return what.str();
  }
  bar.expect_tx(static_cast<int>(announced));  // mbarrier.arrive.expect_tx: the bytes first,
  bar.arrive();                                // then the arrival, in one instruction
  for (std::size_t landed = 0; landed < delivered; landed += kBulkAlignBytes) {
    if (bar.phase_done(parity)) {
      what << ": its phase completed with " << delivered - landed << " of the copy's " << delivered
           << " bytes still to land. The block would modify a tile that is not all there, and no error would say so";
      return what.str();
    }
    bar.complete_tx(static_cast<int>(kBulkAlignBytes));
  }
  if (!bar.phase_done(parity)) {
    if (delivered == 0) {
      what << ": its phase never completes, so the block never learns that it is done. On the GPU the bounded "
              "wait gives up on this stage's barrier 'full'";
    } else {
      what << ": all " << delivered << " bytes of the copy landed, yet its phase never completes. On the GPU the "
              "bounded wait gives up on this stage's barrier 'full'";
    }
    return what.str();
  }
  return "";
}

// The lab's counter ring, every block and stage, on model barriers.
void replay(const Ring& ring) {
  const std::size_t num_tiles = num_tiles_of(ring.num_bytes, ring.stage_bytes);
  const std::size_t num_bars = static_cast<std::size_t>(ring.blocks) * ring.stages;
  std::vector<course::MbarrierModel> full_bar(num_bars);
  for (course::MbarrierModel& bar : full_bar) bar.init(1);  // one arrival per phase: the leader's
  std::vector<unsigned> fills(num_bars, 0);                  // phases begun per barrier
  std::vector<unsigned long long> stage_tile(num_bars, 0);
  unsigned long long next_tile = 0;  // the counter in global memory
  auto take_and_load = [&](int block, int stage) {
    const std::size_t i = static_cast<std::size_t>(block) * ring.stages + stage;
    stage_tile[i] = next_tile++;
    return play_fill(full_bar[i], fills[i]++ & 1u, stage_tile[i], ring);
  };
  for (int b = 0; b < ring.blocks; ++b) {  // every block primes its ring
    for (int s = 0; s < ring.stages; ++s) {
      const std::string problem = take_and_load(b, s);
      if (!problem.empty()) FAIL() << problem;
    }
  }
  std::vector<int> stage(ring.blocks, 0);
  std::vector<bool> finished(ring.blocks, false);
  for (int running = ring.blocks; running > 0;) {  // the blocks take turns, one stage each
    for (int b = 0; b < ring.blocks; ++b) {
      if (finished[b]) continue;
      if (stage_tile[static_cast<std::size_t>(b) * ring.stages + stage[b]] >= num_tiles) {
        finished[b] = true;  // "none left": the block stops
        --running;
        continue;
      }
      const std::string problem = take_and_load(b, stage[b]);  // consumed: refill it
      if (!problem.empty()) FAIL() << problem;
      stage[b] = (stage[b] + 1) % ring.stages;
    }
  }
}

TEST(HostExerciseFillBytes, WholeTilesOnly) {
  replay({64 * 32768, 32768, 4, 4});
  replay({32768, 32768, 1, 4});
}

TEST(HostExerciseFillBytes, ARaggedLastTile) {
  replay({(8u << 20) + 48, 32768, 8, 4});  // the lesson's verification size
  replay({777 * 4096 + 48, 4096, 5, 3});
}

TEST(HostExerciseFillBytes, FewerTilesThanStages) {
  replay({2 * 8192 + 16, 8192, 4, 4});  // three tiles for sixteen stages
  replay({16, 32768, 2, 2});            // one tile of 16 bytes
}

TEST(HostExerciseFillBytes, SmallestAndLargestStages) {
  replay({37 * 16, 16, 3, 2});                             // stages of one 16-byte unit
  replay({3 * 65536 + 4096, 65536, 2, 3});                 // the last tile a sixteenth of a stage
  replay({2 * (kMaxTxBytes - 15) + 32, kMaxTxBytes - 15, 1, 2});  // the largest stage one phase can count
}

}  // namespace
