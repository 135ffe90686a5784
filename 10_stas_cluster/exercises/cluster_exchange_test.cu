// Grades assignment 4: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on a position-dependent pattern, its output poisoned and followed
// by a guard band: one word, one tile (whose partner tile does not exist), one pair, fewer pairs
// than clusters, an odd number of tiles with a ragged last one, many pairs through one cluster
// and through two, and the whole GPU. Every word is compared with mix() of the word and the one at
// the same place of the other tile of its pair, and the guard band must keep its poison. Then the
// speed: 512 MiB checked once, then timed against cudaMemcpy device-to-device of the same bytes. A
// kernel still running long after any bounded wait would have fired is stuck in a wait that is not
// bounded (a cluster.sync() that a block never reaches); the child then says so and ends.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/exercise.hpp"
#include "course/pattern.hpp"
#include "course/wait.cuh"

namespace {

// The floor on the GPU the check runs on: the kernel's speed over cudaMemcpy device-to-device's.
constexpr double kSpeedFloor = 0.80;
constexpr std::size_t kSpeedBytes = std::size_t{512} << 20;  // at least twice the L2 of any Hopper
constexpr std::size_t kGuardElems = exercise::kTileElems;    // after the output: no store may reach them
constexpr std::size_t kTile = exercise::kTileElems;

const char kSpeedHint[] =
    "what usually makes the difference is the bytes in flight per SM (chapter 01's Little's law): issue the next "
    "tile's 16-byte loads before this tile's exchange and wait, not after; send 16 bytes per st.async; one elected "
    "thread for the expect-tx and for the remote arrival after a block barrier; no cluster.sync() inside the loop; "
    "the tile, the stages and the launch as given";

void start_watchdog() {
  course::start_unbounded_wait_watchdog(COURSE_WAIT_LIMIT_NS,
                                        " (every mbarrier wait goes through course::bounded_wait_parity, which names "
                                        "the barrier, stage and phase it gave up on; a cluster.sync() has no bounded "
                                        "form: does every thread of both blocks reach each one?)");
}

// What a wrong word's value says, as text after the failure line ("" when it says nothing).
std::string explain(std::uint32_t got, std::uint32_t mine, std::uint32_t theirs) {
  if (got == course::poison_value<std::uint32_t>()) return ": never written";
  if (got == exercise::mix(mine, mine)) return ": mixed with itself, not with the other tile's word";
  if (got == exercise::mix(theirs, mine)) return ": mixed with the two words the other way round";
  if (theirs != 0 && got == exercise::mix(mine, 0)) return ": mixed as if the other tile's word were 0";
  if (got == mine) return ": the input word, copied";
  return "";
}

// One graded run: num_elems words through at most max_clusters clusters (0: all that fit at once).
std::string attempt(std::size_t num_elems, unsigned max_clusters) {
  std::ostringstream run;
  run << num_elems << (num_elems == 1 ? " word" : " words") << " (" << (num_elems + kTile - 1) / kTile
      << (num_elems <= kTile ? " tile" : " tiles") << ")";
  if (max_clusters != 0) run << " through " << max_clusters << (max_clusters == 1 ? " cluster" : " clusters");
  std::vector<std::uint32_t> in(num_elems);
  course::fill_pattern(in);
  course::DeviceBuffer<std::uint32_t> gmem_in(num_elems);
  course::DeviceBuffer<std::uint32_t> gmem_out(num_elems + kGuardElems);
  gmem_in.upload(in.data());
  gmem_out.fill_bytes(course::kPoisonByte);
  exercise::launch_cluster_exchange(gmem_in.data(), gmem_out.data(), num_elems, max_clusters);
  COURSE_CHECK(cudaGetLastError());
  COURSE_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(num_elems + kGuardElems);
  gmem_out.download(out.data());
  for (std::size_t i = 0; i < num_elems; ++i) {
    const std::size_t other = i ^ kTile;  // the same place of the other tile of the pair
    const std::uint32_t theirs = other < num_elems ? in[other] : 0u;
    const std::uint32_t want = exercise::mix(in[i], theirs);
    if (out[i] == want) continue;
    std::ostringstream line;
    line << run.str() << ": element " << i << " (word " << i % kTile << " of tile " << i / kTile << ") is 0x"
         << std::hex << out[i] << ", expected 0x" << want << explain(out[i], in[i], theirs);
    return line.str();
  }
  for (std::size_t i = num_elems; i < out.size(); ++i) {
    if (out[i] == course::poison_value<std::uint32_t>()) continue;
    std::ostringstream line;
    line << run.str() << ": word " << i - num_elems << " after the output (past the last word) was overwritten";
    return line.str();
  }
  return "";
}

class Sm90_AssignmentClusterExchange : public course::GpuTest {
 protected:
  Sm90_AssignmentClusterExchange() : GpuTest({9, 0, false, "thread block clusters and st.async"}) {}
};

TEST_F(Sm90_AssignmentClusterExchange, OneWord) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    start_watchdog();
    return attempt(1, 0);
  });
}
TEST_F(Sm90_AssignmentClusterExchange, OneTileWithoutItsPartner) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    start_watchdog();
    return attempt(kTile, 0);
  });
}
TEST_F(Sm90_AssignmentClusterExchange, OnePair) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    start_watchdog();
    return attempt(2 * kTile, 0);
  });
}
TEST_F(Sm90_AssignmentClusterExchange, FewerPairsThanClusters) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    start_watchdog();
    return attempt(5 * kTile, 0);
  });
}
TEST_F(Sm90_AssignmentClusterExchange, OddTilesAndARaggedLastTile) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    start_watchdog();
    return attempt(777 * kTile + 13, 0);
  });
}
TEST_F(Sm90_AssignmentClusterExchange, ManyPairsThroughOneCluster) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    start_watchdog();
    return attempt(301 * kTile + kTile / 2 + 6, 1);
  });
}
TEST_F(Sm90_AssignmentClusterExchange, ManyPairsThroughTwoClusters) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    start_watchdog();
    return attempt(122 * kTile + 4, 2);
  });
}
TEST_F(Sm90_AssignmentClusterExchange, TheWholeGpu) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    start_watchdog();
    return attempt(10007 * kTile + 3, 0);
  });
}
TEST_F(Sm90_AssignmentClusterExchange, FastEnough) {
  COURSE_EXPECT_FAST_ENOUGH([] {
    start_watchdog();
    const std::size_t num_elems = kSpeedBytes / sizeof(std::uint32_t);
    course::DeviceBuffer<std::uint32_t> gmem_in(num_elems);
    course::DeviceBuffer<std::uint32_t> gmem_out(num_elems);
    gmem_in.fill_bytes(0);
    return course::attempt_speed(
        kSpeedBytes, kSpeedFloor, kSpeedHint, [&] { return attempt(num_elems, 0); },
        [&] { exercise::launch_cluster_exchange(gmem_in.data(), gmem_out.data(), num_elems); });
  });
}

}  // namespace
