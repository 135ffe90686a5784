// Grades assignment 1: the kernel runs in a child process (a bounded wait that stops it must not
// take the test process with it) on a position-dependent pattern, its output poisoned and followed
// by a guard band: one batch, fewer batches than a block's share, two blocks whose shares differ
// (7 batches), many batches through one and through two blocks, and the whole GPU. Every word
// is compared with the host's smoothing, and the guard band must keep its poison. Then the speed:
// 512 MiB checked once, then timed against cudaMemcpy device-to-device of the same bytes. A kernel
// still running long after any bounded wait would have fired is stuck in a wait that is not
// bounded; the child then says so and ends.
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
constexpr double kSpeedFloor = 0.90;
constexpr std::size_t kSpeedBytes = std::size_t{512} << 20;  // at least twice the L2 of any Hopper
constexpr std::size_t kGuardElems = exercise::kBatchElems;    // after the output: no store may reach them

const char kSpeedHint[] =
    "what usually makes the difference is the width of the copies and the bytes in flight per SM (chapter 01's "
    "Little's law): one block-wide memcpy_async per batch with cuda::aligned_size_t<16> (16-byte copies; not "
    "4-byte ones, and on 9.0 not one bulk copy per thread), and the launch as given (8 blocks of 4 KiB per SM)";

// One graded run: num_batches batches through at most max_blocks blocks (0: the launch's rule).
std::string attempt(std::size_t num_batches, unsigned max_blocks) {
  course::start_unbounded_wait_watchdog(COURSE_WAIT_LIMIT_NS,
                                        " (a cuda::barrier wait goes through course::bounded_wait, which names the "
                                        "barrier and phase it gave up on)");
  std::ostringstream run;
  run << num_batches << (num_batches == 1 ? " batch" : " batches");
  if (max_blocks != 0) run << " through " << max_blocks << (max_blocks == 1 ? " block" : " blocks");
  return course::attempt_smoothed_batches(
      run.str(), num_batches, exercise::kBatchElems, exercise::smooth,
      [&](const std::uint32_t* gmem_in, std::uint32_t* gmem_out) {
        exercise::launch_staged_transform(gmem_in, gmem_out, num_batches, max_blocks);
      },
      [](std::uint32_t) -> std::string {
        return ": not smooth() of this batch's words (read before the batch landed, after the next copy "
               "overwrote it, or the wrong neighbours)";
      },
      kGuardElems);
}

class Sm80_AssignmentStagedTransform : public course::GpuTest {
 protected:
  Sm80_AssignmentStagedTransform() : GpuTest({8, 0, false, "cp.async (LDGSTS)"}) {}
};

TEST_F(Sm80_AssignmentStagedTransform, OneBatch) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(1, 0); });
}
TEST_F(Sm80_AssignmentStagedTransform, FewerBatchesThanOneBlocksShare) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(exercise::kBatchesPerBlock - 1, 0); });
}
// Two blocks: batches 0, 2, 4, 6 and batches 1, 3, 5.
TEST_F(Sm80_AssignmentStagedTransform, BlocksWithUnequalShares) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(2 * exercise::kBatchesPerBlock - 1, 0); });
}
TEST_F(Sm80_AssignmentStagedTransform, ManyBatchesThroughOneBlock) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(101, 1); });
}
TEST_F(Sm80_AssignmentStagedTransform, ManyBatchesThroughTwoBlocks) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(61, 2); });
}
TEST_F(Sm80_AssignmentStagedTransform, TheWholeGpu) {
  COURSE_EXPECT_ATTEMPT_RIGHT([] { return attempt(10007, 0); });
}
TEST_F(Sm80_AssignmentStagedTransform, FastEnough) {
  COURSE_EXPECT_FAST_ENOUGH([] {
    const std::size_t num_batches = kSpeedBytes / exercise::kBatchBytes;
    course::DeviceBuffer<std::uint32_t> gmem_in(num_batches * exercise::kBatchElems);
    course::DeviceBuffer<std::uint32_t> gmem_out(gmem_in.size());
    gmem_in.fill_bytes(0);
    return course::attempt_speed(
        kSpeedBytes, kSpeedFloor, kSpeedHint, [&] { return attempt(num_batches, 0); },
        [&] { exercise::launch_staged_transform(gmem_in.data(), gmem_out.data(), num_batches); });
  });
}

}  // namespace
