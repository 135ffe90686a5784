// Grades assignment 3: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on a position-dependent pattern, into a poisoned output with a
// guard band after it: one 16-byte tile, one whole tile, fewer tiles than stages, fewer tiles
// than SMs, ragged last tiles of several sizes, many rounds of the ring through one block and
// through two, and the whole GPU. Every element must come out as modify(input) and the guard
// band must keep its poison. Then the speed: 512 MiB, checked once, then timed against
// cudaMemcpy device-to-device in the same process. A kernel still running long after any
// bounded wait would have fired is stuck in a wait that is not bounded; the child says so.
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

// The assignment's speed floor: the kernel's time against cudaMemcpy device-to-device of the
// same bytes, on the GPU the check runs on.
constexpr double kSpeedFloor = 0.85;
constexpr std::size_t kSpeedBytes = std::size_t{512} << 20;  // at least twice any Hopper's L2
constexpr const char* kSpeedHint =
    "what usually makes the difference is the bytes of loads in flight per SM (chapter 01's "
    "Little's law): every stage of the ring busy, the producer refilling a stage as soon as its "
    "store has read it, and the consumers using 16-byte shared-memory accesses.";

constexpr std::size_t kGuardElems = 64;  // after the array: no store may reach them
constexpr unsigned kWholeGpu = 0;        // launch_tma_ring: as many blocks as are resident
constexpr std::size_t kTile = exercise::kStageBytes;

// An input of `num_bytes` of the pattern on the device, and a poisoned output with its guard.
struct Arrays {
  explicit Arrays(std::size_t num_bytes)
      : num_bytes(num_bytes), in(num_bytes / sizeof(std::uint32_t)), gmem_in(in.size()),
        gmem_out(in.size() + kGuardElems) {
    course::fill_pattern(in);
    gmem_in.upload(in.data());
  }
  void launch(unsigned max_blocks) {
    exercise::launch_tma_ring(gmem_in.data(), gmem_out.data(), num_bytes, max_blocks);
  }
  // Poisons, launches once and compares: "" when right, else one line naming the first wrong
  // element (of the array or of the guard band after it).
  std::string check_once(unsigned max_blocks) {
    gmem_out.fill_bytes(course::kPoisonByte);
    launch(max_blocks);
    COURSE_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint32_t> out(gmem_out.size());
    gmem_out.download(out.data());
    const std::uint32_t poison = course::poison_value<std::uint32_t>();
    for (std::size_t i = 0; i < out.size(); ++i) {
      const bool guard = i >= in.size();
      const std::uint32_t want = guard ? poison : modify(in[i]);
      if (out[i] == want) continue;
      std::ostringstream line;
      line << num_bytes << " bytes (" << exercise::kStageBytes << "-byte tiles) through "
           << (max_blocks == kWholeGpu ? std::string("the whole GPU")
                                       : "at most " + std::to_string(max_blocks) + " blocks")
           << ": ";
      if (guard) {
        line << "the guard element " << i - in.size() << " after the array was overwritten";
      } else {
        line << "element " << i << " (tile " << i / exercise::kStageElems << ") is 0x" << std::hex
             << out[i] << ", expected 0x" << want;
        if (out[i] == poison) line << " (never written)";
        if (out[i] == in[i]) line << " (the input, unmodified)";
      }
      return line.str();
    }
    return "";
  }
  std::size_t num_bytes;
  std::vector<std::uint32_t> in;
  course::DeviceBuffer<std::uint32_t> gmem_in, gmem_out;
};

// Once per child process: a kernel stuck in a plain wait ends the child with a sentence.
void start_watchdog() {
  course::start_unbounded_wait_watchdog(
      COURSE_WAIT_LIMIT_NS,
      ", a barrier wait of the kernel's: wait with course::bounded_wait_parity (course/wait.cuh) "
      "and it names the barrier, stage and phase that never completed");
}

std::string attempt(std::size_t num_bytes, unsigned max_blocks) {
  start_watchdog();
  return Arrays(num_bytes).check_once(max_blocks);
}

class Sm90_AssignmentTmaRing : public course::GpuTest {
 protected:
  Sm90_AssignmentTmaRing() : GpuTest({9, 0, false, "cp.async.bulk (TMA) and mbarrier expect-tx"}) {}
};

TEST_F(Sm90_AssignmentTmaRing, SixteenBytes) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(16, kWholeGpu); });
}
TEST_F(Sm90_AssignmentTmaRing, OneWholeTile) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(kTile, kWholeGpu); });
}
TEST_F(Sm90_AssignmentTmaRing, FewerTilesThanStages) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt((exercise::kStages - 2) * kTile + 48, 1); });
}
TEST_F(Sm90_AssignmentTmaRing, FewerTilesThanSms) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(50 * kTile, kWholeGpu); });
}
// The last tile short by any multiple of 16 bytes: one unit, a few, a page, all but one unit.
TEST_F(Sm90_AssignmentTmaRing, RaggedLastTile) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] {
    start_watchdog();
    for (const std::size_t last : {std::size_t{16}, std::size_t{48}, std::size_t{4096} + 16,
                                   kTile - 16}) {
      for (const unsigned max_blocks : {2u, kWholeGpu}) {
        const std::string problem = Arrays(777 * kTile + last).check_once(max_blocks);
        if (!problem.empty()) return problem;
      }
    }
    return std::string();
  });
}
TEST_F(Sm90_AssignmentTmaRing, ManyRoundsThroughOneBlock) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(61 * kTile + 16, 1); });
}
TEST_F(Sm90_AssignmentTmaRing, ManyRoundsThroughTwoBlocks) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(101 * kTile + 4096, 2); });
}
TEST_F(Sm90_AssignmentTmaRing, WholeGpu) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt((std::size_t{64} << 20) + 48, kWholeGpu); });
}

TEST_F(Sm90_AssignmentTmaRing, FastEnough) {
  COURSE_EXPECT_FAST_ENOUGH([] {
    start_watchdog();
    Arrays arrays(kSpeedBytes);
    return course::attempt_speed(
        kSpeedBytes, kSpeedFloor, kSpeedHint, [&] { return arrays.check_once(kWholeGpu); },
        [&] { arrays.launch(kWholeGpu); });
  });
}

}  // namespace
